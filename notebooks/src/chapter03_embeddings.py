# %% [markdown]
# # Chapter 3 — Embeddings
#
# The notebook way through chapter 3: read, work the worksheet with a pencil, then fill in each function below
# and run the check cell under it (`kata.check(...)`): the same steps, worksheet numbers and diagnoses as `nox
# -s chapter3`. Run the cells in order, starting with the next one. The whole page, with hints and common
# mistakes: [docs/chapters/03-embeddings.md](../docs/chapters/03-embeddings.md).

# %%
# Run this first: it finds the course folder (the one holding kata/) and imports what the stubs use.
import pathlib
import sys

sys.path.insert(0, str(next(p for p in [pathlib.Path.cwd(), *pathlib.Path.cwd().parents] if (p / "kata").is_dir())))

import numpy as np

import kata
from kata.learner.notebook import yours

CHAPTER = 3  # kata.check() checks this chapter's functions
# The chapter's constants and the earlier chapters' functions it uses: yours, from exercises/ or your notebooks
TOY_EMBEDDINGS = yours(CHAPTER, "TOY_EMBEDDINGS")

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
# ### `one_hot` — step 3.1

# %%
# kata:stub one_hot

# %%
kata.check(one_hot)

# %% [markdown]
# ### `embed` — step 3.2

# %%
# kata:stub embed

# %%
kata.check(embed)

# %% [markdown]
# ### `embedding_backward` — step 3.6

# %%
# kata:stub embedding_backward

# %%
kata.check(embedding_backward)

# %% [markdown]
# ### `cosine_similarity` — step 3.4

# %%
# kata:stub cosine_similarity

# %%
kata.check(cosine_similarity)

# %% [markdown]
# ## The whole chapter
#
# Every step and check of chapter 3, as `nox -s chapter3` shows them. Your answers count where you save them: `nox -s grade -- --notebooks` grades the saved notebooks.

# %%
kata.check()
