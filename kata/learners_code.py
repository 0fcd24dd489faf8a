"""The learner's code wherever it is: ``exercises/`` and the saved notebooks, as one implementation folder.

A chapter worked in its notebook counts like one worked in its file: ``nox -s chapterN``, ``progress``,
``doctor`` and ``worksheet`` run, when no ``--impl`` is given, a copy of ``exercises/`` with every saved
notebook's finished functions put in (``default_impl()``). **The rule when both hold an answer: the notebook's
finished function wins** (it is appended to the chapter's file, after the file's own); a function left as its
stub in the notebook never replaces anything. ``nox -s doctor`` shows which functions come from which
notebook. ``kata.check`` in a running notebook reads that notebook from its kernel instead of the saved file
(``kata/learner/notebook.py``); ``python -m kata notebook-answers`` writes the same copy for grading.

Only the saved files are read here, with ``json`` and ``ast``: no cell is run.
"""

from __future__ import annotations

import ast
import builtins
import functools
import hashlib
import json
import os
import re
import shutil
import tempfile
import textwrap
from pathlib import Path

from . import project

STAGED = Path(".kata") / "staged"  # under the repository: the staged copies default_impl makes


# -- what a chapter and a notebook hold ---------------------------------------------------------------------
def exercise_file(chapter, root: Path = project.ROOT) -> Path:
    """The chapter's file in ``exercises/``."""
    return root / "exercises" / f"{chapter.module}.py"


def functions_of(chapter, root: Path = project.ROOT) -> list[str]:
    """The chapter's public functions, in the order of its file in ``exercises/``."""
    return list(_functions_in(exercise_file(chapter, root).read_text(encoding="utf-8")))


@functools.lru_cache(maxsize=64)
def _functions_in(text: str) -> tuple[str, ...]:
    """The public functions a chapter file's text defines, in order.

    Each text is parsed once: a notebook's every ``kata.check`` asks for every chapter's.
    """
    tree = ast.parse(text)
    return tuple(n.name for n in tree.body if isinstance(n, ast.FunctionDef) and not n.name.startswith("_"))


GIVEN = "_check"  # the prefix of the input checks a chapter file ships, and its stubs call (CONTRIBUTING.md)


def is_given(statement: ast.stmt) -> bool:
    """Whether a statement is an input check the course gives in a stub: a call of the chapter's ``_check_*`` helper.

    Alone (``_check_rows(x, "swiglu: x")``) or assigned (``x = _check_rows(x, ...)``, ``W = _check_weights(...)``).
    stubgen keeps the run of them that opens a function's body; the learner writes what follows.
    """
    value = statement.value if isinstance(statement, ast.Expr | ast.Assign) else None
    return isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id.startswith(GIVEN)


def _body(node: ast.FunctionDef) -> list[ast.stmt]:
    """A function's statements without its docstring (or any other bare constant)."""
    return [n for n in node.body if not (isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant))]


def given_checks(node: ast.FunctionDef) -> list[ast.stmt]:
    """The given input checks that open a function's body (after its docstring): what its stub keeps."""
    body = _body(node)
    return body[:next((i for i, statement in enumerate(body) if not is_given(statement)), len(body))]


def is_stub(node: ast.FunctionDef) -> bool:
    """Whether a function's body is still only its docstring, its given checks and ``raise NotImplementedError``."""
    body = _body(node)[len(given_checks(node)):]
    if len(body) != 1 or not isinstance(body[0], ast.Raise) or body[0].exc is None:
        return False
    exc = body[0].exc.func if isinstance(body[0].exc, ast.Call) else body[0].exc
    return isinstance(exc, ast.Name) and exc.id == "NotImplementedError"


def notebook_of(chapter, root: Path = project.ROOT) -> Path:
    """The chapter's notebook: ``notebooks/chapterNN_<topic>.ipynb``."""
    return root / "notebooks" / f"{chapter.module}.ipynb"


def code_cells(path: Path) -> list[str]:
    """The source of every code cell of a saved notebook (read as JSON; nothing is run)."""
    return _cells_of(path.read_text(encoding="utf-8"))


def _cells_of(text: str) -> list[str]:
    """The source of every code cell of a notebook's text (its JSON)."""
    data = json.loads(text)
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
                line = ast.get_source_segment(text, node)
                if isinstance(node, ast.ImportFrom) and not node.level and module.startswith("exercises."):
                    line = f"from .{module.removeprefix('exercises.')} import " + ", ".join(  # the copy's own
                        a.name + (f" as {a.asname}" if a.asname else "") for a in node.names)
                elif getattr(node, "level", 0) or any(r.split(".")[0] in ("kata", "exercises") for r in roots):
                    continue
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

    ``notebooks`` is another folder of notebooks to read (a learner's, for ``grade-class``). A symbolic link
    is not read (a learner's link could point anywhere on the grader's machine).
    """
    path = notebooks / f"{chapter.module}.ipynb" if notebooks is not None else notebook_of(chapter, root)
    if not path.is_file() or path.is_symlink():
        return [], {}
    try:
        imports, found = _saved(path.read_text(encoding="utf-8"), tuple(functions_of(chapter, root)))
    except (ValueError, OSError, AttributeError, TypeError):  # not a notebook (JSON): nothing to take from it
        return [], {}
    return list(imports), dict(found)


@functools.lru_cache(maxsize=64)
def _saved(text: str, names: tuple[str, ...]) -> tuple[list[str], dict[str, str]]:
    """``answers`` of a notebook's text, each text read once; callers get copies.

    A notebook's every ``kata.check`` reads every other saved notebook: that was a third of a check's time in the
    kernel.
    """
    return answers(_cells_of(text), list(names))


# -- the implementation folder: exercises/ with the notebooks' answers in place ----------------------------------
def write_package(target: Path, live: dict | None = None, root: Path = project.ROOT,
                  learner: Path | None = None) -> Path:
    """Copy ``exercises/`` to ``target`` and put every saved notebook's finished functions into their chapter files.

    The one extraction of notebook answers: ``python -m kata notebook-answers`` (grading), ``progress``, ``doctor``,
    blame notes and ``yours`` all read the saved notebooks through it. A notebook's finished function
    replaces the stub, or the finished function, of ``exercises/`` (the notebook wins); a function left as its
    stub in the notebook never replaces anything.

    ``$KATA_EXERCISES`` names another folder to start from instead of ``exercises/`` (the tests start chapter N's
    notebook on a folder whose earlier chapters are solved).

    ``live`` is the running kernel's chapter (``kata.check``): ``{"chapter": N, "lines": [...], "files":
    {name: text}}``; its saved notebook is not read (the kernel is the truth), its lines are appended instead.

    ``learner`` is a folder holding a learner's ``exercises/`` and ``notebooks/`` to use instead of this course
    copy's (``grade-class``); the chapters and their functions' names still come from ``root``. Returns
    ``target``.
    """
    if learner is not None:
        base = learner / "exercises"
    else:
        base = Path(os.environ.get("KATA_EXERCISES") or root / "exercises")  # another starting point, for tests
    shutil.copytree(base, target, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    for chapter in project.chapters(root):
        if live and live["chapter"] == chapter.number:
            for name, text in live["files"].items():
                (target / name).write_text(text, encoding="utf-8")
            _append(target / f"{chapter.module}.py", "the running notebook", live["lines"])
            continue
        imports, functions = saved_answers(chapter, root, learner / "notebooks" if learner is not None else None)
        if not functions:
            continue
        path = target / f"{chapter.module}.py"
        if not path.is_file():  # the learner's chapter file is not there (a link left out): the course's stub
            shutil.copy2(exercise_file(chapter, root), path)
        block = [*imports, *_earlier_names(chapter, functions, root), *(f"\n\n{s}" for s in functions.values())]
        _append(target / f"{chapter.module}.py", f"notebooks/{chapter.module}.ipynb", block)
    return target


def _append(path: Path, where: str, block: list[str]) -> None:
    if not block:
        return
    head = f"\n\n# -- your answers from {where} (they replace the stubs above) --"
    path.write_text(path.read_text(encoding="utf-8").rstrip("\n") + "\n".join([head, *block]) + "\n",
                    encoding="utf-8")


def answered_in_notebook(path: Path) -> tuple[str, list[str]] | None:
    """(the notebook, the functions it answered) of a chapter file ``write_package`` staged; None if it added none.

    What a chapter run names as the file it checked: a learner who answered in the notebook is told so, not
    sent to the exercises/ file they never edited.
    """
    text = path.read_text(encoding="utf-8") if path.is_file() else ""
    found = re.search(r"^# -- your answers from (notebooks/\S+\.ipynb) \(they replace the stubs above\) --$", text,
                      re.M)
    if found is None:
        return None
    try:
        tree = ast.parse(text[found.end():])
    except SyntaxError:  # the notebook's cells do not parse together: the run says so; name the notebook alone
        return found.group(1), []
    return found.group(1), [n.name for n in tree.body if isinstance(n, ast.FunctionDef)]


def notebook_place(path: Path, line: int, root: Path = project.ROOT) -> str | None:
    """Where line ``line`` of a staged chapter file is, when a saved notebook put it there; None otherwise.

    ``write_package`` appends a notebook's finished functions after the chapter file's own, so a line number of
    the staged copy means nothing to a learner who wrote the function in the notebook (the copy of
    ``exercises/chapter14_bpe.py`` has other lines than the file). Returns
    ``notebooks/chapter14_bpe.ipynb, in train_bpe (line 7 of the code cell that defines it, cell 12)``: the
    notebook, the function, and the line within its cell when the saved notebook still holds that cell (the
    cell counted among every cell, code and text, from 1, as a notebook shows them from the top).
    """
    path = Path(path)
    text = path.read_text(encoding="utf-8") if path.is_file() else ""
    found = re.search(r"^# -- your answers from (notebooks/\S+\.ipynb) \(they replace the stubs above\) --$", text,
                      re.M)
    if found is None:
        return None
    first = text[:found.start()].count("\n") + 1  # the marker's own line
    if line <= first:
        return None
    notebook = found.group(1)
    try:
        tree = ast.parse(text[found.start():])
    except SyntaxError:
        return notebook
    inside = [n for n in tree.body if isinstance(n, ast.FunctionDef)
              and n.lineno <= line - first + 1 <= (n.end_lineno or n.lineno)]
    if not inside:
        return notebook
    function = inside[0]
    offset = line - first + 1 - function.lineno  # lines below the def
    return f"{notebook}, in {function.name}" + _cell_line(root / notebook, function.name, offset)


def _cell_line(notebook: Path, name: str, offset: int) -> str:
    """`` (line L of the code cell that defines it, cell C)`` for the saved cell whose finished ``name`` is used."""
    try:
        cells = json.loads(notebook.read_text(encoding="utf-8")).get("cells", [])
    except (ValueError, OSError, AttributeError):
        return ""
    place = ""
    for number, cell in enumerate(cells, 1):
        if not isinstance(cell, dict) or cell.get("cell_type") != "code":
            continue
        source = cell.get("source", "")
        source = _without_magics("".join(source) if isinstance(source, list) else str(source))
        try:
            tree = ast.parse(source)
        except SyntaxError:
            continue
        for node in tree.body:
            if isinstance(node, ast.FunctionDef) and node.name == name:
                place = "" if is_stub(node) else (  # the last finished definition wins, as in ``answers``
                    f" (line {node.lineno + offset} of the code cell that defines it, cell {number})")
    return place


def made_of(path: Path, root: Path = project.ROOT) -> str:
    """Where a chapter file's functions come from, as a learner knows it: the file, its notebook, or both.

    ``exercises/chapter14_bpe.py``; ``notebooks/chapter14_bpe.ipynb`` when the notebook answered every function of
    the chapter; ``notebooks/chapter14_bpe.ipynb (encode, decode) and exercises/chapter14_bpe.py`` when it answered
    some. ``path`` is a chapter file of an implementation folder (``default_impl``'s staged copy included).
    """
    path = Path(path)
    shown_file = f"{shown(path.parent, root)}/{path.name}"
    found = answered_in_notebook(path)
    if found is None:
        return shown_file
    notebook, names = found
    number = project.chapter_number(path.name)
    every = functions_of(project.chapter(number), root) if number is not None else []
    if names and set(every) <= set(names):
        return notebook
    return f"{notebook} ({', '.join(names)}) and {shown_file}" if names else f"{notebook} and {shown_file}"


def chapters_made_of(folder: Path, modules, root: Path = project.ROOT) -> dict[int, str]:
    """{chapter: where its functions come from (``made_of``)} for the chapter modules ``modules`` of ``folder``.

    In chapter order: what a tool that runs several chapters (``train``, ``generate``) says it used, and what a
    run's run.json records as ``chapters``.
    """
    found = {project.chapter_number(name): made_of(Path(folder) / f"{name}.py", root) for name in modules}
    return dict(sorted(found.items()))


def made_of_words(found: dict[int, str], shown_folder: str) -> str:
    """``chapters_made_of``'s answer in a line: ``exercises/ chapters 11–13 and 15, chapter 14 from notebooks/…``.

    The chapters read from their own files in ``shown_folder`` (the folder as ``shown`` names it) are named
    together, every other one with the notebook (and file) its functions come from; one chapter alone is its
    ``made_of`` (``exercises/chapter10_transformer.py``).
    """
    if len(found) == 1:
        return next(iter(found.values()))
    files = [n for n, where in found.items() if where == f"{shown_folder}/{Path(where).name}"]
    parts = [f"{shown_folder}/ chapter{'s' if len(files) > 1 else ''} {numbers_in_words(files)}"] if files else []
    return ", ".join(parts + [f"chapter {n} from {where}" for n, where in sorted(found.items()) if n not in files])


def numbers_in_words(numbers: list[int]) -> str:
    """Chapter numbers as a learner writes them: ``11–15``, ``11–13 and 15``, ``13, 14 and 16``."""
    runs: list[list[int]] = []
    for n in sorted(numbers):
        if runs and n == runs[-1][-1] + 1:
            runs[-1].append(n)
        else:
            runs.append([n])
    said = [f"{r[0]}–{r[-1]}" if len(r) > 2 else ", ".join(map(str, r)) for r in runs]
    return said[0] if len(said) == 1 else f"{', '.join(said[:-1])} and {said[-1]}"


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


def _digest(folder: Path, paths: list[Path] | None = None, start: bytes = b"") -> str:
    """16 hex digits of the names and contents of ``paths`` (default: every ``.py`` file under ``folder``)."""
    h = hashlib.sha256(start)
    for path in sorted(folder.rglob("*.py")) if paths is None else paths:
        h.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()[:16]


def _inputs_digest(root: Path) -> str:
    """What the staged copy is made of: exercises/ (or ``$KATA_EXERCISES``) and the saved notebooks."""
    base = Path(os.environ.get("KATA_EXERCISES") or root / "exercises")
    return _digest(base, [*sorted(base.glob("*.py")), *sorted((root / "notebooks").glob("*.ipynb"))],
                   str(base.resolve()).encode())


def from_notebooks(root: Path = project.ROOT) -> dict[int, list[str]]:
    """{chapter: [its functions a saved notebook answers]} for every chapter with such a notebook."""
    found = {}
    for chapter in project.chapters(root):
        _, functions = saved_answers(chapter, root)
        names = [n for n in functions if n in functions_of(chapter, root)]
        if names:
            found[chapter.number] = names
    return found


def default_impl(root: Path = project.ROOT) -> str:
    """Whose code runs when no ``--impl`` is given: ``exercises``, or its staged copy with the notebooks' answers.

    The copy is ``.kata/staged/<digest>/exercises`` (made once for each state of exercises/ and notebooks/,
    older ones removed); plain ``exercises`` when no saved notebook holds a finished function.
    """
    digest = _inputs_digest(root)
    home = root / STAGED
    target = home / digest / "exercises"
    if target.is_dir():
        return str(target)
    if (home / f"{digest}.none").is_file():
        return "exercises"
    for old in home.glob("*") if home.is_dir() else []:  # earlier states (another process's scratch stays)
        if not old.name.startswith("tmp"):
            shutil.rmtree(old, ignore_errors=True) if old.is_dir() else old.unlink(missing_ok=True)
    home.mkdir(parents=True, exist_ok=True)
    if not from_notebooks(root):
        (home / f"{digest}.none").write_text("no saved notebook holds a finished function\n", encoding="utf-8")
        return "exercises"
    with tempfile.TemporaryDirectory(dir=home) as scratch:
        write_package(Path(scratch) / "exercises", root=root)
        target.parent.mkdir(parents=True, exist_ok=True)
        os.replace(Path(scratch) / "exercises", target)
    return str(target)


def measured_impl(root: Path = project.ROOT) -> str:
    """What a benchmark measures when not told: ``solutions`` where it is, else the learner's work.

    The authors' edition has ``solutions``; a learner's edition measures the learner's work by the one rule
    (``default_impl``: exercises/ with the saved notebooks' answers).
    """
    return "solutions" if (root / "solutions").is_dir() else default_impl(root)


def shown(folder: Path, root: Path = project.ROOT) -> str:
    """How a learner knows an implementation's folder: ``exercises`` for the staged copy with the notebooks' answers.

    ``default_impl`` stages exercises/ with the saved notebooks' finished functions in ``.kata/staged/<digest>/``;
    a message naming that path would send the learner to a folder they never edit.
    """
    folder = Path(folder)
    if folder.is_relative_to(root / STAGED):
        return "exercises"
    return folder.relative_to(root).as_posix() if folder.is_relative_to(root) else str(folder)
