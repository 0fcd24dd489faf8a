# %% [markdown]
# # Chapter 16 — Sampling and the KV Cache
#
# The notebook way through chapter 16: read, work the worksheet with a pencil, then fill in each function below
# and run the check cell under it (`kata.check(...)`): the same steps, worksheet numbers and diagnoses as `nox
# -s chapter16`. Run the cells in order, starting with the next one. The whole page, with hints and common
# mistakes: [docs/chapters/16-sampling.md](../docs/chapters/16-sampling.md).

# %%
# Run this first: it finds the course folder (the one holding kata/) and imports what the stubs use.
import pathlib
import sys

sys.path.insert(0, str(next(p for p in [pathlib.Path.cwd(), *pathlib.Path.cwd().parents] if (p / "kata").is_dir())))

import math
import numpy as np

import kata
from kata.learner.notebook import yours

CHAPTER = 16  # kata.check() checks this chapter's functions
# The chapter's constants and the earlier chapters' functions it uses: yours, from exercises/ or your notebooks
scaled_dot_product_attention, softmax, merge_heads, split_heads, apply_rope, BLOCK_KEYS, rms_norm, swiglu, ATTENTION_KEYS, MODEL_KEYS = yours(CHAPTER, "scaled_dot_product_attention", "softmax", "merge_heads", "split_heads", "apply_rope", "BLOCK_KEYS", "rms_norm", "swiglu", "ATTENTION_KEYS", "MODEL_KEYS")

# %% [markdown]
# <!-- kata:page-section "The idea" -->

# %% [markdown]
# <!-- kata:page-section "Conventions, stated once" -->

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
# ### `softmax_with_temperature` — step 16.1

# %%
# kata:stub softmax_with_temperature

# %%
kata.check(softmax_with_temperature)

# %% [markdown]
# ### `top_k_filter` — step 16.2

# %%
# kata:stub top_k_filter

# %%
kata.check(top_k_filter)

# %% [markdown]
# ### `top_p_filter` — step 16.3

# %%
# kata:stub top_p_filter

# %%
kata.check(top_p_filter)

# %% [markdown]
# ### `sample_index` — step 16.4

# %%
# kata:stub sample_index

# %%
kata.check(sample_index)

# %% [markdown]
# ### `choose_next` — step 16.5

# %%
# kata:stub choose_next

# %%
kata.check(choose_next)

# %% [markdown]
# ### `attention_with_cache` — step 16.6

# %%
# kata:stub attention_with_cache

# %%
kata.check(attention_with_cache)

# %% [markdown]
# ### `block_with_cache` — step 16.7

# %%
# kata:stub block_with_cache

# %%
kata.check(block_with_cache)

# %% [markdown]
# ### `gpt_forward` — step 16.8

# %%
# kata:stub gpt_forward

# %%
kata.check(gpt_forward)

# %% [markdown]
# ### `generate` — step 16.9

# %%
# kata:stub generate

# %%
kata.check(generate)

# %% [markdown]
# ## The whole chapter
#
# Every step and check of chapter 16, as `nox -s chapter16` shows them. Your answers count where you save them: `nox -s grade -- --notebooks` grades the saved notebooks.

# %%
kata.check()
