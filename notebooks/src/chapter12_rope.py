# %% [markdown]
# # Chapter 12 — Rotary Position Embeddings
#
# The notebook way through chapter 12: read, work the worksheet with a pencil, then fill in each function below
# and run the check cell under it (`kata.check(...)`): the same steps, worksheet numbers and diagnoses as `nox
# -s chapter12`. Run the cells in order, starting with the next one. The whole page, with hints and common
# mistakes: [docs/chapters/12-rope.md](../docs/chapters/12-rope.md).

# %%
# Run this first: it finds the course folder (the one holding kata/) and imports what the stubs use.
import pathlib
import sys

sys.path.insert(0, str(next(p for p in [pathlib.Path.cwd(), *pathlib.Path.cwd().parents] if (p / "kata").is_dir())))

import numpy as np

import kata
from kata.learner.notebook import yours

CHAPTER = 12  # kata.check() checks this chapter's functions
# The chapter's constants and the earlier chapters' functions it uses: yours, from exercises/ or your notebooks
causal_mask, scaled_dot_product_attention = yours(CHAPTER, "causal_mask", "scaled_dot_product_attention")

# %% [markdown]
# <!-- kata:page-section "The idea" -->

# %% [markdown]
# <!-- kata:page-section "One convention, stated once" -->

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
# ### `rope_frequencies` — step 12.1

# %%
# kata:stub rope_frequencies

# %%
kata.check(rope_frequencies)

# %% [markdown]
# ### `rope_angles` — step 12.2

# %%
# kata:stub rope_angles

# %%
kata.check(rope_angles)

# %% [markdown]
# ### `rotate_pairs` — step 12.3

# %%
# kata:stub rotate_pairs

# %%
kata.check(rotate_pairs)

# %% [markdown]
# ### `apply_rope` — step 12.4

# %%
# kata:stub apply_rope

# %%
kata.check(apply_rope)

# %% [markdown]
# ### `rope_scores` — step 12.5

# %%
# kata:stub rope_scores

# %%
kata.check(rope_scores)

# %% [markdown]
# ### `rope_attention` — step 12.6

# %%
# kata:stub rope_attention

# %%
kata.check(rope_attention)

# %% [markdown]
# ### `rope_backward` — step 12.7

# %%
# kata:stub rope_backward

# %%
kata.check(rope_backward)

# %% [markdown]
# ## The whole chapter
#
# Every step and check of chapter 12, as `nox -s chapter12` shows them. Your answers count where you save them: `nox -s grade -- --notebooks` grades the saved notebooks.

# %%
kata.check()
