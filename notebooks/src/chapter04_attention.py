# %% [markdown]
# # Chapter 4 — Attention Intuition
#
# The notebook way through chapter 4: read, work the worksheet with a pencil, then fill in each function below
# and run the check cell under it (`kata.check(...)`): the same steps, worksheet numbers and diagnoses as `nox
# -s chapter4`. Run the cells in order, starting with the next one. The whole page, with hints and common
# mistakes: [docs/chapters/04-attention.md](../docs/chapters/04-attention.md).

# %%
# Run this first: it finds the course folder (the one holding kata/) and imports what the stubs use.
import pathlib
import sys

sys.path.insert(0, str(next(p for p in [pathlib.Path.cwd(), *pathlib.Path.cwd().parents] if (p / "kata").is_dir())))

import numpy as np

import kata

CHAPTER = 4  # kata.check() checks this chapter's functions

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
# ### `softmax` — step 4.3

# %%
# kata:stub softmax

# %%
kata.check(softmax)

# %% [markdown]
# ### `raw_scores` — step 4.1

# %%
# kata:stub raw_scores

# %%
kata.check(raw_scores)

# %% [markdown]
# ### `attention_scores` — step 4.2

# %%
# kata:stub attention_scores

# %%
kata.check(attention_scores)

# %% [markdown]
# ### `causal_mask` — step 4.5

# %%
# kata:stub causal_mask

# %%
kata.check(causal_mask)

# %% [markdown]
# ### `scaled_dot_product_attention` — step 4.4/4.6

# %%
# kata:stub scaled_dot_product_attention

# %%
kata.check(scaled_dot_product_attention)

# %% [markdown]
# ## The whole chapter
#
# Every step and check of chapter 4, as `nox -s chapter4` shows them. Your answers count where you save them: `nox -s grade -- --notebooks` grades the saved notebooks.

# %%
kata.check()
