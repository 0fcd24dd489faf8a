# %% [markdown]
# # Chapter 10 — The Complete Transformer
#
# The notebook way through chapter 10: read, work the worksheet with a pencil, then fill in each function below
# and run the check cell under it (`kata.check(...)`): the same steps, worksheet numbers and diagnoses as `nox
# -s chapter10`. Run the cells in order, starting with the next one. The whole page, with hints and common
# mistakes: [docs/chapters/10-transformer.md](../docs/chapters/10-transformer.md).

# %%
# Run this first: it finds the course folder (the one holding kata/) and imports what the stubs use.
import pathlib
import sys

sys.path.insert(0, str(next(p for p in [pathlib.Path.cwd(), *pathlib.Path.cwd().parents] if (p / "kata").is_dir())))

import numpy as np

import kata
from kata.learner.notebook import yours

CHAPTER = 10  # kata.check() checks this chapter's functions
# The chapter's constants and the earlier chapters' functions it uses: yours, from exercises/ or your notebooks
causal_mask, softmax, BLOCK_KEYS, MODEL_KEYS = yours(CHAPTER, "causal_mask", "softmax", "BLOCK_KEYS", "MODEL_KEYS")

# %% [markdown]
# ## The idea
#
# Every piece is on the table already: embeddings (chapter 3), attention (chapter 4), an output layer and a
# loss (chapters 5–6), backpropagation (chapter 7), averaged updates (chapter 8), a feed-forward network
# with a residual connection (chapter 9). A transformer is those pieces in a fixed arrangement, repeated.
#
# Think of one row per position flowing upwards — the **residual stream**. It starts as the token's
# embedding plus its **position's** embedding. Then each **block** makes two additions to it:
#
# 1. an **attention** sub-layer reads a normalised copy of the stream, lets every position gather from the
#    positions before it, and adds what it found;
# 2. a **feed-forward** sub-layer reads a normalised copy again and adds a per-position correction.
#
# Nothing is ever overwritten: each sub-layer *adds* to the stream (`x + F(x)`), so a block that has
# learned nothing passes its input through, and on the way back the gradient reaches every layer along the
# "+" paths. After the last block, one more normalisation and a projection to the vocabulary give a row of
# logits per position: row $i$ scores the token that should come after position $i$.
#
# ```mermaid
# flowchart BT
#     ids["ids (seq,)"] --> E["tok_emb[ids] + pos_emb[:seq]<br/>(seq, d_model)"]
#     E --> N1["LN₁"]
#     N1 --> AT["causal attention"]
#     AT --> P1(("+"))
#     E -- "residual" --> P1
#     P1 --> N2["LN₂"]
#     N2 --> FF["feed-forward"]
#     FF --> P2(("+"))
#     P1 -- "residual" --> P2
#     P2 -- "… n_layers blocks …" --> NF["final LN"]
#     NF --> O["@ W_O → logits<br/>(seq, vocab)"]
# ```
#
# This is the **pre-norm** arrangement (normalise *before* each sub-layer, add after), which modern models
# use because the stream itself is never squashed. The book draws the same parts without fixing an order.
#
# **Layer normalisation** is the one new piece. Each row is shifted to mean 0 and scaled to variance 1
# across its own features, then a learned scale $\gamma$ and shift $\beta$ (one per feature) are applied. It
# keeps the inputs of every sub-layer in the same range however large the stream grows — the stream in
# the worksheet below reaches 9, yet attention and the FFN only ever see numbers of size about 1.
#

# %% [markdown]
# ## The formulas
#
# **Embedding.** Token row plus position row:
#
# $$x_i = E_\text{tok}[\text{ids}_i] + E_\text{pos}[i]$$
#
# ```python
# x = params["tok_emb"][ids] + params["pos_emb"][: len(ids)]   # (seq, d_model)
# ```
#
# **Layer norm**, over the last axis, with the *population* variance (divide by $d$, not $d - 1$) and a
# small $\varepsilon = 10^{-5}$ inside the square root:
#
# $$\mu = \tfrac1d \textstyle\sum_k x_k,\quad \sigma^2 = \tfrac1d \sum_k (x_k - \mu)^2,\quad
# \hat x = \frac{x - \mu}{\sqrt{\sigma^2 + \varepsilon}},\quad \mathrm{LN}(x) = \gamma \odot \hat x + \beta$$
#
# ```python
# xc = x - x.mean(axis=-1, keepdims=True)
# var = np.mean(xc * xc, axis=-1, keepdims=True)      # population variance
# x_hat = xc / np.sqrt(var + eps)
# y = gamma * x_hat + beta
# ```
#
# **Layer norm backward.** Every input moves its row's mean and variance, which every output uses, so the
# gradient of one input collects three terms. With $g = d_\text{out} \odot \gamma$ and bars for means over
# the row:
#
# $$\frac{\partial L}{\partial x} = \frac{1}{\sqrt{\sigma^2+\varepsilon}}\left(g - \bar g - \hat x\,
# \overline{g \odot \hat x}\right),\qquad \frac{\partial L}{\partial \gamma} = \sum_\text{rows} d_\text{out}
# \odot \hat x,\qquad \frac{\partial L}{\partial \beta} = \sum_\text{rows} d_\text{out}$$
#
# ```python
# g = d_out * gamma
# dx = (g - g.mean(axis=-1, keepdims=True) - x_hat * (g * x_hat).mean(axis=-1, keepdims=True)) / np.sqrt(var + eps)
# ```
#
# **Causal attention**, single head, scaled by $1/\sqrt{d_\text{model}}$ (chapter 4's formula with
# $d_k = d_\text{model}$):
#
# $$A = \mathrm{softmax}\!\left(\frac{(xW_Q)(xW_K)^\top}{\sqrt{d_\text{model}}} + M\right) xW_V$$
#
# ```python
# S = (x @ WQ) @ (x @ WK).T / np.sqrt(d_model)
# S = np.where(causal_mask(seq), S, -np.inf)
# A = softmax(S) @ (x @ WV)
# ```
#
# Its backward runs chapter 7's rules through the softmax row by row,
# $dS = P \odot (dP - \mathrm{rowsum}(dP \odot P))$, and adds the three ways $x$ was used:
# $dx = dQ\,W_Q^\top + dK\,W_K^\top + dV\,W_V^\top$.
#
# **Feed-forward** (chapter 9), with biases: $\mathrm{FFN}(x) = \mathrm{ReLU}(xW_1 + b_1)W_2 + b_2$.
#
# **A block**, and its backward. Going back through $y = x + F(x)$ the gradient forks — straight through,
# and through $F$ — and the two parts are added:
#
# $$x_1 = x + \mathrm{Attn}(\mathrm{LN}_1(x)),\quad y = x_1 + \mathrm{FFN}(\mathrm{LN}_2(x_1));\qquad
# \frac{\partial L}{\partial x_1} = \frac{\partial L}{\partial y} + \Big(\text{through LN}_2 \text{ and FFN}\Big)$$
#
# ```python
# dx1 = d_y + dx1_via_norm      # the residual path + the path through LN2 and the FFN
# dx = dx1 + dx_via_norm        # the residual path + the path through LN1 and attention
# ```
#
# **Logits, loss, gradient.** A target per position; a negative target means "no loss here". With $n$ the
# number of positions that have a target:
#
# $$\text{logits} = \mathrm{LN}_f(x_L)\,W_O,\qquad L = -\frac1n \sum_{i:\,t_i \ge 0} \log
# \mathrm{softmax}(\text{logits}_i)_{t_i},\qquad \frac{\partial L}{\partial\,\text{logits}_i} =
# \frac{\mathrm{softmax}(\text{logits}_i) - \mathrm{onehot}(t_i)}{n}$$
#
# At the bottom of the backward pass, a token that occurs twice collects the gradient of both its positions:
# `np.add.at(d_tok, ids, dx)` — plain `d_tok[ids] += dx` keeps only one of them.
#
# **Training.** Each epoch, one step on the *mean* gradient over the $N$ sequences (chapter 8):
# $\theta \leftarrow \theta - \eta\,\frac1N\sum_n \nabla_\theta L_n$. **Generation** is greedy: run the model
# on everything so far and append the argmax of the last row of logits.
#

# %% [markdown]
# ## Layer norm with only two features
#
# The book's models have $d_\text{model} = 2$. Normalise a row $[a, b]$ of two features and something drastic
# happens. The mean is the midpoint, so both entries sit the same distance $h = (a - b)/2$ from it, one above
# and one below, and the variance is $h^2$. Layer norm returns
#
# $$\mathrm{LN}([a, b]) = \frac{[h, -h]}{\sqrt{h^2 + \varepsilon}}\ (\text{then } \gamma, \beta).$$
#
# Two regimes follow, and step 10.2 pins both:
#
# - **$|h| \gg \sqrt\varepsilon \approx 0.0032$**: the result is $\pm[1, -1]$ to many digits. The embedding   A
# = [1, 0] becomes [0.99998, −0.99998]; [3, 7] and [0.2, 0.9] both land on [−1, 1] to four decimals.   Only the
# **sign** of $a - b$ survives. - **$|h|$ comparable to or below $\sqrt\varepsilon$**: $\varepsilon$ dominates
# and the output is small.   The book's activations are exactly this small: the context [0.0498, 0.0502] has $h
# = -0.0002$ and comes   out near ∓0.063, nowhere near ±1; Example 5's output row [0.054298, 0.054702] likewise.
#
# So the statement "two features are mapped to ±1 whatever their values" is true only in the first regime. In
# both regimes, though, the conclusion is the same: after subtracting the mean, a row of two features has **one
# degree of freedom left**, and dividing by the spread removes most of that. A model whose every sub-layer sees
# only "which of my two features is bigger" cannot represent much. That is why this chapter trains models with
# $d_\text{model} = 8$ and keeps the 2-feature rows for the hand calculation only.

# %% [markdown]
# ## The worksheet
#
# The book's Example 6 has no worksheet, so this one is the course's own. Work it with a pencil and a
# calculator; every number you need is derived step by step in the hints.
#
# **Layer norm by hand (10.1–10.3).** The row $x = [0, 2, 2, 8]$ is chosen so that its mean is 3 and its
# variance exactly 9 ($\sigma = 3$ up to $\varepsilon$): $\hat x$ is $[-1, -\tfrac13, -\tfrac13, \tfrac53]$
# to six decimals. Step 10.1 applies $\gamma = [2, 1, 1, 0.5]$ and $\beta = [0, 0.5, -0.5, 1]$; step 10.3
# sends the gradient $[1, 0, 0, 0]$ back through it. Step 10.2 is the two-feature rows discussed above,
# with $\gamma = 1$, $\beta = 0$.
#
# **One block (10.4–10.9).** $d_\text{model} = 4$, $d_\text{ff} = 8$, three positions. The input rows
# $[0, 2, 2, 8]$, $[1, 3, 1, 3]$, $[4, 4, 0, 0]$ all normalise to friendly rows (±1 and ±⅓). The weights are
# chosen so that each sub-layer does something you can say in words:
#
# | weights | value | what the sub-layer does |
# | --- | --- | --- |
# | $\gamma_1 = \gamma_2$, $\beta_1 = \beta_2$ | 1, 0 | plain normalisation |
# | $W_Q = W_K$ | $I_4$ | scores are dot products of the normalised rows, divided by $\sqrt4 = 2$ |
# | $W_V$ | $0.5\,I_4$ | each position adds half of the rows it attends to |
# | $W_1$, $b_1$ | $[I_4 \mid -I_4]$, $-0.5$ | hidden units hold $x - 0.5$ and $-x - 0.5$ |
# | $W_2$, $b_2$ | $0.5\,[I_4; I_4]$, 0 | FFN$(x) = 0.5\cdot\max(\lvert x\rvert - 0.5,\ 0)$ entry by entry |
#
# Steps 10.4 and 10.5 take the normalised input of each sub-layer (given in the key, so each step stands on
# its own); step 10.6 chains the whole block; steps 10.7–10.9 send the gradient
# $dy = [[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0]]$ back down.
#
# **The worksheet model (10.10–10.18).** Vocabulary A, B, C, D; that block as its only layer;
# $E_\text{tok}$ rows A = [0, 2, 2, 4], B = [1, 3, 1, 3], C = [2, 0, 0, 0], D = [0, 0, 2, 0];
# $E_\text{pos}$ rows $p_0 = [0, 0, 0, 4]$, $p_1 = 0$, $p_2 = [4, 2, -2, -4]$, so that "A B A" embeds to
# exactly the block input above; final layer norm with $\gamma = 1$, $\beta = 0$; and
#
# $$W_O = \begin{bmatrix} 1 & 0 & 0 & 0 \\ 0 & 1 & 0 & 0 \\ 0 & 0 & 1 & 0.5 \\ 0 & 0.5 & 0 & 1 \end{bmatrix}.$$
#
# Targets for "A B A" are [B, −1, C]: position 1 has none. Training (10.17) adds "B A A" with targets
# [A, −1, D] and takes three full-batch steps with $\eta = 0.5$.
#
# <!-- kata:worksheet 10 -->
#
# Things to notice:
#
# - **10.3:** the entries of $dx$ sum to 0. Adding the same number to every feature changes nothing after
#   layer norm, so the gradient can have no component along $[1, 1, 1, 1]$.
# - **10.4:** row 0 can only attend to itself, so its output is simply half its own normalised row. Every
#   normalised row has squared length 4 (variance 1 times 4 features), so every diagonal score is $4/2 = 2$.
# - **10.5:** ReLU zeroes every hidden unit whose input is below 0.5 in size — row 0 keeps only two of eight.
# - **10.6:** the stream grows (9.4 in row 0) while what the sub-layers read stays near ±1.
# - **10.7:** each $dy$ row reaches the input only through the hidden units that were open.
# - **10.9:** $dx$ is close to $dy$: the residual paths carry the gradient straight through and the
#   sub-layers add corrections. Drop a residual path and most of the gradient is gone.
# - **10.15:** C and D are not in the input, so their rows of the gradient are zero; A's row is the sum over
#   positions 0 and 2.
# - **10.17:** the mean loss falls every epoch.
#

# %% [markdown]
# ## Why positions matter
#
# Attention on its own does not know where anything is: its weights depend on what the queries and keys *are*,
# and the output is a weighted **sum** over the visible positions, which does not care about their order. The
# book's models never add position information. What does that cost?
#
# Take [A, B, A] → C and [B, A, A] → D. **With one layer and no position embeddings**, the last position of both
# sequences has the same query (it is an A) and sees the same keys and values: two A's and one B. Only their
# order differs, and a sum does not notice. So the last row of the logits is identical for both sequences, **for
# every choice of weights**, and no training can send them to different targets: the best possible mean loss is
# $\ln 2 \approx 0.693$ (50/50 between C and D). The test
# `test_without_positions_one_layer_cannot_tell_a_b_a_from_b_a_a` checks both: identical logits for three random
# initialisations, and a training run (positions held at zero) whose loss never goes below $\ln 2$.
#
# With **learned position embeddings**, the same one-layer model separates them within a few epochs: the last
# position now sees "A at 0, B at 1" in one sequence and "B at 0, A at 1" in the other.
#
# The chart in the next section shows both runs side by side: with positions the loss falls to almost 0; with
# the position table held at zero it levels off just above $\ln 2$.
#
# > **The claim is about one layer.** > With **two or more** layers and no position embeddings the causal mask
# itself leaks order: position 0 > sees only itself, position 1 sees two tokens, and so on. In [A, B, A] the
# second position is a B that > has seen {A, B}; in [B, A, A] it is an A that has seen {B, A}. The first layer's
# outputs therefore > differ between the two sequences, and the second layer's last position *can* tell them
# apart. The test > `test_without_positions_two_layers_can_tell_them_apart_through_the_mask` shows the
# difference. Real > models still add positions: leaking order through the mask is indirect and weak.

# %% [markdown]
# ## Training really learns
#
# All runs use `init_params(vocab_size=4, d_model=8, d_ff=16, ...)`, full-batch gradient descent with $\eta =
# 0.3$ and 100 epochs, and take well under a second. The tests require 100 % accuracy and a final mean loss
# below 0.05. With 40 different seeds every run met those bounds; the slowest reached 100 % accuracy at epoch 24
# (three patterns), 17 (positions) and 12 (the sequence).
#
# - **Three patterns, two layers:** A B → C, A A → D, B A → C (the book's batch from chapter 8, now as
# sequences with the target at the last position). - **A sequence, two layers:** trained on "A B C D A B C D"
# (targets: each next token; the last position   has none), `generate([A], params, 7)` returns A B C D A B C D.
# - **Positions, one layer:** [A, B, A] → C and [B, A, A] → D, as above.
#
# Mean loss per epoch, computed from the reference implementation when this site is built:
#
#  A fixed step size does not guarantee that every step goes downhill: the three-pattern run (blue) jumps back
# up once, when a step overshoots, and then falls to almost 0. Such spikes are common at this size — with a
# smaller η too — which is why the tests judge the end of a run, not every epoch. One thing the sequence model
# did *not* learn: its training sequence always starts with A at position 0, and it learns "what follows at
# position $i$" as much as "what follows which token" — with seed 0, a prompt that starts elsewhere, such as [C,
# D], is not continued as A B C. One sequence is not enough data to learn the rule.

# %% [markdown]
# ## Speed
#
# The solution works on whole sequences at once — no Python loop over positions. `python
# benchmarks/bench_chapter10.py` times a training step (forward, loss, backward, update) for $d_\text{model} =
# 64$, 2 layers, $d_\text{ff} = 256$ and 64 tokens, and in the same run the 24 matrix products such a step must
# compute, alone: the floor no NumPy implementation can beat. It prints both and their ratio; the target is a
# step within 3× of the floor.
#
# On the machine this course was written on (two shared cores, one BLAS thread) a step took about 3.1 ms (≈ 320
# steps per second) against a floor of about 0.9 ms: **3.3×**, just over the target. The gap is not Python: a
# (64, 256) float64 array is 128 KiB, and glibc's allocator returns blocks that size to the operating system
# when they are freed, so every step pays page faults again. Told to keep freed memory (the script does that in
# a second measurement), the same step takes about 2.2 ms against 0.8 ms: **2.8×**.

# %% [markdown]
# ## Your turn
#
# Each function's docstring is its full specification, shapes included. Replace the `raise
# NotImplementedError(...)` with your code, run the cell, then run the check under it: ✓ passed, ✗ failed, · not
# started.

# %% [markdown]
# ### `layer_norm` — step 10.1

# %%
# kata:stub layer_norm

# %%
kata.check(layer_norm)

# %% [markdown]
# ### `layer_norm_backward` — step 10.3

# %%
# kata:stub layer_norm_backward

# %%
kata.check(layer_norm_backward)

# %% [markdown]
# ### `attention_forward` — step 10.4

# %%
# kata:stub attention_forward

# %%
kata.check(attention_forward)

# %% [markdown]
# ### `attention_backward` — step 10.8

# %%
# kata:stub attention_backward

# %%
kata.check(attention_backward)

# %% [markdown]
# ### `ffn_forward` — step 10.5

# %%
# kata:stub ffn_forward

# %%
kata.check(ffn_forward)

# %% [markdown]
# ### `ffn_backward` — step 10.7

# %%
# kata:stub ffn_backward

# %%
kata.check(ffn_backward)

# %% [markdown]
# ### `block_forward` — step 10.6

# %%
# kata:stub block_forward

# %%
kata.check(block_forward)

# %% [markdown]
# ### `block_backward` — step 10.9

# %%
# kata:stub block_backward

# %%
kata.check(block_backward)

# %% [markdown]
# ### `init_params` — step 10.10

# %%
# kata:stub init_params

# %%
kata.check(init_params)

# %% [markdown]
# ### `embed` — step 10.11

# %%
# kata:stub embed

# %%
kata.check(embed)

# %% [markdown]
# ### `transformer_forward` — step 10.12

# %%
# kata:stub transformer_forward

# %%
kata.check(transformer_forward)

# %% [markdown]
# ### `cross_entropy` — step 10.13

# %%
# kata:stub cross_entropy

# %%
kata.check(cross_entropy)

# %% [markdown]
# ### `transformer_backward` — step 10.15

# %%
# kata:stub transformer_backward

# %%
kata.check(transformer_backward)

# %% [markdown]
# ### `transformer_loss_and_grads` — step 10.16

# %%
# kata:stub transformer_loss_and_grads

# %%
kata.check(transformer_loss_and_grads)

# %% [markdown]
# ### `train_transformer` — step 10.17

# %%
# kata:stub train_transformer

# %%
kata.check(train_transformer)

# %% [markdown]
# ### `generate` — step 10.18

# %%
# kata:stub generate

# %%
kata.check(generate)

# %% [markdown]
# ## The whole chapter
#
# Every step and check of chapter 10, as `nox -s chapter10` shows them. Your answers count where you save them: `nox -s grade -- --notebooks` grades the saved notebooks.

# %%
kata.check()
