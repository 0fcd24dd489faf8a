"""Work a chapter in a notebook: ``import kata; kata.check(softmax)`` checks a function defined in it.

``kata.check(softmax)`` runs the tests of the notebook's chapter that are about ``softmax`` against the
``softmax`` of the notebook, and shows what ``nox -s chapter4`` shows for them: a line per worksheet step,
the checks beyond the worksheet, the first failure in full with the exact and the printed worksheet value
beside yours and the classic mistake it looks like. As HTML in a notebook, as plain text in a terminal.
``kata.check()`` checks every function of the chapter (the notebook says which: ``CHAPTER = 4``).

How, without running the learner's code in the judge: the functions' source (``inspect.getsource``) is
written into a copy of ``exercises/`` (appended to the chapter's file, so it replaces the stub there), with
the finished functions of every saved notebook in ``notebooks/`` likewise, and pytest runs the chapter's
tests on that copy with ``--impl`` in a separate process, exactly as a chapter run does. A function still
left as its stub (only ``raise NotImplementedError``) never replaces a finished one in ``exercises/``.

A test is *about* the chapter function it calls that comes last in the chapter's file (and in the notebook):
its other functions are written, and checked, before it.

``python -m kata notebooks --out DIR`` writes the same copy from the saved notebooks alone (their function
definitions, read with ``ast``; no cell is run), for ``nox -s grade -- --impl DIR/exercises`` (what
``nox -s grade -- --notebooks`` does).
"""

from __future__ import annotations

import argparse
import ast
import builtins
import hashlib
import html
import importlib
import inspect
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import textwrap
import types
from pathlib import Path

from .. import project

NOTEBOOKS = project.ROOT / "notebooks"
CACHE = project.ROOT / ".kata" / "notebook"
_RUNS: dict[str, dict] = {}  # results of a run, by everything that went into it (a re-run cell costs nothing)


# -- what a chapter and a notebook hold ---------------------------------------------------------------------
def exercise_file(chapter, root: Path = project.ROOT) -> Path:
    """The chapter's file in ``exercises/``."""
    return root / "exercises" / f"{chapter.module}.py"


def functions_of(chapter, root: Path = project.ROOT) -> list[str]:
    """The chapter's public functions, in the order of its file in ``exercises/``."""
    tree = ast.parse(exercise_file(chapter, root).read_text(encoding="utf-8"))
    return [n.name for n in tree.body if isinstance(n, ast.FunctionDef) and not n.name.startswith("_")]


def is_stub(node: ast.FunctionDef) -> bool:
    """Whether a function's body is still only its docstring and ``raise NotImplementedError(...)``."""
    body = [n for n in node.body if not (isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant))]
    if len(body) != 1 or not isinstance(body[0], ast.Raise) or body[0].exc is None:
        return False
    exc = body[0].exc.func if isinstance(body[0].exc, ast.Call) else body[0].exc
    return isinstance(exc, ast.Name) and exc.id == "NotImplementedError"


def notebook_of(chapter, root: Path = project.ROOT) -> Path:
    """The chapter's notebook: ``notebooks/chapterNN_<topic>.ipynb``."""
    return root / "notebooks" / f"{chapter.module}.ipynb"


def code_cells(path: Path) -> list[str]:
    """The source of every code cell of a saved notebook (read as JSON; nothing is run)."""
    data = json.loads(path.read_text(encoding="utf-8"))
    cells = []
    for cell in data.get("cells", []):
        if cell.get("cell_type") == "code":
            source = cell.get("source", "")
            cells.append("".join(source) if isinstance(source, list) else str(source))
    return cells


def _without_magics(source: str) -> str:
    """A cell without IPython's ``%magic`` and ``!shell`` lines (blank lines keep the line numbers)."""
    return "\n".join("" if line.lstrip().startswith(("%", "!")) else line for line in source.splitlines())


def answers(sources: list[str], names: list[str]) -> tuple[list[str], dict[str, str]]:
    """(import lines, {name: source}) of the finished functions defined in these cells.

    ``names`` are the chapter's functions; every other function defined at the top of a cell is taken too
    (a helper of the learner's own). A cell that does not parse is passed over (it is shown when the
    notebook runs it); a later definition replaces an earlier one, as running the cells in order would;
    untouched stubs are left out.
    """
    imports: list[str] = []
    found: dict[str, str] = {}
    for source in sources:
        text = _without_magics(source)
        try:
            tree = ast.parse(text)
        except SyntaxError:
            continue
        lines = text.splitlines()
        for node in tree.body:
            if isinstance(node, ast.Import | ast.ImportFrom):
                module = getattr(node, "module", None) or ""
                roots = [a.name.split(".")[0] for a in node.names] if isinstance(node, ast.Import) else [module]
                if getattr(node, "level", 0) or any(r.split(".")[0] in ("kata", "exercises") for r in roots):
                    continue
                line = ast.get_source_segment(text, node)
                if line and line not in imports:
                    imports.append(line)
            elif isinstance(node, ast.FunctionDef):  # the chapter's functions, and helpers of the learner's own
                if is_stub(node):
                    found.pop(node.name, None)
                    continue
                start = min([d.lineno for d in node.decorator_list] + [node.lineno]) - 1
                found[node.name] = textwrap.dedent("\n".join(lines[start:node.end_lineno]))
    return imports, found


def saved_answers(chapter, root: Path = project.ROOT,
                  notebooks: Path | None = None) -> tuple[list[str], dict[str, str]]:
    """The finished functions of the chapter's saved notebook (none when it has no notebook).

    ``notebooks`` is another folder of notebooks to read (a learner's, for ``grade-class``).
    """
    path = notebooks / f"{chapter.module}.ipynb" if notebooks is not None else notebook_of(chapter, root)
    if not path.is_file() or path.is_symlink():
        return [], {}
    try:
        return answers(code_cells(path), functions_of(chapter, root))
    except (ValueError, OSError, AttributeError, TypeError):  # not a notebook (JSON): nothing to take from it
        return [], {}


# -- the implementation folder: exercises/ with the notebooks' answers in place ----------------------------------
def write_package(target: Path, live: dict | None = None, root: Path = project.ROOT,
                  learner: Path | None = None) -> Path:
    """Copy ``exercises/`` to ``target`` and put every notebook's finished functions into their chapter files.

    ``$KATA_EXERCISES`` names another folder to start from instead of ``exercises/`` (the tests start chapter N's
    notebook on a folder whose earlier chapters are solved).

    ``live`` adds (or replaces) the answers of one chapter: ``{"chapter": N, "imports": [...],
    "functions": {name: source}}`` (the running notebook's). ``learner`` is a folder holding a learner's
    ``exercises/`` and ``notebooks/`` to use instead of this course copy's (``grade-class``); the chapters and
    their functions' names still come from ``root``. Returns ``target``.
    """
    if learner is not None:
        base = learner / "exercises"
    else:
        base = Path(os.environ.get("KATA_EXERCISES") or root / "exercises")  # another starting point, for tests
    shutil.copytree(base, target, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    for chapter in project.chapters(root):
        imports, functions = saved_answers(chapter, root, learner / "notebooks" if learner is not None else None)
        if live and live["chapter"] == chapter.number:
            imports = [*imports, *[i for i in live["imports"] if i not in imports]]
            functions = {**functions, **live["functions"]}
        if not functions:
            continue
        where = f"notebooks/{chapter.module}.ipynb"
        block = [f"\n\n# -- your answers from {where} (they replace the stubs above) --"]
        block += imports
        block += _earlier_names(chapter, functions, root)
        block += [f"\n\n{source}" for source in functions.values()]
        path = target / f"{chapter.module}.py"
        if not path.is_file():  # the learner's chapter file is not there (a link left out): the course's stub
            shutil.copy2(exercise_file(chapter, root), path)
        path.write_text(path.read_text(encoding="utf-8").rstrip("\n") + "\n".join(block) + "\n", encoding="utf-8")
    return target


def _public_names(path: Path) -> set[str]:
    """The names a chapter file defines at its top level (functions, constants, imports)."""
    names = set()
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.FunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names |= {t.id for t in node.targets if isinstance(t, ast.Name)}
        elif isinstance(node, ast.Import | ast.ImportFrom):
            names |= {(a.asname or a.name).split(".")[0] for a in node.names}
    return names


def _earlier_names(chapter, functions: dict[str, str], root: Path) -> list[str]:
    """Imports of the earlier chapters' names the answers use and the chapter's file does not define.

    In a notebook, chapter 5's ``forward`` may call chapter 4's ``softmax`` (the notebook's first cell
    brings it in); in the chapter's file that takes ``from .chapter04_attention import softmax``.
    """
    used = set()
    for source in functions.values():
        used |= {n.id for n in ast.walk(ast.parse(source)) if isinstance(n, ast.Name)}
    missing = used - _public_names(exercise_file(chapter, root)) - set(functions) - set(dir(builtins))
    lines = []
    for earlier in reversed([c for c in project.chapters(root) if c.number < chapter.number]):
        have = sorted(n for n in missing & _public_names(exercise_file(earlier, root)) if not n.startswith("_"))
        if have:
            lines.append(f"from .{earlier.module} import {', '.join(have)}  # noqa: E402, F401")
            missing -= set(have)
    return lines


def _digest(folder: Path) -> str:
    h = hashlib.sha256()
    for path in sorted(folder.rglob("*.py")):
        h.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()[:16]


def yours(number: int, *names: str):
    """Your chapter ``number`` as the checks see it (``exercises/`` with your notebooks' answers), imported here.

    ``yours(10, "causal_mask", "softmax")`` gives those names of it (one name: that value), for a notebook's
    first cell: the chapter's constants and the earlier chapters' functions it builds on.
    """
    chapter = project.chapter(number)
    with tempfile.TemporaryDirectory() as scratch:
        staged = write_package(Path(scratch) / "staged")
        digest = _digest(staged)
        home = CACHE / f"yours-{digest}"
        if not (home / f"yours_{digest}").is_dir():
            home.mkdir(parents=True, exist_ok=True)
            shutil.copytree(staged, home / f"yours_{digest}", dirs_exist_ok=True)
    if str(home) not in sys.path:
        sys.path.insert(0, str(home))
    module = importlib.import_module(f"yours_{digest}.{chapter.module}")
    if not names:
        return module
    values = tuple(getattr(module, n) for n in names)
    return values[0] if len(values) == 1 else values


# -- which tests are about which function -------------------------------------------------------------------
def owners(chapter, root: Path = project.ROOT) -> dict[str, str | None]:
    """{test function name: the chapter function it is about}, read from the test file with ``ast``.

    A test is about the last (in the chapter's file) of the chapter functions it calls as ``ch.NAME``,
    directly or through the test module's helpers and fixtures; None when it calls none that way.
    """
    order = functions_of(chapter, root)
    tree = ast.parse((root / chapter.test_file).read_text(encoding="utf-8"))
    defs = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}

    def called(node: ast.AST, seen: set[str]) -> set[str]:
        found: set[str] = set()
        names: set[str] = set()
        for sub in ast.walk(node):
            if isinstance(sub, ast.Attribute) and isinstance(sub.value, ast.Name) and sub.attr in order:
                found.add(sub.attr)
            elif isinstance(sub, ast.Name) and sub.id in defs:
                names.add(sub.id)
            elif isinstance(sub, ast.arg) and sub.arg in defs:  # a fixture defined in the test module
                names.add(sub.arg)
        for name in names - seen:
            seen.add(name)
            found |= called(defs[name], seen)
        return found

    result = {}
    for name, node in defs.items():
        if name.startswith("test_"):
            used = called(node, {name})
            result[name] = max(used, key=order.index) if used else None
    return result


# -- running the checks -----------------------------------------------------------------------------------
def _python() -> str:
    return sys.executable


def run_checks(chapter, package: Path, tests: list[str] | None) -> dict:
    """Run the chapter's tests (or these test functions) on ``package``; the plugin's ``--kata-results``."""
    key = _digest(package) + "|" + ",".join(tests or ["*"])
    if key in _RUNS:
        return _RUNS[key]
    selection = [f"{chapter.test_file}::{t}" for t in tests] if tests else [chapter.test_file]
    with tempfile.TemporaryDirectory(prefix="kata-check-") as scratch:
        out = Path(scratch) / "results.json"
        env = {k: v for k, v in os.environ.items() if k not in ("PYTEST_ADDOPTS", "PYTHONSTARTUP")}
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(project.ROOT), env.get("PYTHONPATH")]))
        env["KATA_SHOWN_AS"] = "notebook"
        proc = subprocess.run(
            [_python(), "-m", "pytest", *selection, "--impl", str(package), "--kata-results", str(out),
             "-p", "no:cacheprovider", "-q", "--no-header", "-o", "addopts="],
            cwd=project.ROOT, env=env, capture_output=True, text=True, check=False,
        )
        if not out.is_file():
            raise RuntimeError(f"the checks did not run (pytest exit code {proc.returncode}):\n"
                               f"{(proc.stdout + proc.stderr)[-2000:]}")
        data = json.loads(out.read_text(encoding="utf-8"))
    _RUNS[key] = data
    return data


def view(chapter, data: dict, names: list[str] | None) -> list[str]:
    """The chapter run's lines (``nox -s chapterN --steps``) for these results, worded for a notebook."""
    from ..judge.plugin import Result, chapter_view

    results = [Result(**r) for r in data["results"]]
    broken = {int(k): v for k, v in data.get("chapters_not_importing", {}).items()}
    lines = chapter_view(results, "yours", broken)
    where = f"notebooks/{chapter.module}.ipynb" + (f": {', '.join(names)}" if names else "")
    out = []
    for line in lines:
        if line.startswith(f"chapter {chapter.number}: ") and line.endswith(f"(yours/{chapter.module}.py)"):
            line = line.replace(f"(yours/{chapter.module}.py)", f"({where})")
        elif line.startswith("nothing started yet:"):
            line = f"nothing started yet: fill in {', '.join(names) if names else 'the functions'} above, run " \
                   "the cell, then this one again."
        elif line.startswith(("then fill in ", "(the expected start: nox")):
            continue
        out.append(line)
    while out and not out[0].strip():
        out.pop(0)
    return out


class Report:
    """What a check printed: plain text, and HTML for a notebook."""

    MARKS = {"✓": "#1a7f37", "✗": "#cf222e", "·": "#6e7781", "!": "#cf222e", "⧗": "#9a6700"}

    def __init__(self, lines: list[str]) -> None:
        self.lines = lines

    @property
    def text(self) -> str:
        """The lines, as ``nox -s chapterN`` prints them."""
        return "\n".join(self.lines)

    def __repr__(self) -> str:
        return self.text

    def _repr_html_(self) -> str:
        rows = []
        for line in self.lines:
            escaped = html.escape(line)
            m = re.match(r"^(\s*)([✓✗·!⧗])(\s)", line)
            if m:
                color = self.MARKS[m.group(2)]
                escaped = f'{m.group(1)}<b style="color:{color}">{m.group(2)}</b>{html.escape(line[m.end(2):])}'
            if "looks like:" in line:
                escaped = f"<b>{escaped}</b>"
            if re.match(r"^chapter \d+: ", line):
                escaped = f"<b>{escaped}</b>"
            rows.append(escaped)
        return ('<pre class="kata-check" style="line-height:1.35;white-space:pre-wrap">' + "\n".join(rows)
                + "</pre>")


def _in_notebook() -> bool:
    shell = sys.modules.get("IPython")
    ip = getattr(shell, "get_ipython", lambda: None)() if shell else None
    return ip is not None and type(ip).__name__ != "TerminalInteractiveShell"


def _chapter_number(namespace: dict, names: list[str]) -> int:
    said = namespace.get("CHAPTER")
    if isinstance(said, int):
        return said
    having = [c.number for c in project.chapters() if names and set(names) <= set(functions_of(c))]
    if len(having) == 1:
        return having[0]
    raise ValueError("which chapter? Set CHAPTER = N in the notebook (its first cell does), or pass chapter=N")


def _live(namespace: dict, chapter) -> dict:
    """The chapter's finished functions defined in the notebook (or module) that called ``check``."""
    names = functions_of(chapter)
    here = namespace.get("__name__")
    imports, functions = [], {}
    for name, value in list(namespace.items()):  # the chapter's functions, and any helper defined here
        if not isinstance(value, types.FunctionType) or value.__module__ != here or name != value.__name__:
            continue
        try:
            source = textwrap.dedent(inspect.getsource(value))
        except (OSError, TypeError):
            continue
        _, found = answers([source], names)
        if name in found:
            functions[name] = found[name]
    for name, value in namespace.items():  # modules the notebook imported (np, math, …) for its functions
        if isinstance(value, types.ModuleType) and not name.startswith("_") and value.__name__.split(".")[0] not in (
                "kata", "sys", "builtins", "exercises") and not value.__name__.startswith("yours_"):
            imports.append(f"import {value.__name__}" + (f" as {name}" if name != value.__name__ else ""))
    return {"chapter": chapter.number, "imports": imports, "functions": functions}


def check(*functions, chapter: int | None = None, show: bool = True) -> Report | None:
    """Check functions of the notebook against their chapter's tests: ``kata.check(softmax)``.

    Args:
        *functions: the functions (or their names) to check; none: every function of the chapter.
        chapter: the chapter (default: the notebook's ``CHAPTER``, else found from the functions' names).
        show: display the report (HTML in a notebook, text elsewhere) and return None; False: return it.

    Returns:
        None when ``show``, else the ``Report`` (``.text``, ``.lines``).

    Raises:
        ValueError: a function is not one of the chapter's, or the chapter cannot be told.
    """
    frame = inspect.currentframe()
    namespace = frame.f_back.f_globals if frame and frame.f_back else {}
    names = [f if isinstance(f, str) else getattr(f, "__name__", repr(f)) for f in functions]
    ch = project.chapter(chapter if chapter is not None else _chapter_number(namespace, names))
    known = functions_of(ch)
    unknown = [n for n in names if n not in known]
    if unknown:
        raise ValueError(f"chapter {ch.number} has no function {', '.join(unknown)}; its functions: {', '.join(known)}")
    tests = None
    if names:
        tests = [t for t, owner in owners(ch).items() if owner in names]
    with tempfile.TemporaryDirectory(prefix="kata-notebook-") as scratch:
        package = write_package(Path(scratch) / "yours", _live(namespace, ch))
        data = run_checks(ch, package, tests)
    report = Report(view(ch, data, names or None))
    if not show:
        return report
    if _in_notebook():
        from IPython.display import display

        display(report)
    else:
        print(report.text)
    return None


# -- python -m kata notebooks: the notebooks' answers as an implementation folder, for grading ---------------
def main(argv: list[str] | None = None) -> int:
    """Write ``exercises/`` with the saved notebooks' finished functions in place into ``--out``."""
    p = argparse.ArgumentParser(
        prog="python -m kata notebooks",
        description="Write exercises/ with every saved notebook's finished functions in place, for grading "
                    "(nox -s grade -- --impl DIR/exercises). Only function definitions and imports are read "
                    "from the notebooks, with ast; no cell is run.")
    p.add_argument("--out", default="build/notebook-answers", help="the folder to write (default: %(default)s)")
    args = p.parse_args(argv)
    out = Path(args.out)
    target = out / "exercises"
    if target.exists():
        shutil.rmtree(target)
    out.mkdir(parents=True, exist_ok=True)
    write_package(target)
    for chapter in project.chapters():
        _, found = saved_answers(chapter)
        if found:
            print(f"chapter {chapter.number}: {', '.join(found)} from notebooks/{chapter.module}.ipynb")
    print(f"wrote {target}: grade it with nox -s grade -- --impl {target.as_posix()}")
    return 0
