# %% [markdown]
# # Chapter 13 — The Modern Block
#
# The notebook way through chapter 13: read, work the worksheet with a pencil, then fill in each function below
# and run the check cell under it (`kata.check(...)`): the same steps, worksheet numbers and diagnoses as `nox
# -s chapter13`. Run the cells in order, starting with the next one. The whole page, with hints and common
# mistakes: [docs/chapters/13-modern-block.md](../docs/chapters/13-modern-block.md).

# %%
# Run this first: it finds the course folder (the one holding kata/) and imports what the stubs use.
import pathlib
import sys

sys.path.insert(0, str(next(p for p in [pathlib.Path.cwd(), *pathlib.Path.cwd().parents] if (p / "kata").is_dir())))

import numpy as np

import kata
from kata.learner.notebook import yours

CHAPTER = 13  # kata.check() checks this chapter's functions
# The chapter's constants and the earlier chapters' functions it uses: yours, from exercises/ or your notebooks
causal_mask, scaled_dot_product_attention, attention_backward, linear_backward, merge_heads, split_heads, apply_rope, rope_backward, ATTENTION_KEYS, BLOCK_KEYS = yours(CHAPTER, "causal_mask", "scaled_dot_product_attention", "attention_backward", "linear_backward", "merge_heads", "split_heads", "apply_rope", "rope_backward", "ATTENTION_KEYS", "BLOCK_KEYS")

# %% [markdown]
# <!-- kata:page-section "The idea" -->

# %% [markdown]
# <!-- kata:page-section "Why pre-norm: the gradient has a straight road" -->

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
# ### `rms_norm` — step 13.1

# %%
# kata:stub rms_norm

# %%
kata.check(rms_norm)

# %% [markdown]
# ### `rms_norm_backward` — step 13.3

# %%
# kata:stub rms_norm_backward

# %%
kata.check(rms_norm_backward)

# %% [markdown]
# ### `silu` — step 13.4

# %%
# kata:stub silu

# %%
kata.check(silu)

# %% [markdown]
# ### `silu_backward` — step 13.5

# %%
# kata:stub silu_backward

# %%
kata.check(silu_backward)

# %% [markdown]
# ### `swiglu` — step 13.6

# %%
# kata:stub swiglu

# %%
kata.check(swiglu)

# %% [markdown]
# ### `swiglu_backward` — step 13.7

# %%
# kata:stub swiglu_backward

# %%
kata.check(swiglu_backward)

# %% [markdown]
# ### `rope_multi_head_attention` — step 13.8

# %%
# kata:stub rope_multi_head_attention

# %%
kata.check(rope_multi_head_attention)

# %% [markdown]
# ### `prenorm_block` — step 13.9

# %%
# kata:stub prenorm_block

# %%
kata.check(prenorm_block)

# %% [markdown]
# ### `rope_multi_head_attention_backward` — step 13.10

# %%
# kata:stub rope_multi_head_attention_backward

# %%
kata.check(rope_multi_head_attention_backward)

# %% [markdown]
# ### `prenorm_block_backward` — step 13.11

# %%
# kata:stub prenorm_block_backward

# %%
kata.check(prenorm_block_backward)

# %% [markdown]
# ## The whole chapter
#
# Every step and check of chapter 13, as `nox -s chapter13` shows them. Your answers count where you save them: `nox -s grade -- --notebooks` grades the saved notebooks.

# %%
kata.check()
