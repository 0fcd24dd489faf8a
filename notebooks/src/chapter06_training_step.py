# %% [markdown]
# # Chapter 6 — One Training Step
#
# The notebook way through chapter 6: read, work the worksheet with a pencil, then fill in each function below
# and run the check cell under it (`kata.check(...)`): the same steps, worksheet numbers and diagnoses as `nox
# -s chapter6`. Run the cells in order, starting with the next one. The whole page, with hints and common
# mistakes: [docs/chapters/06-training-step.md](../docs/chapters/06-training-step.md).

# %%
# Run this first: it finds the course folder (the one holding kata/) and imports what the stubs use.
import pathlib
import sys

sys.path.insert(0, str(next(p for p in [pathlib.Path.cwd(), *pathlib.Path.cwd().parents] if (p / "kata").is_dir())))

import numpy as np

import kata
from kata.learner.notebook import yours

CHAPTER = 6  # kata.check() checks this chapter's functions
# The chapter's constants and the earlier chapters' functions it uses: yours, from exercises/ or your notebooks
forward = yours(CHAPTER, "forward")

# %% [markdown]
# ## The idea
#
# Chapter 5's model, shown "A B", gives C (the token that should come next) barely more than a quarter of
# its belief. Training means: measure how wrong that is with one number, the **loss**; find which way each
# weight should move to make the loss smaller, the **gradient**; and move a little that way, **gradient
# descent**. One such round is a training step.
#
# In this chapter only $W_O$ learns; $W_Q$, $W_K$ and $W_V$ stay fixed, as in the book. So the context does
# not change, and the step is short: loss → gradient at the logits → gradient at $W_O$ → update.
#
# ```mermaid
# flowchart LR
#     In["'A B'"] --> F["forward pass<br/>(chapter 5)"]
#     F --> Z["logits z"]
#     Z --> P["probs p"]
#     P --> L["loss<br/>L = −log p_C"]
#     T["target C"] --> L
#     WQ["W_Q, W_K, W_V<br/>fixed"] -.-> F
#     WO["W_O<br/>trainable"] --> Z
#     style WO fill:#e8f5e9
#     style WQ fill:#f5f5f5
#     style L fill:#ffcdd2
# ```
#
# The gradient flows back along the same path, the other way:
#
# ```mermaid
# flowchart RL
#     L["L"] -- "dL/dz = p − onehot(C)" --> DZ["dL/dlogits"]
#     DZ -- "outer(context, dL/dz)" --> DWO["dL/dW_O"]
#     DZ -- "W_O · dL/dz" --> DC["dL/dcontext<br/>(used in chapter 7)"]
#     DWO -- "W_O − η · dL/dW_O" --> U["new W_O"]
#     style U fill:#c8e6c9
# ```
#
# > **The model is chapter 5's.**
# > The explicit 2×4 $W_O$, causal attention, and the context taken at the last position. Unlike the book,
# > the update moves **all eight** entries of $W_O$: every one has a gradient, so every one changes.
#

# %% [markdown]
# ## The formulas
#
# **Cross-entropy** is the surprise at the right answer: small when the model gave it a high probability,
# zero when it was certain:
#
# $$L = -\log p_{\text{target}}$$
#
# ```python
# loss = -np.log(probs[target])
# ```
#
# Softmax followed by cross-entropy has a famously simple gradient with respect to the logits: what the
# model predicted minus what was true. It is negative only at the target, so descent raises the target's
# logit and lowers all the others:
#
# $$\frac{\partial L}{\partial z_j} = p_j - \mathbb{1}[j = \text{target}]$$
#
# ```python
# dlogits = probs.copy()
# dlogits[target] -= 1.0                        # the one-hot of the target
# ```
#
# The logits are $z = c\,W_O$, so entry $(i, j)$ of $W_O$ touches only logit $j$, through $c_i$. The chain rule
# gives an outer product for $W_O$ and, for the context, the gradient sent back along every column:
#
# $$\frac{\partial L}{\partial (W_O)_{ij}} = c_i\,\frac{\partial L}{\partial z_j}, \qquad
# \frac{\partial L}{\partial c} = W_O\,\frac{\partial L}{\partial z}$$
#
# ```python
# dWO = np.outer(context, dlogits)              # (d_v,) x (vocab,) -> (d_v, vocab), the shape of W_O
# dcontext = WO @ dlogits                       # (d_v, vocab) @ (vocab,) -> (d_v,)
# ```
#
# **Gradient descent** steps against the gradient, scaled by the learning rate $\eta$:
#
# $$W_O \leftarrow W_O - \eta\,\frac{\partial L}{\partial W_O}$$
#
# ```python
# WO_new = WO - lr * dWO                        # minus: downhill
# ```
#
# ### Why one step lowers the loss
#
# Only $W_O$ changes, so the new logits are the old ones moved by $-\eta\,c\,(c^\top g) = -\eta\,\lVert c\rVert^2 g$,
# where $g = \partial L/\partial z$. To first order the loss changes by $g \cdot \Delta z$:
#
# $$\Delta L \approx -\eta\,\lVert c\rVert^2\,\lVert g\rVert^2 \le 0$$
#
# For a small enough learning rate **a training step lowers the loss on its own example**, and repeating it
# drives the target's probability towards 1. The tests check both: the loss falls at every one of thirty
# steps, and many steps push P(C) above 0.99. On this worksheet the context is tiny, so
# $\lVert c\rVert^2$ and with it the first step's gain are tiny too.
#

# %% [markdown]
# ## The worksheet
#
# The book's Example 2: "A B" with target C (index 2) and $\eta = 0.1$. Work each line by hand, then compare:
#
# <!-- kata:worksheet 6 -->
#
# Things to notice:
#
# - The gradient at the logits sums to zero: whatever C gains, the others lose.
# - Every entry of $dW_O$ is nonzero, because both context entries are nonzero. An update of "just the C
#   weight" leaves most of the gradient unused.
# - After the step C's logit is up, every other logit is down, and C is now the most likely token on its own.
#   The changes are in the fourth decimal: one step is small.
# - Steps 6.7–6.10 are where the worksheet goes wrong: it updates one weight, rounds, and then reads its own
#   rounded numbers as if the loss had risen. See the errata.
#

# %% [markdown]
# ## Your turn
#
# Each function's docstring is its full specification, shapes included. Replace the `raise
# NotImplementedError(...)` with your code, run the cell, then run the check under it: ✓ passed, ✗ failed, · not
# started.

# %% [markdown]
# ### `cross_entropy` — step 6.1

# %%
# kata:stub cross_entropy

# %%
kata.check(cross_entropy)

# %% [markdown]
# ### `cross_entropy_grad` — step 6.2

# %%
# kata:stub cross_entropy_grad

# %%
kata.check(cross_entropy_grad)

# %% [markdown]
# ### `output_backward` — step 6.3

# %%
# kata:stub output_backward

# %%
kata.check(output_backward)

# %% [markdown]
# ### `sgd_step` — step 6.5

# %%
# kata:stub sgd_step

# %%
kata.check(sgd_step)

# %% [markdown]
# ### `train_output_step` — step 6.6

# %%
# kata:stub train_output_step

# %%
kata.check(train_output_step)

# %% [markdown]
# ## The whole chapter
#
# Every step and check of chapter 6, as `nox -s chapter6` shows them. Your answers count where you save them: `nox -s grade -- --notebooks` grades the saved notebooks.

# %%
kata.check()
