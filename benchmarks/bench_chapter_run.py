"""Benchmark: a warm chapter run against the floor of a bare pytest run, and a full grade, in one run.

Prints the median wall time of `python -m pytest tests/test_chapter04_attention.py --steps --impl
solutions` (what `nox -s chapter4 -- --impl solutions` runs once its environment exists: the judge, plus
the worker process that runs the implementation), of the whole warm `nox -s chapter4 -- --impl
solutions`, of a bare `python -m pytest` on one trivial test, and of a full sealed grade of solutions/
(all chapters, `python -m kata grade`), with ratios to the floor. Targets on a 2-core machine: the warm
nox chapter run at most 2.0× the floor, a full correct grade at most 8 s. This prints; it never fails
on a slow machine.

Usage: python benchmarks/bench_chapter_run.py [--repeat N] [--chapter N] [--impl NAME]
"""

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


# As on a learner's machine: Python caches compiled modules (some CI images switch that off, which makes
# every run recompile the course's modules and pytest's rewritten tests).
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def timed(cmd: list[str], cwd: Path, repeat: int) -> list[float]:
    """Wall times of `repeat` runs of `cmd` (after one warm-up run)."""
    subprocess.run(cmd, cwd=cwd, capture_output=True, check=False, env=ENV)
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        subprocess.run(cmd, cwd=cwd, capture_output=True, check=False, env=ENV)
        times.append(time.perf_counter() - start)
    return times


def main() -> None:
    """Measure and print."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--chapter", type=int, default=4)
    parser.add_argument("--impl", default="solutions" if (ROOT / "solutions").is_dir() else "exercises",
                        help="whose code is measured (default: solutions/ where it exists, else your exercises/)")
    parser.add_argument("--grade-repeat", type=int, default=3, help="runs of the full grade (default 3)")
    args = parser.parse_args()
    test_file = next((ROOT / "tests").glob(f"test_chapter{args.chapter:02d}_*.py"))
    with tempfile.TemporaryDirectory() as tmp:
        trivial = Path(tmp) / "test_trivial.py"
        trivial.write_text("def test_trivial():\n    assert True\n")
        floor = timed([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(trivial)], Path(tmp),
                      args.repeat)
    chapter = timed([sys.executable, "-m", "pytest", str(test_file), "--steps", "-p", "no:cacheprovider",
                     "--impl", args.impl], ROOT, args.repeat)
    rows = [("bare pytest, one trivial test (floor)", floor),
            (f"chapter {args.chapter} run (pytest, --impl {args.impl})", chapter)]
    nox = shutil.which("nox")
    if nox:
        rows.append((f"nox -s chapter{args.chapter} -- --impl {args.impl} (warm)",
                     timed([nox, "-s", f"chapter{args.chapter}", "--", "--impl", args.impl], ROOT, args.repeat)))
    with tempfile.TemporaryDirectory() as out:
        grade = timed([sys.executable, "-m", "kata", "grade", "--impl", args.impl, "--out", out], ROOT,
                      args.grade_repeat)
    rows.append((f"full grade of {args.impl}/, all chapters (sealed)", grade))
    base = statistics.median(floor)
    print(f"measuring {args.impl}/ (--impl to choose)")
    print(f"{'what':<50} {'median s':>9} {'min s':>7} {'× floor':>8}")
    for name, times in rows:
        med = statistics.median(times)
        print(f"{name:<50} {med:>9.3f} {min(times):>7.3f} {med / base:>8.2f}")
    print("targets: warm nox chapter run ≤ 2.0× the floor; a full correct grade ≤ 8 s")
    if "PYTHONDONTWRITEBYTECODE" in os.environ:
        print("(measured with PYTHONDONTWRITEBYTECODE unset, as on a learner's machine; this environment sets it)")


if __name__ == "__main__":
    main()
