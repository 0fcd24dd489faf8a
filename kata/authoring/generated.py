"""What the authors' generators share: the docs hook they render with, and "write, or only ``--check``".

``scripts/pages.py`` writes the answer key's blocks and the figures' images into the pages,
``scripts/figures.py`` draws the figures into ``docs/figures/`` and ``scripts/notebooks.py`` builds the
notebooks. All three make files from other files with the docs hooks' own functions (loaded by file, as MkDocs
loads them), and all take ``--check``: change nothing, name each file that is out of date, exit 1.
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Callable
from functools import cache
from pathlib import Path
from types import ModuleType

from kata.project import ROOT


@cache
def docs_hook(name: str) -> ModuleType:
    """``docs/hooks/<name>.py``, loaded once by its file as MkDocs loads it (the hooks are not a package)."""
    spec = importlib.util.spec_from_file_location(f"kata_docs_hook_{name}", ROOT / "docs" / "hooks" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def write_or_check(stale: Callable[[bool], list[Path]], check: bool, command: str) -> int:
    """Run ``stale(write=not check)``; print each file it found, and with ``check`` the command that fixes them.

    Returns the exit code: 1 when ``check`` found a file out of date, else 0.
    """
    files = stale(not check)
    for path in files:
        print(f"{'out of date' if check else 'wrote'}: {path.relative_to(ROOT).as_posix()}")
    if check and files:
        print(f"run: {command}")
        return 1
    return 0
