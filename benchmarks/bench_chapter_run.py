"""Benchmark: a warm chapter run against the floor of a bare pytest run, and a full grade, in one run.

Prints the median wall time of a bare `python -m pytest` on one trivial test (the floor); of chapter 4's
check as a plain `python -m pytest tests/test_chapter04_attention.py --steps --impl solutions` (the judge,
plus the worker process that runs the implementation: what a first run, Windows and macOS do); of the
same check through the warm judge (`kata/judge/warm.py`, what `nox -s chapter4` runs on Linux once a
check has run); of the whole warm `nox -s chapter4 -- --impl solutions`; and of a full sealed grade of
solutions/ (all chapters, `python -m kata grade`), with ratios to the floor. The commands take turns.
Targets on a 2-core machine: the warm nox chapter run at most 2.0× the floor, a full correct grade at
most 8 s. This prints; it never fails on a slow machine.

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
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from kata import learners_code  # noqa: E402

# As on a learner's machine: Python caches compiled modules (some CI images switch that off, which makes
# every run recompile the course's modules and pytest's rewritten tests).
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def timed(cmd: list[str], cwd: Path, repeat: int) -> list[float]:
    """Wall times of `repeat` runs of `cmd` (after one warm-up run)."""
    return interleaved({"": (cmd, cwd)}, repeat)[""]


def interleaved(commands: dict[str, tuple[list[str], Path]], repeat: int) -> dict[str, list[float]]:
    """Wall times of each command, run in turn `repeat` times (after one warm-up round).

    Taking turns, rather than one command's runs after another's, gives every command the same share of
    whatever else the machine is doing, so the ratios hold even when the absolute times drift.
    """
    times: dict[str, list[float]] = {name: [] for name in commands}
    for round_ in range(repeat + 1):
        for name, (cmd, cwd) in commands.items():
            start = time.perf_counter()
            subprocess.run(cmd, cwd=cwd, capture_output=True, check=False, env=ENV)
            if round_:
                times[name].append(time.perf_counter() - start)
    return times


def find_nox() -> str | None:
    """The nox a learner runs: start.py's `.venv-tools/`, else the one on PATH (through pyenv's shim)."""
    for tools in (ROOT / ".venv-tools" / "bin" / "nox", ROOT / ".venv-tools" / "Scripts" / "nox.exe"):
        if tools.exists():
            return str(tools)
    found = shutil.which("nox")
    if found and "/shims/" in found:  # pyenv's shell-script shim adds its own start-up to every run
        real = subprocess.run(["pyenv", "which", "nox"], capture_output=True, text=True, check=False)
        found = real.stdout.strip() or found
    return found


def main() -> None:
    """Measure and print."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=9)
    parser.add_argument("--chapter", type=int, default=4)
    parser.add_argument("--impl", default=learners_code.measured_impl(),
                        help="whose code is measured (default: solutions/ where it exists, "
                        "else your work: exercises/ with your notebooks' answers)")
    parser.add_argument("--grade-repeat", type=int, default=3, help="runs of the full grade (default 3)")
    args = parser.parse_args()
    test_file = next((ROOT / "tests").glob(f"test_chapter{args.chapter:02d}_*.py"))
    check = [str(test_file), "--steps", "--impl", args.impl]
    with tempfile.TemporaryDirectory() as tmp:
        trivial = Path(tmp) / "test_trivial.py"
        trivial.write_text("def test_trivial():\n    assert True\n")
        commands = {
            "bare pytest, one trivial test (floor)":
                ([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(trivial)], Path(tmp)),
            f"chapter {args.chapter}, plain pytest (--impl {args.impl})":
                ([sys.executable, "-m", "pytest", *check], ROOT),
            f"chapter {args.chapter}, warm judge, no nox":
                ([sys.executable, "-S", "-m", "kata.judge.warm", "run", *check], ROOT),
        }
        nox = find_nox()
        if nox:
            commands[f"nox -s chapter{args.chapter} -- --impl {args.impl} (warm)"] = \
                ([nox, "-s", f"chapter{args.chapter}", "--", "--impl", args.impl], ROOT)
        measured = interleaved(commands, args.repeat)
    rows = list(measured.items())
    with tempfile.TemporaryDirectory() as out:
        grade = timed([sys.executable, "-m", "kata", "grade", "--impl", args.impl, "--out", out], ROOT,
                      args.grade_repeat)
    rows.append((f"full grade of {args.impl}/, all chapters (sealed)", grade))
    base = statistics.median(rows[0][1])
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
