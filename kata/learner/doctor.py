"""``nox -s doctor``: what a stuck learner (or whoever helps them) needs to know, in one screen.

Python and NumPy versions, which implementation runs and where each chapter's file is, which
chapters import (each tried in its own process, so a file that hangs cannot hang the doctor), how
many stubs are left, and what to run next.
"""

from __future__ import annotations

import argparse
import ast
import os
import platform
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from .. import learners_code, project

IMPORT_TIMEOUT = 15.0
PACKAGES = ("numpy", "pytest", "pytest-check", "pytest-timeout")


def parser() -> argparse.ArgumentParser:
    """The command line of ``nox -s doctor -- ...``."""
    p = argparse.ArgumentParser(prog="nox -s doctor --", description="Versions, files, imports, and what next.")
    p.add_argument("--impl", default=None, help="package name or folder to look at (default: exercises/ with your "
                   "saved notebooks' answers, as nox -s chapterN runs it)")
    return p


def _stubs(path: Path) -> tuple[list[ast.Raise], int]:
    """(the ``raise NotImplementedError`` of each function that is still only that, public functions)."""
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"))
    except (SyntaxError, UnicodeDecodeError, OSError):
        return [], 0
    last = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef) and not n.name.startswith("_")}
    functions = list(last.values())  # a later definition replaces an earlier one (a notebook's answer the stub)
    # a stub: only its docstring, the checks the course gives, and the raise
    return [fn.body[-1] for fn in functions if learners_code.is_stub(fn)], len(functions)


def stubs_left(path: Path) -> tuple[int, int]:
    """(functions whose body is still only ``raise NotImplementedError``, public functions) in a file."""
    left, total = _stubs(path)
    return len(left), total


def first_stub_step(path: Path) -> str | None:
    """The worksheet step of the file's first function still to write (its stub's message starts with it)."""
    for stub in _stubs(path)[0]:
        args = stub.exc.args if isinstance(stub.exc, ast.Call) else []
        said = args[0].value if args and isinstance(args[0], ast.Constant) and isinstance(args[0].value, str) else ""
        step = said.split(" ", 1)[0]
        if step[:1].isdigit() and "." in step:
            return step
    return None


def try_import(folder: Path, module: str) -> str:
    """'' when ``folder``'s ``module`` imports in a fresh Python, else the error's last line."""
    code = "import importlib, sys; sys.path.insert(0, sys.argv[1]); importlib.import_module('.'.join(sys.argv[2:]))"
    try:
        proc = subprocess.run([sys.executable, "-c", code, str(folder.parent), folder.name, module],
                              capture_output=True, text=True, timeout=IMPORT_TIMEOUT, cwd=project.ROOT, check=False)
    except subprocess.TimeoutExpired:
        return f"importing did not finish in {IMPORT_TIMEOUT:g} s (an endless loop at module level?)"
    if proc.returncode == 0:
        return ""
    lines = [line for line in proc.stderr.strip().splitlines() if line.strip()]
    where = next((line.strip() for line in reversed(lines) if line.strip().startswith("File ")), "")
    return (lines[-1] if lines else f"exit code {proc.returncode}") + (f" ({where})" if where else "")


def version(name: str, found: dict) -> str:
    """The installed version, and the lock's when they differ (a hand-made install, not the course's)."""
    installed, locked = found["installed"] or "not installed", found["locked"]
    if locked is None or installed == locked:
        return installed + (" (uv.lock)" if locked else "")
    return f"{installed}, but uv.lock pins {locked}: delete .nox/ and run the session again"


def warm_judge() -> str:
    """Whether ``nox -s chapterN`` answers through a warm judge here, and where its logs are."""
    from ..judge import warm

    if not warm.enabled():
        why = "KATA_WARM=0" if os.environ.get("KATA_WARM") == "0" else "CI" if os.environ.get("CI") else "not Linux"
        return f"off ({why}): every check starts pytest afresh"
    try:
        folder = warm.address().parent
    except OSError as err:
        return f"off: {err}"
    return f"on (KATA_WARM=0 nox -s chapterN stops it and checks without it); its socket and log: {folder}"


def main(argv: list[str] | None = None) -> int:
    """Print the diagnosis; return 0."""
    args = parser().parse_args(argv)
    print("transformer katas: doctor")
    print()
    print(f"  python          {platform.python_version()} ({sys.executable})")
    for name, found in project.versions(PACKAGES).items():
        print(f"  {name:<15} {version(name, found)}")
    print(f"  system          {platform.platform()}")
    print(f"  repository      {project.ROOT}")
    print(f"  warm judge      {warm_judge()}")
    chosen = args.impl or learners_code.default_impl()
    try:
        folder = project.impl_folder(chosen)
    except SystemExit as err:
        print(f"\n  implementation {chosen!r}: {err}")
        return 0
    print(f"  implementation  {args.impl or 'exercises'} -> {folder}  (nox -s chapterN -- --impl NAME picks another)")
    in_notebooks = learners_code.from_notebooks() if args.impl is None else {}
    if in_notebooks:
        print("  notebooks       your saved notebooks' finished functions count too; where a chapter's file and its")
        print("                  notebook both hold a finished function, the notebook's wins (a stub never does):")
        for number, names in in_notebooks.items():
            where = f"notebooks/{project.chapter(number).module}.ipynb"
            print(f"                  chapter {number}: {', '.join(names)} from {where}")
    print()
    chapters = project.chapters()
    with ThreadPoolExecutor(max_workers=4) as pool:
        errors = list(pool.map(lambda c: try_import(folder, c.module), chapters))
    print(f"  {'chapter':<8} {'file':<44} {'imports':<8} stubs left")
    next_up = None
    for chapter, error in zip(chapters, errors, strict=True):
        path = folder / f"{chapter.module}.py"
        shown = f"{learners_code.shown(folder)}/{path.name}"  # exercises/, also for its staged copy with notebooks
        if not path.exists():
            print(f"  {chapter.number:<8} {str(shown):<44} {'missing':<8}")
            next_up = next_up or (chapter, f"the file {shown} is missing")
            continue
        left, total = stubs_left(path)
        came = learners_code.made_of(path)  # the notebook that answers it, if one does: this row counts its functions
        said = f"  answered in {came}" if came != shown else ""
        print(f"  {chapter.number:<8} {str(shown):<44} {'yes' if not error else 'NO':<8} {left}/{total}{said}")
        if error:
            print(f"  {'':<8} {error[:150]}")
            next_up = next_up or (chapter, f"chapter {chapter.number} does not import: fix {shown} first")
        elif left:
            next_up = next_up or (chapter, f"chapter {chapter.number} has {left} function(s) still to write")
    print()
    if next_up is None:
        print("  every chapter imports and no stub is left: nox -s progress shows what passes.")
    else:
        chapter, why = next_up
        print(f"  next: {why}.")
        first = first_stub_step(folder / f"{chapter.module}.py") \
            or (chapter.steps[0].id if chapter.steps else f"{chapter.number}.1")
        commands = [
            (f"nox -s chapter{chapter.number}", f"check it (nox -s watch -- {chapter.number} re-checks on every save)"),
            (f"nox -s worksheet -- {chapter.number}", "your numbers beside the worksheet's"),
            (f"nox -s hint -- {first}", "a hint, one layer at a time"),
        ]
        for command, what in commands:
            print(f"        {command:<24} {what}")
    return 0
