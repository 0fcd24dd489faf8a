"""Root conftest: loads the kata plugin so that `--impl`, `--steps` and `--progress` work from anywhere.

Options must be defined here, at the repository root, for `pytest --impl ...` to see them. The plugin's are
the learner's; `--chapter N` is the suite's (`nox -s selfcheck -- --chapter 4`): it keeps chapter N's share of
whatever was collected and deselects the rest.
"""

from __future__ import annotations

import os
import re

import pytest

pytest_plugins = ["kata.judge.plugin"]

CHAPTER_FILE = re.compile(r"(?:^|/)test_(?:audit_)?chapter(\d+)(?:_\w+)?\.py$")
CHAPTER_TEXT = re.compile(r"(?<![A-Za-z])chapter(\d\d)(?=[_.]|$)|(?:^|/)chapters/(\d\d)-")


def pytest_addoption(parser: pytest.Parser) -> None:
    """Add ``--chapter``."""
    parser.addoption("--chapter", action="append", type=int, default=[], metavar="N",
                     help="only chapter N's share of the tests (repeatable): its chapter test file and every test "
                          "about that chapter (its answer key, sync, pages, snapshots, notebook, mutants...)")


def pytest_configure(config: pytest.Config) -> None:
    """Register the marker ``--chapter`` reads."""
    config.addinivalue_line("markers", "every_chapter: checks every chapter at once; kept by --chapter N for any N")


def chapters_in(value, name: str = "") -> set[int]:
    """The chapter numbers a test's parameter stands for (empty: none).

    A chapter of the answer key, one of its steps, a planted mutant (``.number`` or ``.chapter``), ``chapter=N``,
    or a text or path naming a chapter's module, test file or page (``chapter04_attention``,
    ``docs/chapters/04-attention.md``).
    """
    from kata.judge import answer_key

    if isinstance(value, bool):
        return set()
    if isinstance(value, answer_key.Chapter):
        return {value.number}
    if isinstance(value, int):
        return {value} if name == "chapter" else set()
    chapter = getattr(value, "chapter", None)
    if isinstance(chapter, int) and not isinstance(chapter, bool):
        return {chapter}
    if isinstance(value, os.PathLike):
        try:
            value = os.path.relpath(value, answer_key.ROOT)
        except ValueError:  # another drive (Windows)
            value = os.fspath(value)
    if isinstance(value, str):
        return {int(a or b) for a, b in CHAPTER_TEXT.findall(value.replace(os.sep, "/"))}
    if isinstance(value, (tuple, list)):
        return set().union(*(chapters_in(v) for v in value)) if value else set()
    return set()


def chapters_of(item: pytest.Item) -> set[int]:
    """The chapters a test is about: its chapter test file's (or audit's), and those of its parameters."""
    found = set()
    m = CHAPTER_FILE.search(item.nodeid.split("::")[0])
    if m:
        found.add(int(m.group(1)))
    callspec = getattr(item, "callspec", None)
    for name, value in (callspec.params.items() if callspec else ()):
        found |= chapters_in(value, name)
    return found


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list) -> None:
    """With ``--chapter N``: keep the tests about chapter N and those marked ``every_chapter``."""
    wanted = set(config.getoption("chapter"))
    if not wanted:
        return
    keep, drop = [], []
    for item in items:
        every = item.get_closest_marker("every_chapter") is not None
        (keep if every or chapters_of(item) & wanted else drop).append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
    items[:] = keep
