# %% [markdown]
# # Chapter 1 — Why Transformers?
#
# The notebook way through chapter 1: read, work the worksheet with a pencil, then fill in each function below
# and run the check cell under it (`kata.check(...)`): the same steps, worksheet numbers and diagnoses as `nox
# -s chapter1`. Run the cells in order, starting with the next one. The whole page, with hints and common
# mistakes: [docs/chapters/01-sequences.md](../docs/chapters/01-sequences.md).

# %%
# Run this first: it finds the course folder (the one holding kata/) and imports what the stubs use.
import pathlib
import sys

sys.path.insert(0, str(next(p for p in [pathlib.Path.cwd(), *pathlib.Path.cwd().parents] if (p / "kata").is_dir())))


import kata
from kata.learner.notebook import yours

CHAPTER = 1  # kata.check() checks this chapter's functions
# The chapter's constants and the earlier chapters' functions it uses: yours, from exercises/ or your notebooks
VOCAB = yours(CHAPTER, "VOCAB")

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
# ### `encode` — step 1.1

# %%
# kata:stub encode

# %%
kata.check(encode)

# %% [markdown]
# ### `decode` — step 1.2

# %%
# kata:stub decode

# %%
kata.check(decode)

# %% [markdown]
# ### `next_token_examples` — step 1.3

# %%
# kata:stub next_token_examples

# %%
kata.check(next_token_examples)

# %% [markdown]
# ### `rnn_distance` — step 1.4

# %%
# kata:stub rnn_distance

# %%
kata.check(rnn_distance)

# %% [markdown]
# ### `attention_distance` — step 1.5

# %%
# kata:stub attention_distance

# %%
kata.check(attention_distance)

# %% [markdown]
# ### `causal_pair_count` — step 1.6

# %%
# kata:stub causal_pair_count

# %%
kata.check(causal_pair_count)

# %% [markdown]
# ## The whole chapter
#
# Every step and check of chapter 1, as `nox -s chapter1` shows them. Your answers count where you save them: `nox -s grade -- --notebooks` grades the saved notebooks.

# %%
kata.check()
