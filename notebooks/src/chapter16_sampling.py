# %% [markdown]
# # Chapter 16 — Sampling and the KV Cache
#
# The notebook way through chapter 16: read, work the worksheet with a pencil, then fill in each function below
# and run the check cell under it (`kata.check(...)`): the same steps, worksheet numbers and diagnoses as `nox
# -s chapter16`. Run the cells in order, starting with the next one. The whole page, with hints and common
# mistakes: [docs/chapters/16-sampling.md](../docs/chapters/16-sampling.md).

# %%
# kata:setup

# %% [markdown]
# <!-- kata:page-section "The idea" -->

# %% [markdown]
# <!-- kata:page-section "Conventions, stated once" -->

# %% [markdown]
# <!-- kata:page-section "The formulas" -->

# %% [markdown]
# <!-- kata:page-section "The worksheet" -->

# %% [markdown]
# <!-- kata:your-turn -->
