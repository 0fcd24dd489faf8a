# %% [markdown]
# # Chapter 14 — Byte-Pair Encoding
#
# The notebook way through chapter 14: read, work the worksheet with a pencil, then fill in each function below
# and run the check cell under it (`kata.check(...)`): the same steps, worksheet numbers and diagnoses as `nox
# -s chapter14`. Run the cells in order, starting with the next one. The whole page, with hints and common
# mistakes: [docs/chapters/14-bpe.md](../docs/chapters/14-bpe.md).

# %%
# Run this first: it finds the course folder (the one holding kata/) and imports what the stubs use.
import pathlib
import sys

sys.path.insert(0, str(next(p for p in [pathlib.Path.cwd(), *pathlib.Path.cwd().parents] if (p / "kata").is_dir())))

import heapq
from itertools import pairwise

import kata
from kata.learner.notebook import yours

CHAPTER = 14  # kata.check() checks this chapter's functions
# The chapter's constants and the earlier chapters' functions it uses: yours, from exercises/ or your notebooks
N_BYTES = yours(CHAPTER, "N_BYTES")

# %% [markdown]
# <!-- kata:page-section "The idea" -->

# %% [markdown]
# <!-- kata:page-section "The formulas" -->

# %% [markdown]
# <!-- kata:page-section "The worksheet" -->

# %% [markdown]
# ## Your turn
#
# Each function's docstring is its full specification. Replace the `raise
# NotImplementedError(...)` with your code, run the cell, then run the check under it: ✓ passed, ✗ failed, · not
# started, ⧗ timed out, ! error (crashed or does not import).

# %% [markdown]
# ### `to_byte_ids` — step 14.1

# %%
# kata:stub to_byte_ids

# %%
kata.check(to_byte_ids)

# %% [markdown]
# ### `count_pairs` — step 14.2

# %%
# kata:stub count_pairs

# %%
kata.check(count_pairs)

# %% [markdown]
# ### `most_frequent_pair` — step 14.3

# %%
# kata:stub most_frequent_pair

# %%
kata.check(most_frequent_pair)

# %% [markdown]
# ### `merge_pair` — step 14.4

# %%
# kata:stub merge_pair

# %%
kata.check(merge_pair)

# %% [markdown]
# ### `train_bpe` — step 14.5

# %%
# kata:stub train_bpe

# %%
kata.check(train_bpe)

# %% [markdown]
# ### `build_vocab` — step 14.6

# %%
# kata:stub build_vocab

# %%
kata.check(build_vocab)

# %% [markdown]
# ### `encode` — step 14.7

# %%
# kata:stub encode

# %%
kata.check(encode)

# %% [markdown]
# ### `decode` — step 14.8

# %%
# kata:stub decode

# %%
kata.check(decode)

# %% [markdown]
# ## The whole chapter
#
# Every step and check of chapter 14, as `nox -s chapter14` shows them. Your answers count where you save them: `nox -s grade -- --notebooks` grades the saved notebooks.

# %%
kata.check()
