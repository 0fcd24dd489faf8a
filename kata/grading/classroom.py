"""``nox -s grade-class -- ROSTER --out DIR``: grade a whole class on the instructor's side.

For every learner of the roster (``roster.py``): fetch the commit to grade and only its ``exercises/``
(``submissions.py``), grade it with this course copy's own tests, answer key, machinery and
``grading.toml`` (``python -m kata grade --impl <their exercises>``, one sealed process per learner,
``--jobs`` at a time, each under a wall-clock limit), and write one gradebook (``gradebook.py``), one
report page (``class_report.py``) and every learner's own reports into ``DIR``:

    DIR/gradebook.csv, DIR/gradebook.json, DIR/report.html, DIR/students/<student>/{results.json,
    junit.xml, summary.md}

A learner whose commit and the course's files are unchanged since an earlier run is taken from the
cache (``DIR/.cache`` or ``--cache``). ``--shard I/N`` grades one slice of the roster and ``--merge``
combines the slices, for a CI matrix. Exit codes: 0 the class was graded (whatever the scores, and
even with missing or error rows), 2 a bad option, roster or ``grading.toml`` (nothing is graded), 3 the
class was graded and everything written, but some learner's code ran without a sandbox that held (its
worker's probe, ``kata/worker/main.py``, found a way out, or bubblewrap could not start) and ``--allow-unsealed``
was not given: such a grade is not to be trusted, and the machine it ran on may have been changed by it.
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import json
import os
import platform
import re
import secrets
import shutil
import subprocess
import sys
import tempfile
import time
from collections import deque
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path

from .. import project
from ..judge import proxy
from ..process import Drain, kill_tree
from . import class_report, course, deadline, escape, gradebook, lms, reports, roster, similarity, strict, submissions
from . import points as points_mod


def parser() -> argparse.ArgumentParser:
    """The command line of ``nox -s grade-class -- ...``."""
    p = argparse.ArgumentParser(
        prog="nox -s grade-class --",
        description="Grade every learner of a roster with this course's own tests; write a gradebook and a report.",
    )
    p.add_argument("roster", nargs="?", help="CSV with a header and the columns student,repo (extra columns kept)")
    p.add_argument("--out", default="gradebook", metavar="DIR", help="where to write everything (default: gradebook/)")
    p.add_argument("--deadline", metavar="TIME",
                   help="grade the last commit at or before TIME by its committer date, which a learner can forge "
                        "(--snapshot and --at cannot be), e.g. 2027-03-01T23:59:00+01:00")
    p.add_argument("--snapshot", metavar="FILE",
                   help="at the deadline: record every learner's default-branch head in FILE (JSON) and fetch its "
                        "files beside it (<FILE's stem>.files/), grading nothing")
    p.add_argument("--at", metavar="FILE", help="grade exactly the heads recorded by --snapshot FILE, from its files")
    p.add_argument("--jobs", type=int, default=os.cpu_count() or 1, metavar="N",
                   help="learners graded at once (default: the number of CPUs)")
    p.add_argument("--shard", metavar="I/N", help="grade only the I-th of N slices of the roster (by student)")
    p.add_argument("--merge", nargs="+", metavar="DIR", help="combine the --out folders of --shard runs into --out")
    p.add_argument("--shards", type=int, metavar="N",
                   help="with --merge: the run had N shards; a shard that did not finish is named, and its "
                        "learners are error rows (without it, the merge is refused)")
    p.add_argument("--extra-tests", metavar="DIR", help="the instructor's private tests, run beside the public ones")
    p.add_argument("--chapters", metavar="N,N,...", help="grade only these chapters (default: all)")
    p.add_argument("--isolate", action="store_true", help="grade each chapter on the reference of the others")
    p.add_argument("--seed", type=int, help="seed of the random inputs (default: a fresh one for this run)")
    p.add_argument("--cache", metavar="DIR", help="where earlier grades are kept (default: DIR/.cache)")
    p.add_argument("--no-cache", action="store_true", help="grade every learner again")
    p.add_argument("--learner-timeout", type=float, metavar="SECONDS",
                   help="wall-clock seconds for one learner's grade (default: twice grading.toml's budget + 60)")
    p.add_argument("--clone-timeout", type=float, default=120, metavar="SECONDS",
                   help="seconds fetching one repository may take (default: 120)")
    p.add_argument("--git-host", default="https://github.com", help="where owner/name repositories live")
    p.add_argument("--lms", choices=lms.SYSTEMS, action="append", metavar="SYSTEM",
                   help="also write that system's grade import file: canvas, moodle or blackboard (repeatable)")
    p.add_argument("--allow-shared", action="store_true",
                   help="grade a repository that two or more students name, for each, and flag those rows")
    p.add_argument("--allow-unsealed", action="store_true",
                   help="accept learners graded without a sandbox that held (no bubblewrap, or it cannot start "
                        "here): their rows say so, and the run does not fail for it")
    p.add_argument("--allow-outside-paths", action="store_true",
                   help="grade a local repository outside the roster's folder (refused without it)")
    return p


def main(argv: list[str] | None = None) -> int:
    """Grade the class (or merge shards), write the gradebook and the report; return the exit code."""
    args = parser().parse_args(argv)
    out = Path(args.out).resolve()
    started = time.monotonic()
    try:
        if args.snapshot:
            return take_snapshot(args)
        if args.merge:
            if args.roster or args.shard:
                raise ValueError("--merge combines finished shards: give it no roster and no --shard")
            if args.shards is not None and args.shards < 1:
                raise ValueError("--shards takes the number of shards of the run (≥ 1)")
            book = gradebook.merge([Path(d).resolve() for d in args.merge], out, args.shards)
            missing = [r for r in book["rows"] if r["status"] == "error" and r["note"].startswith("not graded: shard")]
            for said in sorted({r["note"] for r in missing}):
                print(f"grade-class: {said}: {sum(r['note'] == said for r in missing)} learner(s) are error rows",
                      file=sys.stderr)
        else:
            if not args.roster:
                raise ValueError("give the roster (a CSV with the columns student,repo), or --merge DIR...")
            book = grade_class(args, out)
    except (ValueError, roster.RosterError, strict.StrictError) as err:
        print(f"grade-class: {err}", file=sys.stderr)
        return 2
    except NotSealed as err:
        print(err, file=sys.stderr)
        return 3
    paths = gradebook.write(book, out)
    code = 0
    for system in args.lms or []:  # checked before grading; a merge learns the roster only now
        try:
            paths.append(lms.write(book, system, out))
        except ValueError as err:
            print(f"grade-class: {err} (the gradebook and the report are written)", file=sys.stderr)
            code = 2
    report = out / "report.html"
    cache = None if args.no_cache or args.merge else Path(args.cache).resolve() if args.cache else out / ".cache"
    report.write_text(class_report.render(book, cache, similarity.signals(book, out, project.ROOT, cache)),
                      encoding="utf-8")
    paths.append(report)
    print(closing(book, time.monotonic() - started))
    for path in paths:
        print(f"wrote {path}")
    unsealed = [r for r in book["rows"] if r.get("sandbox") == gradebook.UNSEALED]
    if unsealed and not args.allow_unsealed:
        print(refusal(unsealed), file=sys.stderr)
        code = code or 3
    step_summary = os.environ.get("GITHUB_STEP_SUMMARY")
    if step_summary:
        with open(step_summary, "a", encoding="utf-8") as f:
            f.write(markdown(book) + "\n")
    return code


# -- the deadline snapshot --------------------------------------------------------------------------------
# Options with no use when grading nothing (given with --snapshot, each is refused, not ignored).
_GRADING_ONLY = ("deadline", "at", "shard", "merge", "shards", "extra_tests", "chapters", "isolate", "seed", "cache",
                 "no_cache", "learner_timeout", "lms", "allow_unsealed")


def take_snapshot(args: argparse.Namespace) -> int:
    """``--snapshot FILE``: record every learner's head and fetch its files (``deadline.take``); grade nothing."""
    defaults = parser().parse_args([])
    given = [f"--{name.replace('_', '-')}" for name in _GRADING_ONLY if getattr(args, name) != getattr(defaults, name)]
    if args.out != defaults.out:
        given.append("--out")
    if given:
        raise ValueError(f"--snapshot grades nothing: {', '.join(given)} {'has' if len(given) == 1 else 'have'} no "
                         "use with it (give the grading options to the run with --at FILE)")
    if not args.roster:
        raise ValueError("--snapshot: give the roster (a CSV with the columns student,repo)")
    if args.jobs < 1:
        raise ValueError("--jobs takes a number of learners ≥ 1")
    class_roster = roster.load(Path(args.roster))
    checked_repositories(class_roster, args)
    record = Path(args.snapshot).resolve()
    body = deadline.take(class_roster, record, git_host=args.git_host, jobs=args.jobs,
                         clone_timeout=args.clone_timeout)
    print(deadline.summary(body, record))
    return 0


def checked_repositories(class_roster: roster.Roster, args: argparse.Namespace) -> dict[str, list[roster.Learner]]:
    """The learners that share a repository (by identity); ``RosterError`` naming every bad line at once.

    Refused unless the instructor allows it: a repository that two lines name (``--allow-shared``), a local path
    outside the roster's folder (``--allow-outside-paths``). The snapshot and the grading run check alike.
    """
    base = class_roster.path.resolve().parent

    def where(repo: str) -> str:
        return submissions.source(repo, base, args.git_host)

    sharing = roster.shared(class_roster.learners, where, args.git_host)
    refused = roster.repository_problems(class_roster, where, sharing, outside=not args.allow_outside_paths,
                                         shared=not args.allow_shared)
    if refused:  # both checks' lines at once: every bad line is named before anything is graded
        raise roster.RosterError("\n".join(refused))
    return sharing


# -- one run ------------------------------------------------------------------------------------------
def grade_class(args: argparse.Namespace, out: Path) -> dict:
    """Grade the roster's learners (or one shard of them); return the gradebook."""
    root = project.ROOT
    class_roster = roster.load(Path(args.roster))
    for system in args.lms or []:  # before anything is graded: the roster must identify learners there
        lms.check(system, class_roster.extra_columns)
        lms.check_identifiers(system, class_roster.extra_columns, class_roster.learners)
    base = class_roster.path.resolve().parent
    sharing = checked_repositories(class_roster, args)
    if args.at and args.deadline:
        raise ValueError("--at grades the heads recorded at the deadline by --snapshot; --deadline picks commits by "
                         "their committer dates: give one of them, not both")
    cutoff = submissions.parse_deadline(args.deadline) if args.deadline else None
    shard = roster.parse_shard(args.shard) if args.shard else None
    if args.jobs < 1:
        raise ValueError("--jobs takes a number of learners ≥ 1")
    all_chapters = project.chapters(root)
    numbers = [c.number for c in all_chapters]
    chosen = numbers
    if args.chapters:
        chosen = sorted({project.parse_chapter(c) for c in args.chapters.split(",") if c.strip()})
        unknown = [n for n in chosen if n not in numbers]
        if unknown:
            raise ValueError(f"--chapters: no chapter {unknown} here (chapters: {', '.join(map(str, numbers))})")
    extra = Path(args.extra_tests).resolve() if args.extra_tests else None
    if extra is not None and not extra.is_dir():
        raise ValueError(f"--extra-tests: {extra} is not a folder")
    points_file = root / "grading.toml"
    strict.check(points_file, root, sorted(extra.rglob("test_*.py")) if extra else [])
    if not args.allow_unsealed:
        prove_sealed()
    settings = points_mod.load(points_file)
    seed = args.seed if args.seed is not None else secrets.randbelow(2**31)
    budget = float(getattr(settings, "budget", 60.0))
    learner_timeout = args.learner_timeout or 2 * budget + 60
    learners = class_roster.shard(*shard) if shard else list(class_roster.learners)
    for learner in learners:  # graded all the same: names in two scripts exist
        for warning in learner.warnings:
            print(f"grade-class: warning: {warning}", file=sys.stderr)
    # Checked whole before anything is graded: another roster's snapshot, or a damaged one, is refused.
    snapshot = deadline.load(Path(args.at), class_roster, [x.student for x in learners]) if args.at else None
    extra_files = json.dumps(course.folder_files(extra, "extra") if extra else [], default=bytes.hex)
    key_base = {"machinery": course.machinery_version(root, points_file),
                "extra_tests": hashlib.sha256(extra_files.encode()).hexdigest(),
                "chapters": chosen if args.chapters else None, "isolate": bool(args.isolate),
                "python": platform.python_version(), "numpy": project.installed("numpy")}
    cache = None if args.no_cache else Path(args.cache).resolve() if args.cache else out / ".cache"
    (out / "students").mkdir(parents=True, exist_ok=True)

    def grade_options(sub: submissions.Submission, repo: str, target: Path, impl: Path) -> list[str]:
        cmd = ["--impl", str(impl), "--out", str(target), "--seed", str(seed), "--repository", repo,
               "--commit", sub.commit, "--workers", str(max(1, (os.cpu_count() or 1) // max(1, args.jobs)))]
        if args.chapters:
            cmd += ["--chapters", ",".join(map(str, chosen))]
        if extra is not None:
            cmd += ["--extra-tests", str(extra)]
        if args.isolate:
            cmd.append("--isolate")
        return cmd

    def one(learner: roster.Learner) -> dict:
        began = time.monotonic()
        repo = submissions.shown(learner.repo)
        folder = out / "students" / learner.student
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        work = Path(tempfile.mkdtemp(prefix="kata-class-"))
        try:
            if snapshot is not None:
                sub = deadline.submission(snapshot, learner.student, work)
            else:
                sub = submissions.fetch(learner.repo, work, base=base, deadline=cutoff,
                                        timeout=args.clone_timeout, git_host=args.git_host)
            common = dict(repo=repo, chapters=numbers,
                          shared_with=submissions.listed([x.student for x in sharing.get(learner.student, [])],
                                                         "students"))

            def ungraded(status: str, note: str, **facts) -> dict:
                (folder / "summary.md").write_text(f"## {escape.markdown(learner.student)}: {status}\n\n"
                                                   f"{escape.markdown(note)}\n", encoding="utf-8")
                return gradebook.row(learner, status=status, commit=sub.commit, committed_at=sub.committed_at,
                                     note=note, results=None, seconds=time.monotonic() - began, **facts, **common)

            if isinstance(sub, submissions.Missing):
                return ungraded("missing", sub.reason)
            impl, answered = _with_notebooks(sub, root, chosen, work)
            _keep_graded(sub, impl, similarity.graded_folder(out, learner.student))
            facts = dict(late=sub.late, branches=sub.branches, dropped=sub.dropped, notebooks=answered)
            key = hashlib.sha256(json.dumps({**key_base, "repo": repo, "commit": sub.commit}, sort_keys=True)
                                 .encode()).hexdigest()
            entry = cache / key[:2] / key if cache else None
            cached = entry is not None and (entry / "results.json").is_file()
            if cached and not args.allow_unsealed and gradebook.sandbox(_cached_results(entry)) == gradebook.UNSEALED:
                shutil.rmtree(entry, ignore_errors=True)  # graded unsealed before: graded again, sealed this time
                cached = False
            if not cached:
                graded = work / "grade"
                failure = _run_grade(grade_options(sub, repo, graded, impl), root, learner_timeout,
                                     require_seal=not args.allow_unsealed)
                if failure:
                    return ungraded("error", failure, **facts)
                # The learner's folder is a throwaway path here: the reports name it as the learner knows it.
                results = json.loads((graded / "results.json").read_text(encoding="utf-8"))
                results["implementation"] = "exercises and notebooks" if answered else "exercises"
                explain_dropped(results, sub.dropped)
                reports.write_all(results, graded)
                if entry is not None:
                    _store(graded, entry)
                source = graded
            else:
                source = entry
            for name in ("results.json", "junit.xml", "summary.md"):
                if (source / name).is_file():
                    shutil.copy2(source / name, folder / name)
            results = json.loads((folder / "results.json").read_text(encoding="utf-8"))
            row = gradebook.row(learner, status="graded", commit=sub.commit, committed_at=sub.committed_at,
                                note=sub.note, results=results, cached=cached, seconds=time.monotonic() - began,
                                allow_unsealed=args.allow_unsealed, **facts, **common)
            if row["note"] and (folder / "summary.md").is_file():  # where the learner looks (instructor trial)
                with open(folder / "summary.md", "a", encoding="utf-8") as f:
                    f.write(f"\n**Note from the grader:** {escape.markdown(row['note'])}\n")
            return row
        finally:
            shutil.rmtree(work, ignore_errors=True)

    rows = _run_all(learners, one, args.jobs, numbers)
    order = {x.student: i for i, x in enumerate(class_roster.learners)}
    rows.sort(key=lambda r: order[r["student"]])
    return {
        "schema_version": gradebook.SCHEMA_VERSION,
        "created": dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "course_version": course.course_version(root, points_file),
        "seed": seed,
        "deadline": (gradebook.snapshot_deadline(snapshot.record, snapshot.path.name) if snapshot is not None
                     else gradebook.committer_deadline(args.deadline) if args.deadline else None),
        "shard": f"{shard[0]}/{shard[1]}" if shard else None,
        "shards": [],
        "options": {"chapters": chosen, "extra_tests": extra is not None, "isolate": bool(args.isolate)},
        "roster": {"file": class_roster.path.name, "digest": class_roster.digest,
                   "students": [x.student for x in class_roster.learners], "extra_columns": class_roster.extra_columns},
        "columns": gradebook.columns(chosen, class_roster.extra_columns, extra is not None),
        "chapters": [{"chapter": c.number, "title": c.title} for c in all_chapters],
        "summary": gradebook.summary(rows),
        "rows": rows,
    }


def _keep_graded(sub: submissions.Submission, impl: Path, target: Path) -> None:
    """Keep the files graded, at the graded commit, in ``target`` (``students/<name>/graded/``).

    ``exercises/``: what was graded (with the notebooks' answers in place when there were any);
    ``notebooks/``: the learner's notebooks, as committed.
    """
    shutil.copytree(impl, target / "exercises", symlinks=True, ignore=shutil.ignore_patterns("__pycache__"))
    if sub.notebooks is not None:
        shutil.copytree(sub.notebooks, target / "notebooks", symlinks=True)


def _with_notebooks(sub: submissions.Submission, root: Path, chapters: list[int], work: Path) -> tuple[Path, list[int]]:
    """The folder to grade and the chapters answered in the learner's notebooks.

    The same extraction as ``nox -s grade`` (``python -m kata notebook-answers``): the finished
    functions of each saved notebook, read with ``ast`` (no cell runs), are appended to their chapter's file
    of the learner's ``exercises/``, so a function finished in its notebook replaces the one in
    ``exercises/``, and a function left as its stub in the notebook leaves ``exercises/``' own in place.

    A chapter's notebook that cannot be read (merge-conflict markers, not JSON, not UTF-8) gives no answers
    there; it is named in ``sub.dropped`` with why, so the row does not read "not started" with no word.
    """
    if sub.notebooks is None:
        return sub.exercises, []
    from .. import learners_code

    target = work / "answers" / "exercises"
    try:
        for chapter in project.chapters(root):
            path = sub.notebooks / f"{chapter.module}.ipynb"
            if chapter.number in chapters and path.is_file() and not path.is_symlink():
                why = unreadable_notebook(path)
                if why:
                    sub.dropped.append(f"notebooks/{path.name}: {why}; its answers are not graded (exercises/ is)")
        answered = [c.number for c in project.chapters(root)
                    if c.number in chapters and learners_code.saved_answers(c, root, sub.notebooks)[1]]
        if not answered:
            return sub.exercises, []
        target.parent.mkdir(parents=True, exist_ok=True)
        learners_code.write_package(target, root=root, learner=sub.exercises.parent)
    except Exception as err:  # noqa: BLE001 - a learner's odd file (not text, nested too deep): exercises/ alone
        sub.dropped.append(f"notebooks/: answers not taken ({type(err).__name__}: {str(err)[:120]})")
        shutil.rmtree(target, ignore_errors=True)
        return sub.exercises, []
    return target, answered


def unreadable_notebook(path: Path) -> str:
    """Why a saved notebook cannot be read for its answers ("merge-conflict markers (<<<<<<< on line 12)…"), or ''.

    The same reading as ``learners_code.code_cells`` (JSON; no cell runs): what it would pass over in silence,
    this names.
    """
    data = path.read_bytes()
    marker = re.search(rb"^(<<<<<<<|=======|>>>>>>>)(?:[ \r]|$)", data, re.M)
    if marker:
        line = data.count(b"\n", 0, marker.start()) + 1
        return (f"merge-conflict markers ({marker.group(1).decode()} on line {line}): resolve the conflict and "
                "commit the notebook again")
    try:
        notebook = json.loads(data.decode("utf-8"))
    except UnicodeDecodeError as err:
        return f"not UTF-8 text (byte {err.start})"
    except ValueError as err:
        return f"not a notebook: not valid JSON ({getattr(err, 'msg', err)}, line {getattr(err, 'lineno', '?')})"
    cells = notebook.get("cells") if isinstance(notebook, dict) else None
    if not isinstance(cells, list) or not all(isinstance(c, dict) for c in cells):
        return "not a notebook: no list of cells"
    return ""


_NO_MODULE = re.compile(r"(?:ModuleNotFoundError: )?No module named '(?:graded|exercises)\.([\w.]+)'")


def explain_dropped(results: dict, dropped: list[str]) -> None:
    """Say "not graded: exercises/x.py: symbolic link" where a left-out file made a chapter fail to import.

    Without this the learner would read ``No module named 'graded.chapter04_attention'``: an internal name,
    and no word that only regular files are graded.
    """
    reasons = {}
    for said in dropped:
        path, _, why = said.partition(": ")
        if path.startswith("exercises/") and path.endswith(".py"):
            reasons[path.removeprefix("exercises/").removesuffix(".py").replace("/", ".")] = (path, why)
    if not reasons:
        return

    def fix(text: str | None) -> str | None:
        if not text:
            return text

        def say(m: re.Match) -> str:
            module = m.group(1)
            hit = reasons.get(module) or reasons.get(module + ".__init__")
            return f"not graded: {hit[0]} is a {hit[1]} (only regular files are graded)" if hit else m.group(0)

        return _NO_MODULE.sub(say, text)

    for chapter in results.get("chapters", []):
        chapter["error"] = fix(chapter.get("error"))
        for step in chapter.get("steps", []):
            step["message"] = fix(step.get("message"))
            for test in step.get("tests", []):
                test["message"] = fix(test.get("message"))


def _cached_results(entry: Path) -> dict | None:
    """A cached grade's results, or None when unreadable (one graded unsealed is graded again, unless allowed)."""
    try:
        return json.loads((entry / "results.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def _store(source: Path, entry: Path) -> None:
    """Put a finished grade into the cache in one step (a half-written entry is never read)."""
    entry.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(dir=entry.parent, prefix=".partial-"))
    for name in ("results.json", "junit.xml", "summary.md"):
        if (source / name).is_file():
            shutil.copy2(source / name, staging / name)
    try:
        staging.rename(entry)
    except OSError:  # another run stored the same grade first
        shutil.rmtree(staging, ignore_errors=True)


def _run_grade(options: list[str], root: Path, limit: float, require_seal: bool = True) -> str:
    """Run ``python -m kata grade OPTIONS`` from the course copy; return '' or why it did not complete.

    ``require_seal``: a worker whose sandbox does not hold is ended before the learner's code loads
    (``proxy.SEAL_REQUIRED``); the learner's row then says the sandbox did not hold and the run fails.
    """
    env = {k: v for k, v in os.environ.items()
           if k not in (submissions.TOKEN_VARIABLE, "GITHUB_STEP_SUMMARY", "PYTEST_ADDOPTS", "PYTHONSTARTUP")}
    env["PYTHONPATH"] = str(root)
    env[proxy.SEAL_REQUIRED] = "1" if require_seal else "0"
    proc = subprocess.Popen([sys.executable, "-m", "kata", "grade", *options], cwd=root, env=env,
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            start_new_session=True)
    tail: deque[str] = deque(maxlen=20)

    reader = Drain(proc.stdout, lambda line: line is not None and tail.append(line.rstrip()))
    reader.start()
    try:
        proc.wait(timeout=limit)
    except subprocess.TimeoutExpired:
        kill_tree(proc)
        reader.join(timeout=5)
        return f"grading took longer than {limit:g} s and was stopped"
    reader.join(timeout=5)
    if proc.returncode in (0, 1):
        return ""
    said = [line for line in tail if line.strip().startswith("grade:")] or [line for line in tail if line.strip()]
    return f"grading failed (exit code {proc.returncode}): {(said[-1] if said else 'no output')[:300]}"


def _run_all(learners: list, one, jobs: int, chapters: list[int]) -> list[dict]:
    """Grade every learner, ``jobs`` at a time, with a progress bar (learners done, elapsed, failures)."""
    try:
        from tqdm import tqdm
    except ImportError:  # pragma: no cover - the grade-class session installs it
        tqdm = None
    began = time.monotonic()
    # A bar on a terminal; in a CI log (no terminal) one line per learner says the same.
    bar = tqdm(total=len(learners), unit="learner", file=sys.stderr, dynamic_ncols=True, mininterval=0.5,
               desc="grading") if tqdm and sys.stderr.isatty() else None
    write = bar.write if bar else (lambda text: print(text, file=sys.stderr, flush=True))
    rows, failures = [], []
    with ThreadPoolExecutor(max_workers=max(1, min(jobs, len(learners) or 1))) as pool:
        futures = {pool.submit(one, x): x for x in learners}
        for done, future in enumerate(as_completed(futures), start=1):
            learner = futures[future]
            try:
                r = future.result()
            except Exception as err:  # noqa: BLE001 - one learner never stops the class
                said = submissions.shortened(str(err), 300)  # an OSError's path can be 4,000 characters
                r = gradebook.row(learner, status="error", repo=submissions.shown(learner.repo), commit=None,
                                  committed_at=None, note=f"the grader failed: {type(err).__name__}: {said}",
                                  results=None, chapters=chapters)
            rows.append(r)
            if r["status"] != "graded":
                failures.append(r["student"])
            # Never cut: the learner's name and the repository path in the note are what the reader looks for.
            what = f"{r['percent']:.1f} %" if r["status"] == "graded" else f"{r['status']}: {_one_line(r['note'])}"
            cached = ", cached" if r["cached"] else ""
            if bar:
                write(f"{r['student']}: {what} ({r['seconds']:.1f} s{cached})")
                bar.set_postfix_str(f"missing/error {len(failures)}" + (f" (last: {failures[-1]})" if failures else ""))
                bar.update(1)
            else:
                write(f"[{done}/{len(learners)} · {time.monotonic() - began:.0f} s · missing/error {len(failures)}] "
                      f"{r['student']}: {what} ({r['seconds']:.1f} s{cached})")
    if bar:
        bar.close()
    return rows


def _one_line(text: str) -> str:
    """``text`` whole, on one line."""
    return " | ".join(line.strip() for line in (text or "").splitlines() if line.strip())


# -- what the instructor reads at the end ---------------------------------------------------------------
def closing(book: dict, seconds: float) -> str:
    """The closing table: counts, the lowest scores, and every missing or error row."""
    s = book["summary"]
    rows = book["rows"]
    cached = sum(r["cached"] for r in rows)
    lines = ["", f"graded {s['graded']} of {s['learners']} learners in {seconds:.1f} s"
             + (f" ({cached} from the cache)" if cached else "")
             + f"; {s['missing']} missing, {s['error']} error"
             + (f"; mean {s['mean_percent']:.1f} %, median {s['median_percent']:.1f} %" if s["mean_percent"] is not None
                else ""), gradebook.deadline_said(book.get("deadline"))]
    graded = sorted((r for r in rows if r["status"] == "graded"), key=lambda r: (r["percent"], r["student"]))
    problems = [r for r in rows if r["status"] != "graded"]
    width = max([24] + [len(r["student"]) for r in graded[:10] + problems])  # a name is never cut
    if graded:
        lines += ["", "lowest scores:", f"  {'student':<{width}} {'percent':>8} {'points':>13}  commit   note"]
        for r in graded[:10]:
            points = f"{r['points']:g}/{r['max_points']:g}"
            lines.append(f"  {r['student']:<{width}} {r['percent']:>7.1f}% {points:>13}  "
                         f"{(r['commit'] or '')[:7]:<7}  {r['note'][:70]}")
    if problems:
        lines += ["", "missing or error:", f"  {'student':<{width}} {'status':<8} reason"]
        lines += [f"  {r['student']:<{width}} {r['status']:<8} {r['note']}" for r in problems]
    said = [(what, [r["student"] for r in rows if test(r)]) for what, test in (
        ("graded without a sandbox (the note says why; docs/instructors.md: \"Grading as root, and whether learners "
         "were sealed\")",
         lambda r: (r.get("sandbox") or "").startswith(gradebook.UNSEALED)),
        ("newer commits on another branch, not graded", lambda r: r.get("other_branches")),
        ("files not graded (links, submodules, over the size limit)", lambda r: r.get("not_graded")),
        ("graded with answers from their notebooks", lambda r: r.get("notebooks")),
        ("sharing a repository (--allow-shared)", lambda r: r.get("shared_with")),
    )]
    said = [(what, names) for what, names in said if names]
    if said:
        lines += ["", "read the note of:"]
        lines += [f"  {what}: {', '.join(names)}" for what, names in said]
    lines.append("")
    return "\n".join(lines)


class NotSealed(Exception):  # noqa: N818
    """The sandbox does not hold on this machine: nothing is graded (exit code 3), unless ``--allow-unsealed``."""


def prove_sealed() -> None:
    """Start one empty worker and read its probe before grading anyone; ``NotSealed`` when it did not hold.

    A machine where the sandbox cannot hold (bubblewrap missing, or stopped by Ubuntu 24.04's AppArmor) is refused
    here, before any learner's code has run, rather than found out from the first learners' rows.
    """
    said = proxy.sandbox_here()
    if said != proxy.SANDBOXED:
        raise NotSealed(
            f"grade-class: nothing graded: the sandbox does not hold on this machine: "
            f"{said.removeprefix(proxy.UNSEALED)}\n"
            "  A learner's code would run with this user's rights (as root: the whole machine's).\n"
            f"  {FIX}\n"
            "  Or pass --allow-unsealed to grade without it (every row and the report then say so).")


FIX = ("Fix: install bubblewrap (sudo apt-get install bubblewrap); on Ubuntu 24.04 allow its user namespaces "
       "(docs/instructors.md, \"Grading as root, and whether learners were sealed\"); then grade again.")


def refusal(unsealed: list[dict]) -> str:
    """Why a class run in which learners were graded unsealed fails, and how to fix it (exit code 3)."""
    names = [r["student"] for r in unsealed]
    causes = sorted({gradebook.unsealed_cause(r.get("results")) for r in unsealed} - {""})
    shown = ", ".join(names[:10]) + (f" and {len(names) - 10} more" if len(names) > 10 else "")
    return (f"grade-class: {len(names)} learner(s) were graded without a sandbox that held: {shown}.\n"
            f"  why: {'; '.join(causes[:3]) or 'unknown'}\n"
            "  Their rows are not grades: where this run required the sandbox, their code was stopped before it "
            "loaded and earned nothing; where it was not required (a shard or cache graded with --allow-unsealed), "
            "it ran with the grader's rights.\n"
            f"  {FIX} Or pass --allow-unsealed to accept it (each such row then says so).\n"
            "  The gradebook and the report are written.")


def markdown(book: dict) -> str:
    """A short summary for ``$GITHUB_STEP_SUMMARY`` (the run's page)."""
    s = book["summary"]
    lines = [f"## Transformer Katas: class gradebook{' (shard ' + book['shard'] + ')' if book['shard'] else ''}", "",
             f"{s['learners']} learners: {s['graded']} graded, {s['missing']} missing, {s['error']} in error"
             + (f"; mean {s['mean_percent']:.1f} %, median {s['median_percent']:.1f} %" if s["mean_percent"] is not None
                else ""), "", escape.markdown(gradebook.deadline_said(book["deadline"])), "",
             "| student | status | percent | note |", "| --- | --- | ---: | --- |"]
    worst = sorted(book["rows"], key=lambda r: (r["status"] == "graded", r["percent"] or 0))[:20]
    for r in worst:
        percent = "" if r["percent"] is None else f"{r['percent']:.1f}"
        lines.append(f"| {escape.markdown(r['student'])} | {r['status']} | {percent} | {escape.markdown(r['note'])} |")
    return "\n".join(lines)
