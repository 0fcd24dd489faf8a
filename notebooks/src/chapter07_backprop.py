# %% [markdown]
# # Chapter 7 — Backpropagation
#
# The notebook way through chapter 7: read, work the worksheet with a pencil, then fill in each function below
# and run the check cell under it (`kata.check(...)`): the same steps, worksheet numbers and diagnoses as `nox
# -s chapter7`. Run the cells in order, starting with the next one. The whole page, with hints and common
# mistakes: [docs/chapters/07-backprop.md](../docs/chapters/07-backprop.md).

# %%
# Run this first: it finds the course folder (the one holding kata/) and imports what the stubs use.
import pathlib
import sys

sys.path.insert(0, str(next(p for p in [pathlib.Path.cwd(), *pathlib.Path.cwd().parents] if (p / "kata").is_dir())))

import numpy as np

import kata
from kata.learner.notebook import yours

CHAPTER = 7  # kata.check() checks this chapter's functions
# The chapter's constants and the earlier chapters' functions it uses: yours, from exercises/ or your notebooks
PARAM_NAMES, forward, cross_entropy, cross_entropy_grad, sgd_step = yours(CHAPTER, "PARAM_NAMES", "forward", "cross_entropy", "cross_entropy_grad", "sgd_step")

# %% [markdown]
# <!-- kata:page-section "The idea" -->

# %% [markdown]
# <!-- kata:page-section "The formulas" -->

# %% [markdown]
# <!-- kata:page-section "The chain rule, backwards, one line per step" -->

# %% [markdown]
# <!-- kata:page-section "The worksheet" -->

# %% [markdown]
# ## Your turn
#
# Each function's docstring is its full specification, shapes included. Replace the `raise
# NotImplementedError(...)` with your code, run the cell, then run the check under it: ✓ passed, ✗ failed, · not
# started.

# %% [markdown]
# ### `softmax_backward` — step 7.7

# %%
# kata:stub softmax_backward

# %%
kata.check(softmax_backward)

# %% [markdown]
# ### `linear_backward` — step 7.2

# %%
# kata:stub linear_backward

# %%
kata.check(linear_backward)

# %% [markdown]
# ### `attention_backward` — step 7.9

# %%
# kata:stub attention_backward

# %%
kata.check(attention_backward)

# %% [markdown]
# ### `backward_trace` — step 7.1

# %%
# kata:stub backward_trace

# %%
kata.check(backward_trace)

# %% [markdown]
# ### `backward` — step 7.12

# %%
# kata:stub backward

# %%
kata.check(backward)

# %% [markdown]
# ### `train_step` — step 7.15

# %%
# kata:stub train_step

# %%
kata.check(train_step)

# %% [markdown]
# ## The whole chapter
#
# Every step and check of chapter 7, as `nox -s chapter7` shows them. Your answers count where you save them: `nox -s grade -- --notebooks` grades the saved notebooks.

# %%
kata.check()
