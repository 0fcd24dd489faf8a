"""The course written from its docstrings with explicit loops and plain math (authors only)."""
