"""What ``nox -s align`` teaches, built from the corpus the GPT was trained on: questions, answers, preferences.

- **Sections and answers** (``sections``): every section of Python's documentation (``pydoc_data.topics``, the
  text ``nox -s train -- --model gpt`` read) has a heading underlined with ``***``, ``===`` or ``---``; its answer
  is the first sentence of the paragraph under it. A paragraph that is a grammar or code block (indented), or a
  first sentence shorter than 20 or longer than 160 characters, gives no answer; a heading or an answer seen
  before gives no second one (an unseen section's answer is then no trained section's). 129 sections.
- **Questions** (``question``): a section's heading in one of four phrasings (``PHRASINGS``)::

      Q: what is the "for" statement? A: The "for" statement is used to iterate over the elements of a sequence
      (such as a string, tuple or list) or other iterable object:

- **What is trained and what is held out** (``qa_sets``): a fixed fifth of the sections is **unseen**, never
  trained on in any phrasing. The others are trained in three phrasings, and asked in the fourth
  (``HELD_OUT_PHRASING``, never trained on) for the **held-out** set: a held-out question is one the model was
  never asked, about a section it was taught. No (question, answer) pair is in two sets. The held-out set measures
  whether the model learnt to answer the question it is asked, whatever its words; the unseen set, whether it can
  say what a section it was never taught says (a GPT of 166,000 parameters cannot: the page says so).
- **Preferences** (``preference_pairs``): for each question, the true answer (chosen) against a worse one
  (rejected): the same words in a shuffled order, or another question's answer, in turn.
- **A task with a reward the course can check** (``keyword_reward``): after ``keyword: `` the model writes a word;
  the reward is 1 when it is a Python keyword (``keyword.iskeyword``), else 0.

Part of ``nox -s align`` (``kata/learner/align/__init__.py`` tells the whole story).
"""

from __future__ import annotations

import keyword
import re

import numpy as np

HEADING = re.compile(r"^([^\n]+)\n([*=\-^~\"])\2{2,}\n", re.M)  # a line, then a line of one mark as long


SENTENCE = re.compile(r"(.+?[.:])(\s|$)")  # up to the first full stop or colon followed by a space or the end


KEYWORD_PROMPT = "keyword: "


PHRASINGS = ("Q: what is {}? A: ", "Q: tell me about {}. A: ", "Q: what does the documentation say about {}? A: ",
             "Q: explain {}. A: ")  # the ways a question is asked; the last is never trained on


HELD_OUT_PHRASING = PHRASINGS[-1]


def question(heading: str, phrasing: str = PHRASINGS[0]) -> str:
    """The prompt asking about a section, ``Q: what is <heading>? A: `` by default (a title's capital put lower)."""
    shown = heading[0].lower() + heading[1:] if heading[:2].istitle() else heading
    return phrasing.format(shown)


def sections(topics: dict[str, str] | None = None) -> list[tuple[str, str]]:
    """(heading, answer) for every section of the documentation whose first paragraph starts with a sentence.

    ``topics`` defaults to ``pydoc_data.topics.topics``. Each answer ends with a line break (what the model
    learns to stop with).
    """
    if topics is None:
        from pydoc_data.topics import topics
    found, seen, said = [], set(), set()
    for text in topics.values():
        for m in HEADING.finditer(text):
            heading = m.group(1).strip()
            if len(m.group(0).split("\n")[1]) != len(m.group(1)) or heading in seen:
                continue
            paragraphs = [p for p in re.split(r"\n\s*\n", text[m.end():]) if p.strip()]
            if not paragraphs or paragraphs[0].startswith(" ") or HEADING.match(paragraphs[0] + "\n"):
                continue
            first = SENTENCE.match(" ".join(paragraphs[0].split()))
            if first and 20 <= len(first.group(1)) <= 160 and first.group(1) not in said:
                seen.add(heading)
                said.add(first.group(1))
                found.append((heading, first.group(1) + "\n"))
    return found


def qa_pairs(topics: dict[str, str] | None = None, phrasing: str = PHRASINGS[0]) -> list[tuple[str, str]]:
    """(question, answer) for every section (``sections``), asked in ``phrasing``."""
    return [(question(h, phrasing), a) for h, a in sections(topics)]


def split(items: list, held_out: float = 0.2, seed: int = 0) -> tuple[list, list]:
    """(kept, held out): a fixed share of ``items``, drawn with a generator seeded ``seed``, held out."""
    order = np.random.default_rng(seed).permutation(len(items))
    n = max(1, int(round(len(items) * held_out)))
    return [items[i] for i in sorted(order[n:])], [items[i] for i in sorted(order[:n])]


def qa_sets(found: list[tuple[str, str]] | None = None, seed: int = 0) -> dict[str, list[tuple[str, str]]]:
    """The (question, answer) pairs of each set: ``train``, ``held_out`` and ``unseen``.

    ``found``: (heading, answer) of each section (default ``sections()``). A fifth of the sections (``split``) is
    unseen: asked in ``HELD_OUT_PHRASING`` only, never trained on. Every other section is trained in each of the
    other phrasings (``train``, section by section) and asked in ``HELD_OUT_PHRASING`` for ``held_out``.
    """
    taught, unseen = split(sections() if found is None else found, seed=seed)
    return {"train": [(question(h, p), a) for h, a in taught for p in PHRASINGS if p != HELD_OUT_PHRASING],
            "held_out": [(question(h, HELD_OUT_PHRASING), a) for h, a in taught],
            "unseen": [(question(h, HELD_OUT_PHRASING), a) for h, a in unseen]}


def shuffled(answer: str, rng: np.random.Generator) -> str:
    """The answer's words in another order (the line break kept at the end); a one-word answer reversed."""
    words = answer.split()
    if len(words) < 2:
        return answer.strip()[::-1] + "\n"
    order = rng.permutation(len(words))
    while np.array_equal(order, np.arange(len(words))):
        order = rng.permutation(len(words))
    return " ".join(words[i] for i in order) + "\n"


def preference_pairs(pairs: list[tuple[str, str]], seed: int = 0) -> list[tuple[str, str, str]]:
    """(question, chosen, rejected) for each pair: the true answer against a worse one.

    The worse one is the answer's words shuffled (even places) or the next question's answer (odd places).
    """
    rng = np.random.default_rng(seed)
    out = []
    for i, (q, a) in enumerate(pairs):
        other = pairs[(i + 1) % len(pairs)][1]
        out.append((q, a, shuffled(a, rng) if i % 2 == 0 or other == a else other))
    return out


def keyword_word(text: str) -> str:
    """The word a completion of ``keyword: `` writes: its first line's first run of non-blank characters."""
    line = text.split("\n", 1)[0].split()
    return line[0] if line else ""


def keyword_reward(text: str) -> float:
    """1.0 when the completion's word is a Python keyword (``keyword.iskeyword``), else 0.0."""
    return 1.0 if keyword.iskeyword(keyword_word(text)) else 0.0
