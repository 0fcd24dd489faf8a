"""Helpers for the notebook tests: execute a chapter notebook headless (nbclient), with its stubs or solved."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from kata import project

ROOT = Path(__file__).resolve().parents[3]
CHECKED = re.compile(r"^chapter (\d+): (\d+)/(\d+) steps, (\d+)/(\d+) checks", re.M)


def solution_sources(module: str) -> tuple[dict[str, str], list[str]]:
    """({function: source}, [private helpers' sources]) of ``solutions/<module>.py``.

    A helper the module imports from an earlier chapter (``from .chapter02_matrices import _matrix``) is
    among the helpers, with its source from there, and so is each import of that chapter's file the helpers
    read (``import math``), first: a notebook has only what its cells define.
    """
    text = (ROOT / "solutions" / f"{module}.py").read_text(encoding="utf-8")
    lines = text.splitlines()
    functions, helpers, imports = {}, [], []
    for node in ast.parse(text).body:
        if isinstance(node, ast.ImportFrom) and node.level == 1:
            private = [a.name for a in node.names if a.name.startswith("_")]
            if private:
                _, earlier = solution_sources(node.module)
                by_name = {m.group(1): h for h in earlier if (m := re.search(r"^def (\w+)\(", h, re.M))}
                while needed := {n.id for name in private for n in ast.walk(ast.parse(by_name[name]))
                                 if isinstance(n, ast.Name) and n.id in by_name} - set(private):
                    private += sorted(needed)  # the helpers those helpers call
                pasted = [by_name[name] for name in by_name if name in private]
                helpers += pasted
                theirs = [h for h in earlier if h not in by_name.values()]  # what the even earlier ones import
                imports += [i for i in [*_imports(node.module, pasted), *theirs] if i not in imports]
        if isinstance(node, ast.FunctionDef):
            start = min([d.lineno for d in node.decorator_list] + [node.lineno]) - 1
            source = "\n".join(lines[start:node.end_lineno])
            if node.name.startswith("_"):
                helpers.append(source)
            else:
                functions[node.name] = source
    return functions, [*imports, *helpers]


def _imports(module: str, sources: list[str]) -> list[str]:
    """The imports of libraries in ``solutions/<module>.py`` that bind a name one of ``sources`` reads."""
    read = {n.id for source in sources for n in ast.walk(ast.parse(source)) if isinstance(n, ast.Name)}
    text = (ROOT / "solutions" / f"{module}.py").read_text(encoding="utf-8")
    return [ast.get_source_segment(text, node) for node in ast.parse(text).body
            if isinstance(node, ast.Import | ast.ImportFrom) and not getattr(node, "level", 0)
            and {(a.asname or a.name).split(".")[0] for a in node.names} & read]


def solved(notebook, module: str):
    """The notebook with every stub cell replaced by the solution's function (helpers in the first one)."""
    functions, helpers = solution_sources(module)
    first = True
    for cell in notebook.cells:
        m = re.match(r"def (\w+)\(", cell.source) if cell.cell_type == "code" else None
        if m and m.group(1) in functions:
            cell.source = "\n\n\n".join([*(helpers if first else []), functions[m.group(1)]])
            first = False
    return notebook


def solved_before(chapter: int, folder: Path) -> Path:
    """``exercises/`` with the chapters before ``chapter`` solved: what a notebook of that chapter builds on."""
    import shutil

    shutil.copytree(ROOT / "exercises", folder, ignore=shutil.ignore_patterns("__pycache__"))
    for number, path in project.chapter_files(ROOT / "solutions").items():
        if number < chapter:
            shutil.copy2(path, folder / path.name)
    return folder


def execute(notebook, timeout: float = 900, folder: Path | None = None):
    """Run every cell in a fresh kernel of this Python, in notebooks/ as JupyterLab would; return the notebook.

    ``folder``: run it there instead of in the course's notebooks/ (a copy of the course, say).

    The kernel is this interpreter (a kernel spec of its own in a temporary JUPYTER_PATH), never a
    "python3" kernel installed elsewhere on the machine without the course's packages.
    """
    import json
    import os
    import sys
    import tempfile

    from nbclient import NotebookClient

    with tempfile.TemporaryDirectory(prefix="kata-kernel-") as home:
        spec = Path(home) / "kernels" / "kata-tests"
        spec.mkdir(parents=True)
        argv = [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"]
        (spec / "kernel.json").write_text(json.dumps({"argv": argv, "display_name": "kata tests",
                                                      "language": "python"}), encoding="utf-8")
        before = os.environ.get("JUPYTER_PATH")
        os.environ["JUPYTER_PATH"] = os.pathsep.join(filter(None, [home, before]))
        try:
            NotebookClient(notebook, timeout=timeout, kernel_name="kata-tests",
                           resources={"metadata": {"path": str(folder or ROOT / "notebooks")}}).execute()
        finally:
            if before is None:
                os.environ.pop("JUPYTER_PATH", None)
            else:
                os.environ["JUPYTER_PATH"] = before
    return notebook


def course_copy(target: Path) -> Path:
    """A copy of what ``kata.check`` needs of the course (machinery, key, tests, stubs, notebooks, solutions)."""
    import shutil

    for name in ("kata", "reference", "tests", "exercises", "notebooks", "solutions"):
        shutil.copytree(ROOT / name, target / name, ignore=shutil.ignore_patterns("__pycache__", "src", "tools"))
    for name in ("conftest.py", "pyproject.toml"):
        shutil.copy2(ROOT / name, target / name)
    return target


def check_outputs(notebook) -> list[tuple[str, str, str]]:
    """(cell source, plain text, HTML) of every check cell's output."""
    found = []
    for cell in notebook.cells:
        if cell.cell_type == "code" and cell.source.startswith("kata.check("):
            texts = [o.get("data", {}).get("text/plain", "") or o.get("text", "") for o in cell.outputs]
            htmls = [o.get("data", {}).get("text/html", "") for o in cell.outputs]
            found.append((cell.source, "".join(texts), "".join(htmls)))
    return found
