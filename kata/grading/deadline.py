"""A deadline nobody can forge: every learner's head recorded at the deadline, graded later from the record.

``--deadline TIME`` picks the last commit whose *committer date* is at or before TIME; that date is written
by the learner's own git (``GIT_COMMITTER_DATE``), so work done after the deadline can claim to be older.
Here the grader's clock decides instead:

- ``nox -s grade-class -- roster.csv --snapshot FILE`` (:func:`take`), run at the deadline, fetches every
  learner's default-branch head, exactly as a class run fetches it (``submissions.fetch``: only
  ``exercises/`` and ``notebooks/*.ipynb``, regular files, within its size limits), and grades nothing.
  ``FILE`` (JSON) records, per learner, the commit, its committer date, the branch, the repository as
  resolved, when it was fetched (UTC, the grader's clock), and every stored file's size and SHA-256; or
  why the learner is missing. The files go beside it, in ``<FILE's stem>.files/<folder>/``, one folder per
  learner named from a hash of the student's name (a name is data, never a path).
- ``nox -s grade-class -- roster.csv --at FILE`` (:func:`load`, :func:`submission`) grades those files,
  whatever the learners pushed, rewrote or deleted since: the snapshot folder alone is enough.

Files, not a git bundle per learner: a bundle of the head carries the whole history (every blob a learner
ever committed, unbounded), while the files are what is graded, bounded by ``fetch``'s limits, and readable
by the instructor as they are.

What is checked before anything is graded (a ``SnapshotError``, exit code 2, naming what is wrong): the
record's own digest (an edited record), its layout, that it was taken for this roster (the learners added,
removed or with another repository are named), and that every stored file of the learners to grade is
there with its recorded size and SHA-256, and nothing else (a file added, changed, removed, or a link). The
files are copied out of the snapshot and checked again before each grade, so what is graded is what was
recorded even if the learner's code could write to the snapshot. The digests catch damage and edits
made without recomputing them; anyone who can write the snapshot folder can forge it whole, so keep it
where only the instructor writes (a CI artifact, a private folder).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import re
import shutil
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path

from . import roster, schema, submissions

KIND = "transformer-katas deadline snapshot"
VERSION = 1
_COMMIT = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")
_TEXT = {"type": "string"}
_TEXT_OR_NULL = {"type": ["string", "null"]}
# The record's layout, checked with kata.grading.schema (jsonschema) before it is trusted.
RECORD_SCHEMA = {
    "type": "object",
    "required": ["kind", "version", "taken", "finished", "git_host", "roster", "learners", "digest"],
    "additionalProperties": False,
    "properties": {
        "kind": {"enum": [KIND]}, "version": {"enum": [VERSION]}, "taken": _TEXT, "finished": _TEXT,
        "git_host": _TEXT, "digest": _TEXT,
        "roster": {"type": "object", "required": ["file", "digest", "students"], "additionalProperties": False,
                   "properties": {"file": _TEXT, "digest": _TEXT, "students": {"type": "array", "items": _TEXT}}},
        "learners": {"type": "array", "items": {
            "type": "object", "additionalProperties": False,
            "required": ["student", "repo", "source", "status", "reason", "commit", "committed_at", "branch",
                         "fetched_at", "folder", "files", "dropped", "branches"],
            "properties": {
                "student": _TEXT, "repo": _TEXT, "source": _TEXT, "status": {"enum": ["taken", "missing"]},
                "reason": _TEXT_OR_NULL, "commit": _TEXT_OR_NULL, "committed_at": _TEXT_OR_NULL,
                "branch": _TEXT_OR_NULL, "fetched_at": _TEXT, "folder": _TEXT,
                "files": {"type": "array", "items": {
                    "type": "object", "required": ["path", "size", "sha256"], "additionalProperties": False,
                    "properties": {"path": _TEXT, "size": {"type": "integer", "minimum": 0}, "sha256": _TEXT}}},
                "dropped": {"type": "array", "items": _TEXT}, "branches": {"type": "array", "items": _TEXT},
            }}},
    },
}


class SnapshotError(ValueError):
    """A snapshot that cannot be taken or graded; the message says why."""


@dataclass
class Loaded:
    """A checked snapshot: its record, the folder of its files, and its learners by student."""

    path: Path
    record: dict
    files: Path
    learners: dict[str, dict]


def files_folder(record: Path) -> Path:
    """Where the files of the snapshot ``record`` are: ``snapshot.json`` -> ``snapshot.files/`` beside it."""
    return record.with_name(f"{record.stem}.files")


def learner_folder(student: str) -> str:
    """The folder of one learner's files: from a hash of the name, so no name can be a path elsewhere."""
    return hashlib.sha256(student.encode("utf-8")).hexdigest()[:20]


def now() -> str:
    """The grader's clock, UTC, to the second (as the gradebook's ``created``)."""
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def digest(record: dict) -> str:
    """The SHA-256 of the record without its ``digest`` (keys sorted, compact JSON)."""
    body = {k: v for k, v in record.items() if k != "digest"}
    text = json.dumps(body, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8", errors="surrogateescape")).hexdigest()


def listing(folder: Path) -> tuple[list[dict], list[str]]:
    """Every regular file under ``folder`` (``path``, ``size``, ``sha256``, by path) and what else is there.

    Links are never followed: a link or a special file is named in the second list, not read.
    """
    files, odd = [], []
    for top, dirs, names in os.walk(folder, followlinks=False):
        here = Path(top)
        for name in [*dirs, *names]:
            path = here / name
            rel = path.relative_to(folder).as_posix()
            if path.is_symlink():
                odd.append(f"{submissions.shown_name(rel)}: a symbolic link")
            elif name in names and not path.is_file():
                odd.append(f"{submissions.shown_name(rel)}: not a regular file")
            elif name in names:
                with open(path, "rb") as f:
                    sha = hashlib.file_digest(f, "sha256").hexdigest()
                files.append({"path": rel, "size": path.stat().st_size, "sha256": sha})
        dirs[:] = [d for d in dirs if not (here / d).is_symlink()]
    return sorted(files, key=lambda f: f["path"]), odd


def differences(folder: Path, recorded: list[dict]) -> list[str]:
    """How the files under ``folder`` differ from the ``recorded`` ones ("exercises/x.py: changed"), or []."""
    if not folder.is_dir():
        return ["its folder is missing"]
    found, odd = listing(folder)
    have = {f["path"]: f for f in found}
    want = {f["path"]: f for f in recorded}
    said = list(odd)
    said += [f"{submissions.shown_name(p)}: not in the snapshot's record (added)"
             for p in sorted(set(have) - set(want))]
    said += [f"{submissions.shown_name(p)}: missing" for p in sorted(set(want) - set(have))]
    said += [f"{submissions.shown_name(p)}: changed (its size or SHA-256 is not the recorded one)"
             for p in sorted(set(want) & set(have)) if have[p] != want[p]]
    return said


# -- taking it ---------------------------------------------------------------------------------------------
def take(class_roster: roster.Roster, record: Path, *, git_host: str, jobs: int, clone_timeout: float) -> dict:
    """Fetch every learner's default-branch head into ``record``'s files folder, then write ``record``.

    A snapshot is evidence and is never overwritten: an existing ``record`` or files folder is refused.
    The files are fetched into a hidden folder beside them and renamed into place when all are in; the
    record is written last (one rename), so a record on disk always has its files.

    Raises:
        SnapshotError: ``record`` does not end in ``.json``, it or its files folder exists already, or its
            folder cannot be written.
    """
    if record.suffix != ".json":
        raise SnapshotError(f"--snapshot: {record.name} names the snapshot's record, a JSON file: give a name ending "
                            "in .json (its files go beside it, in <name>.files/)")
    folder = files_folder(record)
    for path in (record, folder):
        if path.exists() or path.is_symlink():
            raise SnapshotError(f"--snapshot: {path} exists already; a snapshot is never overwritten "
                                "(give another file name, or move the old snapshot away)")
    try:
        record.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(dir=record.parent, prefix=f".{record.stem}.partial-"))
    except OSError as err:
        raise SnapshotError(f"--snapshot: cannot write in {record.parent}: {err.strerror or err}") from None
    base = class_roster.path.resolve().parent
    taken = now()

    def one(learner: roster.Learner) -> dict:
        name = learner_folder(learner.student)
        work = staging / name
        work.mkdir()
        entry = {"student": learner.student, "repo": submissions.shown(learner.repo),
                 "source": submissions.shown(submissions.source(learner.repo, base, git_host)), "status": "missing",
                 "reason": None, "commit": None, "committed_at": None, "branch": None, "fetched_at": now(),
                 "folder": name, "files": [], "dropped": [], "branches": []}
        try:
            sub = submissions.fetch(learner.repo, work, base=base, timeout=clone_timeout, git_host=git_host)
        except Exception as err:  # noqa: BLE001 - one learner never stops the snapshot; the reason is recorded
            sub = submissions.Missing(f"the fetch failed: {type(err).__name__}: {err}")
        entry["fetched_at"] = now()
        if isinstance(sub, submissions.Missing):
            shutil.rmtree(work, ignore_errors=True)
            entry.update(reason=sub.reason, commit=sub.commit, committed_at=sub.committed_at)
            return entry
        shutil.rmtree(work / "clone", ignore_errors=True)
        files, odd = listing(work)
        if odd:  # fetch writes regular files only: anything else is a fault of this machine, said as such
            shutil.rmtree(work, ignore_errors=True)
            entry.update(reason=f"the fetched files could not be stored: {'; '.join(odd[:5])}", commit=sub.commit,
                         committed_at=sub.committed_at)
            return entry
        entry.update(status="taken", commit=sub.commit, committed_at=sub.committed_at, branch=sub.branch,
                     files=files, dropped=list(sub.dropped), branches=list(sub.branches))
        return entry

    entries: dict[str, dict] = {}
    learners = class_roster.learners
    try:
        with ThreadPoolExecutor(max_workers=max(1, min(jobs, len(learners)))) as pool:
            futures = {pool.submit(one, x): x for x in learners}
            for done, future in enumerate(as_completed(futures), start=1):
                e = future.result()
                entries[e["student"]] = e
                said = (f"{e['commit'][:7]} ({submissions.shown_name(e['branch'] or 'detached HEAD')})"
                        if e["status"] == "taken" else f"missing: {e['reason']}")
                print(f"[{done}/{len(learners)}] {e['student']}: {said}", file=sys.stderr, flush=True)
    except BaseException:  # interrupted (Ctrl-C, a full disk): no half snapshot is left to be mistaken for one
        shutil.rmtree(staging, ignore_errors=True)
        raise
    body = {
        "kind": KIND, "version": VERSION, "taken": taken, "finished": now(), "git_host": git_host,
        "roster": {"file": class_roster.path.name, "digest": class_roster.digest,
                   "students": [x.student for x in learners]},
        "learners": [entries[x.student] for x in learners],
    }
    body["digest"] = digest(body)
    staging.rename(folder)
    partial = record.with_name(f".{record.name}.partial")
    partial.write_text(json.dumps(body, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    partial.replace(record)
    return body


def summary(body: dict, record: Path) -> str:
    """The one line a snapshot run ends with."""
    learners = body["learners"]
    taken = sum(e["status"] == "taken" for e in learners)
    return (f"snapshot of {len(learners)} learners taken at {body['taken']} (grader's clock, UTC): {taken} heads "
            f"recorded, {len(learners) - taken} missing; wrote {record} and {files_folder(record)}/ "
            f"(grade it with --at {record})")


# -- grading from it ---------------------------------------------------------------------------------------
def load(path: Path, class_roster: roster.Roster, students: list[str]) -> Loaded:
    """Read the snapshot at ``path`` and check it for ``class_roster``, and the files of ``students``.

    Raises:
        SnapshotError: naming what is wrong: no such file, not a snapshot, edited after it was taken,
            taken for another roster (the learners added, removed, with another repository), or stored
            files missing, added or changed.
    """
    name = path.name
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except OSError as err:
        raise SnapshotError(f"--at: cannot read the snapshot {path}: {err.strerror or err}") from None
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as err:  # RecursionError: nested too deep
        raise SnapshotError(f"--at: {name} is not a snapshot's record (not JSON: {err}); "
                            "is it damaged, or the FILE of --snapshot?") from None
    if not isinstance(record, dict) or record.get("kind") != KIND:
        raise SnapshotError(f"--at: {name} is not a snapshot's record (take one with --snapshot FILE)")
    if record.get("version") != VERSION:
        raise SnapshotError(f"--at: {name} is a snapshot of version {record.get('version')!r}; this grader reads "
                            f"version {VERSION}")
    if record.get("digest") != digest(record):
        raise SnapshotError(f"--at: {name} was changed after it was taken: its contents no longer match its "
                            "digest (restore it from where the snapshot was kept)")
    problems = schema.errors(record, RECORD_SCHEMA)
    if problems:
        raise SnapshotError(f"--at: {name} is not laid out as a snapshot: {'; '.join(problems[:5])}")
    if record["roster"]["digest"] != class_roster.digest:
        raise SnapshotError(f"--at: {name} was taken for another roster ({record['roster']['file']}, digest "
                            f"{record['roster']['digest']}; this one, {class_roster.path.name}, has digest "
                            f"{class_roster.digest}): {_roster_change(record, class_roster)}")
    learners = {e["student"]: e for e in record["learners"]}
    if list(learners) != [x.student for x in class_roster.learners] or len(learners) != len(record["learners"]):
        raise SnapshotError(f"--at: {name}: its learners are not its roster's (it was not written by --snapshot)")
    for e in record["learners"]:
        bad_commit = e["commit"] is not None and not _COMMIT.fullmatch(e["commit"])
        if e["folder"] != learner_folder(e["student"]) or bad_commit:
            raise SnapshotError(f"--at: {name}: the entry of {e['student']!r} is not one --snapshot writes")
    files = files_folder(path)
    if not files.is_dir():
        raise SnapshotError(f"--at: {files} is missing: the snapshot's files are kept beside its record "
                            "(copy the whole folder)")
    damaged = []
    for student in students:
        e = learners[student]
        if e["status"] == "taken":
            damaged += [f"{student}: {d}" for d in differences(files / e["folder"], e["files"])]
    if damaged:
        more = f"; and {len(damaged) - 10} more" if len(damaged) > 10 else ""
        raise SnapshotError(f"--at: the files of {name} are not the ones recorded ({files}): "
                            f"{'; '.join(damaged[:10])}{more}")
    return Loaded(path=path, record=record, files=files, learners=learners)


def _roster_change(record: dict, class_roster: roster.Roster) -> str:
    """The learners added, removed, or with another repository, between the snapshot's roster and this one."""
    then = {e["student"]: e["repo"] for e in record["learners"]}
    now_ = {x.student: submissions.shown(x.repo) for x in class_roster.learners}

    def names(xs: list[str]) -> str:
        return ", ".join(xs[:20]) + (f" and {len(xs) - 20} more" if len(xs) > 20 else "")

    said = []
    for what, xs in (("added since", [s for s in now_ if s not in then]),
                     ("not in this roster", [s for s in then if s not in now_]),
                     ("another repository", [s for s in now_ if s in then and then[s] != now_[s]])):
        if xs:
            said.append(f"{what}: {names(xs)}")
    return "; ".join(said) or "the same learners and repositories in another order"


def submission(loaded: Loaded, student: str, work: Path) -> submissions.Submission | submissions.Missing:
    """What ``student`` had at the snapshot, copied into ``work`` and checked again against the record.

    Raises:
        SnapshotError: the stored files changed since :func:`load` checked them (the row is then an error).
    """
    e = loaded.learners[student]
    taken = loaded.record["taken"]
    if e["status"] != "taken":
        return submissions.Missing(f"at the deadline snapshot of {taken}: {e['reason']}", e["commit"],
                                   e["committed_at"])
    copy = work / "snapshot"
    shutil.copytree(loaded.files / e["folder"], copy, symlinks=True)
    damaged = differences(copy, e["files"])
    if damaged:  # changed since load() checked them: an error row, nothing else is graded in their place
        raise SnapshotError(f"the snapshot's files of {student!r} changed while the class was graded: "
                            f"{'; '.join(damaged[:5])}")
    notebooks = copy / "notebooks"
    return submissions.Submission(
        commit=e["commit"], committed_at=e["committed_at"], exercises=copy / "exercises",
        note=f"graded at the deadline snapshot of {taken}", late=0, dropped=list(e["dropped"]),
        branches=list(e["branches"]), notebooks=notebooks if notebooks.is_dir() else None, branch=e["branch"])
