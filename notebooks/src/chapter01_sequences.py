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
# ## The idea
#
# A language model does one thing over and over: it reads the tokens so far and predicts the next one.
# Translation, autocomplete, answering questions — all of them can be phrased as "given this sequence,
# what comes next?". That is **sequence modelling**.
#
# The hard part is distance. In "The cat that I saw yesterday sat on the mat", the verb *sat* belongs to
# *cat*, five words earlier. A model has to carry *cat* across everything in between.
#
# **Recurrent networks** (RNNs) read one token at a time and pass a hidden state along, like a note handed
# down a line of people. Information from *cat* reaches *sat* only after five hand-overs, getting fainter
# each time, and the hand-overs cannot happen in parallel.
#
# **Attention** lets every position look at every other position directly. *Sat* reads *cat* in a single
# step, whatever the distance, and all positions do their reading at the same time. The price: scoring
# every pair of positions. In a language model, a position may read only itself and the past (it must not
# peek at the token it is predicting), so position $i$ scores $i + 1$ pairs.
#
# Throughout the course the vocabulary is four tokens, small enough for a pencil:
#
# | token | A | B | C | D |
# | --- | --- | --- | --- | --- |
# | id | 0 | 1 | 2 | 3 |
#

# %% [markdown]
# ## The formulas
#
# A sequence of $n$ tokens gives $n - 1$ next-token examples — every prefix predicts the token after it:
#
# $$(x_1) \to x_2,\quad (x_1, x_2) \to x_3,\quad \dots,\quad (x_1, \dots, x_{n-1}) \to x_n$$
#
# ```python
# [(ids[:k], ids[k]) for k in range(1, len(ids))]
# ```
#
# Hops between positions $i$ and $j$:
#
# $$\text{RNN: } |i - j| \qquad\qquad \text{attention: } \begin{cases} 0 & i = j \\ 1 & i \neq j \end{cases}$$
#
# Pairs causal attention scores for $n$ tokens:
#
# $$1 + 2 + \dots + n = \frac{n(n+1)}{2}$$
#

# %% [markdown]
# ## The worksheet
#
# The book's first chapter is prose, so this worksheet is made from its facts: the four-token vocabulary,
# the next-token task, and the *cat … sat* sentence.
#
# <!-- kata:worksheet 1 -->
#

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
