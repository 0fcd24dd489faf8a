"""What ``nox -s align`` teaches, built from the corpus the GPT was trained on: questions, answers, preferences.

- **Questions and answers** (``qa_pairs``): every section of Python's documentation (``pydoc_data.topics``, the
  text ``nox -s train -- --model gpt`` read) has a heading underlined with ``***``, ``===`` or ``---``; the
  question names the heading, the answer is the first sentence of the paragraph under it::

      Q: what is the "for" statement? A: The "for" statement is used to iterate over the elements of a sequence
      (such as a string, tuple or list) or other iterable object:

  A paragraph that is a grammar or code block (indented), or a first sentence shorter than 20 or longer than 160
  characters, gives no pair; a heading seen before gives no second one. About 150 pairs; a fixed fifth is held
  out (``split``), never trained on, to measure what fine-tuning taught.
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


def question(heading: str) -> str:
    """The prompt asking about a section: ``Q: what is <heading>? A: `` (a capital that starts a word put lower)."""
    shown = heading[0].lower() + heading[1:] if heading[:2].istitle() else heading
    return f"Q: what is {shown}? A: "


def qa_pairs(topics: dict[str, str] | None = None) -> list[tuple[str, str]]:
    """(question, answer) for every section of the documentation whose first paragraph starts with a sentence.

    ``topics`` defaults to ``pydoc_data.topics.topics``. Each answer ends with a line break (what the model
    learns to stop with).
    """
    if topics is None:
        from pydoc_data.topics import topics
    pairs, seen = [], set()
    for text in topics.values():
        for m in HEADING.finditer(text):
            heading = m.group(1).strip()
            if len(m.group(0).split("\n")[1]) != len(m.group(1)) or heading in seen:
                continue
            paragraphs = [p for p in re.split(r"\n\s*\n", text[m.end():]) if p.strip()]
            if not paragraphs or paragraphs[0].startswith(" ") or HEADING.match(paragraphs[0] + "\n"):
                continue
            first = SENTENCE.match(" ".join(paragraphs[0].split()))
            if first and 20 <= len(first.group(1)) <= 160:
                seen.add(heading)
                pairs.append((question(heading), first.group(1) + "\n"))
    return pairs


def split(pairs: list, held_out: float = 0.2, seed: int = 0) -> tuple[list, list]:
    """(training pairs, held-out pairs): a fixed share, drawn with a generator seeded ``seed``, held out."""
    order = np.random.default_rng(seed).permutation(len(pairs))
    n = max(1, int(round(len(pairs) * held_out)))
    return [pairs[i] for i in sorted(order[n:])], [pairs[i] for i in sorted(order[:n])]


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
