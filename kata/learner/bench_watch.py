"""Benchmark of ``nox -s watch``: how long after a save the re-checked chapter is on the screen.

For every chapter (1-10 where they exist) it starts the watcher on a throwaway copy of ``exercises/``,
saves a chapter file a few times, and times each save until the chapter's last line
(``chapter N: ... steps``) is printed. It prints the median and the worst time per chapter and their
ratio to the 0.5 s target. A benchmark that prints, never a timed test: machines differ.

    nox -s bench_watch            # or: python -m kata bench-watch --saves 5 --poll
"""

from __future__ import annotations

import argparse
import os
import queue
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from .. import project
from ..process import Drain

TARGET = 0.5


def _wait_for_end(lines: queue.Queue, chapter: int, limit: float) -> float | None:
    """Wait until the chapter's closing line; return when it came, or None after ``limit`` seconds."""
    deadline = time.perf_counter() + limit
    while True:
        try:
            when, line = lines.get(timeout=max(0.0, deadline - time.perf_counter()))
        except queue.Empty:
            return None
        if line is None:
            return None
        if line.startswith(f"chapter {chapter}: ") and " steps" in line:
            return when


def bench_chapter(chapter, saves: int, poll: bool) -> list[float]:
    """Seconds from each save to the re-checked chapter's last line."""
    with tempfile.TemporaryDirectory(prefix="kata-bench-watch-") as tmp:
        impl = Path(tmp) / "bench_impl"
        shutil.copytree(project.ROOT / "exercises", impl, ignore=shutil.ignore_patterns("__pycache__"))
        target = impl / f"{chapter.module}.py"
        cmd = [sys.executable, "-m", "kata", "watch", str(chapter.number), "--impl", str(impl), "--no-clear"]
        if poll:
            cmd.append("--poll")
        paths = [str(project.ROOT), os.environ.get("PYTHONPATH", "")]
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(paths))
        proc = subprocess.Popen(cmd, cwd=project.ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env)
        lines: queue.Queue = queue.Queue()
        Drain(proc.stdout, lambda line: lines.put((time.perf_counter(), line))).start()
        try:
            if _wait_for_end(lines, chapter.number, 60) is None:
                raise RuntimeError(f"the watcher never showed chapter {chapter.number}")
            times = []
            text = target.read_text(encoding="utf-8")
            for i in range(saves):
                time.sleep(0.3)
                saved = time.perf_counter()
                target.write_text(text + f"\n# save {i}\n", encoding="utf-8")
                shown = _wait_for_end(lines, chapter.number, 30)
                if shown is None:
                    raise RuntimeError(f"no re-check of chapter {chapter.number} within 30 s of a save")
                times.append(shown - saved)
            return times
        finally:
            proc.terminate()
            proc.wait(timeout=10)
            proc.stdout.close()


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print one line per chapter."""
    p = argparse.ArgumentParser(prog="nox -s bench_watch --", description=__doc__.splitlines()[0])
    p.add_argument("--saves", type=int, default=5, help="saves per chapter (default 5)")
    p.add_argument("--poll", action="store_true", help="measure the polling fallback instead of file events")
    p.add_argument("--chapters", default="1-10", help="which chapters, e.g. 1-10 or 3,4 (default 1-10)")
    args = p.parse_args(argv)
    if "-" in args.chapters:
        lo, hi = (int(x) for x in args.chapters.split("-"))
        wanted = set(range(lo, hi + 1))
    else:
        wanted = {int(x) for x in args.chapters.split(",")}
    chapters = [c for c in project.chapters() if c.number in wanted]
    mode = "polling" if args.poll else "file events"
    print(f"watch benchmark ({mode}, {args.saves} saves per chapter, {os.cpu_count()} cores): save -> chapter shown")
    print(f"  {'chapter':<8} {'median':>8} {'worst':>8} {'median/target':>14}")
    worst_all = 0.0
    for chapter in chapters:
        times = bench_chapter(chapter, args.saves, args.poll)
        median, worst = statistics.median(times), max(times)
        worst_all = max(worst_all, worst)
        print(f"  {chapter.number:<8} {median:>7.3f}s {worst:>7.3f}s {median / TARGET:>13.2f}x", flush=True)
    print(f"target: within {TARGET} s of a save; worst seen {worst_all:.3f} s "
          f"({'met' if worst_all <= TARGET else 'NOT met'} on this machine)")
    return 0
