# %% [markdown]
# # Chapter 8 — Batch Training
#
# The notebook way through chapter 8: read, work the worksheet with a pencil, then fill in each function below
# and run the check cell under it (`kata.check(...)`): the same steps, worksheet numbers and diagnoses as `nox
# -s chapter8`. Run the cells in order, starting with the next one. The whole page, with hints and common
# mistakes: [docs/chapters/08-batch-training.md](../docs/chapters/08-batch-training.md).

# %%
# Run this first: it finds the course folder (the one holding kata/) and imports what the stubs use.
import pathlib
import sys

sys.path.insert(0, str(next(p for p in [pathlib.Path.cwd(), *pathlib.Path.cwd().parents] if (p / "kata").is_dir())))

import numpy as np

import kata
from kata.learner.notebook import yours

CHAPTER = 8  # kata.check() checks this chapter's functions
# The chapter's constants and the earlier chapters' functions it uses: yours, from exercises/ or your notebooks
PARAM_NAMES, forward, cross_entropy, cross_entropy_grad, output_backward, sgd_step, backward = yours(CHAPTER, "PARAM_NAMES", "forward", "cross_entropy", "cross_entropy_grad", "output_backward", "sgd_step", "backward")

# %% [markdown]
# ## The idea
#
# Chapters 6 and 7 taught the model one example, A B → C. A model that only ever sees one example learns
# to say C whatever it reads. Real training shows it many examples and asks for one set of weights that
# serves them all. This chapter's batch has three patterns that pull in different directions:
#
# | example | ids | next | target id |
# | --- | --- | --- | --- |
# | A B → C | [0, 1] | C | 2 |
# | A A → D | [0, 0] | D | 3 |
# | B A → C | [1, 0] | C | 2 |
#
# Each example has its own loss and its own gradient. Stepping along one example's gradient would help it
# and possibly hurt the others; instead we **average**: forward every example, average the losses, average
# the gradients, and take **one** step against the average. One pass over the batch with one update is an
# **epoch**. The averaged gradient points downhill for the *mean* loss, so the step helps the batch as a
# whole.
#
# Why the mean and not the sum? With a sum, the step grows with the batch: double the batch and you
# double the step, so a learning rate that worked for 3 examples would blow up for 300. The mean keeps the
# step size independent of the batch size.
#
# ```mermaid
# flowchart LR
#     P["weights<br/>W_Q, W_K, W_V, W_O"] --> F1["A B → C<br/>forward + backward"]
#     P --> F2["A A → D<br/>forward + backward"]
#     P --> F3["B A → C<br/>forward + backward"]
#     F1 --> M["mean loss<br/>mean gradients"]
#     F2 --> M
#     F3 --> M
#     M --> U["one step:<br/>W ← W − η · mean dW"]
#     U -- "next epoch" --> P
# ```
#
# The model is the one from chapters 5–7: toy embeddings A = [1, 0], B = [0, 1], C = [1, 1], D = [0, 0];
# $W_Q = W_K = W_V = 0.1\,I$; an **explicit 2×4** $W_O = \begin{bmatrix} 0.1 & 0 & 0 & 0 \\ 0 & 0 & 0.1 & 0 \end{bmatrix}$
# (the worksheet prints a "simplified" 2×2 $W_O$ but computes its logits with this one); **causal
# attention**; and the context that predicts the next token is the attention output at the **last**
# position.
#

# %% [markdown]
# ## The formulas
#
# For a batch of $N$ examples $(\text{ids}_k, t_k)$, each with its probabilities $p_k$ from chapter 5's
# forward pass:
#
# $$L = \frac{1}{N}\sum_{k=1}^{N} L_k, \qquad L_k = -\log p_{k,\,t_k}$$
#
# ```python
# loss = np.mean([-np.log(p[t]) for p, t in zip(probs, targets)])
# ```
#
# The gradient of a mean is the mean of the gradients, for every matrix:
#
# $$\frac{\partial L}{\partial W} = \frac{1}{N}\sum_{k=1}^{N}\frac{\partial L_k}{\partial W}, \qquad W \in \{W_Q, W_K, W_V, W_O\}$$
#
# ```python
# grads = [backward(ids, t, params)[1] for ids, t in examples]      # chapter 7, one example at a time
# mean_grads = {name: np.mean([g[name] for g in grads], axis=0) for name in params}
# ```
#
# One step of gradient descent (`apply_gradients` updates only the matrices it is given gradients for,
# so `{"WO": dWO}` reproduces the worksheet's W_O-only step):
#
# $$W \leftarrow W - \eta\,\frac{\partial L}{\partial W}$$
#
# ```python
# new = {name: W - lr * grads[name] if name in grads else W.copy() for name, W in params.items()}
# ```
#
# Training repeats that for a number of epochs and records the mean loss **before** each update, so
# `losses[0]` is the untrained model's loss:
#
# ```python
# for _ in range(epochs):
#     loss, grads = batch_gradients(examples, params)
#     losses.append(loss)
#     params = apply_gradients(params, grads, lr)
# ```
#
# Accuracy counts how many examples have their target as the most probable next token (a tie goes to
# the lowest token id):
#
# $$\text{accuracy} = \frac{1}{N}\sum_{k=1}^{N}\mathbb{1}\big[\arg\max_j p_{k,j} = t_k\big]$$
#

# %% [markdown]
# ## The worksheet
#
# The book's Example 4 works the batch by hand: Part 1 runs each example forward, Part 2 takes each
# example's gradient of $W_O$, Part 3 averages them, Part 4 takes one step on $W_O$ alone, and Part 5
# checks that the losses went down. Steps 8.1–8.13 follow it; steps 8.14–8.16 go on to train all four
# matrices.
#
# **The worksheet goes wrong early, and the slip spreads.** For A A it turns the logits [0.01, 0, 0, 0]
# into the probabilities [0.9975, 0.0008, 0.0008, 0.0008]; a logit gap of 0.01 barely moves a softmax, and
# the true probabilities are all close to ¼. Everything after that for A A — its loss, gradients, the
# average, the update, the "after" numbers — inherits the mistake. Independently, its per-example
# $\partial L/\partial W_O$ for A B and B A writes the context entries where their products with
# $\partial L/\partial \text{logits}$ belong (Example 2's own worksheet has the right numbers), and its
# update starts $W_O[1][1]$ from 0.1 although it is 0. The table shows the worksheet's number beside the
# exact one, and the [errata](#errata) explain each difference.
#
# <!-- kata:worksheet 8 -->
#
# What survives exact arithmetic is the worksheet's point: **after one averaged step on $W_O$ the mean loss
# is lower** (step 8.13 against step 8.5), and each of the three losses is lower too. The improvement is
# tiny, because a step of 0.1 times gradients of about 0.02 hardly moves the weights.
#
# ### Training until every pattern is right
#
# Before training the model gets one pattern in three right, and that one by a hair (step 8.15: C beats A
# for A B by less than 0.00001). Train all four matrices on the batch at the worksheet's learning rate
# η = 0.1, and the loss falls at every epoch; after one update two patterns are right, and the last one
# flips after 158 updates. **The budget: within 200 epochs at η = 0.1, all three patterns are right** (step 8.16).
# Step 8.14 pins the loss every 20 epochs; the curve below is drawn from the reference solution when this
# site is built:
#
#
# The loss is almost flat for the first 40 or so epochs, because every logit is a product of small
# weights and so every gradient is small; it falls quickly once the weights have grown, and it is still
# falling at epoch 200. Training only $W_O$, as the worksheet does, stays on the flat part for all 200
# epochs.
#
# > **The book's code does not train.**
# > The C++ listing for Example 4 computes the losses for 5 epochs but never updates a weight (its backward
# > pass is a comment), so its printed loss would be the same every epoch. `train` here does the update.
#

# %% [markdown]
# ## Your turn
#
# Each function's docstring is its full specification, shapes included. Replace the `raise
# NotImplementedError(...)` with your code, run the cell, then run the check under it: ✓ passed, ✗ failed, · not
# started.

# %% [markdown]
# ### `per_example` — step 8.1

# %%
# kata:stub per_example

# %%
kata.check(per_example)

# %% [markdown]
# ### `batch_loss` — step 8.5

# %%
# kata:stub batch_loss

# %%
kata.check(batch_loss)

# %% [markdown]
# ### `batch_gradients` — step 8.9

# %%
# kata:stub batch_gradients

# %%
kata.check(batch_gradients)

# %% [markdown]
# ### `apply_gradients` — step 8.10

# %%
# kata:stub apply_gradients

# %%
kata.check(apply_gradients)

# %% [markdown]
# ### `train` — step 8.14

# %%
# kata:stub train

# %%
kata.check(train)

# %% [markdown]
# ### `accuracy` — step 8.15

# %%
# kata:stub accuracy

# %%
kata.check(accuracy)

# %% [markdown]
# ## The whole chapter
#
# Every step and check of chapter 8, as `nox -s chapter8` shows them. Your answers count where you save them: `nox -s grade -- --notebooks` grades the saved notebooks.

# %%
kata.check()
