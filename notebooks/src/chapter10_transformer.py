# %% [markdown]
# # Chapter 10 — The Complete Transformer
#
# The notebook way through chapter 10: read, work the worksheet with a pencil, then fill in each function below
# and run the check cell under it (`kata.check(...)`): the same steps, worksheet numbers and diagnoses as `nox
# -s chapter10`. Run the cells in order, starting with the next one. The whole page, with hints and common
# mistakes: [docs/chapters/10-transformer.md](../docs/chapters/10-transformer.md).

# %%
# kata:setup

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
# <!-- kata:your-turn -->
