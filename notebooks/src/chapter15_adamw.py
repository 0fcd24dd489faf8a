# %% [markdown]
# # Chapter 15 — AdamW, a Learning-Rate Schedule, Clipping and Checkpoints
#
# The notebook way through chapter 15: read, work the worksheet with a pencil, then fill in each function below
# and run the check cell under it (`kata.check(...)`): the same steps, worksheet numbers and diagnoses as `nox
# -s chapter15`. Run the cells in order, starting with the next one. The whole page, with hints and common
# mistakes: [docs/chapters/15-adamw.md](../docs/chapters/15-adamw.md).

# %%
# Run this first: it finds the course folder (the one holding kata/) and imports what the stubs use.
import pathlib
import sys

sys.path.insert(0, str(next(p for p in [pathlib.Path.cwd(), *pathlib.Path.cwd().parents] if (p / "kata").is_dir())))

import math
import numpy as np

import kata
from kata.learner.notebook import yours

CHAPTER = 15  # kata.check() checks this chapter's functions
# The chapter's constants and the earlier chapters' functions it uses: yours, from exercises/ or your notebooks
FORMAT = yours(CHAPTER, "FORMAT")

# %% [markdown]
# ## The idea
#
# Plain gradient descent has one learning rate for every weight and a step as large as the gradient. A
# weight whose gradient is always tiny (an embedding of a rare token, say) hardly moves; a weight whose
# gradient is large overshoots unless the learning rate is small enough for it, and then everything else
# crawls.
#
# **Adam** gives every weight a step of its own size. It keeps two running averages per weight: $m$, of the
# gradient (where it keeps pointing), and $v$, of the gradient's square (how large it usually is). The step
# is $m / \sqrt v$: a gradient's size divides out, and what is left is about $\pm 1$ when the gradient keeps
# its sign and smaller when it keeps changing it. Multiplied by the learning rate, every weight moves by
# **about lr** — the learning rate is now a distance, not a factor.
#
# Three more pieces make a training run:
#
# - **Decoupled weight decay** (the "W" of AdamW). Shrinking every weight a little on every step keeps them
#   small. Adam with an L2 penalty adds $\lambda w$ to the gradient, but then $m/\sqrt v$ divides it away
#   again; AdamW subtracts $\text{lr} \cdot \lambda w$ *beside* the Adam step, where nothing rescales it.
# - **A schedule.** At the start the moments know nothing and the weights are random: large steps are
#   risky, so the rate **warms up** linearly. Later, smaller steps settle into a minimum: the rate
#   **decays** along half a cosine to a floor.
# - **Clipping.** One bad batch can give a huge gradient. If the norm of *all* the gradients together is
#   above `max_norm`, every gradient is scaled down by the same factor, so the step keeps its direction.
# - **Checkpoints.** A run that stops — a crash, a time limit — must continue exactly where it was. The
#   weights are not enough: the moments and the step count are part of the run's state.
#
# ```mermaid
# flowchart LR
#     G["gradients<br/>(chapter 10's backward)"] --> C["clip_by_global_norm<br/>one norm for all"]
#     C --> A["adamw_step<br/>m, v, bias correction,<br/>decay apart"]
#     S["lr_at(step)<br/>warm-up, cosine"] --> A
#     A --> P["new params,<br/>new state"]
#     P -->|every k steps| K["save_checkpoint<br/>.npz, no pickle"]
#     K -->|after a stop| L["load_checkpoint"]
#     L --> A
# ```
#

# %% [markdown]
# ## Conventions, stated once
#
# | choice | this course | | --- | --- | | parameters, gradients | dicts of arrays with the same keys and
# shapes, like chapter 10's `params` | | the optimizer's state | `{"step": t, "m": {...}, "v": {...}}`: t steps
# taken so far, one $m$ and one $v$ per parameter | | the step count in AdamW | the step being taken is $t = $
# `state["step"]` $+ 1$: the first step is $t = 1$ | | the step of the schedule | `lr_at(step)` counts from
# **0**: the first update is step 0 | | where ε goes | **outside** the square root: $\sqrt{\hat v} +
# \varepsilon$ | | nothing in place | every function returns new dicts of new arrays; its inputs are never
# changed |
#
# The two counts differ on purpose, as they do in PyTorch and nanoGPT: the schedule asks "how many updates have
# been taken?" (0 before the first), the bias correction "which update is this?" (1 for the first). Mixing them
# is the off-by-one mistake of this chapter.

# %% [markdown]
# ## The formulas
#
# **AdamW** (steps 15.1 and 15.2). With $g$ a weight's gradient and $t$ the number of this step:
#
# $$m \leftarrow \beta_1 m + (1 - \beta_1)\,g, \qquad v \leftarrow \beta_2 v + (1 - \beta_2)\,g^2$$
#
# ```python
# m = beta1 * m + (1 - beta1) * g
# v = beta2 * v + (1 - beta2) * g * g
# ```
#
# Both moments start at 0, so after a few steps they are too small: after one step $m = (1 - \beta_1)g =
# 0.1g$. Dividing by $1 - \beta^t$ corrects exactly that bias:
#
# $$\hat m = \frac{m}{1 - \beta_1^t}, \qquad \hat v = \frac{v}{1 - \beta_2^t}$$
#
# ```python
# m_hat = m / (1 - beta1**t)
# v_hat = v / (1 - beta2**t)
# ```
#
# and the weight moves by the Adam step plus its own decay:
#
# $$w \leftarrow w - \mathrm{lr}\left(\frac{\hat m}{\sqrt{\hat v} + \varepsilon} + \lambda\, w\right)$$
#
# ```python
# w = w - lr * (m_hat / (np.sqrt(v_hat) + eps) + weight_decay * w)
# ```
#
# **Why the first step moves every weight by about lr.** At $t = 1$ the corrections undo the zeros exactly:
# $\hat m = 0.1g / 0.1 = g$ and $\hat v = 0.001g^2 / 0.001 = g^2$. So $\hat m / \sqrt{\hat v} = g / |g| =
# \pm 1$ — whatever the size of $g$. A gradient of $0.0001$ and one of $4$ move their weights by the same
# $\text{lr}$ (plus $\text{lr} \cdot \lambda w$). Without the correction the step would be
# $0.1g / (0.0316|g|) = 3.16$ times too large at the start — and too small a hundred steps later. ε only
# guards against dividing by zero; it matters only for gradients as small as itself, and it belongs outside
# the root, where $\varepsilon = 10^{-8}$ next to $|g| = 10^{-4}$ changes the step by $0.01\%$. Inside the root it would
# add to $g^2 = 10^{-8}$ and shrink that step to $0.71\,\text{lr}$.
#
# **The schedule** (steps 15.3 and 15.4), steps $s$ counted from 0:
#
# $$\mathrm{lr}(s) = \begin{cases}
#   \mathrm{max\_lr}\cdot\dfrac{s + 1}{\mathrm{warmup}} & s < \mathrm{warmup} \\[1ex]
#   \mathrm{min\_lr} + \tfrac12(\mathrm{max\_lr} - \mathrm{min\_lr})\bigl(1 + \cos \pi p\bigr),\ \
#   p = \dfrac{s - \mathrm{warmup}}{\mathrm{total} - \mathrm{warmup}} & \mathrm{warmup} \le s < \mathrm{total} \\[1ex]
#   \mathrm{min\_lr} & s \ge \mathrm{total}
# \end{cases}$$
#
# ```python
# if step < warmup_steps:
#     return max_lr * (step + 1) / warmup_steps          # step 0 already moves
# if step >= total_steps:
#     return min_lr
# progress = (step - warmup_steps) / (total_steps - warmup_steps)
# return min_lr + 0.5 * (max_lr - min_lr) * (1 + math.cos(math.pi * progress))
# ```
#
# The boundaries, all tested: step 0 gets $\mathrm{max\_lr}/\mathrm{warmup}$ (not 0: an update with a rate
# of 0 is wasted), steps $\mathrm{warmup} - 1$ and $\mathrm{warmup}$ both get $\mathrm{max\_lr}$, step
# $\mathrm{total}$ and every later one get $\mathrm{min\_lr}$. With a warm-up of 0 the decay starts at step
# 0; a warm-up longer than the run is refused.
#
#
# **Clipping** (steps 15.5 and 15.6). One norm over every number of every gradient:
#
# $$\lVert g \rVert = \sqrt{\textstyle\sum_k \sum_i g_{k,i}^2}, \qquad
# g_k \leftarrow g_k \cdot \frac{\mathrm{max\_norm}}{\lVert g \rVert}\ \text{ if } \lVert g \rVert > \mathrm{max\_norm}$$
#
# ```python
# norm = math.sqrt(sum(float(np.sum(g * g)) for g in grads.values()))
# scale = max_norm / norm if norm > max_norm else 1.0
# clipped = {k: g * scale for k, g in grads.items()}
# ```
#
# The function returns the clipped gradients *and* the norm before clipping: a training loop logs it, because
# a norm that keeps hitting the ceiling says the learning rate is too high.
#
# **Checkpoints** (step 15.7). One `.npz` file of plain arrays: `params/<key>`, `m/<key>`, `v/<key>`, the
# step count, and a `format` marker. Never pickle: `np.load(path, allow_pickle=False)` reads only numbers,
# while unpickling a file runs whatever code the file's author put in it. A file that is not ours — a text
# file, a single `.npy` array, an archive with a pickled array, one without the marker — is refused with a
# clear message, and `load_checkpoint(path, like=params)` also checks that the checkpoint holds exactly the
# run's parameters, shapes included.
#
# ```python
# np.savez(path, format=np.array(FORMAT), step=np.array(t), **{f"params/{k}": w for k, w in params.items()}, ...)
# with np.load(path, allow_pickle=False) as archive:
#     data = {name: archive[name] for name in archive.files}
# ```
#
# The test that matters: $N$ steps in one go, and $k$ steps, save, load, $N - k$ steps, give **the same
# bits**. Saving float64 arrays in `.npy` format loses nothing, so anything less than identical means
# something of the state was not saved.
#

# %% [markdown]
# ## The worksheet
#
# Two weights, $w = [0.5, -1]$. The first has a tiny gradient, the second a large one:
# $g_1 = [0.0001, -4]$ on step 1 and $g_2 = [0.0003, 2]$ on step 2 (the second weight's gradient has turned
# round). $\text{lr} = 0.1$, $\beta_1 = 0.9$, $\beta_2 = 0.999$, $\varepsilon = 10^{-8}$, $\lambda = 0.1$.
#
# The schedule: $\mathrm{max\_lr} = 0.1$, $\mathrm{min\_lr} = 0.01$, a warm-up of 4 steps, 12 steps in all.
# Clipping: $W = [3, 4]$ and $b = [12]$ with $\mathrm{max\_norm} = 1$. The last step saves the run of steps
# 15.1–15.2 after step 1, loads it and takes step 2.
#
# <!-- kata:worksheet 15 -->
#
# Read steps 15.1 and 15.2 together. On step 1 both weights move by $0.1$ plus their decay — the gradient of
# $0.0001$ as much as the one of $4$. On step 2 the second weight's gradient is $+2$, but it barely moves
# back: $m$ still remembers the $-4$ of step 1, and $v$ says gradients of this weight are large, so the Adam
# step is only $-0.27\,\text{lr}$. Step 15.7 lands on exactly step 15.2's numbers; lose the step count in the
# checkpoint and the bias correction starts again at $t = 1$, lose the moments and they start again from 0
# — both land somewhere else.
#

# %% [markdown]
# ## Your turn
#
# Each function's docstring is its full specification, shapes included. Replace the `raise
# NotImplementedError(...)` with your code, run the cell, then run the check under it: ✓ passed, ✗ failed, · not
# started, ⧗ timed out, ! error (crashed or does not import).

# %% [markdown]
# ### `adamw_init` — step 15.1

# %%
# kata:stub adamw_init

# %%
kata.check(adamw_init)

# %% [markdown]
# ### `adamw_step` — step 15.1

# %%
# kata:stub adamw_step

# %%
kata.check(adamw_step)

# %% [markdown]
# ### `lr_at` — step 15.3

# %%
# kata:stub lr_at

# %%
kata.check(lr_at)

# %% [markdown]
# ### `clip_by_global_norm` — step 15.5

# %%
# kata:stub clip_by_global_norm

# %%
kata.check(clip_by_global_norm)

# %% [markdown]
# ### `save_checkpoint` — step 15.7

# %%
# kata:stub save_checkpoint

# %%
kata.check(save_checkpoint)

# %% [markdown]
# ### `load_checkpoint` — step 15.7

# %%
# kata:stub load_checkpoint

# %%
kata.check(load_checkpoint)

# %% [markdown]
# ## The whole chapter
#
# Every step and check of chapter 15, as `nox -s chapter15` shows them. Your answers count where you save them: `nox -s grade -- --notebooks` grades the saved notebooks.

# %%
kata.check()
