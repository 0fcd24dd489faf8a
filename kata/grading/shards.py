"""A class on a CI matrix: how many shards, the roster on the runner, and what a shard hands to the merge.

``.github/workflows/grade-class.yml`` calls it with the system's Python from the course checkout (it needs
nothing but the standard library and gpg):

    python -m kata.grading.shards roster --out "$RUNNER_TEMP/roster.csv"
    python -m kata.grading.shards plan "$RUNNER_TEMP/roster.csv" --per-shard 100
    python -m kata.grading.shards pack shard-3 upload/shard-3
    python -m kata.grading.shards wait-until 2027-03-01T22:59:00Z

``roster`` writes the class's roster where the grader reads it, from whichever of the routes is set (a file
on the runner, the secret ``CLASS_ROSTER``, or the encrypted ``.github/roster.csv.gpg`` with its passphrase in
the secret ``CLASS_ROSTER_KEY``), and checks it. ``plan`` prints, as one line of JSON, the number of shards
for the class's size (``ceil(learners / per_shard)``, at most GitHub's 256 jobs of a matrix) and the matrix.
``pack`` moves out of a shard's ``--out`` folder only what ``--merge`` and the final artifact read
(``UPLOAD``), so a shard uploads no report, CSV or cache it would only throw away. ``wait-until`` holds the
scheduled deadline snapshot, started early on purpose, until the deadline itself.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import os
import shutil
import sys
import time
from collections.abc import Callable
from pathlib import Path

from . import roster, submissions

# A matrix of GitHub Actions generates at most 256 jobs per workflow run.
MAX_SHARDS = 256
# Learners a shard grades, by default. Measured (benchmarks/bench_class_scale.py; docs/instructors.md, "A
# class of 2,000"): 3.7 to 5 CPU-seconds a learner, so 100 learners take 3 to 4 minutes of a runner's 2 CPUs
# (about 10 with setting up and cloning), and even learners who all spent grading.toml's whole 60-second
# budget would take 50 minutes: inside the shard's 120-minute limit. 2,000 learners make 20 shards, as many
# jobs as a free plan runs at once.
PER_SHARD = 100
ENCRYPTED = Path(".github") / "roster.csv.gpg"
# What --merge reads from a shard's folder, and all the final artifact needs of it: the shard's gradebook
# (every row, with each learner's whole results) and each learner's folder (summary.md, and graded/, which
# the report's similarity signals compare), less the reports the merge writes again from the gradebook's
# results (``DERIVED``: two thirds of a shard's bytes). Not gradebook.csv, report.html, an LMS file or a
# cache: the merge writes its own.
UPLOAD = ("gradebook.json", "students/")
DERIVED = ("results.json", "junit.xml")  # in students/<name>/: gradebook.restore_reports writes them again


def plan(learners: int, per_shard: int = PER_SHARD, max_shards: int = MAX_SHARDS) -> dict:
    """The matrix for a class of ``learners``: ``{"learners", "per_shard", "shards", "matrix": [1, ..., shards]}``.

    ``shards = ceil(learners / per_shard)``, at least 1. When that is over ``max_shards``, every shard takes
    more learners (``per_shard`` then says how many at most) and ``note`` says so.

    Raises:
        ValueError: ``learners`` below 1, or ``per_shard`` or ``max_shards`` below 1.
    """
    if learners < 1:
        raise ValueError(f"the roster has no learners ({learners}): nothing to grade")
    if per_shard < 1:
        raise ValueError(f"--per-shard takes a number of learners ≥ 1; got {per_shard}")
    if max_shards < 1:
        raise ValueError(f"--max-shards takes a number of shards ≥ 1; got {max_shards}")
    shards = math.ceil(learners / per_shard)
    result = {"learners": learners, "per_shard": per_shard, "shards": shards}
    if shards > max_shards:
        shards = max_shards
        result.update(shards=shards, per_shard=math.ceil(learners / shards),
                      note=f"{learners} learners at {per_shard} a shard would need {math.ceil(learners / per_shard)} "
                           f"shards; a matrix runs at most {max_shards}, so each shard grades up to "
                           f"{math.ceil(learners / shards)}")
    result["matrix"] = list(range(1, shards + 1))
    return result


def _kept(folder: Path, path: Path) -> bool:
    """Whether ``pack`` keeps ``path`` of a shard's ``folder`` (not a learner's ``DERIVED`` report)."""
    parts = path.relative_to(folder).parts
    return not (len(parts) == 3 and parts[0] == "students" and parts[2] in DERIVED)


def upload_files(folder: Path) -> list[Path]:
    """The files of a shard's ``--out`` folder that ``pack`` keeps (``UPLOAD`` less ``DERIVED``), sorted."""
    found = []
    for name in UPLOAD:
        path = folder / name
        if name.endswith("/"):
            found += [p for p in path.rglob("*") if (p.is_file() or p.is_symlink()) and _kept(folder, p)] \
                if path.is_dir() else []
        elif path.is_file():
            found.append(path)
    return sorted(found)


def pack(folder: Path, target: Path) -> int:
    """Move the files ``--merge`` needs (``upload_files``) from ``folder`` into ``target``; return how many.

    Raises:
        ValueError: ``folder`` has no ``gradebook.json`` (not a finished shard), or ``target`` is not empty.
    """
    if not (folder / "gradebook.json").is_file():
        raise ValueError(f"pack: {folder} has no gradebook.json (is it the --out of a finished grade-class --shard?)")
    if target.exists() and any(target.iterdir()):
        raise ValueError(f"pack: {target} is not empty")
    files = upload_files(folder)
    for path in files:
        moved = target / path.relative_to(folder)
        moved.parent.mkdir(parents=True, exist_ok=True)
        shutil.move(path, moved)
    target.mkdir(parents=True, exist_ok=True)
    return len(files)


def write_roster(out: Path, *, path: str = "", text: str = "", encrypted: Path = ENCRYPTED, key: str = "") -> str:
    """Write the class's roster to ``out`` (readable by this user only); return where it came from.

    The routes, exactly one of which must be set: ``path``, a roster file on the runner (a self-hosted one);
    ``text``, the roster's CSV text (the secret ``CLASS_ROSTER``: up to 48 KB, about 400 learners); or
    ``key``, the passphrase of ``encrypted`` (a roster of any size, committed encrypted with
    ``gpg --symmetric``). Two routes at once are refused: which one the instructor meant is not guessed.

    Raises:
        roster.RosterError: no route, two routes, or a roster that cannot be read or decrypted.
    """
    routes = [what for what, given in (("the roster input", path), ("the secret CLASS_ROSTER", text.strip()),
                                       ("the secret CLASS_ROSTER_KEY", key)) if given]
    if len(routes) > 1:
        raise roster.RosterError(f"two rosters: {' and '.join(routes)} are both set; keep one "
                                 "(docs/instructors.md, \"A class of 2,000\")")
    if not routes:
        hint = f" ({encrypted} is there: set the secret CLASS_ROSTER_KEY to its passphrase)" \
            if encrypted.is_file() else ""
        raise roster.RosterError("no roster: set the secret CLASS_ROSTER to the roster's CSV text, or commit it "
                                 f"encrypted as {encrypted} with its passphrase in the secret CLASS_ROSTER_KEY"
                                 f"{hint} (docs/instructors.md)")
    if path:
        try:
            data = Path(path).read_text(encoding="utf-8-sig")
        except (OSError, UnicodeDecodeError) as err:
            raise roster.RosterError(f"cannot read the roster {path}: {err}") from None
        source = f"the file {path}"
    elif key:
        data = roster.decrypt(encrypted, key)
        source = f"{encrypted}, decrypted"
    else:
        data = text
        source = "the secret CLASS_ROSTER"
    out.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(out, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(data if data.endswith("\n") else data + "\n")
    return source


# A scheduled run is started early on purpose (GitHub can start it minutes late) and waits for the deadline;
# more than this before it, the cron and the deadline disagree (a cron fires every year: an old term's?).
LONGEST_WAIT = 2 * 3600.0
# Started this long after the deadline, the snapshot is not a deadline's: the cron is an earlier term's.
STALE = 6 * 3600.0


def wait_until(deadline: str, *, now: Callable[[], dt.datetime] = lambda: dt.datetime.now(dt.UTC),
               sleep: Callable[[float], None] = time.sleep) -> str:
    """Sleep until ``deadline`` (ISO 8601 with its zone); return what happened, for the run's log.

    A snapshot taken after the deadline holds whatever was pushed in between, so the scheduled run starts
    early and waits here. Started after the deadline, it does not wait, and the message says by how many
    seconds it is late (GitHub starts a scheduled run late at busy times).

    Raises:
        ValueError: ``deadline`` is not a time with its zone, is more than ``LONGEST_WAIT`` away, or passed
            more than ``STALE`` ago: the cron and the deadline do not belong together.
    """
    when = submissions.parse_deadline(deadline, "SNAPSHOT_DEADLINE")
    ahead = (when - now()).total_seconds()
    if ahead > LONGEST_WAIT:
        raise ValueError(f"SNAPSHOT_DEADLINE {deadline} is {ahead / 3600:.1f} h away, more than the "
                         f"{LONGEST_WAIT / 3600:g} h a scheduled snapshot waits: set the cron shortly before it")
    if -ahead > STALE:
        raise ValueError(f"SNAPSHOT_DEADLINE {deadline} passed {-ahead / 3600:.1f} h ago: this schedule is not "
                         "for it (a cron repeats every year); set the cron and SNAPSHOT_DEADLINE together")
    if ahead <= 0:
        return f"started {-ahead:.0f} s after the deadline {deadline}: pushes made in those seconds are in the snapshot"
    sleep(ahead)
    return f"waited {ahead:.0f} s for the deadline {deadline}"


def main(argv: list[str] | None = None) -> int:
    """The command line (see the module's docstring); 0, or 2 with the reason on stderr."""
    p = argparse.ArgumentParser(prog="python -m kata.grading.shards", description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="command", required=True)
    r = sub.add_parser("roster", help="write the roster from the route that is set (env ROSTER, CLASS_ROSTER, "
                                      "CLASS_ROSTER_KEY) and check it")
    r.add_argument("--out", required=True, help="where to write it (outside the checkout: $RUNNER_TEMP)")
    r.add_argument("--encrypted", default=str(ENCRYPTED), help=f"the encrypted roster (default: {ENCRYPTED})")
    m = sub.add_parser("plan", help="print the matrix for the roster's size as one line of JSON")
    m.add_argument("roster")
    m.add_argument("--per-shard", type=int, default=PER_SHARD, help=f"learners a shard grades (default {PER_SHARD})")
    m.add_argument("--max-shards", type=int, default=MAX_SHARDS, help=f"at most this many shards ({MAX_SHARDS})")
    k = sub.add_parser("pack", help="move what --merge needs out of a shard's folder into TARGET")
    k.add_argument("folder")
    k.add_argument("target")
    w = sub.add_parser("wait-until", help="sleep until TIME (a scheduled snapshot waits for its deadline)")
    w.add_argument("time", help="ISO 8601 with its zone, e.g. 2027-03-01T22:59:00Z")
    args = p.parse_args(argv)
    try:
        if args.command == "roster":
            out = Path(args.out)
            source = write_roster(out, path=os.environ.get("ROSTER", ""), text=os.environ.get("CLASS_ROSTER", ""),
                                  encrypted=Path(args.encrypted), key=os.environ.get("CLASS_ROSTER_KEY", ""))
            loaded = roster.load(out)
            print(f"roster: {len(loaded.learners)} learners, from {source}", file=sys.stderr)
        elif args.command == "plan":
            made = plan(len(roster.load(Path(args.roster)).learners), args.per_shard, args.max_shards)
            if "note" in made:
                print(f"plan: {made['note']}", file=sys.stderr)
            print(json.dumps(made, separators=(",", ":")))
        elif args.command == "wait-until":
            said = wait_until(args.time)
            late = said.startswith("started")
            print(f"::warning::{said}" if late and os.environ.get("GITHUB_ACTIONS") else f"wait-until: {said}",
                  file=sys.stderr)
        else:
            moved = pack(Path(args.folder), Path(args.target))
            print(f"pack: {moved} file(s) into {args.target}", file=sys.stderr)
    except (ValueError, roster.RosterError) as err:
        print(f"shards: {err}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
