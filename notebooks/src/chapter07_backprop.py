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
# ## The idea
#
# Chapter 6 trained only the output matrix $W_O$. The projections $W_Q$, $W_K$ and $W_V$ also shape the
# prediction: they decide what each position asks, what it offers and what it hands over. To train them,
# the loss's gradient has to travel past $W_O$, back through attention, to them.
#
# **Backpropagation** is the chain rule applied in the reverse order of the forward pass. Every operation
# needs only two things: the gradient arriving at its output, and its own *local* rule for passing that
# gradient to its inputs. Nothing has to be known about the rest of the network. Three local rules cover
# this whole model: one for a matrix product, one for a softmax, one for multiplying by a constant.
#
# The model is chapter 5's, with both of its choices stated again because the backward pass depends on them:
#
# - $W_O$ is an explicit 2×4 matrix, `[[0.1, 0, 0, 0], [0, 0, 0.1, 0]]`, so `logits = context @ WO` and
#   its gradient is an honest 2×4 matrix (the book's "simplified 2×2" $W_O$ is not a matrix you can multiply).
# - Attention is **causal** (a position sees itself and earlier positions) and the context is the attention
#   output at the **last** position. So the loss reads only the last row of the attention output, and only
#   that row sends a gradient back.
#
# The forward pass, with every intermediate named the way the code names it:
#
# ```mermaid
# flowchart LR
#     ids["ids: A B"] --> X["X<br/>embeddings"]
#     X -- "@ W_Q" --> Q
#     X -- "@ W_K" --> K
#     X -- "@ W_V" --> V
#     Q --> R["R = Q Kᵀ<br/>raw scores"]
#     K --> R
#     R -- "÷ √d_k" --> S["S<br/>scaled scores"]
#     S -- "causal softmax" --> A["A<br/>weights"]
#     A --> H["H = A V<br/>output"]
#     V --> H
#     H -- "last row" --> c["context c"]
#     c -- "@ W_O" --> z["logits z"]
#     z -- "softmax" --> p["probs p"]
#     p --> L["loss L = −log p_C"]
#     style L fill:#ffcdd2
# ```
#
# The gradients flow the same edges in reverse. Each arrow is one step of the worksheet; where the forward
# pass forked (X feeds Q, K and V; Q and K both feed R), the gradients arrive separately:
#
# ```mermaid
# flowchart RL
#     L["L"] -- "7.1: p − onehot(C)" --> dz["dL/dz"]
#     dz -- "7.2: cᵀ dz" --> dWO["dW_O"]
#     dz -- "7.3: dz W_Oᵀ" --> dc["dL/dc"]
#     dc -- "7.4: into the last row" --> dH["dL/dH"]
#     dH -- "7.5: dH Vᵀ" --> dA["dL/dA"]
#     dH -- "7.11: Aᵀ dH" --> dV["dL/dV"]
#     dA -- "7.6–7.7: softmax backward" --> dS["dL/dS"]
#     dS -- "7.8: ÷ √d_k" --> dR["dL/dR"]
#     dR -- "7.9: dR K" --> dQ["dL/dQ"]
#     dR -- "7.10: dRᵀ Q" --> dK["dL/dK"]
#     dQ -- "7.12: Xᵀ dQ" --> dWQ["dW_Q"]
#     dK -- "7.13: Xᵀ dK" --> dWK["dW_K"]
#     dV -- "7.14: Xᵀ dV" --> dWV["dW_V"]
#     style dWO fill:#c8e6c9
#     style dWQ fill:#c8e6c9
#     style dWK fill:#c8e6c9
#     style dWV fill:#c8e6c9
# ```
#

# %% [markdown]
# ## The formulas
#
# ### Rule 1: a matrix product
#
# For $Y = X W$, each gradient has the shape of the matrix it belongs to, and that alone places the
# transposes (chapter 2):
#
# $$\frac{\partial L}{\partial X} = \frac{\partial L}{\partial Y}\, W^\top, \qquad
# \frac{\partial L}{\partial W} = X^\top\, \frac{\partial L}{\partial Y}$$
#
# ```python
# dX = dY @ W.T                         # (n, d_out) @ (d_out, d_in) -> (n, d_in), like X
# dW = X.T @ dY                         # (d_in, n) @ (n, d_out) -> (d_in, d_out), like W
# ```
#
# This one rule is used six times: for the logits $z = c\,W_O$ (the context as a one-row matrix), for the
# attention output $H = A V$ (the weights play $X$, the values play $W$), for the raw scores $R = Q K^\top$
# ($Q$ plays $X$, $K^\top$ plays $W$), and for the three projections $Q = X W_Q$, $K = X W_K$, $V = X W_V$.
#
# ### Rule 2: a softmax
#
# Each output $s_i$ of a softmax depends on every input $x_j$, through the shared normalising sum:
# $\partial s_i / \partial x_j = s_i(\delta_{ij} - s_j)$. Multiplying that Jacobian by the incoming
# gradient $g = \partial L / \partial s$ collapses into something much cheaper than building the matrix:
#
# $$\frac{\partial L}{\partial x_i} = \sum_j g_j\, s_j(\delta_{ij} - s_i) = s_i\Big(g_i - \sum_j s_j\, g_j\Big)$$
#
# Subtract the probability-weighted average of the gradient, then multiply by the probability:
#
# ```python
# dot = np.sum(s * g, axis=-1, keepdims=True)   # (..., 1): one average per row
# dx = s * (g - dot)                            # (..., n); every row sums to 0
# ```
#
# A masked position has $s_i = 0$, so it gets no gradient, exactly as it had no influence.
#
# ### Rule 3: a constant factor
#
# The forward pass divided the raw scores by $\sqrt{d_k}$: $S = R / \sqrt{d_k}$. A constant factor passes
# through the chain rule unchanged, so backward divides **again** — it does not undo the division:
#
# $$\frac{\partial L}{\partial R} = \frac{1}{\sqrt{d_k}}\,\frac{\partial L}{\partial S}$$
#
# ```python
# d_raw = d_scores / np.sqrt(d_k)       # the same 1/√d_k as forward, not √d_k
# ```
#
# ### Attention, backwards
#
# Putting the three rules together in reverse order gives `attention_backward`:
#
# ```python
# d_weights, dV = linear_backward(A, V, dH)          # H = A V
# d_scores = softmax_backward(A, d_weights)          # A = softmax(S + mask), row by row
# d_raw = d_scores / np.sqrt(d_k)                    # S = R / sqrt(d_k)
# dQ, dK_T = linear_backward(Q, K.T, d_raw)          # R = Q Kᵀ
# dK = dK_T.T                                        # (seq, d_k), like K
# ```
#
# And the update, for each of the four matrices, is chapter 6's step: $W \leftarrow W - \eta\, \partial L / \partial W$.
#

# %% [markdown]
# ## The chain rule, backwards, one line per step
#
# The whole backward pass of the worksheet, from the loss to the new weights. Read it top to bottom with
# the forward diagram in mind; each line uses only the line before it and one thing the forward pass kept.
#
# | step | gradient | local rule |
# | --- | --- | --- |
# | [7.1](#step-7-1) | $dz = p - \mathrm{onehot}(C)$ | softmax + cross-entropy (chapter 6) |
# | [7.2](#step-7-2) | $dW_O = c^\top dz$ | rule 1, weights side |
# | [7.3](#step-7-3) | $dc = dz\, W_O^\top$ | rule 1, input side |
# | [7.4](#step-7-4) | $dH = [\,0;\ dc\,]$ | the context is $H$'s last row; the other rows are unread |
# | [7.5](#step-7-5) | $dA = dH\, V^\top$ | rule 1 on $H = A V$ |
# | [7.6](#step-7-6) | $\textstyle\sum_j s_j\, dA_j$ | rule 2, the average |
# | [7.7](#step-7-7) | $dS = A \odot (dA - \text{average})$ | rule 2 |
# | [7.8](#step-7-8) | $dR = dS / \sqrt{d_k}$ | rule 3 |
# | [7.9](#step-7-9) | $dQ = dR\, K$ | rule 1 on $R = Q K^\top$ |
# | [7.10](#step-7-10) | $dK = dR^\top Q$ | rule 1 on $R = Q K^\top$ |
# | [7.11](#step-7-11) | $dV = A^\top dH$ | rule 1 on $H = A V$ |
# | [7.12](#step-7-12)–[7.14](#step-7-14) | $dW_Q = X^\top dQ$, $dW_K = X^\top dK$, $dW_V = X^\top dV$ | rule 1 on the projections |
# | [7.15](#step-7-15)–[7.18](#step-7-18) | $W \leftarrow W - \eta\, dW$ | gradient descent |
# | [7.19](#step-7-19) | the loss before and after | a fresh forward pass |
#

# %% [markdown]
# ## The worksheet
#
# The book's Example 3: input "A B", target C (id 2), learning rate $\eta = 0.1$, $W_Q = W_K = W_V = 0.1\,I$
# and the 2×4 $W_O$ above. From chapter 5, the forward pass left $Q = K = V = 0.1\,I$, the causal weights
#
# $$A = \begin{bmatrix} 1 & 0 \\ 0.498232 & 0.501768 \end{bmatrix}$$
#
# (A can see only itself), the context $c = [0.0498232, 0.0501768]$ and $p = [0.250621, 0.249375, 0.250629,
# 0.249375]$. Work each line by hand, then compare:
#
# <!-- kata:worksheet 7 -->
#
# Things to notice:
#
# - **Only B's query moves.** The loss reads only the last position, so only B's query (row 1 of $dQ$) gets a
#   gradient; A's query never influenced the prediction. Both *keys* do get a gradient, because B's query
#   looked at both, and both *values* too, weighted by how much B attended to each.
# - **The softmax passes very little.** With two almost equal weights, the softmax backward gives
#   $\pm s_0 s_1 (g_0 - g_1) \approx \pm\tfrac14 (g_0 - g_1)$, and the $1/\sqrt 2$ and the 0.1 in $K$ shrink it
#   further. $dW_V$ is about 200 times larger than $dW_Q$: the values feed the context directly, while queries
#   and keys act only through a nearly flat softmax.
# - **Each step's gradient has the shape of its matrix**, and row sums tell a story: every row of the
#   softmax backward sums to 0 (shifting all scores together changes nothing).
# - **A full step beats chapter 6's step.** After updating all four matrices, P(C) rises a little more than
#   when only $W_O$ learned (step 7.19's note): the extra matrices add their own small downhill moves.
# - The worksheet rounds to three or four digits and carries those rounded numbers forward, so from the
#   softmax backward on, its printed numbers drift by about 0.1%. Two of its slips are more than rounding: the
#   gradient labels around the $1/\sqrt{d_k}$ are swapped, and its $dV$ uses a "simplified" transpose of the
#   weights. See the errata.
#
# > **Why the tests pin exact values.**
# > The gradients here are tiny (about $10^{-4}$ for $dW_Q$) and the classic mistakes change them by a
# > constant factor: forgetting the $1/\sqrt{d_k}$ makes $dQ$ $\sqrt 2$ times too large, "unscaling" by
# > $\sqrt{d_k}$ makes it twice too large. The tests compare with the exact float64 values and, beyond the
# > worksheet, with central-difference gradients of a forward pass written in the test, on random models
# > with 3 to 6 positions and widths other than 2.
#

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
