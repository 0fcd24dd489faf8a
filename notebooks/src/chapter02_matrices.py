# %% [markdown]
# # Chapter 2 — The Matrix Core
#
# The notebook way through chapter 2: read, work the worksheet with a pencil, then fill in each function below
# and run the check cell under it (`kata.check(...)`): the same steps, worksheet numbers and diagnoses as `nox
# -s chapter2`. Run the cells in order, starting with the next one. The whole page, with hints and common
# mistakes: [docs/chapters/02-matrices.md](../docs/chapters/02-matrices.md).

# %%
# Run this first: it finds the course folder (the one holding kata/) and imports what the stubs use.
import pathlib
import sys

sys.path.insert(0, str(next(p for p in [pathlib.Path.cwd(), *pathlib.Path.cwd().parents] if (p / "kata").is_dir())))

from collections.abc import Callable
import numpy as np

import kata

CHAPTER = 2  # kata.check() checks this chapter's functions

# %% [markdown]
# <!-- kata:page-section "The idea" -->

# %% [markdown]
# <!-- kata:page-section "The formulas" -->

# %% [markdown]
# <!-- kata:page-section "The worksheet" -->

# %% [markdown]
# ## Your turn
#
# Each function's docstring is its full specification, shapes included. Replace the `raise
# NotImplementedError(...)` with your code, run the cell, then run the check under it: ✓ passed, ✗ failed, · not
# started.

# %% [markdown]
# ### `matmul` — step 2.1

# %%
# kata:stub matmul

# %%
kata.check(matmul)

# %% [markdown]
# ### `transpose` — step 2.6

# %%
# kata:stub transpose

# %%
kata.check(transpose)

# %% [markdown]
# ### `dot` — step 2.3

# %%
# kata:stub dot

# %%
kata.check(dot)

# %% [markdown]
# ### `matmul_backward` — step 2.7

# %%
# kata:stub matmul_backward

# %%
kata.check(matmul_backward)

# %% [markdown]
# ### `numerical_gradient` — step 2.9

# %%
# kata:stub numerical_gradient

# %%
kata.check(numerical_gradient)

# %% [markdown]
# ## The whole chapter
#
# Every step and check of chapter 2, as `nox -s chapter2` shows them. Your answers count where you save them: `nox -s grade -- --notebooks` grades the saved notebooks.

# %%
kata.check()
