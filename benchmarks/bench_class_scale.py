"""Benchmark: a class of N learners graded in S shards, one after another as S CI jobs would, then merged.

Builds N local learner repositories with a realistic mix (``MIX``: most answer every chapter from
``solutions/``, some only the first three, some hand in the stubs untouched, a few have no repository),
writes their roster, and runs ``python -m kata grade-class ROSTER --shard I/S`` for each shard, packs each
shard as ``.github/workflows/grade-class.yml`` does (``kata.grading.shards.pack``), and merges the packed
shards. It prints, per shard, the wall time and the CPU time of the grader and every process it waited for
(``os.wait4``: the figure to plan with on a busy machine); then the CPU seconds per learner, the merge's
time and peak memory, and the bytes per learner of a shard's whole folder, of what it uploads and of the
merged artifact, raw and zipped as ``actions/upload-artifact`` zips them. The load average is printed at the
start and the end: wall times mean little when other work shares the cores. This prints; it never fails on
a slow machine.

Usage (with the grade-class session's Python, once ``nox -s grade-class`` has set it up):

    .nox/course/bin/python benchmarks/bench_class_scale.py [--learners 200] [--shards 8] [--jobs 2]
        [--chapters 1,2,4] [--keep]

``KATA_NO_SANDBOX=1`` grades unsealed; time bubblewrap's cost apart, on a few learners with and without it
(``--learners 6 --shards 1``). docs/instructors.md, "A class of 2,000", has the figures it measured.
"""

import argparse
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.tools.grading import class_repos  # noqa: E402 - after the path is set

# (share of the class, what its repository holds): every chapter right; the first three chapters right and the
# rest as handed out; the stubs untouched; no repository at all.
MIX = (("all", 0.6), ("partial", 0.2), ("stubs", 0.12), ("missing", 0.08))


def kind(i: int) -> str:
    """The ``i``-th learner's kind: the mix spread evenly over the class (not in blocks, so each shard has it)."""
    point = (i * 0.618034) % 1.0  # the golden ratio's fractional steps cover [0, 1) evenly
    edge = 0.0
    for name, share in MIX:
        edge += share
        if point < edge:
            return name
    return MIX[-1][0]


def build(folder: Path, n: int) -> dict[str, int]:
    """Write ``n`` learner repositories and ``roster.csv`` into ``folder``; return how many of each kind."""
    folder.mkdir(parents=True)
    from kata import project

    first = [p.name for p in sorted(project.chapter_files(ROOT / "solutions").values())][:3]
    counts: dict[str, int] = {}
    lines = ["student,repo,section"]
    for i in range(n):
        what = kind(i)
        counts[what] = counts.get(what, 0) + 1
        name = f"learner{i:04d}"
        lines.append(f"{name},{name},S{1 + i % 4}")
        if what == "missing":
            continue
        repo = class_repos._new(folder / name)
        class_repos._exercises(repo, "exercises" if what != "all" else "solutions")
        if what == "partial":
            for file in first:
                shutil.copy2(ROOT / "solutions" / file, repo / "exercises" / file)
        class_repos._commit(repo, what, class_repos.BEFORE)
    (folder / "roster.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return counts


def timed(cmd: list[str], cwd: Path, env: dict) -> tuple[float, float, float]:
    """Run ``cmd``; return its wall seconds, CPU seconds and peak memory (MiB).

    The CPU seconds (user + system) are those of ``cmd`` and every process it waited for, the memory that of
    the largest of them: ``os.wait4``'s resource usage of that one child.
    """
    with tempfile.TemporaryFile() as log:
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=log, stderr=subprocess.STDOUT)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        if proc.returncode != 0:
            log.seek(0)
            sys.exit(f"{' '.join(cmd[2:5])} failed:\n{log.read()[-4000:].decode(errors='replace')}")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def size(paths: list[Path], base: Path) -> tuple[int, int]:
    """Bytes of ``paths`` on disk, and zipped (deflate level 6, as upload-artifact does by default)."""
    raw = sum(p.stat().st_size for p in paths)
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=6) as z:
        for p in paths:
            z.write(p, p.relative_to(base).as_posix())
    return raw, buf.tell()


def main() -> None:
    """Measure and print."""
    from kata.grading import shards  # here: one import after the path is set sorts alike in every edition

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--learners", type=int, default=200)
    parser.add_argument("--shards", type=int, default=8)
    parser.add_argument("--jobs", type=int, default=2, help="learners graded at once in a shard (a runner: 2 CPUs)")
    parser.add_argument("--chapters", help="grade only these chapters (default: all)")
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder and say where it is")
    args = parser.parse_args()
    env = {**{k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}}
    print(f"load average at the start: {' '.join(f'{x:.2f}' for x in os.getloadavg())} ({os.cpu_count()} CPUs)")
    with class_repos.scratch("bench-class-scale-", args.keep) as base:
        course = class_repos.course_copy(base / "course")
        env["PYTHONPATH"] = str(course)
        counts = build(base / "learners", args.learners)
        print(f"class: {args.learners} learners ({', '.join(f'{v} {k}' for k, v in counts.items())}), "
              f"{args.shards} shards, --jobs {args.jobs}, chapters {args.chapters or 'all'}, "
              f"sandbox {'off (KATA_NO_SANDBOX)' if os.environ.get('KATA_NO_SANDBOX') else 'as found'}")
        roster = base / "learners" / "roster.csv"
        common = ["--seed", "7", "--jobs", str(args.jobs)] + (["--chapters", args.chapters] if args.chapters else [])
        walls, cpus, per_learner = [], [], []
        for i in range(1, args.shards + 1):
            out = base / f"shard-{i}"
            wall, cpu, _ = timed([sys.executable, "-m", "kata", "grade-class", str(roster), "--shard",
                                  f"{i}/{args.shards}", "--out", str(out), "--cache", str(base / f"cache-{i}"),
                                  *common], course, env)
            book = json.loads((out / "gradebook.json").read_text(encoding="utf-8"))
            walls.append(wall)
            cpus.append(cpu)
            per_learner += [r["seconds"] for r in book["rows"] if r["status"] == "graded"]
            print(f"shard {i}/{args.shards}: {len(book['rows'])} learners, {book['summary']['graded']} graded, "
                  f"{wall:7.1f} s wall, {cpu:7.1f} s CPU", flush=True)
        folders = [base / f"shard-{i}" for i in range(1, args.shards + 1)]
        every = size([p for f in folders for p in f.rglob("*") if p.is_file()], base)
        kept = size([p for f in folders for p in shards.upload_files(f)], base)
        packed = [base / "upload" / f.name for f in folders]
        for folder, target in zip(folders, packed, strict=True):
            shards.pack(folder, target)
        merge_wall, merge_cpu, merge_rss = timed(
            [sys.executable, "-m", "kata", "grade-class", "--merge", *map(str, packed), "--shards", str(args.shards),
             "--out", str(base / "gradebook")], course, env)
        merged = size([p for p in (base / "gradebook").rglob("*") if p.is_file()], base / "gradebook")
        n = args.learners
        graded = len(per_learner)
        print(f"load average at the end:   {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
        print(f"grading: {sum(walls):.0f} s wall, {sum(cpus):.0f} s CPU for {n} learners ({graded} graded): "
              f"{sum(cpus) / n:.2f} s CPU per learner on the roster, {sum(cpus) / max(graded, 1):.2f} per graded one")
        print(f"per graded learner (wall, {args.jobs} at once): mean {sum(per_learner) / max(graded, 1):.1f} s, "
              f"max {max(per_learner, default=0):.1f} s")
        print(f"merge of {args.shards} packed shards: {merge_wall:.1f} s wall, {merge_cpu:.1f} s CPU, "
              f"peak memory {merge_rss:.0f} MiB")
        for what, (raw, zipped) in (("a shard's whole folder", every), ("what a shard uploads (pack)", kept),
                                    ("the merged gradebook artifact", merged)):
            print(f"{what:32} {raw / n / 1024:8.1f} KiB per learner ({zipped / n / 1024:7.1f} KiB zipped); "
                  f"{raw / 2**20:8.1f} MiB in all ({zipped / 2**20:.1f} MiB zipped)")


if __name__ == "__main__":
    main()
