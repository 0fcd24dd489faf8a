"""kata/ imports one way: no module of it imports, even inside a function, a module that imports it back.

The graph is read from the source with ``ast`` (nothing is imported): every ``import kata...`` and
``from ... import ...`` that names a module of the package, at the top or inside a function, is an edge. A
cycle is a strongly connected set of modules (``graphlib`` finds them: a topological order exists only without
one). Dynamic imports (``importlib``) are not edges.
"""

from __future__ import annotations

import ast
import graphlib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def modules(package: Path) -> dict[str, Path]:
    """Every module of a package folder by dotted name (a package by its own name, for its ``__init__.py``)."""
    found = {}
    for file in sorted(package.rglob("*.py")):
        parts = list(file.relative_to(package.parent).with_suffix("").parts)
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = file
    return found


def imports(name: str, file: Path, known: dict[str, Path]) -> set[str]:
    """The modules of ``known`` that module ``name`` imports anywhere in its file."""
    here = name if file.name == "__init__.py" else name.rpartition(".")[0]
    edges = set()
    for node in ast.walk(ast.parse(file.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                target = alias.name
                while target and target not in known:
                    target = target.rpartition(".")[0]
                edges.add(target)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = here.split(".")
                base = ".".join(parts[:len(parts) - node.level + 1] + ([node.module] if node.module else []))
            for alias in node.names:
                edges.add(f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base)
    return {e for e in edges if e in known and e != name}


def cycles(package: Path) -> list[list[str]]:
    """Each set of modules of ``package`` that import one another round a loop, sorted; empty when none do."""
    known = modules(package)
    graph = {name: imports(name, file, known) for name, file in known.items()}
    loops = []
    while True:
        try:
            graphlib.TopologicalSorter(graph).prepare()
            return loops
        except graphlib.CycleError as err:
            first, second = err.args[1][:2]  # each node of the loop imports, or is imported by, the next
            loops.append(sorted(set(err.args[1])))
            graph[first].discard(second)  # break the loop there and look for the next
            graph[second].discard(first)


def test_kata_has_no_import_cycle():
    """no module of kata/ imports one that imports it back, directly or round a longer loop"""
    found = cycles(ROOT / "kata")
    assert not found, "import cycles in kata/ (a module that needs both gets it passed in, or the shared part " \
                      "moves to the lower module):\n" + "\n".join(" <-> ".join(loop) for loop in found)


def test_a_cycle_is_found_even_inside_a_function(tmp_path):
    """a planted loop a -> b -> c -> a, one import inside a function: named; a one-way import is not"""
    package = tmp_path / "pkg"
    (package / "sub").mkdir(parents=True)
    (package / "__init__.py").write_text("", encoding="utf-8")
    (package / "sub" / "__init__.py").write_text("", encoding="utf-8")
    (package / "a.py").write_text("from .sub import b\n", encoding="utf-8")
    (package / "sub" / "b.py").write_text("import pkg.c\n", encoding="utf-8")
    (package / "c.py").write_text("def f():\n    from . import a\n", encoding="utf-8")
    (package / "d.py").write_text("from .a import thing\n", encoding="utf-8")
    assert cycles(package) == [["pkg.a", "pkg.c", "pkg.sub.b"]]
