# %% [markdown]
# # Chapter 4 — Attention Intuition
#
# The notebook way through chapter 4: read, work the worksheet with a pencil, then fill in each function below
# and run the check cell under it (`kata.check(...)`): the same steps, worksheet numbers and diagnoses as `nox
# -s chapter4`. Run the cells in order, starting with the next one. The whole page, with hints and common
# mistakes: [docs/chapters/04-attention.md](../docs/chapters/04-attention.md).

# %%
# Run this first: it finds the course folder (the one holding kata/) and imports what the stubs use.
import pathlib
import sys

sys.path.insert(0, str(next(p for p in [pathlib.Path.cwd(), *pathlib.Path.cwd().parents] if (p / "kata").is_dir())))

import numpy as np

import kata

CHAPTER = 4  # kata.check() checks this chapter's functions

# %% [markdown]
# ## The idea
#
# Reading "the cat that I saw yesterday sat on the mat", the word *sat* needs *cat*, five words back.
# Attention lets every position look at every other position directly and decide, by itself, how much
# each one matters right now.
#
# Each position plays three roles, each one a row vector made from its embedding by a learned matrix:
#
# | role | asks | made by |
# | --- | --- | --- |
# | **query** $q_i$ | what am I looking for? | $Q = X W_Q$ |
# | **key** $k_j$ | what do I offer to a query? | $K = X W_K$ |
# | **value** $v_j$ | what do I hand over if chosen? | $V = X W_V$ |
#
# A query is compared with every key by a dot product — large when they point the same way. Softmax
# turns the comparisons into weights that are positive and sum to 1, and the position's output is the
# weighted average of the values. Keys decide *who* is read; values decide *what* is read. Keeping
# them apart lets a position be easy to find for one reason and useful for another.
#

# %% [markdown]
# ## The formulas
#
# Dot every query with every key:
#
# $$S = Q K^\top, \qquad S_{ij} = q_i \cdot k_j$$
#
# ```python
# S = Q @ K.T                           # (seq_q, d_k) @ (d_k, seq_k) -> (seq_q, seq_k)
# ```
#
# Scale by the square root of the key width $d_k$. Dot products of longer vectors grow larger; without the
# scaling, softmax would push almost all weight onto one position and its gradients would vanish:
#
# $$\tilde S = \frac{Q K^\top}{\sqrt{d_k}}$$
#
# ```python
# S = Q @ K.T / np.sqrt(K.shape[1])     # d_k = K.shape[1]
# ```
#
# Softmax along each row, stably — subtracting the row's maximum first cancels out mathematically but
# keeps `exp` from overflowing:
#
# $$\operatorname{softmax}(x)_i = \frac{e^{x_i - \max_j x_j}}{\sum_k e^{x_k - \max_j x_j}}$$
#
# ```python
# e = np.exp(x - x.max(axis=axis, keepdims=True))
# weights = e / e.sum(axis=axis, keepdims=True)
# ```
#
# In a language model a position must not read the future. A **causal mask** allows position $i$ to see
# positions $j \le i$; the forbidden scores become $-\infty$, so their weight is $e^{-\infty} = 0$:
#
# $$\operatorname{Attention}(Q, K, V) = \operatorname{softmax}\!\left(\frac{Q K^\top}{\sqrt{d_k}} + M\right) V,
# \qquad M_{ij} = \begin{cases} 0 & j \le i \\ -\infty & j > i \end{cases}$$
#
# ```python
# S = np.where(mask, S, -np.inf)        # masked: weight exp(-inf) = 0
# output = softmax(S) @ V               # (seq_q, seq_k) @ (seq_k, d_v) -> (seq_q, d_v)
# ```
#

# %% [markdown]
# ## The worksheet
#
# The book's Example 1 feeds "A B" through projections $W_Q = W_K = W_V = 0.1\,I$. With the embeddings
# A = [1, 0] and B = [0, 1], that gives
#
# $$Q = K = V = \begin{bmatrix} 0.1 & 0 \\ 0 & 0.1 \end{bmatrix}$$
#
# (row 0 is A, row 1 is B). Work out B's row by hand with a pencil, then compare:
#
# <!-- kata:worksheet 4 -->
#
# A few things to notice:
#
# - B's query [0, 0.1] is orthogonal to A's key [0.1, 0], so the raw score is exactly 0; against its own key
#   it is 0.1 × 0.1 = 0.01.
# - The two scaled scores differ by only 0.00707, so softmax gives almost ½ each: B gets a sliver more.
# - Because the values are the same vectors as the keys here, B's output is almost [0.05, 0.05]: half of
#   each value.
# - Position A (row 0) may look only at itself, so its weight on itself is 1 and its output is simply its
#   own value [0.1, 0]. The worksheet only computes B's row; step 4.6 checks both.
#
# The causal weights for "A B" as a picture — rows are queries, columns are keys, and the upper triangle is
# masked to 0:
#
#
# > **Why the tests pin more digits than the worksheet prints.**
# > Forget the 1/√d_k and the weights come out [0.4975, 0.5025] instead of [0.4982, 0.5018]. Rounded to
# > three decimals like the worksheet, both read "≈ 0.498 / 0.502". The tests compare with the exact
# > float64 values (relative tolerance 10⁻⁶), so that mistake cannot hide behind rounding.
#

# %% [markdown]
# ## Your turn
#
# Each function's docstring is its full specification, shapes included. Replace the `raise
# NotImplementedError(...)` with your code, run the cell, then run the check under it: ✓ passed, ✗ failed, · not
# started.

# %% [markdown]
# ### `softmax` — step 4.3

# %%
# kata:stub softmax

# %%
kata.check(softmax)

# %% [markdown]
# ### `raw_scores` — step 4.1

# %%
# kata:stub raw_scores

# %%
kata.check(raw_scores)

# %% [markdown]
# ### `attention_scores` — step 4.2

# %%
# kata:stub attention_scores

# %%
kata.check(attention_scores)

# %% [markdown]
# ### `causal_mask` — step 4.5

# %%
# kata:stub causal_mask

# %%
kata.check(causal_mask)

# %% [markdown]
# ### `scaled_dot_product_attention` — step 4.4/4.6

# %%
# kata:stub scaled_dot_product_attention

# %%
kata.check(scaled_dot_product_attention)

# %% [markdown]
# ## The whole chapter
#
# Every step and check of chapter 4, as `nox -s chapter4` shows them. Your answers count where you save them: `nox -s grade -- --notebooks` grades the saved notebooks.

# %%
kata.check()
