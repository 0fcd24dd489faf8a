"""Every `nox -s …` command a page, the README or a notebook tells its reader to run is one that runs.

A learner trial found chapter 14's notebook closing with ``nox -s grade -- --notebooks``, a flag kept only for
old commands. Each command written in ``README.md``, ``docs/**/*.md`` or a built notebook (``notebooks/*.ipynb``)
must name a session of ``noxfile.py`` (``chapterN`` for a chapter that exists, or the placeholder ``chapterN``),
and each ``--flag`` after its ``--`` must be one the session's command accepts: the argparse parser of its
``python -m kata`` tool (``kata/__main__.py``'s ``COMMANDS``), or, for a chapter session and ``progress``,
an option the judge's pytest plugin or the course's conftest adds. A flag a parser keeps only so that old
commands still run (its help says "kept for old commands") is not one to teach. Sessions that run something else (``docs``,
``bench``, ``lab``, …) are checked by name only.

A session must also exist where the reader is: the student edition has no authors' session (``authors_session``
in noxfile.py: ``bench``, ``selfcheck``, ``release``, …). A learner trial of ``nox -s serve`` found its page
sending learners to ``nox -s bench``, which their ``nox -l`` does not list. So the text a learner reads, what is
left of a page outside its authors' parts (``<!-- kata:solution -->`` and ``<!-- kata:authors-only -->``
sections, which the student edition cuts, and sections headed "For authors" or "For instructors", whose readers
have the authors' edition), names no authors' session.
"""

from __future__ import annotations

import ast
import importlib
import json
import re

import pytest

from kata import project
from kata.__main__ import COMMANDS

ROOT = project.ROOT
COMMAND = re.compile(r"nox\s+(?:-R\s+)?-s\s+([A-Za-z0-9_{}.-]+)(?:\s+--\s+([^`\n\"|<]*))?")
PYTEST_SESSIONS = re.compile(r"chapter(\d+|N)|progress")


def _authors_sessions() -> set[str]:
    """The sessions a student edition does not have: those noxfile.py declares with ``authors_session``."""
    tree = ast.parse((ROOT / "noxfile.py").read_text(encoding="utf-8"))
    found = set()
    for node in tree.body:
        for deco in node.decorator_list if isinstance(node, ast.FunctionDef) else []:
            func = deco.func if isinstance(deco, ast.Call) else deco
            if ast.unparse(func) == "authors_session":
                keywords = deco.keywords if isinstance(deco, ast.Call) else []
                found.add(next((k.value.value for k in keywords if k.arg == "name"), node.name))
    return found


FOR_AUTHORS = re.compile(r"^(#+)\s+For (authors|instructors)\b", re.I)


def learners_text(text: str, where: str) -> str:
    """What a learner reads of a page: without its authors' sections (cut by the release, or headed for authors)."""
    from kata.grading.release import strip_sections

    if where.endswith(".md"):
        text = strip_sections(text, where)[0]
    kept, skipping = [], 0  # skipping: the level of the "For authors" heading being skipped, 0 when reading
    fenced = False
    for line in text.splitlines():
        fenced ^= line.lstrip().startswith("```")
        heading = None if fenced else re.match(r"^(#+)\s", line)
        if heading and skipping and len(heading.group(1)) <= skipping:
            skipping = 0
        found = FOR_AUTHORS.match(line) if heading else None
        if found:
            skipping = len(found.group(1))
        if not skipping:
            kept.append(line)
    return "\n".join(kept)


def _sessions() -> dict[str, str | None]:
    """{session name: the ``python -m kata`` command it runs, or None} from noxfile.py, read without nox."""
    tree = ast.parse((ROOT / "noxfile.py").read_text(encoding="utf-8"))
    found: dict[str, str | None] = {}
    for node in tree.body:
        if not isinstance(node, ast.FunctionDef):
            continue
        for deco in node.decorator_list:  # @nox.session(...), @authors_session(...) or bare @authors_session
            func = deco.func if isinstance(deco, ast.Call) else deco
            if ast.unparse(func) not in ("nox.session", "authors_session"):
                continue
            keywords = deco.keywords if isinstance(deco, ast.Call) else []
            name = next((k.value.value for k in keywords if k.arg == "name"), node.name)
            tool = None
            for call in ast.walk(node):
                if not isinstance(call, ast.Call):
                    continue
                args = [a.value for a in call.args if isinstance(a, ast.Constant)]
                if ast.unparse(call.func) == "_kata_tool" and args:
                    tool = args[0]
                elif "kata" in args and args.index("kata") + 1 < len(args):  # session.run("python", "-m", "kata", …)
                    tool = args[args.index("kata") + 1]
            found[name] = tool
    return found


class _Options:
    """Stands in for pytest's parser: collects the option strings a ``pytest_addoption`` adds."""

    def __init__(self) -> None:
        self.names: set[str] = set()

    def getgroup(self, *args, **kwargs):  # noqa: ARG002 - pytest's signature
        return self

    def addoption(self, *names, **kwargs):  # noqa: ARG002 - pytest's signature
        self.names |= set(names)

    def addini(self, *args, **kwargs):  # noqa: ARG002 - pytest's signature
        pass


def _flags(session: str, tool: str | None) -> set[str] | None:
    """The ``--flags`` the session's command accepts; None when this test does not know them."""
    if PYTEST_SESSIONS.fullmatch(session):
        import conftest
        from kata.judge import plugin

        options = _Options()
        plugin.pytest_addoption(options)
        conftest.pytest_addoption(options)
        return options.names
    if tool is None or tool not in COMMANDS:
        return None
    module = importlib.import_module(COMMANDS[tool])
    if not callable(getattr(module, "parser", None)):
        return None
    actions = module.parser()._option_string_actions
    return {flag for flag, action in actions.items() if "kept for old commands" not in (action.help or "")}


READ = ["README.md", *sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "docs").rglob("*.md")),
        *sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "notebooks").glob("*.ipynb"))]


def _text(where: str) -> str:
    """A page's Markdown, or a built notebook's cells one after the other."""
    text = (ROOT / where).read_text(encoding="utf-8")
    if where.endswith(".ipynb"):
        return "\n".join("".join(c["source"]) for c in json.loads(text)["cells"])
    return text


def problems_in(text: str, sessions: dict[str, str | None], chapters: set[int]) -> list[str]:
    """What is wrong with each nox command of a text: a session that does not exist, a flag it does not take."""
    wrong = []
    for m in COMMAND.finditer(text):
        session, args = m.group(1), m.group(2) or ""
        chapter = re.fullmatch(r"chapter(\d+)", session)
        if chapter and int(chapter.group(1)) not in chapters:
            wrong.append(f"`{m.group(0).strip()}`: there is no chapter {chapter.group(1)}")
            continue
        if session not in sessions and not chapter and session != "chapterN":
            wrong.append(f"`{m.group(0).strip()}`: noxfile.py has no session {session!r}")
            continue
        known = _flags(session, sessions.get(session))
        if known is None:
            continue
        for token in args.split():
            flag = token.strip("[]().,;").split("=")[0]
            if flag.startswith("--") and len(flag) > 2 and flag not in known:
                wrong.append(f"`{m.group(0).strip()}`: {session} takes no {flag}")
    return wrong


def test_a_wrong_session_or_flag_is_named():
    """the check itself: a retired flag, a session that does not exist and a chapter that does not are named"""
    sessions = {"grade": "grade", "hint": "hint"}
    assert problems_in("run `nox -s grade -- --impl x` then `nox -s hint -- 4.3`", sessions, {4}) == []
    said = problems_in("`nox -s grade -- --notebooks-old`, `nox -s grades`, `nox -s chapter99`, `nox -s chapter4 -- "
                       "--impl solutions --nope`", sessions, {4})
    assert said == ["`nox -s grade -- --notebooks-old`: grade takes no --notebooks-old",
                    "`nox -s grades`: noxfile.py has no session 'grades'",
                    "`nox -s chapter99`: there is no chapter 99",
                    "`nox -s chapter4 -- --impl solutions --nope`: chapter4 takes no --nope"], said


@pytest.mark.parametrize("where", READ)
def test_every_command_a_reader_is_told_to_run_exists(where):
    """each `nox -s NAME -- ARGS` in the README, a docs page or a notebook names a real session and real flags"""
    chapters = {c.number for c in project.chapters()}
    wrong = problems_in(_text(where), _sessions(), chapters)
    assert not wrong, f"{where}: " + "; ".join(wrong)


def authors_sessions_named(text: str, authors: set[str]) -> list[str]:
    """Each `nox -s NAME` of a learner's text whose session the student edition does not have."""
    return [f"`{m.group(0).strip()}`: {m.group(1)} is an authors' session (not in the student edition)"
            for m in COMMAND.finditer(text) if m.group(1) in authors]


def test_an_authors_session_on_a_learners_page_is_named():
    """the check itself: the serve page's old `nox -s bench` is named; the same in a section for authors is not"""
    authors = _authors_sessions()
    assert {"bench", "selfcheck", "release"} <= authors and "bench-serve" not in authors and "serve" not in authors
    page = ("# Serve\n\n`nox -s bench` (the authors' edition) measures it; `nox -s bench-serve` too.\n\n"
            "## For authors\n\n`nox -s release -- DIR`\n\n### Details\n\n`nox -s selfcheck`\n\n"
            "## Options\n\n`nox -s mutation -- 4`\n\n<!-- kata:solution -->\n`nox -s proofs`\n<!-- /kata:solution -->\n")
    said = authors_sessions_named(learners_text(page, "page.md"), authors)
    assert said == ["`nox -s bench`: bench is an authors' session (not in the student edition)",
                    "`nox -s mutation -- 4`: mutation is an authors' session (not in the student edition)"], said


@pytest.mark.parametrize("where", READ)
def test_a_learner_is_told_only_of_sessions_the_student_edition_has(where):
    """outside its authors' sections, a page, the README or a notebook names no authors-only session"""
    wrong = authors_sessions_named(learners_text(_text(where), where), _authors_sessions())
    assert not wrong, f"{where}: " + "; ".join(wrong)
