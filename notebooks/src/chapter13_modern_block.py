# %% [markdown]
# # Chapter 13 — The Modern Block
#
# The notebook way through chapter 13: read, work the worksheet with a pencil, then fill in each function below
# and run the check cell under it (`kata.check(...)`): the same steps, worksheet numbers and diagnoses as `nox
# -s chapter13`. Run the cells in order, starting with the next one. The whole page, with hints and common
# mistakes: [docs/chapters/13-modern-block.md](../docs/chapters/13-modern-block.md).

# %%
# Run this first: it finds the course folder (the one holding kata/) and imports what the stubs use.
import pathlib
import sys

sys.path.insert(0, str(next(p for p in [pathlib.Path.cwd(), *pathlib.Path.cwd().parents] if (p / "kata").is_dir())))

import numpy as np

import kata
from kata.learner.notebook import yours

CHAPTER = 13  # kata.check() checks this chapter's functions
# The chapter's constants and the earlier chapters' functions it uses: yours, from exercises/ or your notebooks
causal_mask, scaled_dot_product_attention, attention_backward, linear_backward, merge_heads, split_heads, apply_rope, rope_backward, ATTENTION_KEYS, BLOCK_KEYS = yours(CHAPTER, "causal_mask", "scaled_dot_product_attention", "attention_backward", "linear_backward", "merge_heads", "split_heads", "apply_rope", "rope_backward", "ATTENTION_KEYS", "BLOCK_KEYS")

# %% [markdown]
# ## The idea
#
# Open the code of any open model released in the last few years — Llama, Mistral, Qwen, Gemma — and find the
# block it repeats. It is recognisably chapter 10's block: a residual stream, and two sub-layers that each
# read a normalised copy of it and add their result back. Four parts have been swapped:
#
# | part | chapter 10 | this chapter |
# | --- | --- | --- |
# | normalisation | LayerNorm: subtract the mean, divide by the spread, scale by γ, shift by β | **RMSNorm**: divide by the root mean square, scale by g |
# | feed-forward | ReLU(x W₁ + b₁) W₂ + b₂ | **SwiGLU**: (SiLU(x W_gate) ⊙ x W_up) W_down, no biases |
# | attention | one head | several heads (chapter 11) |
# | positions | a learned table added to the embeddings | **rotary** positions inside attention (chapter 12) |
#
# What stayed is the arrangement: **pre-norm**. Each sub-layer normalises what it reads, never the stream
# itself.
#
# **RMSNorm** keeps half of what LayerNorm does. LayerNorm both *re-centres* a row (subtracts its mean) and
# *re-scales* it (divides by its spread). The RMSNorm paper (Zhang and Sennrich, 2019) argued that the
# re-scaling is what keeps training stable, and dropped the re-centring: divide the row by its root mean
# square $\sqrt{\tfrac1d \sum_i x_i^2}$, multiply by a learned gain per feature, done. One pass over the row
# instead of two, no β, and a row's mean is left alone. On a row whose mean is already 0 the two norms
# agree exactly (step 13.1 has one of each).
#
# **SwiGLU** replaces "transform, then switch off the negatives" with "transform twice, and let one
# transform decide how much of the other gets through". The gate branch goes through **SiLU**,
# $x\,\sigma(x)$: close to ReLU far from zero (SiLU(5) ≈ 4.97, SiLU(−5) ≈ −0.03), but smooth, and slightly
# negative just below zero. The gate multiplies the up branch entry by entry, and a third matrix projects
# the product back to the stream's width. Shazeer (2020) compared several such gated layers; SwiGLU and
# its GELU twin did best, and the models above adopted SwiGLU. Three matrices instead of two cost
# parameters, which is why these models choose $d_\text{ff}$ about ⅔ of the usual 4·d_model.
#

# %% [markdown]
# ## Why pre-norm: the gradient has a straight road
#
# The original transformer (2017) put the norm *after* each residual addition — **post-norm**: $x_{l+1} =
# \mathrm{Norm}(x_l + F(x_l))$. Chapter 10 already used the other order, and named post-norm as a mistake in its
# step 10.6. This is why every modern model does the same.
#
# ```mermaid
# flowchart BT
#     x["x: the residual stream<br/>(seq, d_model)"] --> N1["RMSNorm (g₁)"]
#     N1 --> AT["multi-head attention<br/>with RoPE on Q and K"]
#     AT --> P1(("+"))
#     x -- "residual: untouched" --> P1
#     P1 --> N2["RMSNorm (g₂)"]
#     N2 --> FF["SwiGLU"]
#     FF --> P2(("+"))
#     P1 -- "residual: untouched" --> P2
#     P2 --> y["y: the stream, to the next block"]
# ```
#
# Post-norm, for comparison: the same parts, but the norms sit *on* the stream, so every path from $y$ down to
# $x$ passes through one.
#
# ```mermaid
# flowchart BT
#     x0["x"] --> A0["attention"]
#     A0 --> Q1(("+"))
#     x0 -- "residual" --> Q1
#     Q1 --> M1["Norm, on the stream"]
#     M1 --> F0["feed-forward"]
#     F0 --> Q2(("+"))
#     M1 -- "residual" --> Q2
#     Q2 --> M2["Norm, on the stream"]
#     M2 --> y0["y"]
# ```
#
# Follow the gradient down. In the pre-norm block $y = x_1 + F(\mathrm{Norm}(x_1))$, so
#
# $$\frac{\partial L}{\partial x_1} = \frac{\partial L}{\partial y} + \Big(\text{the path through Norm and }
# F\Big),$$
#
# and the first term is the gradient from above *unchanged*. Stack $L$ blocks and the loss's gradient reaches
# the embeddings along a path of nothing but additions, however deep the model and whatever the sub-layers do;
# each sub-layer only adds its correction. In post-norm every block's output passes through a norm, so the
# gradient reaching block 1 has been multiplied by the Jacobian of every norm above it — each one rescales it
# and removes a direction. Over dozens of layers that product shrinks or distorts the signal, which is why post-
# norm transformers need a careful learning-rate warm-up, while pre-norm ones train without one (Xiong et al.,
# 2020).
#
# The price: the stream itself is never normalised, and its size grows as blocks add to it. So a pre-norm model
# needs one final norm before the output projection (chapter 10's `lnf`).

# %% [markdown]
# ## The formulas
#
# **RMSNorm**, over the last axis, with $\varepsilon = 10^{-6}$ *inside* the square root:
#
# $$r = \sqrt{\tfrac1d \textstyle\sum_k x_k^2 + \varepsilon},\qquad \mathrm{RMSNorm}(x) = g \odot \frac{x}{r}$$
#
# ```python
# r = np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps)   # (..., 1): one r per row
# y = g * x / r                                               # (..., d_model)
# ```
#
# **RMSNorm backward.** Each input reaches each output twice: directly, and through $r$, which every output
# of its row divides by. With $\hat x = x / r$, $u = d_\text{out} \odot g$ and a bar for the mean over the row:
#
# $$\frac{\partial L}{\partial x} = \frac{1}{r}\left(u - \hat x\,\overline{u \odot \hat x}\right),\qquad
# \frac{\partial L}{\partial g} = \sum_\text{rows} d_\text{out} \odot \hat x$$
#
# ```python
# dg = np.sum(d_out * x_hat, axis=tuple(range(x.ndim - 1)))   # (d_model,)
# u = d_out * g
# dx = (u - x_hat * np.mean(u * x_hat, axis=-1, keepdims=True)) / r
# ```
#
# Compare chapter 10's LayerNorm backward: it has one more subtracted term, $\bar g$, for the mean it
# removed. RMSNorm removed no mean, so it has no such term; its $dx$ is instead orthogonal to the row
# ($\sum_k dx_k\,x_k = 0$), because scaling a whole row changes nothing after RMSNorm.
#
# **SiLU** and its slope (the product rule on $x \cdot \sigma(x)$, with $\sigma' = \sigma(1 - \sigma)$):
#
# $$\mathrm{SiLU}(x) = x\,\sigma(x) = \frac{x}{1 + e^{-x}},\qquad
# \mathrm{SiLU}'(x) = \sigma(x)\bigl(1 + x\,(1 - \sigma(x))\bigr)$$
#
# Written as `x / (1 + np.exp(-x))` it overflows for $x = -1000$: `exp(1000)` is infinite (the answer, 0,
# would still come out, but NumPy warns, and the tests treat warnings as errors). Compute $\sigma$ without
# ever exponentiating a large positive number, e.g. $\sigma(x) = e^{-\log(1 + e^{-x})}$ with
# `np.logaddexp(0, -x)`, which NumPy evaluates safely.
#
# **SwiGLU** and its backward. With $a = xW_\text{gate}$ and $b = xW_\text{up}$:
#
# $$h = \mathrm{SiLU}(a) \odot b,\qquad \mathrm{out} = h\,W_\text{down}$$
#
# ```python
# a, b = x @ W_gate, x @ W_up      # (seq, d_ff) each
# h = silu(a) * b                  # the gate: only a goes through SiLU
# out = h @ W_down                 # (seq, d_model)
# ```
#
# $h$ is a product, so each factor's gradient is $dh$ times the *other* factor, and $x$ fed both branches:
#
# $$dh = d_\text{out} W_\text{down}^\top,\quad db = dh \odot \mathrm{SiLU}(a),\quad
# da = dh \odot b \odot \mathrm{SiLU}'(a),\quad dx = da\,W_\text{gate}^\top + db\,W_\text{up}^\top$$
#
# and, as always, $dW = (\text{its input})^\top\,(\text{gradient of its output})$: $dW_\text{down} = h^\top
# d_\text{out}$, $dW_\text{up} = x^\top db$, $dW_\text{gate} = x^\top da$.
#
# **Rotary multi-head attention** is chapter 11's attention with chapter 12's rotation in the middle: cut
# $Q$ and $K$ into heads *first*, then rotate each head's $d_\text{head}$-wide rows by their position (so the
# frequencies are $\text{base}^{-2i/d_\text{head}}$, the same in every head), leave $V$ alone, and attend
# causally with scale $1/\sqrt{d_\text{head}}$:
#
# $$\mathrm{head}_h = \mathrm{softmax}\!\left(\frac{\mathrm{RoPE}(Q_h)\,\mathrm{RoPE}(K_h)^\top}{\sqrt{d_\text{head}}} +
# M\right) V_h,\qquad \mathrm{out} = [\mathrm{head}_0, \dots, \mathrm{head}_{n-1}]\, W_O$$
#
# ```python
# Qh = apply_rope(split_heads(x @ WQ, n_heads))   # (n_heads, seq, d_head), each head rotated
# Kh = apply_rope(split_heads(x @ WK, n_heads))
# Vh = split_heads(x @ WV, n_heads)               # values are not rotated
# heads = [scaled_dot_product_attention(q, k, v, mask=causal_mask(seq)) for q, k, v in zip(Qh, Kh, Vh)]
# out = merge_heads(np.stack([o for o, _ in heads])) @ WO
# ```
#
# Going back, chapter 7's `attention_backward` in each head gives the gradients of the *rotated* queries
# and keys, the ones attention saw. A rotation's transpose is the rotation back, so chapter 12's
# `rope_backward` turns them into the gradients of the heads of $Q$ and $K$; then `merge_heads` and the
# projections as in chapter 11: $dx = dQ\,W_Q^\top + dK\,W_K^\top + dV\,W_V^\top$.
#
# Nothing in this attention depends on where the sequence starts — only on the distances between
# positions (chapter 12) — so the function has no `start`; positions count from 0.
#
# **The block**, and its backward, exactly chapter 10's shape with the new parts:
#
# $$x_1 = x + \mathrm{Attn}(\mathrm{RMSNorm}_{g_1}(x)),\qquad y = x_1 + \mathrm{SwiGLU}(\mathrm{RMSNorm}_{g_2}(x_1))$$
#
# ```python
# ffn = swiglu_backward(d_y, ffn_cache)
# dx1_via_branch, dg2 = rms_norm_backward(x1, g2, ffn["x"])
# dx1 = d_y + dx1_via_branch          # the residual path + the path through RMSNorm₂ and SwiGLU
# attention = rope_multi_head_attention_backward(dx1, attention_cache)
# dx_via_branch, dg1 = rms_norm_backward(x, g1, attention["x"])
# dx = dx1 + dx_via_branch            # the residual path + the path through RMSNorm₁ and attention
# ```
#

# %% [markdown]
# ## The worksheet
#
# The worksheet is this course's own; the numbers are small on purpose. Steps 13.1–13.3 normalise rows of
# four features; steps 13.4–13.5 tabulate SiLU and its slope at −2, −1, 0, 1, 2 (a calculator's $e^x$ is
# enough); step 13.6 runs a SwiGLU layer with $d_\text{model} = 2$ and $d_\text{ff} = 3$ whose weights are
# chosen so that every gate pre-activation is a number from that table, and step 13.7 takes it back.
# Steps 13.8–13.11 put a block together: three positions, $d_\text{model} = 4$, two heads of width 2 (so
# each head has one pair, turned by 1 radian per position: a calculator's cos 1, sin 1, cos 2 and sin 2 are
# all the rotation needs).
#
# - $x = \begin{bmatrix} 1 & -1 \\ 2 & 1 \end{bmatrix}$,
#   $W_\text{gate} = \begin{bmatrix} 1 & 0 & 1 \\ 0 & 1 & -1 \end{bmatrix}$,
#   $W_\text{up} = \begin{bmatrix} 1 & 1 & 0 \\ 0 & 1 & 1 \end{bmatrix}$,
#   $W_\text{down} = \begin{bmatrix} 1 & 0 \\ 0 & 1 \\ 1 & 1 \end{bmatrix}$ (steps 13.6, 13.7).
# - $x = \begin{bmatrix} 2 & 0 & 0 & 0 \\ 1 & 1 & 1 & 1 \\ 1 & -1 & -1 & 1 \end{bmatrix}$ (every row
#   has root mean square 1, so RMSNorm with $g = 1$ leaves it as it is, to within ε), $W_Q = W_K = W_V = I$,
#   $W_O = 0.5\,I$ (steps 13.8–13.11).
# - The block's SwiGLU (steps 13.9, 13.11): $d_\text{ff} = 4$, $W_\text{gate} = I$, $W_\text{up}$ swaps the two
#   features of each pair, $W_\text{down} = 0.5\,I$; $g_1 = g_2 = [1, 1, 1, 1]$.
#
# <!-- kata:worksheet 13 -->
#
# A few things to notice:
#
# - Row 1 of step 13.1 has mean 0, and there RMSNorm gives exactly what LayerNorm (with β = 0) would. Row 0
#   does not: RMSNorm keeps its positive mean, LayerNorm would remove it.
# - In step 13.2 the row's mean square equals ε. Where ε sits decides the answer: inside the root, as here,
#   a row much smaller than $\sqrt\varepsilon = 0.001$ is left small instead of being blown up to size 1.
# - SiLU's slope in step 13.5 is negative at −2 and larger than 1 at 2: nothing like ReLU's 0-or-1.
# - In step 13.6 a gate pre-activation of 2 lets almost twice its up value through, one of −1 a small
#   *negative* fraction of it; and where the up branch is 0 (row 0, middle column) nothing gets through,
#   whatever the gate says.
# - In step 13.8, row 0 sees only itself and comes out as half its own value. Rows 1 and 2 attend by
#   content *and* by distance: rotate a query and a key by their positions and their dot product depends
#   on how far apart they are. Leave the rotation out and row 1's head 0 weighs position 0 differently.
# - In step 13.9 the stream grows as the branches add to it, while each branch reads a copy normalised back
#   to root mean square 1. In step 13.11 the gradient reaching $x$ is $d_y$ plus the branches' corrections: the
#   residual paths carry $d_y$ through whole.
#

# %% [markdown]
# ## Your turn
#
# Each function's docstring is its full specification, shapes included. Replace the `raise
# NotImplementedError(...)` with your code, run the cell, then run the check under it: ✓ passed, ✗ failed, · not
# started, ⧗ timed out, ! error (crashed or does not import).

# %% [markdown]
# ### `rms_norm` — step 13.1

# %%
# kata:stub rms_norm

# %%
kata.check(rms_norm)

# %% [markdown]
# ### `rms_norm_backward` — step 13.3

# %%
# kata:stub rms_norm_backward

# %%
kata.check(rms_norm_backward)

# %% [markdown]
# ### `silu` — step 13.4

# %%
# kata:stub silu

# %%
kata.check(silu)

# %% [markdown]
# ### `silu_backward` — step 13.5

# %%
# kata:stub silu_backward

# %%
kata.check(silu_backward)

# %% [markdown]
# ### `swiglu` — step 13.6

# %%
# kata:stub swiglu

# %%
kata.check(swiglu)

# %% [markdown]
# ### `swiglu_backward` — step 13.7

# %%
# kata:stub swiglu_backward

# %%
kata.check(swiglu_backward)

# %% [markdown]
# ### `rope_multi_head_attention` — step 13.8

# %%
# kata:stub rope_multi_head_attention

# %%
kata.check(rope_multi_head_attention)

# %% [markdown]
# ### `rope_multi_head_attention_backward` — step 13.10

# %%
# kata:stub rope_multi_head_attention_backward

# %%
kata.check(rope_multi_head_attention_backward)

# %% [markdown]
# ### `prenorm_block` — step 13.9

# %%
# kata:stub prenorm_block

# %%
kata.check(prenorm_block)

# %% [markdown]
# ### `prenorm_block_backward` — step 13.11

# %%
# kata:stub prenorm_block_backward

# %%
kata.check(prenorm_block_backward)

# %% [markdown]
# ## The whole chapter
#
# Every step and check of chapter 13, as `nox -s chapter13` shows them. Your answers count where you save them: `nox -s grade -- --notebooks` grades the saved notebooks.

# %%
kata.check()
