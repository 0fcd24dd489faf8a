"""Copying signals for ``report.html``: learners who share code the class does not, or fail the same steps.

Two signals for a human to read, never a verdict:

- **Rare shared code.** Each learner's graded code is compared as a whole: every file kept in
  ``students/<name>/graded/exercises/``, whatever its name, so code moved out of its chapter file (into
  ``exercises/mine.py``, imported by the chapter) is compared like any other. Each file is fingerprinted: its
  code normalised by copydetect (names become ``V``, strings ``S``, comments and layout dropped, so renamed
  variables and moved whitespace do not hide a copy), then every ``NOISE``-character slice of it hashed. The
  course's own code is boilerplate and never counts: the fingerprints of every file of its ``exercises/`` (the
  stubs: docstrings, signatures, given input checks) and ``solutions/`` (the shape of the answer everyone is led
  to), in the course copy's working tree and at its ``HEAD`` commit. What is left is ranked by how rare it is
  in the class: a fingerprint that n learners hold counts 2/n for each pair of them (1 when only the pair holds
  it), and one that more than ``COMMON`` of the learners (or more than ``MAX_HOLDERS``) hold counts for nothing:
  code that half the class shares is not a signal. A pair is listed when its rare shared code reaches
  ``MIN_RARE``, most first, with the files each of the two holds it in, chapter by chapter.
- **The same failing steps.** Learners whose set of failing steps and checks (failed, error, timed out; not
  "not started") is identical and at least ``MIN_SAME_FAILURES`` long, in groups of at most ``MAX_GROUP``
  (a set that many share is a common mistake, not a signal).

Why copydetect, and why not all of it: copydetect (a Python package on PyPI) does the part that needs a
library, tokenising Python with Pygments and normalising it; Dolos would do the same with tree-sitter but is a
Node tool that would need npm and Node on every grading machine, for no better answer on one language.
copydetect's own fingerprints are hashed with Python's ``hash()``, which is salted anew in every process
(``PYTHONHASHSEED``): fingerprints kept in the cache by one run would never match those of the next, so here
its normalised code is hashed with BLAKE2b (``hashlib``), the same in every process. Its pairwise comparison
(``compare_files``, the HTML report) locates every copied slice at a hundred times the cost, pair by pair, and
knows nothing of the class: how many learners hold a fingerprint is counted here.

Chapter by chapter, by where the shared code is found rather than by what a chapter file imports: a chapter
can load another file by ``importlib``, ``exec`` or a computed name, which no reading of its imports follows,
while a fingerprint is found wherever the code is. A shared slice is shown against the file each learner holds
it in (``chapter04_attention.py`` ↔ ``mine.py``), under the chapter of whichever of the two is a chapter file.

Short functions have few ways to be right: two honest learners can look alike. The report says so.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import subprocess
import tarfile
from collections import defaultdict
from pathlib import Path

NOISE = 25  # copydetect's default k: a shared slice shorter than this many characters of normalised code never counts
COMMON = 0.2  # a fingerprint more than this share of the learners hold is common, not a signal
MAX_HOLDERS = 50  # nor one that more learners hold (it would count 2/50 at most, and cost 1,225 pairs)
MIN_RARE = 60.0  # the least rare shared code for a pair to be listed (60 slices only the two hold: ~5 lines)
MAX_BYTES = 2_000_000  # a learner's files compared, in all (the course's own stubs are 0.15 MB)
RANGE = 4_000_000  # fingerprints of the class counted at a time (~100 MB of arrays)
MIN_SAME_FAILURES = 3
MAX_GROUP = 4
FAILING = ("failed", "error", "timed out")
_CHAPTER = re.compile(r"chapter(\d+)_")


def graded_folder(out: Path, student: str) -> Path:
    """Where a learner's graded files are kept: ``students/<name>/graded/``."""
    return out / "students" / student / "graded"


def fingerprints(text: str):  # noqa: ANN201 - a numpy array
    """The sorted unique fingerprints of one piece of Python code.

    copydetect normalises the code (``filter_code``: names ``V``, functions ``F``, strings ``S``, comments and
    whitespace dropped); every slice of ``NOISE`` characters of it (copydetect's k, window 1: every slice, not
    a winnowed sample) is hashed to 64 bits with BLAKE2b, not with copydetect's salted ``hash()`` (see the
    module's docstring), so the same code has the same fingerprints in every process and every run.
    """
    import numpy as np
    from copydetect.utils import filter_code

    code, _ = filter_code(text, "code.py", language="python")
    count = max(len(code) - NOISE + 1, 0)
    slices = (code[i:i + NOISE].encode("utf-8", "surrogatepass") for i in range(count))
    hashes = np.fromiter((int.from_bytes(hashlib.blake2b(s, digest_size=8).digest(), "little", signed=True)
                          for s in slices), dtype=np.int64, count=count)
    return np.unique(hashes)


class _Prints:
    """Fingerprints by a file's contents, kept in ``cache`` for the next run."""

    def __init__(self, cache: Path | None) -> None:
        import importlib.metadata

        self.cache = cache / "fingerprints" if cache is not None else None
        self.salt = f"{NOISE}\0blake2b-8\0{importlib.metadata.version('copydetect')}\0".encode()

    def __call__(self, data: bytes):  # noqa: ANN204 - a numpy array, or None when the file is not UTF-8 text
        """The fingerprints of ``data``, or None when it is not UTF-8 text (nothing Python would run)."""
        import numpy as np

        key = hashlib.sha256(self.salt + data).hexdigest()
        stored = self.cache / key[:2] / f"{key}.npy" if self.cache is not None else None
        if stored is not None and stored.is_file():
            with contextlib.suppress(OSError, ValueError):  # a broken entry is computed again
                return np.load(stored, allow_pickle=False)
        try:
            hashes = fingerprints(data.decode("utf-8"))
        except UnicodeDecodeError:
            return None
        if stored is not None:
            with contextlib.suppress(OSError):  # a cache that cannot be written only costs time
                stored.parent.mkdir(parents=True, exist_ok=True)
                partial = stored.with_suffix(f".{os.getpid()}.tmp")
                with open(partial, "wb") as f:
                    np.save(f, hashes, allow_pickle=False)
                partial.replace(stored)
        return hashes


def course_files(course_root: Path) -> list[tuple[str, bytes]]:
    """The course's own code: every file of ``exercises/`` and ``solutions/``, in the working tree and at ``HEAD``.

    At ``HEAD`` too, because the stubs handed out are the committed ones: an instructor who tried the chapters
    in the course copy has their own answers in its working tree. Not a git repository: the working tree alone.
    """
    found = []
    for sub in ("exercises", "solutions"):
        folder = course_root / sub
        for path in sorted(folder.rglob("*.py")) if folder.is_dir() else []:
            if path.is_file() and "__pycache__" not in path.parts:
                found.append((path.relative_to(course_root).as_posix(), path.read_bytes()))
        try:
            proc = subprocess.run(["git", "-C", str(course_root), "archive", "--format=tar", "HEAD", "--", sub],
                                  capture_output=True, timeout=120, check=False)
        except (OSError, subprocess.TimeoutExpired):
            continue
        if proc.returncode == 0:
            import io

            with tarfile.open(fileobj=io.BytesIO(proc.stdout)) as tar:
                for member in tar.getmembers():
                    if member.isfile() and member.name.endswith(".py"):
                        found.append((f"HEAD:{member.name}", tar.extractfile(member).read()))
    return found


def learner_files(folder: Path) -> tuple[list[tuple[str, bytes]], list[str]]:
    """Every regular file under ``folder`` by its path there, up to ``MAX_BYTES`` in all; and what was left out.

    Links are left out (a link is not the learner's code, and may lead anywhere), as are ``__pycache__``
    folders; a file past ``MAX_BYTES`` is left out and said.
    """
    files, left, total = [], [], 0
    for top, dirs, names in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for name in sorted(names):
            path = Path(top) / name
            relative = path.relative_to(folder).as_posix()
            if path.is_symlink() or not path.is_file():
                continue
            size = path.stat().st_size
            if total + size > MAX_BYTES:
                left.append(f"{relative}: past {MAX_BYTES:,} bytes of files in all, not compared")
                continue
            total += size
            files.append((relative, path.read_bytes()))
    return files, left


def alike_code(folders: dict[str, Path], course_root: Path, cache: Path | None = None) -> dict:
    """Pairs of learners who share code the rest of the class does not, most rare shared code first.

    Args:
        folders: {student: the folder of their graded files (``graded/exercises/``)}.
        course_root: the course copy, whose ``exercises/`` and ``solutions/`` are boilerplate.
        cache: a folder for fingerprints, or None.

    Returns:
        ``{"pairs": [{"students": [a, b], "rare": their rare shared code, "shared": fingerprints shared,
        "share": [share of a's code found in b's, of b's in a's], "chapters": [{"chapter": number or None,
        "files": [a's file, b's file], "rare", "shared"}]}], "learners": learners compared,
        "holders": the most learners a counted fingerprint is held by, "skipped": ["student: file: why"]}``.
    """
    import numpy as np

    prints, seen = _Prints(cache), {}

    def own(data: bytes, base):  # noqa: ANN001, ANN202 - what is not ``base`` of a file's prints, once a content
        key = hashlib.sha256(data).digest()
        if key not in seen:  # the stubs a class leaves alone are one content: fingerprinted and kept once
            hashes = prints(data)
            seen[key] = hashes if hashes is None or base is None else np.setdiff1d(hashes, base, assume_unique=True)
        return seen[key]

    base = [p for _, data in course_files(course_root) if (p := own(data, None)) is not None]
    base = np.unique(np.concatenate(base)) if base else np.zeros(0, dtype=np.int64)
    seen.clear()
    held: dict[str, list[tuple[str, object]]] = {}
    skipped = []
    compared = [s for s in sorted(folders) if folders[s].is_dir()]
    for student in compared:
        files, left = learner_files(folders[student])
        skipped += [f"{student}: {said}" for said in left]
        theirs = []
        for name, data in files:
            mine = own(data, base)
            if mine is None:
                skipped.append(f"{student}: {name}: not UTF-8 text, not compared")
            elif mine.size:
                theirs.append((name, mine))
        if theirs:
            held[student] = theirs
    students = sorted(held)
    whole = [np.unique(np.concatenate([h for _, h in held[s]])) for s in students]
    holders = max(2, min(int(COMMON * len(compared)), MAX_HOLDERS))  # of the class, with nothing done or not
    values, counts, scores = _rare_scores(whole, holders)
    pairs = [_pair(students[i], students[j], score, held, whole[i], whole[j], values, counts)
             for (i, j), score in scores.items() if score >= MIN_RARE]
    pairs.sort(key=lambda p: (-p["rare"], p["students"]))
    return {"pairs": pairs, "learners": len(compared), "holders": holders, "skipped": skipped}


def _rare_scores(whole: list, holders: int):  # noqa: ANN202 - numpy arrays and a dict
    """Each pair's rare shared code: the sum of 2/n over the fingerprints both hold, n (2 to ``holders``) holding each.

    Pairs are found fingerprint by fingerprint (the learners holding each, grouped by how many), so the cost
    follows the rare shared fingerprints, not the class squared times every fingerprint; and one range of
    fingerprints at a time (each learner's are sorted), so memory follows a range, not the whole class.

    Returns:
        The rare fingerprints (sorted), how many learners hold each, and {(i, j): score} for i < j.
    """
    import numpy as np

    learners = len(whole)
    ids, weights = np.zeros(0, dtype=np.int64), np.zeros(0)
    rare, held_by = [], []
    ranges = max(1, sum(w.size for w in whole) // RANGE) if learners >= 2 else 0
    cuts = [-(2**63) + k * (2**64 // ranges) for k in range(1, ranges)] if ranges else []
    for lo, hi in zip([None, *cuts], [*cuts, None], strict=True) if ranges else ():
        part = [w[(0 if lo is None else np.searchsorted(w, lo)):(w.size if hi is None else np.searchsorted(w, hi))]
                for w in whole]
        every = np.concatenate(part)
        owner = np.repeat(np.arange(learners, dtype=np.int64), [p.size for p in part])
        order = np.argsort(every, kind="stable")  # a fingerprint's holders together, in ascending order
        every, owner = every[order], owner[order]
        starts = np.flatnonzero(np.r_[True, every[1:] != every[:-1]])
        counts = np.diff(np.r_[starts, every.size])
        keep = (counts >= 2) & (counts <= holders)
        rare.append(every[starts[keep]])
        held_by.append(counts[keep])
        for n in range(2, holders + 1):
            first = starts[counts == n]
            if not first.size:
                continue
            a, b = np.triu_indices(n, 1)
            step = max(1, 4_000_000 // a.size)  # at most ~4 million pairs at a time
            for at in range(0, first.size, step):
                group = owner[first[at:at + step, None] + np.arange(n)]
                new = (group[:, a] * learners + group[:, b]).ravel()
                ids, inverse = np.unique(np.r_[ids, new], return_inverse=True)
                weights = np.bincount(inverse, np.r_[weights, np.full(new.size, 2.0 / n)], minlength=ids.size)
    scores = {(int(k) // learners, int(k) % learners): round(float(w), 1) for k, w in zip(ids, weights, strict=True)}
    values = np.concatenate(rare) if rare else np.zeros(0, dtype=np.int64)
    return values, np.concatenate(held_by) if held_by else np.zeros(0, dtype=np.int64), scores


def _pair(a: str, b: str, score: float, held: dict, whole_a, whole_b, values, counts) -> dict:  # noqa: ANN001
    """One pair's rare shared code (``score``, as ranked), and where: by the files each of the two holds it in."""
    import numpy as np

    shared = np.intersect1d(whole_a, whole_b, assume_unique=True)
    at = np.searchsorted(values, shared).clip(max=max(values.size - 1, 0))
    mask = values[at] == shared if values.size else np.zeros(shared.size, dtype=bool)
    rare_prints, weight = shared[mask], 2.0 / counts[at[mask]]

    def where(files: list) -> list:  # the first of the learner's files (by path) holding each rare fingerprint
        found = np.full(rare_prints.size, -1)
        for k, (_, hashes) in enumerate(files):
            found[(found < 0) & np.isin(rare_prints, hashes, assume_unique=True)] = k
        return found

    in_a, in_b = where(held[a]), where(held[b])
    by_files: dict[tuple[int, int], list[float]] = defaultdict(lambda: [0.0, 0])
    for i, j, w in zip(in_a.tolist(), in_b.tolist(), weight.tolist(), strict=True):
        by_files[(i, j)][0] += w
        by_files[(i, j)][1] += 1
    chapters = []
    for (i, j), (w, n) in by_files.items():
        file_a, file_b = held[a][i][0], held[b][j][0]
        number = _chapter(file_a)
        chapters.append({"chapter": number if number is not None else _chapter(file_b), "files": [file_a, file_b],
                         "rare": round(w, 1), "shared": n})
    chapters.sort(key=lambda c: (-c["rare"], c["files"]))
    return {"students": [a, b], "rare": score, "shared": int(shared.size),
            "share": [round(shared.size / whole_a.size, 3), round(shared.size / whole_b.size, 3)],
            "chapters": chapters}


def _chapter(file: str) -> int | None:
    """The chapter of a course file name (``chapter04_attention.py``: 4), or None for any other name."""
    found = _CHAPTER.match(Path(file).name)
    return int(found.group(1)) if found else None


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
        code = alike_code(folders, course_root, cache=cache)
    except ImportError:
        code, error = {}, "copydetect is not installed (it comes with the grade-class session: nox -s grade-class)"
    except Exception as err:  # noqa: BLE001 - one odd file never costs the class its report
        code, error = {}, f"the comparison failed: {type(err).__name__}: {str(err)[:200]}"
    return {"compared": sum(f.is_dir() for f in folders.values()), "code": code.get("pairs", []),
            "min_rare": MIN_RARE, "holders": code.get("holders"), "common": COMMON,
            "skipped": code.get("skipped", []), "failures": same_failures(graded),
            "min_same_failures": MIN_SAME_FAILURES, "error": error}
