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
# ## The idea
#
# A **forward pass** is one prediction. Token ids go in, a probability for every token of the vocabulary
# comes out. Nothing is learned yet; the weights are fixed, and the point is to see every number on the way.
#
# Each piece is an old friend. Chapter 3 turned ids into rows of an embedding table; chapter 4 let each
# position gather information from the positions it may see. This chapter adds the last two links:
#
# - the **context**: after attention, the row of the *last* position summarises the whole input as that
#   position sees it. It is the one that predicts what comes next;
# - the **output layer**: a matrix $W_O$ scores the context against every token of the vocabulary, and a
#   softmax turns the scores (the **logits**) into probabilities.
#
# ```mermaid
# flowchart LR
#     ids["ids<br/>'A B' → [0, 1]"] --> E["embed<br/>X (seq, d_model)"]
#     E --> Q["Q = X W_Q"]
#     E --> K["K = X W_K"]
#     E --> V["V = X W_V"]
#     Q --> S["scores<br/>Q Kᵀ / √d_k"]
#     K --> S
#     S --> M["causal softmax<br/>weights (seq, seq)"]
#     M --> O["output = weights V<br/>(seq, d_v)"]
#     V --> O
#     O --> C["context<br/>last row (d_v,)"]
#     C --> Z["logits = context W_O<br/>(vocab,)"]
#     Z --> P["probs = softmax(logits)"]
# ```
#
# > **Two modelling choices this course makes explicit.**
# > The book's Example 1 uses a 2×2 $W_O$ and then maps 2 context numbers to 4 logits by a rule written in
# > prose. Here that rule *is* the matrix:
# >
# > $$W_O = \begin{bmatrix} 0.1 & 0 & 0 & 0 \\ 0 & 0 & 0.1 & 0 \end{bmatrix}$$
# >
# > It has one row per context entry and one column per token (A, B, C, D), so `logits = context @ W_O`
# > is an ordinary matrix product and its gradient in chapter 6 is an ordinary outer product. The
# > worksheet's logits come out unchanged.
# >
# > Attention is **causal**: a position sees itself and the positions before it, never after. The
# > worksheet only works out position 1 (B); position 0 (A) sees only itself. The context that predicts
# > the next token is the attention output at the **last** position.
#

# %% [markdown]
# ## The formulas
#
# Look up each token's row, then project every row three ways (chapter 4's queries, keys and values):
#
# $$X = E[\text{ids}], \qquad Q = X W_Q, \quad K = X W_K, \quad V = X W_V$$
#
# ```python
# X = embed(ids, table)                       # (seq, d_model)
# Q, K, V = X @ WQ, X @ WK, X @ WV            # (seq, d_k), (seq, d_k), (seq, d_v)
# ```
#
# Causal scaled dot-product attention, exactly as in chapter 4:
#
# $$\text{output} = \operatorname{softmax}\!\left(\frac{Q K^\top}{\sqrt{d_k}} + M\right) V,
# \qquad M_{ij} = \begin{cases} 0 & j \le i \\ -\infty & j > i \end{cases}$$
#
# ```python
# output, weights = scaled_dot_product_attention(Q, K, V, mask=causal_mask(len(X)))
# ```
#
# The context is the last row, and the output layer turns it into one logit per token:
#
# $$c = \text{output}_{\,\text{seq}-1}, \qquad z = c\,W_O, \qquad z_j = \sum_i c_i\,(W_O)_{ij}$$
#
# ```python
# context = output[-1]                        # (d_v,)  the last position predicts the next token
# logits = context @ WO                       # (d_v,) @ (d_v, vocab) -> (vocab,)
# ```
#
# Softmax over the vocabulary gives the prediction:
#
# $$p_j = \frac{e^{z_j - \max z}}{\sum_k e^{z_k - \max z}}$$
#
# ```python
# probs = softmax(logits)                     # (vocab,), positive, sums to 1
# ```
#
# `forward` returns all of these in a dict — `X`, `Q`, `K`, `V`, `raw_scores`, `scores`, `weights`,
# `output`, `context`, `logits`, `probs` — so that you can put your pencil worksheet next to it.
#

# %% [markdown]
# ## The worksheet
#
# The book's Example 1: the input "A B", the embeddings A = [1, 0], B = [0, 1], C = [1, 1], D = [0, 0], and
# $W_Q = W_K = W_V = 0.1\,I$. Work each line by hand first, then compare:
#
# <!-- kata:worksheet 5 -->
#
# Things to notice:
#
# - With an identity $X$, the projections copy their matrices; all of $Q$, $K$, $V$ are the same.
# - B's scores against A and against itself differ by only a few thousandths, so B spreads its attention
#   almost evenly, and its context is nearly half of each value.
# - Only A's and C's columns of $W_O$ are nonzero, so B and D get a logit of exactly 0, and every
#   probability is within a hair of one quarter. The model has not learned anything yet: the point of
#   chapter 6 is to change that.
# - Rounded to three places, the worksheet shows C ahead of A. In exact arithmetic they are tied to the fifth
#   decimal place; see the note on step 5.8 below.
#

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
