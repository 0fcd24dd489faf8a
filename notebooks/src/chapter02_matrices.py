# %% [markdown]
# # Chapter 2 — The Matrix Core
#
# The notebook way through chapter 2: read, work the worksheet with a pencil, then fill in each function below
# and run the check cell under it (`kata.check(...)`): the same steps, worksheet numbers and diagnoses as `nox
# -s chapter2`. Run the cells in order, starting with the next one. The whole page, with hints and common
# mistakes: [docs/chapters/02-matrices.md](../docs/chapters/02-matrices.md).

# %%
# Run this first: it finds the course folder (the one holding kata/) and imports what the stubs use.
import pathlib
import sys

sys.path.insert(0, str(next(p for p in [pathlib.Path.cwd(), *pathlib.Path.cwd().parents] if (p / "kata").is_dir())))

from collections.abc import Callable
import numpy as np

import kata

CHAPTER = 2  # kata.check() checks this chapter's functions

# %% [markdown]
# ## The idea
#
# Every layer of a transformer is matrix arithmetic: embeddings times projection matrices, queries times
# keys, weights times values. A matrix product mixes its inputs — each output entry is a weighted
# combination of inputs, and the weights are the numbers training adjusts.
#
# This chapter writes the product out as loops, once, so you see every multiply-add. NumPy's `@` does
# the same arithmetic thousands of times faster; from chapter 3 on you may use it.
#
# **Convention.** This course stores one token per *row*: a sequence is a matrix $X$ of shape (seq, d),
# and a layer is $X W$. The book sometimes writes a column vector on the right ($W x$). The numbers are
# the same, but the matrix is transposed — step 2.2 shows what changes.
#
# Training needs gradients: how much the loss changes when each entry of a matrix changes. For a product
# there are two rules, and the shapes alone tell you where the transposes go. To check any gradient, nudge
# one entry up and down and watch the function — **central differences**.
#

# %% [markdown]
# ## The formulas
#
# Matrix product, $A$ of shape $(m, n)$ times $B$ of shape $(n, p)$:
#
# $$C_{ij} = \sum_{k=1}^{n} A_{ik} B_{kj}$$
#
# ```python
# for i in range(m):
#     for j in range(p):
#         for k in range(n):
#             C[i, j] += A[i, k] * B[k, j]
# ```
#
# Transpose and dot product:
#
# $$(A^\top)_{ij} = A_{ji} \qquad\qquad a \cdot b = \sum_i a_i b_i$$
#
# Gradients through $C = AB$, given $\partial L / \partial C$ of shape $(m, p)$:
#
# $$\frac{\partial L}{\partial A} = \frac{\partial L}{\partial C}\,B^\top \quad (m, n) \qquad\qquad
# \frac{\partial L}{\partial B} = A^\top\,\frac{\partial L}{\partial C} \quad (n, p)$$
#
# ```python
# dA = dC @ B.T    # (m, p) @ (p, n) -> (m, n): the shape of A
# dB = A.T @ dC    # (n, m) @ (m, p) -> (n, p): the shape of B
# ```
#
# Central differences, one entry at a time:
#
# $$\frac{\partial f}{\partial X_{ij}} \approx \frac{f(X + \varepsilon E_{ij}) - f(X - \varepsilon E_{ij})}{2\varepsilon}$$
#

# %% [markdown]
# ## The worksheet
#
# The book's chapter 2 examples, plus a gradient worked with its matrices
# ($A = I$, $B$ all 0.5, and an upstream gradient $\partial L/\partial C = [[1, 2], [3, 4]]$):
#
# <!-- kata:worksheet 2 -->
#
# About step 2.2: the book turns the column vector $[1, 0]^\top$ by $R = \begin{bmatrix} 0 & -1 \\ 1 & 0 \end{bmatrix}$
# into $[0, 1]^\top$, a quarter turn anticlockwise. A row vector on the left, $[1, 0]\,R$, takes
# combinations of $R$'s *rows* and lands on $[0, -1]$ — a quarter turn the other way. Multiplying by $R^\top$
# (step 2.6) gives the book's $[0, 1]$. Both are right; they answer different questions.
#

# %% [markdown]
# ## Your turn
#
# Each function's docstring is its full specification, shapes included. Replace the `raise
# NotImplementedError(...)` with your code, run the cell, then run the check under it: ✓ passed, ✗ failed, · not
# started.

# %% [markdown]
# ### `matmul` — step 2.1

# %%
# kata:stub matmul

# %%
kata.check(matmul)

# %% [markdown]
# ### `transpose` — step 2.6

# %%
# kata:stub transpose

# %%
kata.check(transpose)

# %% [markdown]
# ### `dot` — step 2.3

# %%
# kata:stub dot

# %%
kata.check(dot)

# %% [markdown]
# ### `matmul_backward` — step 2.7

# %%
# kata:stub matmul_backward

# %%
kata.check(matmul_backward)

# %% [markdown]
# ### `numerical_gradient` — step 2.9

# %%
# kata:stub numerical_gradient

# %%
kata.check(numerical_gradient)

# %% [markdown]
# ## The whole chapter
#
# Every step and check of chapter 2, as `nox -s chapter2` shows them. Your answers count where you save them: `nox -s grade -- --notebooks` grades the saved notebooks.

# %%
kata.check()
