# %% [markdown]
# # Chapter 5 — The Forward Pass
#
# The notebook way through chapter 5: read, work the worksheet with a pencil, then fill in each function below
# and run the check cell under it (`kata.check(...)`): the same steps, worksheet numbers and diagnoses as `nox
# -s chapter5`. Run the cells in order, starting with the next one. The whole page, with hints and common
# mistakes: [docs/chapters/05-forward-pass.md](../docs/chapters/05-forward-pass.md).

# %%
# Run this first: it finds the course folder (the one holding kata/) and imports what the stubs use.
import pathlib
import sys

sys.path.insert(0, str(next(p for p in [pathlib.Path.cwd(), *pathlib.Path.cwd().parents] if (p / "kata").is_dir())))

import numpy as np

import kata
from kata.learner.notebook import yours

CHAPTER = 5  # kata.check() checks this chapter's functions
# The chapter's constants and the earlier chapters' functions it uses: yours, from exercises/ or your notebooks
TOY_EMBEDDINGS, embed, attention_scores, causal_mask, raw_scores, scaled_dot_product_attention, softmax, PARAM_NAMES = yours(
    CHAPTER, "TOY_EMBEDDINGS", "embed", "attention_scores", "causal_mask", "raw_scores", "scaled_dot_product_attention", "softmax", "PARAM_NAMES")

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
# ### `toy_params` — step 5.1

# %%
# kata:stub toy_params

# %%
kata.check(toy_params)

# %% [markdown]
# ### `project_qkv` — step 5.3

# %%
# kata:stub project_qkv

# %%
kata.check(project_qkv)

# %% [markdown]
# ### `forward` — step 5.2

# %%
# kata:stub forward

# %%
kata.check(forward)

# %% [markdown]
# ### `next_token_probs` — step 5.8

# %%
# kata:stub next_token_probs

# %%
kata.check(next_token_probs)

# %% [markdown]
# ## The whole chapter
#
# Every step and check of chapter 5, as `nox -s chapter5` shows them. Your answers count where you save them: `nox -s grade -- --notebooks` grades the saved notebooks.

# %%
kata.check()
