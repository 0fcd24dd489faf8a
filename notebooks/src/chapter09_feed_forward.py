# %% [markdown]
# # Chapter 9 — Feed-Forward Layers
#
# The notebook way through chapter 9: read, work the worksheet with a pencil, then fill in each function below
# and run the check cell under it (`kata.check(...)`): the same steps, worksheet numbers and diagnoses as `nox
# -s chapter9`. Run the cells in order, starting with the next one. The whole page, with hints and common
# mistakes: [docs/chapters/09-feed-forward.md](../docs/chapters/09-feed-forward.md).

# %%
# Run this first: it finds the course folder (the one holding kata/) and imports what the stubs use.
import pathlib
import sys

sys.path.insert(0, str(next(p for p in [pathlib.Path.cwd(), *pathlib.Path.cwd().parents] if (p / "kata").is_dir())))

import numpy as np

import kata
from kata.learner.notebook import yours

CHAPTER = 9  # kata.check() checks this chapter's functions
# The chapter's constants and the earlier chapters' functions it uses: yours, from exercises/ or your notebooks
causal_mask, scaled_dot_product_attention = yours(CHAPTER, "causal_mask", "scaled_dot_product_attention")

# %% [markdown]
# ## The idea
#
# Attention is a mixer: each position's output is a weighted average of value vectors. Averages of
# linear maps are still linear in the values, so a stack of attention layers alone has a hard time
# computing anything that needs a *decision*, such as "if this feature is large, do that". A
# **feed-forward network** (FFN) supplies the decisions. It works on every position separately — no
# information moves between rows here — in three moves:
#
# 1. a linear layer $W_1$ spreads each row out over $d_\text{ff}$ hidden features,
# 2. **ReLU** keeps the positive hidden features and sets the negative ones to zero,
# 3. a second linear layer $W_2$ folds the surviving features back into $d_\text{model}$ numbers.
#
# Without step 2 the two matrices would multiply into one, $x W_1 W_2 = x (W_1 W_2)$, and the layer would add
# nothing a single matrix could not do. The zeroing is what makes it more than a matrix.
#
# Finally, a **residual connection** adds the layer's input back onto its output, $y = x + \mathrm{FFN}(x)$.
# The FFN then only has to learn a *correction* to $x$; if it learns nothing useful, $y \approx x$ and no harm
# is done. And on the way back, the gradient reaches $x$ along the "+ x" path untouched, however small the
# FFN's weights are.
#
# ```mermaid
# flowchart LR
#     X["x<br/>(seq, d_model)"] --> L1["h = x W1 + b1<br/>(seq, d_ff)"]
#     L1 --> R["a = ReLU(h)"]
#     R --> L2["f = a W2 + b2<br/>(seq, d_model)"]
#     L2 --> P(("+"))
#     X -- "residual" --> P
#     P --> Y["y = x + FFN(x)"]
# ```
#

# %% [markdown]
# ## The formulas
#
# A linear layer, applied to every row:
#
# $$y = x W + b$$
#
# ```python
# y = x @ W + b                         # (seq, d_in) @ (d_in, d_out) -> (seq, d_out); b added to every row
# ```
#
# ReLU, entry by entry:
#
# $$\mathrm{ReLU}(x) = \max(0, x)$$
#
# ```python
# a = np.maximum(h, 0.0)
# ```
#
# The feed-forward network and its residual:
#
# $$\mathrm{FFN}(x) = \mathrm{ReLU}(x W_1 + b_1)\,W_2 + b_2, \qquad y = x + \mathrm{FFN}(x)$$
#
# ```python
# f = relu(x @ W1 + b1) @ W2 + b2       # (seq, d_model) -> (seq, d_ff) -> (seq, d_model)
# y = x + f
# ```
#
# ### Backwards
#
# ReLU's derivative is 1 where its input was positive and 0 where it was negative. At exactly 0 the
# function has a kink and no derivative; **this course uses 0 there** (the gradient is blocked), the same
# choice PyTorch and JAX make. Note that the mask comes from ReLU's *input* $h$:
#
# $$\frac{\partial L}{\partial h} = \frac{\partial L}{\partial a} \odot \mathbb{1}[h > 0]$$
#
# ```python
# dh = np.where(h > 0, da, 0.0)         # blocked where h <= 0
# ```
#
# Walking the FFN backwards, one layer at a time (the biases were added to every row, so their gradients
# are sums over the rows):
#
# $$\frac{\partial L}{\partial W_2} = a^\top \frac{\partial L}{\partial f}, \quad
# \frac{\partial L}{\partial b_2} = \textstyle\sum_\text{rows} \frac{\partial L}{\partial f}, \quad
# \frac{\partial L}{\partial h} = \Big(\frac{\partial L}{\partial f} W_2^\top\Big) \odot \mathbb{1}[h > 0]$$
#
# $$\frac{\partial L}{\partial W_1} = x^\top \frac{\partial L}{\partial h}, \quad
# \frac{\partial L}{\partial b_1} = \textstyle\sum_\text{rows} \frac{\partial L}{\partial h}, \quad
# \frac{\partial L}{\partial x} = \frac{\partial L}{\partial h} W_1^\top$$
#
# ```python
# dW2 = a.T @ d_out                     # (d_ff, seq) @ (seq, d_model)
# db2 = d_out.sum(axis=0)
# dh = relu_backward(h, d_out @ W2.T)   # (seq, d_model) @ (d_model, d_ff)
# dW1 = x.T @ dh
# db1 = dh.sum(axis=0)
# dx = dh @ W1.T                        # (seq, d_ff) @ (d_ff, d_model)
# ```
#
# `feed_forward_backward` returns `(dx, dW1, dW2, db1, db2)` — the same order as its arguments — and the
# bias gradients even when a bias is `None` (they are what a zero bias would receive).
#
# For the residual, $x$ reaches $y$ twice, directly and through the FFN, and the two gradients add:
#
# $$\frac{\partial L}{\partial x} = \frac{\partial L}{\partial y} + \Big(\text{the FFN's } \frac{\partial L}{\partial x}\Big)$$
#
# ```mermaid
# flowchart RL
#     DY["dL/dy"] --> DF["through the FFN:<br/>W2ᵀ, ReLU mask, W1ᵀ"]
#     DY -- "residual: copied unchanged" --> S(("+"))
#     DF --> S
#     S --> DX["dL/dx"]
# ```
#

# %% [markdown]
# ## The worksheet
#
# The book's Example 5 runs "A B" through the attention of the earlier chapters ($W_Q = W_K = W_V = 0.1\,I$)
# and then through an FFN with
#
# $$W_1 = W_2 = \begin{bmatrix} 0.2 & 0.1 \\ 0.1 & 0.2 \end{bmatrix}$$
#
# and no biases. The worksheet works out position 1 (B) only, then writes the same row twice, "simplified,
# both rows similar". They are not similar: **with causal attention, position 0 (A) sees only itself**, so its
# attention output is its own value $[0.1, 0]$, and every later row 0 follows from that. The steps below pin
# both rows; steps 9.6–9.10 go beyond the book, which prints no backward numbers. Work them with a pencil,
# then compare:
#
# <!-- kata:worksheet 9 -->
#
# Things to notice:
#
# - Every hidden value is positive, so on this worksheet ReLU changes nothing (step 9.3) and a forgotten
#   ReLU would go unnoticed. The tests therefore also feed inputs with negative pre-activations.
# - Row 0 enters the FFN as [0.1, 0] and leaves with both features non-zero: the layer mixes features
#   within a position (but never across positions).
# - Steps 9.8 and 9.10 are the residual's point in numbers: through the FFN's small weights less than a
#   tenth of each unit of gradient gets back to $x$; with the residual, all of it does, plus that tenth.
# - $W_1$ and $W_2$ are symmetric, so a transposed weight on the way back gives the same numbers here. The
#   tests use random, non-square weights where it would not.
#

# %% [markdown]
# ## Your turn
#
# Each function's docstring is its full specification, shapes included. Replace the `raise
# NotImplementedError(...)` with your code, run the cell, then run the check under it: ✓ passed, ✗ failed, · not
# started.

# %% [markdown]
# ### `self_attention` — step 9.1

# %%
# kata:stub self_attention

# %%
kata.check(self_attention)

# %% [markdown]
# ### `linear` — step 9.2

# %%
# kata:stub linear

# %%
kata.check(linear)

# %% [markdown]
# ### `relu` — step 9.3

# %%
# kata:stub relu

# %%
kata.check(relu)

# %% [markdown]
# ### `relu_backward` — step 9.7

# %%
# kata:stub relu_backward

# %%
kata.check(relu_backward)

# %% [markdown]
# ### `feed_forward` — step 9.4

# %%
# kata:stub feed_forward

# %%
kata.check(feed_forward)

# %% [markdown]
# ### `feed_forward_backward` — step 9.8

# %%
# kata:stub feed_forward_backward

# %%
kata.check(feed_forward_backward)

# %% [markdown]
# ### `residual_feed_forward` — step 9.5

# %%
# kata:stub residual_feed_forward

# %%
kata.check(residual_feed_forward)

# %% [markdown]
# ### `residual_feed_forward_backward` — step 9.10

# %%
# kata:stub residual_feed_forward_backward

# %%
kata.check(residual_feed_forward_backward)

# %% [markdown]
# ## The whole chapter
#
# Every step and check of chapter 9, as `nox -s chapter9` shows them. Your answers count where you save them: `nox -s grade -- --notebooks` grades the saved notebooks.

# %%
kata.check()
