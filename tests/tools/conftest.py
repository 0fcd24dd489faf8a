"""Helpers for the tests of the learner's and instructor's tools (``kata/learner``, ``kata/grading``).

The tools run as a learner or a CI job runs them: ``python -m kata COMMAND`` in a fresh process.
Implementations to grade are throwaway copies of ``solutions/`` in a temporary folder, some with a
planted problem (an endless loop, a syntax error, a flood of output).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from kata.judge import answer_key

ROOT = answer_key.ROOT
TOOLS = ROOT  # the folder holding the kata package
if str(TOOLS) not in sys.path:
    sys.path.insert(0, str(TOOLS))


def tool(*args: str, root: Path = ROOT, env: dict | None = None, timeout: float = 300) -> subprocess.CompletedProcess:
    """Run ``python -m kata ARGS`` with the tools of ``root``, in ``root``."""
    full_env = {k: v for k, v in os.environ.items() if k not in ("GITHUB_STEP_SUMMARY", "PYTEST_ADDOPTS")}
    full_env["PYTHONPATH"] = str(root)
    full_env.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "kata", *args],
        cwd=root, env=full_env, capture_output=True, text=True, timeout=timeout, check=False,
    )


def copy_solutions(target: Path, edits: dict[str, str] | None = None) -> Path:
    """A copy of ``solutions/`` at ``target``; ``edits`` appends code to chapter files (by module name)."""
    shutil.copytree(ROOT / "solutions", target, ignore=shutil.ignore_patterns("__pycache__"))
    for module, code in (edits or {}).items():
        path = target / f"{module}.py"
        path.write_text(path.read_text(encoding="utf-8") + "\n\n" + code + "\n", encoding="utf-8")
    return target


def copy_repository(target: Path) -> Path:
    """A copy of the working tree (what git would list, committed or not) at ``target``."""
    from kata.grading.release import source_files

    for name in source_files(ROOT):
        path = target / name
        path.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, path)
    return target


def git(repo: Path, *args: str) -> str:
    """Run git in ``repo`` as a throwaway identity; return its output."""
    env = dict(
        os.environ,
        GIT_AUTHOR_NAME="kata tests", GIT_AUTHOR_EMAIL="tests@example.invalid",
        GIT_COMMITTER_NAME="kata tests", GIT_COMMITTER_EMAIL="tests@example.invalid",
        GIT_CONFIG_NOSYSTEM="1", HOME=str(repo.parent),
    )
    proc = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, env=env, check=False)
    assert proc.returncode == 0, f"git {' '.join(args)} failed:\n{proc.stdout}\n{proc.stderr}"
    return proc.stdout


@pytest.fixture(scope="session")
def chapters():
    """Every chapter the tools find (answer key and test file), from kata_tools itself."""
    from kata import project

    found = project.chapters()
    assert found, "no chapters found"
    return found


def undocumented_fields(schema: dict) -> list[str]:
    """The fields a JSON schema names (at any depth) that docs/instructors.md does not mention in backticks."""
    page = (ROOT / "docs" / "instructors.md").read_text(encoding="utf-8")
    fields: set[str] = set()

    def walk(node) -> None:
        if isinstance(node, dict):
            fields.update(node.get("properties", {}))
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(schema)
    return sorted(f for f in fields if f"`{f}`" not in page)


def assert_drawn_png(path: Path, min_height: int) -> None:
    """``path`` is a PNG file at least ``min_height`` × 400 pixels whose pixels are not all one colour."""
    import matplotlib.image

    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", f"{path.name} is not a PNG file"
    pixels = matplotlib.image.imread(path)
    assert pixels.ndim == 3 and pixels.shape[0] > min_height and pixels.shape[1] > 400, pixels.shape
    assert float(pixels[..., :3].std()) > 0.05, f"{path.name} is (nearly) blank"
