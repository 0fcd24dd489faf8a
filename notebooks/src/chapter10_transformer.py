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
# <!-- kata:page-section "The idea" -->

# %% [markdown]
# <!-- kata:page-section "The formulas" -->

# %% [markdown]
# <!-- kata:page-section "Layer norm with only two features" -->

# %% [markdown]
# <!-- kata:page-section "The worksheet" -->

# %% [markdown]
# <!-- kata:page-section "Why positions matter" -->

# %% [markdown]
# <!-- kata:page-section "Training really learns" -->

# %% [markdown]
# <!-- kata:page-section "Speed" -->

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
