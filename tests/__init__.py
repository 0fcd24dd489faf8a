"""The project's own test suite: one file per chapter, plus the checks that prove the suite and the key."""
