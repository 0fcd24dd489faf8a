"""Benchmark: the project's own suite, as `.ci/run` runs it, against its time budgets, in one run.

Runs one after another (environments reused, each brought to the lock first: a no-op when it already is):
`nox -s selfcheck -- --chapter N` (one chapter's share), `nox -s selfcheck`, `nox -s proofs` and
`nox -s docs-browser -- --site build/site` (what `.ci/run` runs after selfcheck, on the site it built), and prints
each one's wall time, the CPU time it used (its processes' user + system), the share of the budget it took and
the machine's load average before and after: other work on the machine slows a run down, and the CPU time says
how much of the wall time was the suite's own. `.ci/run`'s line is the sum of its three sessions.
Budgets on a 2-core machine: selfcheck 5 minutes, one chapter's share 2 minutes, `.ci/run` 8 minutes in all.
This prints; it never fails on a slow machine, and a failing session is reported, not hidden: each session's
output is kept in ``build/bench-suite/<name>.log``, and a failure prints that file's last lines. The sessions run
with nox's own folder first on PATH, as ``start.py`` runs them (the suite's tests call ``nox`` themselves).

Usage: python benchmarks/bench_suite.py [--chapter N] [--only chapter,selfcheck,proofs,docs-browser]
(`nox -s bench -- suite` runs it.)
"""

import argparse
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_chapter_run import find_nox  # noqa: E402 - the one way the benches find nox

BUDGET = {"chapter": 2 * 60, "selfcheck": 5 * 60, ".ci/run": 8 * 60}
CI_RUN = ("selfcheck", "proofs", "docs-browser")


LOGS = ROOT / "build" / "bench-suite"


def measure(command: list[str], log: Path) -> tuple[float, float, int]:
    """(wall seconds, CPU seconds of the command and everything it waited for, exit code); its output into ``log``."""
    env = dict(os.environ, PATH=str(Path(command[0]).parent) + os.pathsep + os.environ.get("PATH", ""))
    log.parent.mkdir(parents=True, exist_ok=True)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    with open(log, "wb") as out:
        proc = subprocess.run(command, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT, check=False)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, proc.returncode


def main() -> None:
    """Measure and print."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chapter", type=int, default=4, help="the chapter whose share is measured (default 4)")
    parser.add_argument("--only", default="chapter,selfcheck,proofs,docs-browser",
                        help="what to measure, comma-separated (default: all four)")
    args = parser.parse_args()
    nox = find_nox()
    if nox is None:
        sys.exit("bench_suite: no nox found (python3 start.py -l sets it up in .venv-tools/)")
    runs = {
        "chapter": ([nox, "-s", "selfcheck", "--", "--chapter", str(args.chapter)],
                    f"nox -s selfcheck -- --chapter {args.chapter}"),
        "selfcheck": ([nox, "-s", "selfcheck"], "nox -s selfcheck"),
        "proofs": ([nox, "-s", "proofs"], "nox -s proofs"),
        "docs-browser": ([nox, "-s", "docs-browser", "--", "--site", "build/site"], "nox -s docs-browser"),
    }
    wanted = [name for name in args.only.split(",") if name]
    unknown = sorted(set(wanted) - set(runs))
    if unknown:
        sys.exit(f"bench_suite: --only knows {', '.join(runs)}; not {', '.join(unknown)}")
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())} ({os.cpu_count()} CPUs)", flush=True)
    rows = []
    for name in wanted:
        command, title = runs[name]
        log = LOGS / f"{name}.log"
        wall, cpu, code = measure(command, log)
        rows.append((name, title, wall, cpu, code))
        print(f"  {title}: {wall / 60:.2f} min{'' if code == 0 else f'  (FAILED, exit code {code})'}", flush=True)
        if code != 0:
            tail = log.read_text(encoding="utf-8", errors="replace").splitlines()[-8:]
            print(f"    its output is in {log.relative_to(ROOT)}; the last lines:\n      " + "\n      ".join(tail),
                  flush=True)
    print(f"load average after:  {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    if all(name in wanted for name in CI_RUN):
        done = [r for r in rows if r[0] in CI_RUN]
        rows.append((".ci/run", ".ci/run (selfcheck + proofs + docs-browser)", sum(r[2] for r in done),
                     sum(r[3] for r in done), max(r[4] for r in done)))
    print()
    print(f"{'what':<48} {'wall min':>9} {'CPU min':>8} {'CPU/wall':>9} {'budget min':>11} {'of budget':>10}")
    for name, title, wall, cpu, code in rows:
        budget = BUDGET.get(name)
        share = f"{100 * wall / budget:>9.0f}%" if budget else f"{'':>10}"
        limit = f"{budget / 60:>11.0f}" if budget else f"{'':>11}"
        failed = "" if code == 0 else "  FAILED"
        print(f"{title:<48} {wall / 60:>9.2f} {cpu / 60:>8.2f} {cpu / wall:>9.2f} {limit} {share}{failed}")


if __name__ == "__main__":
    main()
