"""Work a chapter in a notebook: ``import kata; kata.check(softmax)`` checks a function defined in it.

``kata.check(softmax)`` runs the tests of the notebook's chapter that are about ``softmax`` against the
``softmax`` of the notebook, and shows what ``nox -s chapter4`` shows for them: a line per worksheet step,
the checks beyond the worksheet, the first failure in full with the exact and the printed worksheet value
beside yours and the classic mistake it looks like. As HTML in a notebook, as plain text in a terminal.
``kata.check()`` checks every function of the chapter (the notebook says which: ``CHAPTER = 4``).

How, without running the learner's code in the judge: the functions given are taken from the live kernel,
exactly the objects passed (``kata.check(good)`` checks ``good``, one imported from a helper module too), and
written into a copy of ``exercises/`` (appended to the chapter's file, so they replace the stubs there) with
every name they use bound to what it means in the kernel (``_Transplant``): modules imported again, the
learner's own functions by their source, plain values as literals, earlier chapters from the copy. A name
the kernel does not have (calling the function raises NameError) is refused in one sentence, no verdict.
The running notebook's saved file is not read: the kernel is the truth. The other chapters come from
``exercises/`` with their saved notebooks' answers (``kata/learners_code.py``, the one extraction). pytest runs the
chapter's tests on that copy with ``--impl`` in a separate process, exactly as a chapter run does.

A test is *about* the chapter function it calls that comes last in the chapter's file (and in the notebook):
its other functions are written, and checked, before it.

``nox -s notebook-answers -- --out DIR`` (``python -m kata notebook-answers`` in the course's environment) writes
the copy from the saved notebooks alone (their function definitions, read with ``ast``; no cell is run), for
``nox -s grade -- --impl DIR/exercises`` (what ``nox -s grade`` does without ``--impl``).
"""

from __future__ import annotations

import argparse
import ast
import builtins
import dis
import functools
import html
import importlib
import inspect
import os
import re
import shutil
import sys
import sysconfig
import tempfile
import textwrap
import types
from pathlib import Path

from .. import project
from ..learners_code import (  # the one extraction of saved notebooks, used here too
    _digest,
    functions_of,
    is_stub,
    saved_answers,
    write_package,
)

CACHE = project.ROOT / ".kata" / "notebook"
_RUNS: dict[str, dict] = {}  # results of a run, by everything that went into it (a re-run cell costs nothing)


def yours(number: int, *names: str):
    """Your chapter ``number`` as the checks see it (``exercises/`` with your notebooks' answers), imported here.

    ``yours(10, "causal_mask", "softmax")`` gives those names of it (one name: that value), for a notebook's
    first cell: the chapter's constants, its given ``_check_*`` input checks and the earlier chapters' functions
    it builds on. None of those is this chapter's notebook's to answer, so with names this chapter's own saved
    notebook is not read (a cell saved unrun, such as an import that cannot work, never breaks the first cell);
    the earlier chapters' notebooks are.
    """
    chapter = project.chapter(number)
    own = {"chapter": number, "lines": [], "files": {}} if names else None
    with tempfile.TemporaryDirectory() as scratch:
        staged = write_package(Path(scratch) / "staged", live=own)
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


# -- the live kernel: exactly the functions given, their names resolved as the kernel resolves them ----------
class Refused(Exception):
    """Why ``kata.check`` cannot check what it was given, in one sentence (shown instead of a verdict)."""


@functools.lru_cache(maxsize=1)
def _library_paths() -> list[Path]:
    paths = sysconfig.get_paths()
    return [Path(paths[k]).resolve() for k in ("stdlib", "platstdlib", "purelib", "platlib") if k in paths]


def _is_library(module_name: str) -> bool:
    """Whether a module is installed (the standard library, site-packages), not a file of the learner's."""
    if module_name in ("__main__", "", None):
        return False  # the notebook itself (or the script that called check)
    if module_name.split(".")[0] in ("kata", "builtins") or module_name in sys.builtin_module_names:
        return True
    module = sys.modules.get(module_name)
    file = getattr(module, "__file__", None)
    if module is None or file is None:
        return module is not None  # a built-in or namespace module
    path = Path(file).resolve()
    return any(path.is_relative_to(p) for p in _library_paths())


def _package_module(module_name: str, package: Path) -> str | None:
    """The staged package's module a kernel module stands for (``exercises.X``, ``yours_<digest>.X``), if any."""
    head, _, rest = module_name.partition(".")
    if rest and "." not in rest and (head == "exercises" or head.startswith("yours_")) \
            and (package / f"{rest}.py").is_file():
        return rest
    return None


def _globals_of_code(code: types.CodeType) -> set[str]:
    """The global names a code object (and the code nested in it) reads: what it looks up when it runs."""
    names = {i.argval for i in dis.get_instructions(code) if i.opname in ("LOAD_GLOBAL", "LOAD_NAME")}
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _globals_of_code(const)
    return names


@functools.lru_cache(maxsize=512)
def _read(source: str) -> tuple[ast.AST, types.CodeType]:
    """A function's source, parsed and compiled (each source once: every check re-reads the kernel's functions)."""
    return ast.parse(source).body[0], compile(source, "<kata>", "exec")


def _header_names(node: ast.AST) -> set[str]:
    """Names a ``def``/``class`` line evaluates where it is defined: decorators, defaults, annotations, bases."""
    parts: list[ast.AST] = list(getattr(node, "decorator_list", []))
    if isinstance(node, ast.FunctionDef):
        a = node.args
        parts += [*a.defaults, *(d for d in a.kw_defaults if d is not None)]
        parts += [x.annotation for x in [*a.posonlyargs, *a.args, *a.kwonlyargs, a.vararg, a.kwarg]
                  if x is not None and x.annotation is not None]
        parts += [node.returns] if node.returns is not None else []
    elif isinstance(node, ast.ClassDef):
        parts += [*node.bases, *(k.value for k in node.keywords)]
        parts += [s for s in node.body if not isinstance(s, ast.FunctionDef | ast.AsyncFunctionDef)]
    return {n.id for p in parts for n in ast.walk(p) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def _literal(value) -> str | None:
    """Python source that makes an equal value, for a plain value (numbers, strings, tuples, arrays)."""
    import numpy as np

    if isinstance(value, np.ndarray):
        if value.dtype.kind not in "biuf" or value.size > 1_000_000:
            return None
        text = f"__import__('numpy').array({value.tolist()!r}, dtype={value.dtype.str!r})"
        if not value.flags.writeable:
            text = f"_kata_readonly({text})"
    elif isinstance(value, np.generic):
        if value.dtype.kind not in "biuf":
            return None
        text = f"__import__('numpy').{type(value).__name__}({value.item()!r})"
    elif isinstance(value, bool | int | float | complex | str | bytes | tuple | list | dict | set | frozenset) \
            or value is None:
        text = repr(value)
        try:
            again = ast.literal_eval(text)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            return None
        return text if type(again) is type(value) and again == value else None
    else:
        return None
    try:
        again = eval(text, {"_kata_readonly": lambda a: a})  # noqa: S307 - our own text, made just above
    except (ValueError, SyntaxError, NameError, OverflowError):
        return None
    same = np.array_equal(again, value) and np.asarray(again).dtype == np.asarray(value).dtype
    return text if same else None


_READONLY = "def _kata_readonly(a):\n    a.flags.writeable = False\n    return a"


class _Transplant:
    """The chapter file's tail that makes the given functions run as they run in the kernel.

    Each function's source goes in as written (``inspect.getsource``, refused when it no longer matches the
    function object: a file edited after its import); every global name it reads is bound to what that name
    is where the function was defined: a module (imported again by name), an installed library's function,
    a function of a chapter (imported from the staged copy), a function or class of the learner's own (its
    source, in turn), or a plain value (written out as a literal). A name bound nowhere raises NameError in
    the kernel, so the check refuses it; so does one name that means two things.
    """

    def __init__(self, package: Path, chapter) -> None:
        self.package, self.chapter = package, chapter
        self.bound: dict[str, tuple[object, str]] = {}  # name -> (value, who uses it)
        self.imports: list[str] = []
        self.data: list[str] = []
        self.defs: list[str] = []
        self.aliases: list[str] = []
        self.files: dict[str, str] = {}

    def copy(self) -> _Transplant:
        other = _Transplant(self.package, self.chapter)
        other.bound, other.files = dict(self.bound), dict(self.files)
        other.imports, other.data, other.defs, other.aliases = [*self.imports], [*self.data], [*self.defs], \
            [*self.aliases]
        return other

    def lines(self) -> list[str]:
        head = [_READONLY] if any("_kata_readonly(" in d for d in self.data) else []
        return [*self.imports, *head, *self.data, *(f"\n\n{d}" for d in self.defs), *self.aliases]

    def bind(self, name: str, value, user: str) -> None:
        """Make ``name`` mean ``value`` in the chapter file, as it does for ``user``."""
        if name in self.bound:
            before, who = self.bound[name]
            if before is value or (_literal(before) is not None and _literal(before) == _literal(value)):
                return
            raise Refused(f"{user} and {who} use the name {name} for two different things; kata.check puts them "
                          f"in one file, so give one of them another name.")
        self.bound[name] = (value, user)
        if isinstance(value, types.ModuleType):
            self._module(name, value, user)
        elif isinstance(value, types.FunctionType | type):
            self._definition(name, value, user)
        elif isinstance(getattr(value, "__module__", None), str) and isinstance(getattr(value, "__name__", None),
                                                                              str) and _is_library(value.__module__):
            home = sys.modules.get(value.__module__)
            if getattr(home, value.__name__, None) is not value:
                raise Refused(f"{user} uses {name}, which kata.check cannot find again in {value.__module__}; "
                              f"import it in the notebook by its own name.")
            self.imports.append(f"from {value.__module__} import {value.__name__} as {name}  # noqa: E402, F401")
        else:
            text = _literal(value)
            if text is None:
                raise Refused(f"{user} uses {name}, a {type(value).__name__} made in the notebook, which kata.check "
                              f"cannot copy; make it inside the function, or from plain numbers and arrays.")
            self.data.append(f"{name} = {text}")

    def _module(self, name: str, module: types.ModuleType, user: str) -> None:
        staged = _package_module(module.__name__, self.package)
        if staged is not None:
            self.imports.append(f"from . import {staged} as {name}  # noqa: E402, F401")
        elif _is_library(module.__name__):
            line = f"import {module.__name__}" + (f" as {name}" if name != module.__name__ else "")
            if "." in module.__name__ and name == module.__name__.split(".")[0]:
                line = f"import {module.__name__}"
            self.imports.append(line + "  # noqa: E402, F401")
        else:
            file = getattr(module, "__file__", None)
            if not file or hasattr(module, "__path__") or not Path(file).suffix == ".py":
                raise Refused(f"{user} uses the module {name} ({module.__name__}), which kata.check cannot copy; "
                              f"import the functions it needs from it by name.")
            copy = "_yours_" + module.__name__.replace(".", "_")
            self.files[f"{copy}.py"] = Path(file).read_text(encoding="utf-8")
            self.imports.append(f"from . import {copy} as {name}  # noqa: E402, F401")

    def _definition(self, name: str, value, user: str) -> None:
        where = getattr(value, "__module__", "") or ""
        qualname = getattr(value, "__qualname__", value.__name__)
        staged = _package_module(where, self.package)
        if staged is not None:
            if staged == self.chapter.module and name == qualname:
                return  # the chapter file's own: already there
            self.imports.append(f"from .{staged} import {qualname} as {name}  # noqa: E402, F401")
            return
        if _is_library(where):
            if "." in qualname or getattr(sys.modules.get(where), qualname, None) is not value:
                raise Refused(f"{user} uses {name}, which kata.check cannot import again from {where}; import it "
                              f"in the notebook by its own name.")
            self.imports.append(f"from {where} import {qualname} as {name}  # noqa: E402, F401")
            return
        self.add(value, name, user)

    def add(self, value, name: str | None = None, user: str | None = None) -> None:
        """Put a function (or class) of the learner's in, by its source, and everything it uses."""
        label = f"{value.__name__} ({_home(value)})"
        if "." in value.__qualname__ or getattr(value, "__closure__", None):
            raise Refused(f"{label} is made inside another function; define it at the top of a cell or a file.")
        try:
            source = textwrap.dedent(inspect.getsource(value))
            node, compiled = _read(source)
        except (OSError, TypeError, SyntaxError, IndexError):
            raise Refused(f"the source of {label} cannot be read; define it in a cell, run the cell, then check "
                          f"again.") from None
        if getattr(node, "name", None) != value.__name__:
            raise Refused(f"the source of {label} cannot be read; define it in a cell, run the cell, then check "
                          f"again.")
        codes = [value.__code__] if isinstance(value, types.FunctionType) else _class_codes(value)
        if isinstance(value, types.FunctionType):
            fresh = next((c for c in compiled.co_consts
                          if isinstance(c, types.CodeType) and c.co_name == value.__name__), None)
            if fresh is None or _fingerprint(fresh) != _fingerprint(value.__code__):
                raise Refused(f"{label} was changed after it was run or imported: run its cell again (or "
                              f"importlib.reload its module), then check again.")
        self.defs.append(source)
        if name is not None and name != value.__name__:
            self.aliases.append(f"{name} = {value.__name__}")
        if value.__name__ not in self.bound:
            self.bound[value.__name__] = (value, user or label)
        names = set().union(*(_globals_of_code(c) for c in codes)) | _header_names(node)
        scope = getattr(value, "__globals__", None) or vars(sys.modules.get(value.__module__, builtins))
        for used in sorted(names - {value.__name__}):
            if used in scope:
                self.bind(used, scope[used], label)
            elif not hasattr(builtins, used):
                raise Refused(f"{label} uses {used}, which is not defined there: calling it raises NameError; "
                              f"define or import {used} in a cell, run it, then check again.")


def _fingerprint(code: types.CodeType) -> tuple:
    """What a function's source decides about its code: names, arguments, constants.

    The bytecode itself differs between compilers' optimisations, so it is not compared.
    """
    consts = tuple(_fingerprint(c) if isinstance(c, types.CodeType) else repr(c) for c in code.co_consts)
    return (code.co_name, code.co_names, code.co_varnames, code.co_argcount, code.co_kwonlyargcount,
            code.co_posonlyargcount, consts)


def _class_codes(cls: type) -> list[types.CodeType]:
    codes = []
    for member in vars(cls).values():
        for f in (member, getattr(member, "__func__", None), getattr(member, "fget", None),
                  getattr(member, "fset", None)):
            if isinstance(f, types.FunctionType):
                codes.append(f.__code__)
    return codes


def _home(value) -> str:
    module = getattr(value, "__module__", "")
    if module in ("__main__", None, ""):
        return "the notebook"
    file = getattr(sys.modules.get(module), "__file__", None)
    return Path(file).name if file else module


def _is_stub_function(value) -> bool:
    try:
        node = ast.parse(textwrap.dedent(inspect.getsource(value))).body[0]
    except (OSError, TypeError, SyntaxError, IndexError):
        return False
    return isinstance(node, ast.FunctionDef) and is_stub(node)


def _live(namespace: dict, chapter, given: dict[str, object], package: Path) -> dict:
    """The tail of the chapter file that stands for the kernel.

    The ``given`` functions, exactly, by their chapter names, and the kernel's other finished functions of
    the chapter (its ``namespace``).

    Raises ``Refused`` when a given function (or another one the checks call) cannot run as in the kernel.
    """
    order = functions_of(chapter)
    plan = _Transplant(package, chapter)
    for name, value in given.items():
        if not isinstance(value, types.FunctionType):
            raise Refused(f"{name} is a {type(value).__name__}, not a function defined with def; pass the function.")
        plan.bind(name, value, f"{name} ({_home(value)})")
    last = max((order.index(n) for n in given), default=len(order) - 1)
    for name in order:
        value = namespace.get(name)
        if name in given or not isinstance(value, types.FunctionType) or _is_stub_function(value):
            continue
        trial = plan.copy()
        try:
            trial.bind(name, value, f"{name} ({_home(value)})")
        except Refused:
            if order.index(name) <= last:  # the checks of what was given call it: it must run
                raise
            continue
        plan = trial
    return {"chapter": chapter.number, "lines": plan.lines(), "files": plan.files}


# -- which tests are about which function -------------------------------------------------------------------
def owners(chapter, root: Path = project.ROOT) -> dict[str, str | None]:
    """{test function name: the chapter function it is about}, read from the test file with ``ast``.

    A test is about the last (in the chapter's file) of the chapter functions it calls as ``ch.NAME``,
    directly or through the test module's helpers and fixtures; None when it calls none that way.
    """
    return dict(_owners((root / chapter.test_file).read_text(encoding="utf-8"), tuple(functions_of(chapter, root))))


@functools.lru_cache(maxsize=32)
def _owners(text: str, order: tuple[str, ...]) -> dict[str, str | None]:
    """``owners`` of a test file's text (each read once: every check cell asks). Callers get copies."""
    tree = ast.parse(text)
    defs = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}

    def called(node: ast.AST, seen: set[str]) -> set[str]:
        found: set[str] = set()
        names: set[str] = set()
        for sub in ast.walk(node):
            if isinstance(sub, ast.Attribute) and isinstance(sub.value, ast.Name) and sub.value.id == "ch" \
                    and sub.attr in order:  # ch.NAME only: text.encode is str's, not the chapter's encode
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
def run_checks(chapter, package: Path, tests: list[str] | None) -> dict:
    """Run the chapter's tests (or these test functions) on ``package`` in the judge's child runner.

    Returns:
        ``{"results": [...], "chapters_not_importing": {chapter: message}}``.
    """
    from ..judge import warm
    from ..judge.plugin import call_timeout
    from ..judge.runner import run_tests

    key = _digest(package) + "|" + ",".join(tests or ["*"])
    if key in _RUNS:
        return _RUNS[key]
    selection = [f"{chapter.test_file}::{t}" for t in tests] if tests else [chapter.test_file]
    with tempfile.TemporaryDirectory(prefix="kata-check-") as scratch:
        run = run_tests(project.ROOT, selection, impl=str(package), timeout=call_timeout(), stream_dir=Path(scratch),
                        shown_as="notebook", warm=warm.enabled())
    if not run.results:
        said = run.problems + [e["message"] for e in run.collect_errors]
        raise RuntimeError("the checks did not run:\n" + ("\n".join(said) or run.output_tail)[-2000:])
    data = {"results": [run.results[t["nodeid"]] for t in run.tests if t["nodeid"] in run.results],
            "chapters_not_importing": {str(k): v for k, v in run.not_importing.items()}}
    _RUNS[key] = data
    return data


def view(chapter, data: dict, names: list[str] | None) -> list[str]:
    """The chapter run's lines (``nox -s chapterN --steps``) for these results, worded for a notebook."""
    from ..judge.plugin import Result, chapter_view

    fields = Result.__dataclass_fields__
    results = [Result(**{k: v for k, v in r.items() if k in fields}) for r in data["results"]]
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
        elif "more hints: nox -s hint -- " in line:  # a terminal command; the notebook's own way in
            line = re.sub(r"more hints: nox -s hint -- ([\d.]+)", r'more hints: kata.hint("\1")', line)
        out.append(line)
    while out and not out[0].strip():
        out.pop(0)
    return out


def hint(step: str, *, every: bool = False) -> None:
    """The next hint layer of a step, as ``nox -s hint -- 4.3`` prints it: ``kata.hint("4.3")``."""
    from . import hints

    hints.main([str(step), *(["--all"] if every else [])])


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
            if "looks like:" in line or re.match(r"^chapter \d+: ", line):
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


def check(*functions, chapter: int | None = None, show: bool = True) -> Report | None:
    """Check functions of the notebook against their chapter's tests: ``kata.check(softmax)``.

    Args:
        *functions: the functions (or their names) to check; none: every function of the chapter.
        chapter: the chapter (default: the notebook's ``CHAPTER``, else found from the functions' names).
        show: display the report (HTML in a notebook, text elsewhere) and return None; False: return it.

    Returns:
        None when ``show``, else the ``Report`` (``.text``, ``.lines``).

    The functions checked are exactly the objects given (a function imported from a helper module, or
    under another name, too), with every name they use resolved as the kernel resolves it; the chapter's
    other finished functions are the kernel's too. When that cannot be done (a name the kernel does not
    know: calling the function raises NameError), the report is one sentence saying why, and no verdict.

    Raises:
        ValueError: a function is not one of the chapter's, or the chapter cannot be told.
    """
    frame = inspect.currentframe()
    namespace = frame.f_back.f_globals if frame and frame.f_back else {}
    del frame
    given: dict[str, object] = {}
    for f in functions:
        if isinstance(f, str):
            if f not in namespace:
                return _refuse(f"there is no {f} in this notebook: define it in a cell and run that cell first.", show)
            f = namespace[f]
        name = getattr(f, "__name__", None)
        if not isinstance(name, str):
            return _refuse(f"{f!r} is not a function: pass the function itself, e.g. kata.check(softmax).", show)
        given[name] = f
    names = list(given)
    ch = project.chapter(chapter if chapter is not None else _chapter_number(namespace, names))
    known = functions_of(ch)
    unknown = [n for n in names if n not in known]
    if unknown:
        raise ValueError(f"chapter {ch.number} has no function {', '.join(unknown)}; its functions: {', '.join(known)}")
    tests = [t for t, owner in owners(ch).items() if owner in names] if names else None
    with tempfile.TemporaryDirectory(prefix="kata-notebook-") as scratch:
        base = Path(os.environ.get("KATA_EXERCISES") or project.ROOT / "exercises")
        try:
            live = _live(namespace, ch, given, base)
        except Refused as why:
            return _refuse(str(why), show)
        package = write_package(Path(scratch) / "yours", live)
        data = run_checks(ch, package, tests)
    return _show(Report(view(ch, data, names or None)), show)


def _refuse(why: str, show: bool) -> Report | None:
    """A check that gives no verdict: one line saying why."""
    return _show(Report([f"! not checked: {why}"]), show)


def _show(report: Report, show: bool) -> Report | None:
    if not show:
        return report
    if _in_notebook():
        from IPython.display import display

        display(report)
    else:
        print(report.text)
    return None


# -- python -m kata notebook-answers: the notebooks' answers as an implementation folder, for grading ---------------
def main(argv: list[str] | None = None) -> int:
    """Write ``exercises/`` with the saved notebooks' finished functions in place into ``--out``."""
    p = argparse.ArgumentParser(
        prog="python -m kata notebook-answers",
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
