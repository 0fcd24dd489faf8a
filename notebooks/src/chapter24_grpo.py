# %% [markdown]
# # Chapter 24 — GRPO
#
# The notebook way through chapter 24: read, work the worksheet with a pencil, then fill in each function below
# and run the check cell under it (`kata.check(...)`): the same steps, worksheet numbers and diagnoses as `nox
# -s chapter24`. Run the cells in order, starting with the next one. The whole page, with hints and common
# mistakes: [docs/chapters/24-grpo.md](../docs/chapters/24-grpo.md).

# %%
# kata:setup

# %% [markdown]
# <!-- kata:page-section "The idea" -->

# %% [markdown]
# <!-- kata:page-section "The formulas" -->

# %% [markdown]
# <!-- kata:page-section "The worksheet" -->

# %% [markdown]
# <!-- kata:your-turn -->
