# %% [markdown]
# # Chapter 11 — Multi-Head Attention
#
# The notebook way through chapter 11: read, work the worksheet with a pencil, then fill in each function below
# and run the check cell under it (`kata.check(...)`): the same steps, worksheet numbers and diagnoses as `nox
# -s chapter11`. Run the cells in order, starting with the next one. The whole page, with hints and common
# mistakes: [docs/chapters/11-multi-head-attention.md](../docs/chapters/11-multi-head-attention.md).

# %%
# Run this first: it finds the course folder (the one holding kata/) and imports what the stubs use.
import pathlib
import sys

sys.path.insert(0, str(next(p for p in [pathlib.Path.cwd(), *pathlib.Path.cwd().parents] if (p / "kata").is_dir())))

import numpy as np

import kata
from kata.learner.notebook import yours

CHAPTER = 11  # kata.check() checks this chapter's functions
# The chapter's constants and the earlier chapters' functions it uses: yours, from exercises/ or your notebooks
causal_mask, scaled_dot_product_attention, attention_backward, linear_backward, PARAM_NAMES = yours(CHAPTER, "causal_mask", "scaled_dot_product_attention", "attention_backward", "linear_backward", "PARAM_NAMES")

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
# started, ⧗ timed out, ! error (crashed or does not import).

# %% [markdown]
# ### `split_heads` — step 11.1

# %%
# kata:stub split_heads

# %%
kata.check(split_heads)

# %% [markdown]
# ### `merge_heads` — step 11.4

# %%
# kata:stub merge_heads

# %%
kata.check(merge_heads)

# %% [markdown]
# ### `attend_heads` — step 11.2

# %%
# kata:stub attend_heads

# %%
kata.check(attend_heads)

# %% [markdown]
# ### `multi_head_attention` — step 11.5

# %%
# kata:stub multi_head_attention

# %%
kata.check(multi_head_attention)

# %% [markdown]
# ### `multi_head_attention_backward` — step 11.6

# %%
# kata:stub multi_head_attention_backward

# %%
kata.check(multi_head_attention_backward)

# %% [markdown]
# ## The whole chapter
#
# Every step and check of chapter 11, as `nox -s chapter11` shows them. Your answers count where you save them: `nox -s grade -- --notebooks` grades the saved notebooks.

# %%
kata.check()
