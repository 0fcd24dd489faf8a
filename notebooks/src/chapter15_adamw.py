# %% [markdown]
# # Chapter 15 — AdamW, a Learning-Rate Schedule, Clipping and Checkpoints
#
# The notebook way through chapter 15: read, work the worksheet with a pencil, then fill in each function below
# and run the check cell under it (`kata.check(...)`): the same steps, worksheet numbers and diagnoses as `nox
# -s chapter15`. Run the cells in order, starting with the next one. The whole page, with hints and common
# mistakes: [docs/chapters/15-adamw.md](../docs/chapters/15-adamw.md).

# %%
# Run this first: it finds the course folder (the one holding kata/) and imports what the stubs use.
import pathlib
import sys

sys.path.insert(0, str(next(p for p in [pathlib.Path.cwd(), *pathlib.Path.cwd().parents] if (p / "kata").is_dir())))

import math
import numpy as np

import kata
from kata.learner.notebook import yours

CHAPTER = 15  # kata.check() checks this chapter's functions
# The chapter's constants and the earlier chapters' functions it uses: yours, from exercises/ or your notebooks
FORMAT = yours(CHAPTER, "FORMAT")

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
# ### `adamw_init` — step 15.1

# %%
# kata:stub adamw_init

# %%
kata.check(adamw_init)

# %% [markdown]
# ### `adamw_step` — step 15.1

# %%
# kata:stub adamw_step

# %%
kata.check(adamw_step)

# %% [markdown]
# ### `lr_at` — step 15.3

# %%
# kata:stub lr_at

# %%
kata.check(lr_at)

# %% [markdown]
# ### `clip_by_global_norm` — step 15.5

# %%
# kata:stub clip_by_global_norm

# %%
kata.check(clip_by_global_norm)

# %% [markdown]
# ### `save_checkpoint` — step 15.7

# %%
# kata:stub save_checkpoint

# %%
kata.check(save_checkpoint)

# %% [markdown]
# ### `load_checkpoint` — step 15.7

# %%
# kata:stub load_checkpoint

# %%
kata.check(load_checkpoint)

# %% [markdown]
# ## The whole chapter
#
# Every step and check of chapter 15, as `nox -s chapter15` shows them. Your answers count where you save them: `nox -s grade -- --notebooks` grades the saved notebooks.

# %%
kata.check()
