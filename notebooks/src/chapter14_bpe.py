# %% [markdown]
# # Chapter 14 — Byte-Pair Encoding
#
# The notebook way through chapter 14: read, work the worksheet with a pencil, then fill in each function below
# and run the check cell under it (`kata.check(...)`): the same steps, worksheet numbers and diagnoses as `nox
# -s chapter14`. Run the cells in order, starting with the next one. The whole page, with hints and common
# mistakes: [docs/chapters/14-bpe.md](../docs/chapters/14-bpe.md).

# %%
# Run this first: it finds the course folder (the one holding kata/) and imports what the stubs use.
import pathlib
import sys

sys.path.insert(0, str(next(p for p in [pathlib.Path.cwd(), *pathlib.Path.cwd().parents] if (p / "kata").is_dir())))

import heapq
from itertools import pairwise

import kata
from kata.learner.notebook import yours

CHAPTER = 14  # kata.check() checks this chapter's functions
# The chapter's constants and the earlier chapters' functions it uses: yours, from exercises/ or your notebooks
N_BYTES = yours(CHAPTER, "N_BYTES")

# %% [markdown]
# ## The idea
#
# Start from the smallest units every text is made of: its **bytes**. Encoded as UTF-8, any text — English,
# Japanese, emoji, code — is a sequence of numbers from 0 to 255. An ASCII letter is one byte ("a" is 97);
# "é" is two (195, 169); "🙂" is four. So a vocabulary of the 256 bytes can already encode everything; it
# is just wasteful, one token per byte.
#
# BPE then **learns** bigger tokens, one at a time. Count how often every pair of neighbouring tokens occurs;
# take the most frequent pair; give it a new id (256, then 257, …) and replace it everywhere in the text.
# Now the new token can pair up with others, and the next round may merge it again. After $k$ rounds the
# vocabulary has $256 + k$ tokens and a common word may be a single one. The list of merges, **in the order
# they were learned**, is the whole tokenizer.
#
# ```mermaid
# flowchart LR
#     T["text"] --> B["UTF-8 bytes<br/>ids 0 … 255"]
#     B --> C["count every<br/>neighbouring pair"]
#     C --> M{"most frequent pair<br/>(ties: the smallest)"}
#     M --> R["replace it, left to right,<br/>by the next id 256, 257, …"]
#     R -->|"until vocab_size<br/>or no pair left"| C
#     R --> L["merges, in the order learned"]
#     L --> E["encode: bytes, then<br/>every merge in that order"]
#     L --> V["vocabulary: each new id =<br/>its two tokens' bytes joined"]
#     V --> D["decode: join all the bytes,<br/>then UTF-8 once"]
# ```
#
# Three conventions make the result well defined. They are the usual ones, and every function of the
# chapter states them:
#
# - **Counting:** every adjacent position counts. The run "aaa" holds the pair (a, a) twice: at positions
#   0–1 and 1–2.
# - **Merging:** left to right, without overlap. Merging (a, a) in "aaa" gives "aa" + "a": once the first
#   two a's are used, the third has no partner left. Counting and merging disagree on runs, and that is
#   expected: the count says how often the pair *could* be merged, the merge takes what it can.
# - **Ties:** among pairs of equal count, the **smallest pair** wins, comparing (first id, second id) as
#   numbers. So (97, 98) beats (256, 97), whichever was counted first. (Other tokenizers break ties by the
#   order pairs were first seen; that is a rule too, but it depends on how the counts were stored. Ours
#   depends on nothing but the counts.)
#

# %% [markdown]
# ## The formulas
#
# **Bytes** (step 14.1):
#
# $$\mathrm{ids} = [\,b_0, b_1, \dots, b_{n-1}\,], \qquad b_0 b_1 \dots b_{n-1} = \mathrm{utf8}(\text{text})$$
#
# ```python
# ids = list(text.encode("utf-8"))      # "é" -> [195, 169]; ord("é") would be 233, a code point
# ```
#
# **Count** (step 14.2): every adjacent position, runs overlapping:
#
# $$\mathrm{count}(a, b) = \#\{\, i : \mathrm{ids}[i] = a,\ \mathrm{ids}[i+1] = b \,\}$$
#
# ```python
# for pair in zip(ids, ids[1:]):
#     counts[pair] = counts.get(pair, 0) + 1
# ```
#
# **Choose** (step 14.3): the highest count, then the smallest pair:
#
# $$\mathrm{best} = \min\{\,(a, b) : \mathrm{count}(a, b) = \max \mathrm{count}\,\}$$
#
# ```python
# best = min(counts, key=lambda pair: (-counts[pair], pair))
# ```
#
# **Merge** (step 14.4): scan from the left; on a match write the new id and jump past both.
#
# $$[\dots, a, b, \dots] \;\to\; [\dots, \mathrm{new\_id}, \dots]$$
#
# **Train** (step 14.5): repeat the three for $t = 256, 257, \dots, \text{vocab\_size} - 1$, recording
# $((a, b), t)$ each round, and stop early if the text has no pair left.
#
# **Vocabulary** (step 14.6): a new token's bytes are its left token's bytes, then its right token's:
#
# $$\mathrm{vocab}[i] = \mathtt{bytes([i])}\ (i < 256), \qquad \mathrm{vocab}[t] = \mathrm{vocab}[a] + \mathrm{vocab}[b]$$
#
# **Encode** (step 14.7): the bytes, then every merge once, in the order learned:
#
# ```python
# ids = to_byte_ids(text)
# for pair, new_id in merges:          # the list's order, not this text's counts
#     ids = merge_pair(ids, pair, new_id)
# ```
#
# **Decode** (step 14.8): join all the bytes first, decode once:
#
# $$\text{text} = \mathrm{utf8}^{-1}\big(\mathrm{vocab}[\mathrm{ids}_0] + \mathrm{vocab}[\mathrm{ids}_1] + \dots\big)$$
#
# ```python
# text = b"".join(vocab[i] for i in ids).decode("utf-8", errors="replace")
# ```
#
# A token is a run of *bytes*, not of characters, so a character's bytes may end up in two tokens. Decoding
# token by token would turn each half into "�"; joining first keeps the character whole. `errors="replace"`
# makes any list of ids decodable: bytes that are not valid UTF-8 (a lone 195, say) become "�" instead of
# an exception.
#

# %% [markdown]
# ## The worksheet
#
# The text is **"aaabéaaabac"**: 11 characters, 12 bytes. You need only the bytes a = 97, b = 98, c = 99
# and é = 195, 169.
#
# | round | ids | most frequent pairs | merged |
# | --- | --- | --- | --- |
# | start | `97 97 97 98 195 169 97 97 97 98 97 99` | (97, 97) ×4 | (97, 97) → 256 |
# | 1 | `256 97 98 195 169 256 97 98 97 99` | (256, 97) ×2, (97, 98) ×2: a tie | (97, 98) → 257 |
# | 2 | `256 257 195 169 256 257 97 99` | (256, 257) ×2 | (256, 257) → 258 |
# | 3 | `258 195 169 258 97 99` | — | (vocab_size 259: stop) |
#
# Fill the table yourself before reading the next lines. The first round shows the two conventions for runs:
# each "aaa" counts (97, 97) twice (so four in all), but the merge turns "aaab" into 256 97 98, not
# 97 256 98. The second round is a tie, decided by the rule: (97, 98) is smaller than (256, 97) because
# 97 < 256, although (256, 97) comes first in the text. The third merge builds a token out of two merged
# ones: 258 is "aa" + "ab" = "aaab", four bytes.
#
# Then encode the made-up word **"abaabé"** with the three merges, in the order learned: (97, 97) first gives
# 97 98 256 98 195 169, then (97, 98) gives 257 256 98 195 169, and (256, 257) does not occur. (In this word
# (97, 98) is the more frequent pair; merging it first, "by frequency", would use up the a's that (97, 97)
# needed and give a different encoding.) The é stays two byte tokens, since no merge learned it; decoding
# joins them again.
#
# <!-- kata:worksheet 14 -->
#
# The answers are whole numbers, lists and text, so they are compared exactly: the "exact" column is what
# your functions must return (a dict of counts is shown as its pairs and counts, sorted by pair; a vocabulary
# as the bytes of tokens 256, 257 and 258).
#

# %% [markdown]
# ## Your turn
#
# Each function's docstring is its full specification. Replace the `raise
# NotImplementedError(...)` with your code, run the cell, then run the check under it: ✓ passed, ✗ failed, · not
# started, ⧗ timed out, ! error (crashed or does not import).

# %% [markdown]
# ### `to_byte_ids` — step 14.1

# %%
# kata:stub to_byte_ids

# %%
kata.check(to_byte_ids)

# %% [markdown]
# ### `count_pairs` — step 14.2

# %%
# kata:stub count_pairs

# %%
kata.check(count_pairs)

# %% [markdown]
# ### `most_frequent_pair` — step 14.3

# %%
# kata:stub most_frequent_pair

# %%
kata.check(most_frequent_pair)

# %% [markdown]
# ### `merge_pair` — step 14.4

# %%
# kata:stub merge_pair

# %%
kata.check(merge_pair)

# %% [markdown]
# ### `train_bpe` — step 14.5

# %%
# kata:stub train_bpe

# %%
kata.check(train_bpe)

# %% [markdown]
# ### `build_vocab` — step 14.6

# %%
# kata:stub build_vocab

# %%
kata.check(build_vocab)

# %% [markdown]
# ### `encode` — step 14.7

# %%
# kata:stub encode

# %%
kata.check(encode)

# %% [markdown]
# ### `decode` — step 14.8

# %%
# kata:stub decode

# %%
kata.check(decode)

# %% [markdown]
# ## The whole chapter
#
# Every step and check of chapter 14, as `nox -s chapter14` shows them. Your answers count where you save them: `nox -s grade -- --notebooks` grades the saved notebooks.

# %%
kata.check()
