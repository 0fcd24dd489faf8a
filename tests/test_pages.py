"""What the pages say a chapter run prints agrees with the chapter as it is."""

import ast
import re

import numpy as np
import pytest

from kata.judge import answer_key
from kata.judge.markers import marked_steps

ROOT = answer_key.ROOT
PAGES = sorted((ROOT / "docs").rglob("*.md"))
CLOSING = re.compile(r"chapter (\d+): (\d+)/(\d+) steps, (\d+)/(\d+) checks")


def _checks(chapter: answer_key.Chapter) -> int:
    """Checks beyond the worksheet: test functions without a step marker (parametrized cases count once).

    A test marked ``given`` checks a check the stub gives: a learner's run leaves it out, so it is not counted.
    """
    tree = ast.parse((ROOT / chapter.test_file).read_text(encoding="utf-8"))
    count = 0
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name.startswith("test_"):
            given = any("given" in {getattr(n, "attr", None) for n in ast.walk(d)} for d in node.decorator_list)
            count += not marked_steps(node) and not given
    return count


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_closing_lines_quoted_on_pages_have_the_real_totals(page):
    """a quoted 'chapter N: a/b steps, c/d checks' has the chapter's real numbers of steps and checks"""
    for m in CLOSING.finditer(page.read_text(encoding="utf-8")):
        number, steps, checks = int(m.group(1)), int(m.group(3)), int(m.group(5))
        chapter = answer_key.load(number)
        assert steps == len(chapter.steps), f"{page.name} quotes '{m.group(0)}': chapter {number} has {len(chapter.steps)} steps"
        assert checks == _checks(chapter), f"{page.name} quotes '{m.group(0)}': chapter {number} has {_checks(chapter)} checks"


BOOK = 10  # Part I quotes the book's worksheets; from Part II on the worksheets are the course's own
GENERATED = re.compile(r"<!-- kata:(worksheet|hints|errata|figure)\b[^>]*-->.*?<!-- /kata:\1\b[^>]*-->", re.S)
NUMBER = re.compile(r"(?<![\w.])[−-]?\d+(?:\.\d+)?")


def _answer(step) -> list[float] | None:
    """The numbers a step's answer is read as: five or more whole numbers, or three or more printed decimals."""
    try:
        exact = [float(x) for x in np.ravel(np.asarray(step.exact, dtype=float))]
    except (TypeError, ValueError):  # text (a decoded string): not a run of numbers
        return None
    if len(exact) >= 5 and all(x == round(x) for x in exact):
        return exact
    printed = [str(x) for x in np.ravel(step.printed)] if step.printed is not None else []
    if len(printed) >= 3 and all(NUMBER.fullmatch(x) for x in printed) and any("." in x for x in printed):
        return [float(x.replace("−", "-")) for x in printed]
    return None


@pytest.mark.parametrize("chapter", [c for c in answer_key.chapters() if c.number > BOOK],
                         ids=lambda c: f"chapter{c.number}")
def test_a_page_leaves_the_worksheets_answers_to_the_learner(chapter):
    """no line of a page's prose (outside the generated worksheet, hints and errata) holds a step's answer

    Beyond the book the worksheet is the learner's to fill in: its answers belong in the key and the checks
    (and the generated worksheet table, with the hints folded), not in a table or a paragraph above "fill the
    table yourself" (chapter 14, learner trial). An answer is read as the run of its numbers in a line, in any
    spelling (spaces, commas, brackets): five or more whole numbers (a list of ids), or three or more printed
    numbers with decimals; shorter runs of small whole numbers are too common to tell from a worked case.
    """
    prose = GENERATED.sub("", (ROOT / chapter.page).read_text(encoding="utf-8"))
    found = []
    for step in chapter.steps:
        want = _answer(step)
        if want is None:
            continue
        for line in prose.splitlines():
            got = [float(x.replace("−", "-")) for x in NUMBER.findall(line)]
            if any(got[i:i + len(want)] == want for i in range(len(got) - len(want) + 1)):
                found.append(f"step {step.id}'s answer in: {line.strip()[:160]}")
    assert not found, f"{chapter.page} prints worksheet answers for the learner to work out:\n" + "\n".join(found)


def test_chapter_14_says_which_tokens_its_vocabulary_answer_lists():
    """the sentence under chapter 14's worksheet names the tokens step 14.6 lists, all of them, in its own words

    A learner trial found "the bytes of tokens 256, 257 and 258" above a 14.6 that lists 256 to 260.
    """
    chapter = answer_key.load(14)
    step = chapter.step("14.6")
    ids = [new_id for _, new_id in step.inputs["merges"]]
    prose = GENERATED.sub("", (ROOT / chapter.page).read_text(encoding="utf-8"))
    said = re.findall(r"a vocabulary\s+as the bytes of the tokens (\d+) to (\d+)", prose)
    assert said, f"{chapter.page}: no sentence says which tokens a vocabulary is shown as ('the bytes of the tokens N to M')"
    for first, last in said:
        assert list(range(int(first), int(last) + 1)) == ids, (
            f"{chapter.page} says a vocabulary is shown as the tokens {first} to {last}; step 14.6 lists {ids}")
