"""Your code: one module per chapter. Fill in the functions, then run `nox -s chapterN`."""
