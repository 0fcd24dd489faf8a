"""Benchmark: a warm chapter run against the floor of a bare pytest run, and a full grade, in one run.

Prints the median wall time of a bare `python -m pytest` on one trivial test (the floor); of chapter 4's
check as a plain `python -m pytest tests/test_chapter04_attention.py --steps --impl solutions` (the judge,
plus the worker process that runs the implementation: what a first run, Windows and macOS do); of the
same check through the warm judge (`kata/judge/warm.py`, what `nox -s chapter4` runs on Linux once a
check has run); of the whole warm `nox -s chapter4 -- --impl solutions`; and of a full sealed grade of
solutions/ (all chapters, `python -m kata grade`), with ratios to the floor. The commands take turns.
Targets on a 2-core machine: the warm nox chapter run at most 2.0× the floor, a full correct grade at
most 8 s. This prints; it never fails on a slow machine.

With ``--chapter all``: every chapter's check, cold (plain pytest: the judge and a fresh worker, what a first
run does) and warm (`nox -s chapterN`, the warm judge), each chapter's commands taking turns with the floor,
one row a chapter (issue 32's targets: ≤ 1 s warm, ≤ 2 s cold on a quiet 2-core machine).

Usage: python benchmarks/bench_chapter_run.py [--repeat N] [--chapter N|all] [--impl NAME]
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
    parser.add_argument("--chapter", default="4", help="a chapter's number, or 'all' (one row a chapter)")
    parser.add_argument("--impl", default=learners_code.measured_impl(),
                        help="whose code is measured (default: solutions/ where it exists, "
                        "else your work: exercises/ with your notebooks' answers)")
    parser.add_argument("--grade-repeat", type=int, default=3, help="runs of the full grade (default 3)")
    args = parser.parse_args()
    if args.chapter == "all":
        every_chapter(args)
        return
    args.chapter = int(args.chapter)
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


def every_chapter(args) -> None:
    """One row a chapter: the floor, the cold check and the warm ``nox -s chapterN``, medians of turns."""
    nox = find_nox()
    if nox is None:
        raise SystemExit("--chapter all measures `nox -s chapterN`: no nox found (run start.py first)")
    print(f"measuring {args.impl}/; medians of {args.repeat} turns; cold: plain pytest (judge + a fresh worker), "
          f"warm: nox -s chapterN (the warm judge)")
    print(f"{'chapter':>7} {'floor s':>8} {'cold s':>7} {'warm s':>7} {'cold ×':>7} {'warm ×':>7}  load")
    with tempfile.TemporaryDirectory() as tmp:
        trivial = Path(tmp) / "test_trivial.py"
        trivial.write_text("def test_trivial():\n    assert True\n")
        floor = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(trivial)]
        for test_file in sorted((ROOT / "tests").glob("test_chapter[0-9][0-9]_*.py")):
            number = int(test_file.name[len("test_chapter"):][:2])
            times = interleaved({
                "floor": (floor, Path(tmp)),
                "cold": ([sys.executable, "-m", "pytest", str(test_file), "--steps", "--impl", args.impl], ROOT),
                "warm": ([nox, "-s", f"chapter{number}", "--", "--impl", args.impl], ROOT),
            }, args.repeat)
            med = {name: statistics.median(values) for name, values in times.items()}
            print(f"{number:>7} {med['floor']:>8.2f} {med['cold']:>7.2f} {med['warm']:>7.2f} "
                  f"{med['cold'] / med['floor']:>7.2f} {med['warm'] / med['floor']:>7.2f}  "
                  f"{os.getloadavg()[0]:.1f}", flush=True)


if __name__ == "__main__":
    main()
