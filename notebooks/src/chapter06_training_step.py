# %% [markdown]
# # Chapter 6 — One Training Step
#
# The notebook way through chapter 6: read, work the worksheet with a pencil, then fill in each function below
# and run the check cell under it (`kata.check(...)`): the same steps, worksheet numbers and diagnoses as `nox
# -s chapter6`. Run the cells in order, starting with the next one. The whole page, with hints and common
# mistakes: [docs/chapters/06-training-step.md](../docs/chapters/06-training-step.md).

# %%
# Run this first: it finds the course folder (the one holding kata/) and imports what the stubs use.
import pathlib
import sys

sys.path.insert(0, str(next(p for p in [pathlib.Path.cwd(), *pathlib.Path.cwd().parents] if (p / "kata").is_dir())))

import numpy as np

import kata
from kata.learner.notebook import yours

CHAPTER = 6  # kata.check() checks this chapter's functions
# The chapter's constants and the earlier chapters' functions it uses: yours, from exercises/ or your notebooks
forward = yours(CHAPTER, "forward")

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
# ### `cross_entropy` — step 6.1

# %%
# kata:stub cross_entropy

# %%
kata.check(cross_entropy)

# %% [markdown]
# ### `cross_entropy_grad` — step 6.2

# %%
# kata:stub cross_entropy_grad

# %%
kata.check(cross_entropy_grad)

# %% [markdown]
# ### `output_backward` — step 6.3

# %%
# kata:stub output_backward

# %%
kata.check(output_backward)

# %% [markdown]
# ### `sgd_step` — step 6.5

# %%
# kata:stub sgd_step

# %%
kata.check(sgd_step)

# %% [markdown]
# ### `train_output_step` — step 6.6

# %%
# kata:stub train_output_step

# %%
kata.check(train_output_step)

# %% [markdown]
# ## The whole chapter
#
# Every step and check of chapter 6, as `nox -s chapter6` shows them. Your answers count where you save them: `nox -s grade -- --notebooks` grades the saved notebooks.

# %%
kata.check()
