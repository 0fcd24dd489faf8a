"""Copying signals for ``report.html``: learners whose code is alike, and learners who fail the same steps.

Two signals for a human to read, never a verdict:

- **Alike code.** Each learner's graded files (``students/<name>/graded/exercises/``) are compared chapter
  file with chapter file by their copydetect fingerprints (winnowed k-grams of the code's normalised tokens,
  so renamed variables and moved whitespace do not hide a copy), with the course's own stubs (``exercises/``
  of this course copy) as boilerplate: the handed-out signatures and docstrings never count. A pair is
  listed when, in some chapter, at least ``ALIKE`` of one learner's fingerprints are found in the other's.
- **The same failing steps.** Learners whose set of failing steps and checks (failed, error, timed out; not
  "not started") is identical and at least ``MIN_SAME_FAILURES`` long, in groups of at most ``MAX_GROUP``
  (a set that many share is a common mistake, not a signal).

Short functions have few ways to be right: two honest learners can look alike. The report says so.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

ALIKE = 0.6  # share of a learner's code (after the stubs are taken out) found in another's
MIN_SAME_FAILURES = 3
MAX_GROUP = 4
FAILING = ("failed", "error", "timed out")


def graded_folder(out: Path, student: str) -> Path:
    """Where a learner's graded files are kept: ``students/<name>/graded/``."""
    return out / "students" / student / "graded"


def alike_code(folders: dict[str, Path], boilerplate: Path, threshold: float = ALIKE,
               cache: Path | None = None) -> list[dict]:
    """Pairs of learners whose code is alike, most alike first.

    Each chapter file is fingerprinted by copydetect (``CodeFingerprint``: its tokens normalised, so names
    and layout do not count, hashed in k-grams of ``NOISE`` tokens and winnowed), with the fingerprints of the
    course's stub of that file removed as boilerplate. The similarity of A to B is the share of A's
    fingerprints found in B's (the measure of MOSS-like tools; copydetect's own ``compare_files`` also locates
    every copied slice, which costs a hundred times more and a report here does not show). Fingerprints are
    kept in ``cache`` by the file's and the stub's contents, so a re-run fingerprints only what changed.

    Args:
        folders: {student: the folder of their graded ``.py`` files}.
        boilerplate: the course's stubs (never counted as alike).
        threshold: the least share of one learner's fingerprints found in the other's, in some chapter.
        cache: a folder for fingerprints, or None.

    Returns:
        ``[{"students": [a, b], "chapters": [{"file", "similarity": [a's share, b's share], "shared"}],
        "similarity": the largest share}]``.
    """
    import numpy as np

    folders = {s: f for s, f in folders.items() if f.is_dir()}
    by_name: dict[str, list[tuple[str, Path]]] = defaultdict(list)  # one comparison per chapter file
    for student in sorted(folders):
        for path in sorted(folders[student].rglob("*.py")):
            if path.is_file() and not path.is_symlink():
                by_name[path.relative_to(folders[student]).as_posix()].append((student, path))
    pairs: dict[tuple[str, str], list[dict]] = defaultdict(list)
    for name, files in sorted(by_name.items()):
        if len(files) < 2:
            continue
        stub = boilerplate / name
        stub_hashes = _fingerprint(stub, None, cache) if stub.is_file() else np.array([], dtype=np.int64)
        prints = [(student, _fingerprint(path, stub_hashes, cache)) for student, path in files]
        prints = [(student, h) for student, h in prints if h.size]  # nothing of their own (the stub): no signal
        counts = _shared_counts([h for _, h in prints])
        sizes = [h.size for _, h in prints]
        for i, j in zip(*np.nonzero(np.triu(counts, k=1)), strict=True):
            shared = int(counts[i, j])
            sims = [shared / sizes[i], shared / sizes[j]]
            if max(sims) >= threshold:
                pairs[(prints[i][0], prints[j][0])].append(
                    {"file": name, "similarity": [round(x, 3) for x in sims], "shared": shared})
    found = [{"students": list(k), "chapters": v, "similarity": max(max(c["similarity"]) for c in v)}
             for k, v in pairs.items()]
    return sorted(found, key=lambda p: (-p["similarity"], -len(p["chapters"]), p["students"]))


def _shared_counts(prints: list):  # noqa: ANN202 - a numpy array
    """``counts[i, j]``: how many fingerprints files i and j share (one product of 0/1 matrices, not n² loops)."""
    import numpy as np

    if not prints:
        return np.zeros((0, 0), dtype=np.int64)
    values, where = np.unique(np.concatenate(prints), return_inverse=True)
    if values.size * len(prints) > 50_000_000:  # huge files: pair by pair keeps memory small
        counts = np.zeros((len(prints), len(prints)), dtype=np.int64)
        for i, a in enumerate(prints):
            for j in range(i + 1, len(prints)):
                counts[i, j] = counts[j, i] = np.intersect1d(a, prints[j], assume_unique=True).size
        return counts
    member = np.zeros((len(prints), values.size), dtype=np.float32)
    rows = np.repeat(np.arange(len(prints)), [p.size for p in prints])
    member[rows, where] = 1.0
    return np.rint(member @ member.T).astype(np.int64)


NOISE = 25  # copydetect's default: a match shorter than this many tokens is never counted


def _fingerprint(path: Path, boilerplate, cache: Path | None):  # noqa: ANN001, ANN202 - numpy arrays
    """The unique fingerprints (copydetect's) of one file, without ``boilerplate``'s; cached by contents."""
    import hashlib
    import importlib.metadata

    import numpy as np
    from copydetect import CodeFingerprint

    data = path.read_bytes()
    key = hashlib.sha256(b"\0".join([data, b"" if boilerplate is None else boilerplate.tobytes(), str(NOISE).encode(),
                                      importlib.metadata.version("copydetect").encode()])).hexdigest()
    stored = cache / "fingerprints" / key[:2] / f"{key}.npy" if cache is not None else None
    if stored is not None and stored.is_file():
        try:
            return np.load(stored, allow_pickle=False)
        except (OSError, ValueError):
            pass
    try:
        hashes = CodeFingerprint(str(path), k=NOISE, win_size=1, boilerplate=boilerplate
                                 if boilerplate is not None else [], filter=True).hashes
    except (UnicodeDecodeError, ValueError):  # not UTF-8 text, or nothing Python could tokenise
        hashes = []
    hashes = np.unique(np.fromiter(hashes, dtype=np.int64, count=len(hashes)))  # copydetect gives a set
    if boilerplate is not None and boilerplate.size:  # every occurrence of the stub's, not only the first
        hashes = np.setdiff1d(hashes, boilerplate, assume_unique=True)
    if stored is not None:
        try:
            stored.parent.mkdir(parents=True, exist_ok=True)
            np.save(stored, hashes, allow_pickle=False)
        except OSError:
            pass
    return hashes


def same_failures(rows: list[dict]) -> list[dict]:
    """Groups (2 to ``MAX_GROUP`` learners) whose failing steps are the same set of ``MIN_SAME_FAILURES`` or more."""
    by_set: dict[frozenset, list[str]] = defaultdict(list)
    for r in rows:
        failing = frozenset(s["id"] for c in (r.get("results") or {}).get("chapters", []) for s in c["steps"]
                            if s["status"] in FAILING)
        if len(failing) >= MIN_SAME_FAILURES:
            by_set[failing].append(r["student"])
    groups = [{"students": sorted(names), "steps": sorted(steps, key=_step_order)}
              for steps, names in by_set.items() if 2 <= len(names) <= MAX_GROUP]
    return sorted(groups, key=lambda g: (-len(g["steps"]), g["students"]))


def _step_order(step_id: str) -> tuple:
    head, _, rest = step_id.partition(":")
    major, _, minor = head.partition(".")
    return (int(major) if major.isdigit() else 0, rest == "" and minor.isdigit() and int(minor) or 0, rest)


def signals(book: dict, out: Path, course_root: Path, cache: Path | None = None) -> dict:
    """Both signals for the graded rows of ``book``; ``error`` says why alike code could not be compared."""
    graded = [r for r in book["rows"] if r["status"] == "graded"]
    folders = {r["student"]: graded_folder(out, r["student"]) / "exercises" for r in graded}
    error = None
    try:
        code = alike_code(folders, course_root / "exercises", cache=cache)
    except ImportError:
        code, error = [], "copydetect is not installed (it comes with the grade-class session: nox -s grade-class)"
    except Exception as err:  # noqa: BLE001 - one odd file never costs the class its report
        code, error = [], f"the comparison failed: {type(err).__name__}: {str(err)[:200]}"
    return {"alike": ALIKE, "compared": sum(f.is_dir() for f in folders.values()), "code": code,
            "failures": same_failures(graded), "min_same_failures": MIN_SAME_FAILURES, "error": error}
