# %% [markdown]
# # Chapter 13 — The Modern Block
#
# The notebook way through chapter 13: read, work the worksheet with a pencil, then fill in each function below
# and run the check cell under it (`kata.check(...)`): the same steps, worksheet numbers and diagnoses as `nox
# -s chapter13`. Run the cells in order, starting with the next one. The whole page, with hints and common
# mistakes: [docs/chapters/13-modern-block.md](../docs/chapters/13-modern-block.md).

# %%
# kata:setup

# %% [markdown]
# <!-- kata:page-section "The idea" -->

# %% [markdown]
# <!-- kata:page-section "Why pre-norm: the gradient has a straight road" -->

# %% [markdown]
# <!-- kata:page-section "The formulas" -->

# %% [markdown]
# <!-- kata:page-section "The worksheet" -->

# %% [markdown]
# <!-- kata:your-turn -->
