"""Benchmark: `nox -s grade-class` over a class twice; the second run, with nothing changed, against the first.

Builds the test class of tests/tools/grading/class_repos.py (six graded learners: all right, chapter 4 wrong, an
endless softmax, a syntax error, tampered tests, a late fix; three with nothing to grade) in a temporary
folder, snapshots the course there, and runs `python -m kata grade-class` on it twice with the same --out:
the first grades everyone, the second finds every commit and course file unchanged and takes each grade
from the cache (it still clones every repository and writes the gradebook and the report). Prints both
wall times, the ratio (target: under 10 %) and the seconds per learner of the first run. This prints; it
never fails on a slow machine.

Usage: python benchmarks/bench_grade_class.py [--jobs N] [--chapters 1,2,4] [--keep]
"""

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.tools.grading import class_repos  # noqa: E402 - after the path is set


def run(course: Path, roster: Path, out: Path, args: argparse.Namespace) -> float:
    cmd = [sys.executable, "-m", "kata", "grade-class", str(roster), "--out", str(out), "--jobs", str(args.jobs),
           "--deadline", class_repos.DEADLINE, "--seed", "7"]
    if args.chapters:
        cmd += ["--chapters", args.chapters]
    # As on an instructor's machine: Python caches compiled modules (some CI images switch that off, which
    # makes every run recompile matplotlib and the course's modules).
    env = {**{k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}, "PYTHONPATH": str(course)}
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=course, env=env, capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - start
    if proc.returncode != 0:
        sys.exit(f"grade-class failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}")
    return seconds


def main() -> None:
    """Measure and print."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--chapters", help="grade only these chapters (default: all)")
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder and say where it is")
    args = parser.parse_args()
    with class_repos.scratch("bench-grade-class-", args.keep) as base:
        course = class_repos.course_copy(base / "course")
        class_repos.build(base / "learners")
        roster, out = base / "learners" / "roster.csv", base / "out"
        first = run(course, roster, out, args)
        book = json.loads((out / "gradebook.json").read_text(encoding="utf-8"))
        graded = [r for r in book["rows"] if r["status"] == "graded"]
        second = run(course, roster, out, args)
        again = json.loads((out / "gradebook.json").read_text(encoding="utf-8"))
        cached = sum(r["cached"] for r in again["rows"])
        per = [r["seconds"] for r in graded]
        print(f"class: {len(book['rows'])} learners, {len(graded)} graded, chapters "
              f"{','.join(map(str, book['options']['chapters']))}, --jobs {args.jobs}, {os.cpu_count()} CPUs")
        print(f"first run (grades everyone):        {first:7.2f} s")
        print(f"per graded learner (wall, parallel): {min(per):.1f}–{max(per):.1f} s, mean {sum(per) / len(per):.1f} s")
        print(f"second run (nothing changed):       {second:7.2f} s  ({cached} of {len(graded)} from the cache)")
        print(f"ratio second / first:               {100 * second / first:7.1f} %  (target: under 10 %)")


if __name__ == "__main__":
    main()
