"""The course written from its docstrings with einsum, log-sum-exp and dtypes kept (authors only)."""
