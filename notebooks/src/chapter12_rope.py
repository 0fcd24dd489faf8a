# %% [markdown]
# # Chapter 12 — Rotary Position Embeddings
#
# The notebook way through chapter 12: read, work the worksheet with a pencil, then fill in each function below
# and run the check cell under it (`kata.check(...)`): the same steps, worksheet numbers and diagnoses as `nox
# -s chapter12`. Run the cells in order, starting with the next one. The whole page, with hints and common
# mistakes: [docs/chapters/12-rope.md](../docs/chapters/12-rope.md).

# %%
# Run this first: it finds the course folder (the one holding kata/) and imports what the stubs use.
import pathlib
import sys

sys.path.insert(0, str(next(p for p in [pathlib.Path.cwd(), *pathlib.Path.cwd().parents] if (p / "kata").is_dir())))

import numpy as np

import kata
from kata.learner.notebook import yours

CHAPTER = 12  # kata.check() checks this chapter's functions
# The chapter's constants and the earlier chapters' functions it uses: yours, from exercises/ or your notebooks
causal_mask, scaled_dot_product_attention = yours(CHAPTER, "causal_mask", "scaled_dot_product_attention")

# %% [markdown]
# ## The idea
#
# Attention by itself cannot tell "dog bites man" from "man bites dog": a score is a dot product of a query
# and a key, and nothing in it says where either token sits. Chapter 10 fixed that by *adding* a learned
# vector per position to every embedding. That works, but the model has to learn, for every pair of
# positions separately, that position 7 looking at position 5 is like position 3 looking at position 1. And
# a table of 512 positions knows nothing about position 513.
#
# What usually matters is how far apart two tokens are, not where they are. Rotary position embeddings
# (RoPE) build exactly that into the score. Take a query or a key of width $d$ and read its features two at
# a time, as $d/2$ points in a plane. At position $m$, turn every point by an angle proportional to $m$.
# Then compare the query at position $m$ with the key at position $n$: turning both by their own angles and
# taking the dot product is the same as turning the key by the *difference* of the angles alone, because
# a dot product only sees the angle between two arrows. So the score depends on the contents $q$ and $k$ and
# on $m - n$ — never on $m$ and $n$ by themselves.
#
# Three consequences drive the rest of the chapter:
#
# - **Queries and keys are turned; values are not.** Position enters through the scores. The values are what
#   a position hands over, and an output turned by some angle would mean nothing to the next layer.
# - **Each pair turns at its own speed.** The first pair turns one radian per position — after a few
#   positions it has gone round the circle, so it tells near neighbours apart. The last pairs turn so slowly
#   that they still distinguish positions thousands of tokens apart.
# - **Nothing is learned.** The angles are fixed numbers, so any position works, and a cache of keys (chapter
#   16) can turn each new key once, at its own position, and keep it.
#

# %% [markdown]
# ## One convention, stated once
#
# Several conventions are in use; mixing two of them is the classic bug, so this course fixes one:
#
# | choice | this course |
# | --- | --- |
# | which features form a pair | **adjacent** ones: $(x_0, x_1), (x_2, x_3), \dots, (x_{2i}, x_{2i+1})$ |
# | the frequency of pair $i$ | $\theta_i = \text{base}^{-2i/d}$ for $i = 0, \dots, d/2 - 1$, base $= 10000$ |
# | positions | counted from **0** (plus `start`, the position of the first row) |
# | direction | a positive angle turns **counter-clockwise** |
#
# (Some libraries pair feature $i$ with feature $i + d/2$ instead — "halves". Both give a valid model; they give
# different numbers, and weights trained with one do not work with the other.)

# %% [markdown]
# ## The formulas
#
# The frequencies form a geometric progression from 1 down towards $1/\text{base}$:
#
# $$\theta_i = \text{base}^{-2i/d}, \qquad i = 0, 1, \dots, \tfrac d2 - 1$$
#
# ```python
# i = np.arange(d // 2)                  # pair i holds features 2i and 2i+1
# theta = base ** (-2.0 * i / d)         # (d/2,)
# ```
#
# The angle of pair $i$ at position $m$ is the position times the frequency:
#
# $$\phi_{m,i} = (\text{start} + m)\,\theta_i$$
#
# ```python
# angles = np.outer(start + np.arange(seq_len), theta)   # (seq, d/2)
# ```
#
# Turning a pair by $\phi$ multiplies it by a rotation matrix:
#
# $$\begin{pmatrix} y_{2i} \\ y_{2i+1} \end{pmatrix} =
#   \begin{pmatrix} \cos\phi & -\sin\phi \\ \sin\phi & \cos\phi \end{pmatrix}
#   \begin{pmatrix} x_{2i} \\ x_{2i+1} \end{pmatrix}
#   = \begin{pmatrix} x_{2i}\cos\phi - x_{2i+1}\sin\phi \\ x_{2i}\sin\phi + x_{2i+1}\cos\phi \end{pmatrix}$$
#
# ```python
# x0, x1 = X[..., 0::2], X[..., 1::2]    # (..., seq, d/2): the two halves of every pair
# Y[..., 0::2] = x0 * np.cos(angles) - x1 * np.sin(angles)
# Y[..., 1::2] = x0 * np.sin(angles) + x1 * np.cos(angles)
# ```
#
# The second-to-last axis is the position, so the same code handles one sequence `(seq, d)` and several heads
# `(n_heads, seq, d_head)`: every head gets the same angles.
#
# Why the score depends on $m - n$ only: write $R_\phi$ for the rotation by $\phi$. A rotation's transpose is
# the rotation back, $R_\phi^\top = R_{-\phi}$, and two rotations add their angles. So, pair by pair,
#
# $$(R_{m\theta}\, q) \cdot (R_{n\theta}\, k) = q^\top R_{m\theta}^\top R_{n\theta}\, k = q^\top R_{(n-m)\theta}\, k .$$
#
# Shift both positions by the same amount and $n - m$ does not change, so neither does the score.
#
# ```python
# S = apply_rope(Q) @ apply_rope(K).T    # rope_scores; attention then divides by √d as in chapter 4
# ```
#
# The backward pass: $y = R_\phi x$ is linear, so $\partial L / \partial x = R_\phi^\top\, \partial L / \partial y$
# — the gradient turns back by the same angle:
#
# $$\frac{\partial L}{\partial x_m} = R_{-(\text{start}+m)\theta}\, \frac{\partial L}{\partial y_m}$$
#
# ```python
# dX = rotate_pairs(dY, -angles)         # rope_backward: the inverse rotation
# ```
#
# ```mermaid
# flowchart LR
#     X["x (seq, d)"] --> WQ["@ W_Q"] --> Q["Q"] --> RQ["rotate by position<br/>(apply_rope)"] --> S["scores<br/>RoPE(Q) RoPE(K)ᵀ / √d"]
#     X --> WK["@ W_K"] --> K["K"] --> RK["rotate by position<br/>(apply_rope)"] --> S
#     X --> WV["@ W_V"] --> V["V — not rotated"] --> O["softmax(scores) V"]
#     S --> O
# ```
#

# %% [markdown]
# ## The worksheet
#
# Take $d = 4$ and base 10000: the first pair $(x_0, x_1)$ turns at $\theta_0 = 1$ radian per position,
# the second pair $(x_2, x_3)$ at $\theta_1 = 0.01$. Positions 0, 1 and 2. Everything below is a cosine or a
# sine of 0, 1, 2, 0.01 or 0.02 — set your calculator to **radians**.
#
# - Steps 12.1–12.2: the frequencies and the angle table.
# - Step 12.3: one pair, $(1, 2)$, turned by one radian.
# - Step 12.4: one token, $x = [1, 0, 1, 0]$, written at positions 0, 1 and 2. Each pair $(1, 0)$ turned by
#   $\phi$ lands at $(\cos\phi, \sin\phi)$.
# - Step 12.5: the query $q = [1, 2, 0, 1]$ and the key $k = [1, 0, 1, 0]$ at every position. Work out the
#   score of the query at position 1 against the key at position 0, then at positions 2 and 1.
# - Step 12.6: causal attention of the same $Q$ and $K$ with the one-hot values
#   $V = [[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0]]$, for the last position.
# - Step 12.7: the gradient $[0, 1, 0, 1]$ at every position, sent back through RoPE.
#
# <!-- kata:worksheet 12 -->
#
# A few things to notice:
#
# - Step 12.4's rows all have the same length as $x$: a rotation never stretches. The fast pair is already
#   past the quarter circle at position 2 ($\cos 2 < 0$); the slow pair has barely moved.
# - Step 12.5's two scores are equal, and so would be those of positions 1001 and 1000. The same query and
#   key one position apart always score −1.1526; at the same position they score $q \cdot k = 1$.
# - In step 12.6 every row of $Q$ is the same and every row of $K$ is the same, so without RoPE the last
#   position would give each of the three positions $\tfrac13$. With it, the scores differ by distance alone
#   and the last position looks mostly at itself.
# - Step 12.7 turns each pair back: position 1's gradient pair $(0, 1)$ becomes $(\sin 1, \cos 1)$, where the
#   forward rotation would have given $(-\sin 1, \cos 1)$.
#

# %% [markdown]
# ## Your turn
#
# Each function's docstring is its full specification, shapes included. Replace the `raise
# NotImplementedError(...)` with your code, run the cell, then run the check under it: ✓ passed, ✗ failed, · not
# started, ⧗ timed out, ! error (crashed or does not import).

# %% [markdown]
# ### `rope_frequencies` — step 12.1

# %%
# kata:stub rope_frequencies

# %%
kata.check(rope_frequencies)

# %% [markdown]
# ### `rope_angles` — step 12.2

# %%
# kata:stub rope_angles

# %%
kata.check(rope_angles)

# %% [markdown]
# ### `rotate_pairs` — step 12.3

# %%
# kata:stub rotate_pairs

# %%
kata.check(rotate_pairs)

# %% [markdown]
# ### `apply_rope` — step 12.4

# %%
# kata:stub apply_rope

# %%
kata.check(apply_rope)

# %% [markdown]
# ### `rope_scores` — step 12.5

# %%
# kata:stub rope_scores

# %%
kata.check(rope_scores)

# %% [markdown]
# ### `rope_attention` — step 12.6

# %%
# kata:stub rope_attention

# %%
kata.check(rope_attention)

# %% [markdown]
# ### `rope_backward` — step 12.7

# %%
# kata:stub rope_backward

# %%
kata.check(rope_backward)

# %% [markdown]
# ## The whole chapter
#
# Every step and check of chapter 12, as `nox -s chapter12` shows them. Your answers count where you save them: `nox -s grade -- --notebooks` grades the saved notebooks.

# %%
kata.check()
