# %% [markdown]
# # Chapter 3 — Embeddings
#
# The notebook way through chapter 3: read, work the worksheet with a pencil, then fill in each function below
# and run the check cell under it (`kata.check(...)`): the same steps, worksheet numbers and diagnoses as `nox
# -s chapter3`. Run the cells in order, starting with the next one. The whole page, with hints and common
# mistakes: [docs/chapters/03-embeddings.md](../docs/chapters/03-embeddings.md).

# %%
# Run this first: it finds the course folder (the one holding kata/) and imports what the stubs use.
import pathlib
import sys

sys.path.insert(0, str(next(p for p in [pathlib.Path.cwd(), *pathlib.Path.cwd().parents] if (p / "kata").is_dir())))

import numpy as np

import kata
from kata.learner.notebook import yours

CHAPTER = 3  # kata.check() checks this chapter's functions
# The chapter's constants and the earlier chapters' functions it uses: yours, from exercises/ or your notebooks
TOY_EMBEDDINGS = yours(CHAPTER, "TOY_EMBEDDINGS")

# %% [markdown]
# ## The idea
#
# A token is a symbol; "cat" has no arithmetic. Networks need numbers, so each token gets a vector — its
# **embedding** — and the model does all its work on vectors.
#
# The simplest vector is **one-hot**: as long as the vocabulary, all zeros but a 1 in the token's own place.
# Every pair of one-hot vectors is perpendicular, so they say nothing about which tokens are alike, and
# they grow with the vocabulary.
#
# A **learned embedding table** $E$ of shape $(V, d)$ holds one row of $d$ numbers per token. Looking up
# token $i$ means taking row $i$ — exactly what multiplying its one-hot vector by $E$ does, without the
# multiplications. Training moves the rows so that tokens used alike end up pointing alike, which
# **cosine similarity** measures: 1 for the same direction, 0 for perpendicular, −1 for opposite,
# whatever the lengths.
#
# During training the gradient of the loss with respect to the looked-up rows flows back into the table:
# row $i$ of the table collects the gradients of every position where token $i$ was used. A token used twice
# collects two gradients, *added*.
#
# The course's toy table has $d = 2$:
#
# | token | A | B | C | D |
# | --- | --- | --- | --- | --- |
# | embedding | [1, 0] | [0, 1] | [1, 1] | [0, 0] |
#

# %% [markdown]
# ## The formulas
#
# $$\text{one\_hot}(i)_j = [\,j = i\,] \qquad\qquad X = \text{one\_hot}(\text{ids})\,E, \quad X_t = E_{\text{ids}_t}$$
#
# ```python
# X = table[ids]                      # (seq,) ids -> (seq, d) rows
# ```
#
# $$\cos(a, b) = \frac{a \cdot b}{\lVert a \rVert\,\lVert b \rVert}$$
#
# The gradient of the table, for every position $t$:
#
# $$\frac{\partial L}{\partial E_i} = \sum_{t\,:\,\text{ids}_t = i} \frac{\partial L}{\partial X_t}$$
#
# ```python
# np.add.at(d_table, ids, d_X)        # d_table[ids] += d_X would drop repeated ids
# ```
#

# %% [markdown]
# ## The worksheet
#
# <!-- kata:worksheet 3 -->
#
# The book gives "cat" = [0.3, 0.7, −0.2], "dog" = [0.4, 0.6, −0.1] and "mat" = [−0.1, 0.2, 0.8] and calls
# the first two similar and the third different; steps 3.4 and 3.5 put numbers on that. (Dog and mat turn
# out exactly perpendicular: −0.04 + 0.12 − 0.08 = 0.)
#

# %% [markdown]
# ## Your turn
#
# Each function's docstring is its full specification, shapes included. Replace the `raise
# NotImplementedError(...)` with your code, run the cell, then run the check under it: ✓ passed, ✗ failed, · not
# started.

# %% [markdown]
# ### `one_hot` — step 3.1

# %%
# kata:stub one_hot

# %%
kata.check(one_hot)

# %% [markdown]
# ### `embed` — step 3.2

# %%
# kata:stub embed

# %%
kata.check(embed)

# %% [markdown]
# ### `embedding_backward` — step 3.6

# %%
# kata:stub embedding_backward

# %%
kata.check(embedding_backward)

# %% [markdown]
# ### `cosine_similarity` — step 3.4

# %%
# kata:stub cosine_similarity

# %%
kata.check(cosine_similarity)

# %% [markdown]
# ## The whole chapter
#
# Every step and check of chapter 3, as `nox -s chapter3` shows them. Your answers count where you save them: `nox -s grade -- --notebooks` grades the saved notebooks.

# %%
kata.check()
