"""Benchmark: the report's copying signals (``kata/grading/similarity.py``) over a synthetic class, twice.

Builds N learners' graded folders (``exercises/`` as ``nox -s grade-class`` keeps them) in a temporary folder:
each learner finishes a random number of chapters, every function taken from one of the course's three
implementations (``solutions/``, ``tests/tools/alternatives/alt_loops`` and ``alt_einsum``) and varied with a
line of their own after almost every line; the chapters not finished are the stubs. Three copies are planted,
names changed: learner-002 has learner-001's chapter 2, learner-004 has learner-003's chapter 2 moved into
``exercises/mine.py`` (imported by the chapter file), learner-006 has learner-005's chapter 5. Then compares the
class twice with one fingerprint cache: the first run fingerprints everything, the second finds it all in the
cache. Prints both times (wall and CPU), how many pairs are listed, and where the planted pairs rank. With only
three implementations to draw from, honest learners here are far more alike than a real class's: the pairs
listed past the planted ones are that. This prints; it never fails on a slow machine.

Usage: python benchmarks/bench_similarity.py [--learners 200] [--chapters 16] [--seed 1] [--keep]
"""

import argparse
import ast
import functools
import random
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from kata.grading import similarity  # noqa: E402 - after the path is set

SOURCES = (ROOT / "solutions", ROOT / "tests" / "tools" / "alternatives" / "alt_loops",
           ROOT / "tests" / "tools" / "alternatives" / "alt_einsum")


@functools.lru_cache(None)
def definitions(path: Path) -> dict[str, str]:
    """The source of each top-level function and class of a file, by name."""
    text = path.read_text(encoding="utf-8")
    return {n.name: ast.get_source_segment(text, n, padded=True) for n in ast.parse(text).body
            if isinstance(n, ast.FunctionDef | ast.ClassDef)}


def own_version(module: str, rng: random.Random, tag: str) -> str:
    """A chapter file as one learner might finish it: each function from one implementation, with lines of theirs."""
    stub = (ROOT / "exercises" / f"{module}.py").read_text(encoding="utf-8")
    tree = ast.parse(stub)
    parts = [ast.get_source_segment(stub, n) for n in tree.body if isinstance(n, ast.Import | ast.ImportFrom)]
    for name in definitions(ROOT / "exercises" / f"{module}.py"):
        parts.append(rng.choice([d[name] for d in map(definitions, (s / f"{module}.py" for s in SOURCES))
                                 if name in d]))
    lines = []
    for line in "\n\n".join(parts).splitlines():
        lines.append(line)
        code = line.strip()
        if line.startswith("    ") and code and not code.endswith((":", ",", "(", "[", "{", "\\")) \
                and rng.random() < 0.95:
            indent = line[:len(line) - len(line.lstrip())]
            lines.append(f"{indent}{tag}_{rng.randrange(10**6)} = {rng.randrange(10**6)}")
    return "\n".join(lines) + "\n"


def renamed(code: str) -> str:
    """The same code with every local-looking name changed (what a copier does first)."""
    return re.sub(r"(?<![.\w])([a-z][a-z0-9]*_[a-z0-9_]+|[a-z])\b", r"\1_mine", code)


def synthetic_class(base: Path, learners: int, modules: list[str], seed: int) -> tuple[dict, list]:
    """The learners' graded folders, and the planted pairs."""
    rng = random.Random(seed)
    folders = {}
    for i in range(learners):
        folder = base / f"learner-{i:03d}"
        shutil.copytree(ROOT / "exercises", folder, ignore=shutil.ignore_patterns("__pycache__"))
        for module in modules[:rng.randint(max(1, len(modules) // 3), len(modules))]:
            (folder / f"{module}.py").write_text(own_version(module, rng, f"mine{i}"), encoding="utf-8")
        folders[folder.name] = folder
    planted = []
    for (a, b), module, moved in ((("learner-001", "learner-002"), modules[1], False),
                                  (("learner-003", "learner-004"), modules[1], True),
                                  (("learner-005", "learner-006"), modules[min(4, len(modules) - 1)], False)):
        if b not in folders:
            continue
        theirs = f"{module}.py"
        (folders[a] / theirs).write_text(own_version(module, rng, f"copied{a}"), encoding="utf-8")
        copy = renamed((folders[a] / theirs).read_text(encoding="utf-8"))
        if moved:
            (folders[b] / "mine.py").write_text(copy, encoding="utf-8")
            copy = (ROOT / "exercises" / theirs).read_text(encoding="utf-8") + "\nfrom .mine import *  # noqa\n"
        (folders[b] / theirs).write_text(copy, encoding="utf-8")
        planted.append([a, b])
    return folders, planted


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--learners", type=int, default=200)
    parser.add_argument("--chapters", type=int, default=16, help="the first N chapters (default: all 16)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--keep", action="store_true", help="keep the class's folders and print where")
    args = parser.parse_args()
    modules = sorted(p.stem for p in (ROOT / "exercises").glob("chapter*.py"))[:args.chapters]
    base = Path(tempfile.mkdtemp(prefix="bench-similarity-"))
    try:
        folders, planted = synthetic_class(base / "class", args.learners, modules, args.seed)
        timings = []
        for _ in range(2):
            wall, cpu = time.perf_counter(), time.process_time()
            found = similarity.alike_code(folders, ROOT, cache=base / "cache")
            timings.append((time.perf_counter() - wall, time.process_time() - cpu))
        ranks = {" & ".join(p["students"]): i + 1 for i, p in enumerate(found["pairs"])}
        print(f"{args.learners} learners, {len(modules)} chapters: first run {timings[0][0]:.1f} s "
              f"({timings[0][1]:.1f} s CPU), again from the cache {timings[1][0]:.1f} s ({timings[1][1]:.1f} s CPU)")
        print(f"{len(found['pairs'])} pairs listed (rare shared code >= {similarity.MIN_RARE:g}; a fingerprint counts "
              f"when at most {found['holders']} learners hold it)")
        for a, b in planted:
            rank = ranks.get(f"{a} & {b}")
            pair = found["pairs"][rank - 1] if rank else None
            print(f"planted {a} & {b}: " + (f"rank {rank}, rare shared code {pair['rare']:g}, "
                                            f"{pair['chapters'][0]['files']}" if pair else "NOT LISTED"))
        if args.keep:
            print(f"kept in {base}")
    finally:
        if not args.keep:
            shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
