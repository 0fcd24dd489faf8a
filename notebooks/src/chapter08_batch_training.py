# %% [markdown]
# # Chapter 8 — Batch Training
#
# The notebook way through chapter 8: read, work the worksheet with a pencil, then fill in each function below
# and run the check cell under it (`kata.check(...)`): the same steps, worksheet numbers and diagnoses as `nox
# -s chapter8`. Run the cells in order, starting with the next one. The whole page, with hints and common
# mistakes: [docs/chapters/08-batch-training.md](../docs/chapters/08-batch-training.md).

# %%
# Run this first: it finds the course folder (the one holding kata/) and imports what the stubs use.
import pathlib
import sys

sys.path.insert(0, str(next(p for p in [pathlib.Path.cwd(), *pathlib.Path.cwd().parents] if (p / "kata").is_dir())))

import numpy as np

import kata
from kata.learner.notebook import yours

CHAPTER = 8  # kata.check() checks this chapter's functions
# The chapter's constants and the earlier chapters' functions it uses: yours, from exercises/ or your notebooks
PARAM_NAMES, forward, cross_entropy, cross_entropy_grad, output_backward, sgd_step, backward = yours(CHAPTER, "PARAM_NAMES", "forward", "cross_entropy", "cross_entropy_grad", "output_backward", "sgd_step", "backward")

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
# ### `per_example` — step 8.1

# %%
# kata:stub per_example

# %%
kata.check(per_example)

# %% [markdown]
# ### `batch_loss` — step 8.5

# %%
# kata:stub batch_loss

# %%
kata.check(batch_loss)

# %% [markdown]
# ### `batch_gradients` — step 8.9

# %%
# kata:stub batch_gradients

# %%
kata.check(batch_gradients)

# %% [markdown]
# ### `apply_gradients` — step 8.10

# %%
# kata:stub apply_gradients

# %%
kata.check(apply_gradients)

# %% [markdown]
# ### `train` — step 8.14

# %%
# kata:stub train

# %%
kata.check(train)

# %% [markdown]
# ### `accuracy` — step 8.15

# %%
# kata:stub accuracy

# %%
kata.check(accuracy)

# %% [markdown]
# ## The whole chapter
#
# Every step and check of chapter 8, as `nox -s chapter8` shows them. Your answers count where you save them: `nox -s grade -- --notebooks` grades the saved notebooks.

# %%
kata.check()
