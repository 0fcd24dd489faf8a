"""What the pages say a chapter run prints agrees with the chapter as it is."""

import ast
import re

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
