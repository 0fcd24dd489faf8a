# %% [markdown]
# # Chapter 9 — Feed-Forward Layers
#
# The notebook way through chapter 9: read, work the worksheet with a pencil, then fill in each function below
# and run the check cell under it (`kata.check(...)`): the same steps, worksheet numbers and diagnoses as `nox
# -s chapter9`. Run the cells in order, starting with the next one. The whole page, with hints and common
# mistakes: [docs/chapters/09-feed-forward.md](../docs/chapters/09-feed-forward.md).

# %%
# Run this first: it finds the course folder (the one holding kata/) and imports what the stubs use.
import pathlib
import sys

sys.path.insert(0, str(next(p for p in [pathlib.Path.cwd(), *pathlib.Path.cwd().parents] if (p / "kata").is_dir())))

import numpy as np

import kata
from kata.learner.notebook import yours

CHAPTER = 9  # kata.check() checks this chapter's functions
# The chapter's constants and the earlier chapters' functions it uses: yours, from exercises/ or your notebooks
causal_mask, scaled_dot_product_attention = yours(CHAPTER, "causal_mask", "scaled_dot_product_attention")

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
# ### `self_attention` — step 9.1

# %%
# kata:stub self_attention

# %%
kata.check(self_attention)

# %% [markdown]
# ### `linear` — step 9.2

# %%
# kata:stub linear

# %%
kata.check(linear)

# %% [markdown]
# ### `relu` — step 9.3

# %%
# kata:stub relu

# %%
kata.check(relu)

# %% [markdown]
# ### `relu_backward` — step 9.7

# %%
# kata:stub relu_backward

# %%
kata.check(relu_backward)

# %% [markdown]
# ### `feed_forward` — step 9.4

# %%
# kata:stub feed_forward

# %%
kata.check(feed_forward)

# %% [markdown]
# ### `feed_forward_backward` — step 9.8

# %%
# kata:stub feed_forward_backward

# %%
kata.check(feed_forward_backward)

# %% [markdown]
# ### `residual_feed_forward` — step 9.5

# %%
# kata:stub residual_feed_forward

# %%
kata.check(residual_feed_forward)

# %% [markdown]
# ### `residual_feed_forward_backward` — step 9.10

# %%
# kata:stub residual_feed_forward_backward

# %%
kata.check(residual_feed_forward_backward)

# %% [markdown]
# ## The whole chapter
#
# Every step and check of chapter 9, as `nox -s chapter9` shows them. Your answers count where you save them: `nox -s grade -- --notebooks` grades the saved notebooks.

# %%
kata.check()
