# %% [markdown]
# # Chapter 11 — Multi-Head Attention
#
# The notebook way through chapter 11: read, work the worksheet with a pencil, then fill in each function below
# and run the check cell under it (`kata.check(...)`): the same steps, worksheet numbers and diagnoses as `nox
# -s chapter11`. Run the cells in order, starting with the next one. The whole page, with hints and common
# mistakes: [docs/chapters/11-multi-head-attention.md](../docs/chapters/11-multi-head-attention.md).

# %%
# Run this first: it finds the course folder (the one holding kata/) and imports what the stubs use.
import pathlib
import sys

sys.path.insert(0, str(next(p for p in [pathlib.Path.cwd(), *pathlib.Path.cwd().parents] if (p / "kata").is_dir())))

import numpy as np

import kata
from kata.learner.notebook import yours

CHAPTER = 11  # kata.check() checks this chapter's functions
# The chapter's constants and the earlier chapters' functions it uses: yours, from exercises/ or your notebooks
causal_mask, scaled_dot_product_attention, attention_backward, linear_backward, PARAM_NAMES = yours(CHAPTER, "causal_mask", "scaled_dot_product_attention", "attention_backward", "linear_backward", "PARAM_NAMES")

# %% [markdown]
# ## The idea
#
# In chapter 4 each position asked one question of the others and got one answer: a single softmax, one
# set of weights that sum to 1. Often a token needs two things at once. In "the keys to the cabinet *are*",
# the verb needs its subject (*keys*, three words back) to agree in number, and the word just before it
# (*cabinet*) to know where the phrase ended. One softmax must split its weight between them; the more it
# gives to one, the less the other gets.
#
# **Multi-head attention** runs several smaller attentions side by side. The queries, keys and values are
# projected once, at full width $d_\text{model}$, and then cut along the *feature* axis into $n_\text{heads}$
# slices of $d_\text{head} = d_\text{model} / n_\text{heads}$ features each. Every head attends with its
# own slice: its own scores, its own softmax, its own causal mask. Each head may therefore look at a
# different token. The heads' outputs are put back side by side and one more projection, $W_O$, mixes
# them into the layer's output.
#
# ```mermaid
# flowchart LR
#     x["x (seq, d_model)"] --> P["Q = xW_Q, K = xW_K, V = xW_V"]
#     P --> S{"split the features<br/>into heads"}
#     S -->|"columns 0 … d_head−1"| H0["head 0:<br/>softmax(Q₀K₀ᵀ/√d_head + M) V₀"]
#     S -->|"columns d_head … 2d_head−1"| H1["head 1:<br/>softmax(Q₁K₁ᵀ/√d_head + M) V₁"]
#     S -->|"…"| Hn["head n−1:<br/>…"]
#     H0 --> C["merge: heads<br/>side by side"]
#     H1 --> C
#     Hn --> C
#     C --> O["× W_O"]
#     O --> out["out (seq, d_model)"]
# ```
#
# The heads are parallel lanes: nothing crosses from one lane to another until $W_O$. The cost is the same
# as one head of width $d_\text{model}$ — the same projections, the same number of multiplications in the
# scores, just grouped differently — so the extra heads are free. What they buy is freedom: $n_\text{heads}$
# independent ways of deciding *who to read*.
#

# %% [markdown]
# ## The formulas
#
# Project once, at full width, exactly as in chapter 4:
#
# $$Q = x W_Q, \qquad K = x W_K, \qquad V = x W_V \qquad (\text{each } (seq, d_\text{model}))$$
#
# **Split** (step 11.1). Head $h$ owns the columns $h\,d_\text{head}$ to $(h+1)\,d_\text{head} - 1$ of every
# position; every head keeps every position:
#
# $$\mathrm{heads}[h, i, :] = Q[i,\ h\,d_\text{head} : (h+1)\,d_\text{head}]$$
#
# ```python
# Qh = Q.reshape(seq, n_heads, d_head).transpose(1, 0, 2)   # (seq, d_model) -> (n_heads, seq, d_head)
# ```
#
# The reshape alone is not enough. `Q.reshape(n_heads, seq, d_head)` has the right shape but reads Q row by
# row: head 0 would get all of token A's features and half of token B's. The reshape to
# `(seq, n_heads, d_head)` keeps each row whole and only groups its columns; the transpose then brings the
# head axis to the front.
#
# **Attend in every head** (steps 11.2 and 11.3), with chapter 4's attention and causal mask, scaled by the
# width of *that head's* keys:
#
# $$\mathrm{head}_h = \mathrm{softmax}\!\left(\frac{Q_h K_h^\top}{\sqrt{d_\text{head}}} + M\right) V_h$$
#
# ```python
# for q, k, v in zip(Qh, Kh, Vh):
#     out_h, weights_h = scaled_dot_product_attention(q, k, v, mask=causal_mask(seq))
# ```
#
# The scale is $1/\sqrt{d_\text{head}}$, not $1/\sqrt{d_\text{model}}$: the scaling exists to keep a dot
# product of $d$ terms from growing with $d$, and a head's dot products have $d_\text{head}$ terms.
#
# **Merge and mix** (steps 11.4 and 11.5). Put the heads back side by side — `split_heads` read backwards —
# and project:
#
# $$\mathrm{out} = [\mathrm{head}_0, \mathrm{head}_1, \dots, \mathrm{head}_{n_\text{heads}-1}]\; W_O$$
#
# ```python
# merged = H.transpose(1, 0, 2).reshape(seq, n_heads * d_head)   # (n_heads, seq, d_head) -> (seq, d_model)
# out = merged @ WO
# ```
#
# **Backward** (steps 11.6–11.8): the same road in reverse, with chapter 7's two pieces. $W_O$ is a linear
# layer, so `linear_backward` gives $dW_O = \mathrm{merged}^\top d\mathrm{out}$ and
# $d\mathrm{merged} = d\mathrm{out}\,W_O^\top$. Cut $d\mathrm{merged}$ into heads like Q was cut; in each
# head chapter 7's `attention_backward` gives $dQ_h$, $dK_h$, $dV_h$ (its $1/\sqrt{d_k}$ is now
# $1/\sqrt{d_\text{head}}$, because $d_k$ is the width of the keys it is given). Merge them, and go back
# through the projections:
#
# $$dW_Q = x^\top dQ,\quad dW_K = x^\top dK,\quad dW_V = x^\top dV,\qquad
# dx = dQ\,W_Q^\top + dK\,W_K^\top + dV\,W_V^\top$$
#
# Split and merge are only rearrangements: on the way back each one becomes the other.
#

# %% [markdown]
# ## The worksheet
#
# Three tokens A, B, C, $d_\text{model} = 4$, two heads of $d_\text{head} = 2$. The numbers are small
# integers, so the projections are mental arithmetic and only the softmax needs a calculator.
#
# $$x = \begin{bmatrix} 1 & 0 & 0 & 1 \\ 0 & 2 & 1 & 0 \\ 0 & 1 & 0 & 2 \end{bmatrix}
# \begin{matrix} \leftarrow A \\ \leftarrow B \\ \leftarrow C \end{matrix}, \qquad
# W_Q = 2\begin{bmatrix} 0 & 1 & 0 & 0 \\ 1 & 0 & 0 & 0 \\ 0 & 0 & 0 & 1 \\ 0 & 0 & 1 & 0 \end{bmatrix}, \qquad
# W_K = W_V = I_4,$$
#
# $$W_O = \tfrac12\begin{bmatrix} 1 & 0 & 1 & 0 \\ 0 & 1 & 0 & 1 \\ 1 & 0 & -1 & 0 \\ 0 & 1 & 0 & -1 \end{bmatrix}.$$
#
# The weights are chosen so that **the two heads attend differently**, which is the whole point of having
# two. $W_K = W_V = I$: a token's key and value in a head are just its two features there. $W_Q$ swaps the
# two features inside each head and doubles them, so a query looks for the *other* feature of its pair.
# C's features are $[0, 1]$ in head 0 and $[0, 2]$ in head 1; its queries are $[2, 0]$ and $[4, 0]$. In
# head 0 the only key with a first feature is A's $[1, 0]$; in head 1 it is B's $[1, 0]$. So C reads A in
# head 0 and B in head 1 — one position, two answers, which a single softmax could only have averaged.
# $W_O$ then writes, for each pair of features, the heads' average $(m_0 + m_2)/2$ and half their difference
# $(m_0 - m_2)/2$.
#
# Step 11.1 splits $Q = xW_Q = [[0, 2, 2, 0], [4, 0, 0, 2], [2, 0, 4, 0]]$; steps 11.2–11.4 take their
# inputs from the step before (given in the key, so each step stands on its own); step 11.5 is the whole
# layer. The backward steps send $d\mathrm{out} = [[0, 0, 0, 0], [0, 0, 0, 0], [1, 0, 0, 0]]$ — a loss that
# reads only C's first output — back to $W_O$, $W_V$ and $x$.
#
# <!-- kata:worksheet 11 -->
#
# Read step 11.2's two weight matrices side by side. Row A is the same in both heads (a first token can
# only see itself), and B leans towards A in both, but row C does not agree with itself: most of its weight
# goes to A in head 0 and to B in head 1. Step 11.7 shows the consequence on the way back: the gradient of
# $W_V$ reaches A's value mostly through head 0 and B's mostly through head 1.
#

# %% [markdown]
# ## Your turn
#
# Each function's docstring is its full specification, shapes included. Replace the `raise
# NotImplementedError(...)` with your code, run the cell, then run the check under it: ✓ passed, ✗ failed, · not
# started, ⧗ timed out, ! error (crashed or does not import).

# %% [markdown]
# ### `split_heads` — step 11.1

# %%
# kata:stub split_heads

# %%
kata.check(split_heads)

# %% [markdown]
# ### `merge_heads` — step 11.4

# %%
# kata:stub merge_heads

# %%
kata.check(merge_heads)

# %% [markdown]
# ### `attend_heads` — step 11.2

# %%
# kata:stub attend_heads

# %%
kata.check(attend_heads)

# %% [markdown]
# ### `multi_head_attention` — step 11.5

# %%
# kata:stub multi_head_attention

# %%
kata.check(multi_head_attention)

# %% [markdown]
# ### `multi_head_attention_backward` — step 11.6

# %%
# kata:stub multi_head_attention_backward

# %%
kata.check(multi_head_attention_backward)

# %% [markdown]
# ## The whole chapter
#
# Every step and check of chapter 11, as `nox -s chapter11` shows them. Your answers count where you save them: `nox -s grade -- --notebooks` grades the saved notebooks.

# %%
kata.check()
