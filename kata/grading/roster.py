"""The class roster of ``nox -s grade-class``: a CSV file with a header and the columns ``student,repo``.

``repo`` is a git URL, an ``owner/name`` on GitHub, or a local path (absolute, or relative to the roster's
folder). Any other column (section, email, ...) is carried into the gradebook as it is. A bad row stops
everything before anything is graded, with every problem named by its line::

    roster.csv, line 4: duplicate student 'alice' (first on line 2)
"""

from __future__ import annotations

import csv
import hashlib
import os
import re
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from . import submissions

REQUIRED = ("student", "repo")
# Names the gradebook uses itself: an extra column may not take one.
RESERVED = {"student", "repo", "commit", "committed_at", "status", "points", "max_points", "percent", "note",
            "late", "sandbox", "other_branches", "not_graded", "notebooks", "shared_with",
            "private_points", "private_max_points"}
_BAD_NAME = re.compile(r"[/\\\x00-\x1f\x7f]")
# A student's name is a folder name (students/<name>/): file systems count bytes (255 at most on ext4,
# APFS and NTFS alike), and UTF-8 takes up to 4 per character, so the limit is in bytes, not characters.
MAX_NAME_BYTES = 100


class RosterError(ValueError):
    """The roster cannot be used; the message names every bad line."""


@dataclass(frozen=True)
class Learner:
    """One row of the roster."""

    student: str
    repo: str
    line: int
    extra: dict[str, str] = field(default_factory=dict)
    warnings: tuple[str, ...] = ()  # look-alike characters in the name or a column (:func:`look_alikes`)


@dataclass(frozen=True)
class Roster:
    """Every learner, in the roster's order, and the extra columns in the header's order."""

    path: Path
    learners: list[Learner]
    extra_columns: list[str]

    @property
    def digest(self) -> str:
        """A hash of the students and repositories: shards of one class must agree on it."""
        text = "\n".join(f"{x.student}\t{x.repo}" for x in self.learners)
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    def shard(self, index: int, count: int) -> list[Learner]:
        """The ``index``-th (1-based) of ``count`` slices: learners sorted by student, every ``count``-th one.

        The slices depend on the students' names only (not on the roster's order), are as even as they can
        be, and together hold every learner exactly once.
        """
        ordered = sorted(self.learners, key=lambda x: x.student)
        mine = {x.student for x in ordered[index - 1 :: count]}
        return [x for x in self.learners if x.student in mine]


def parse_shard(text: str) -> tuple[int, int]:
    """``"2/4"`` -> (2, 4); anything else is a ``ValueError`` that says what is expected."""
    m = re.fullmatch(r"\s*(\d+)\s*/\s*(\d+)\s*", text or "")
    if not m or not 1 <= int(m.group(1)) <= int(m.group(2)):
        raise ValueError(f"--shard takes I/N with 1 ≤ I ≤ N, e.g. 1/4; got {text!r}")
    return int(m.group(1)), int(m.group(2))


def load(path: Path) -> Roster:
    """Read and check a roster; raise ``RosterError`` naming every bad line (nothing is graded then)."""
    try:
        text = path.read_text(encoding="utf-8-sig")
    except OSError as err:
        raise RosterError(f"cannot read the roster {path}: {err.strerror or err}") from None
    except UnicodeDecodeError:
        raise RosterError(f"{path.name}: not UTF-8 text (save the roster as CSV, UTF-8)") from None
    name = path.name
    reader = csv.reader(text.splitlines(keepends=True))
    problems: list[str] = []
    try:
        header = next(reader)
    except StopIteration:
        raise RosterError(f"{name}: the roster is empty; it needs a header line 'student,repo'") from None
    columns = [c.strip() for c in header]
    lowered = [c.lower() for c in columns]
    for required in REQUIRED:
        if required not in lowered:
            problems.append(f"{name}, line 1: the header has no column {required!r} (it has: {', '.join(columns)})")
    seen_columns: dict[str, int] = {}
    for i, column in enumerate(lowered):
        if not column:
            problems.append(f"{name}, line 1: column {i + 1} of the header has no name")
        elif column in seen_columns:
            problems.append(f"{name}, line 1: the column {columns[i]!r} appears twice")
        elif column not in REQUIRED and (column in RESERVED or re.fullmatch(r"ch\d+", column)):
            problems.append(f"{name}, line 1: the column {columns[i]!r} is a gradebook column; rename it")
        seen_columns.setdefault(column, i)
    if problems:
        raise RosterError("\n".join(problems))
    extra_columns = [c for c in columns if c.lower() not in REQUIRED]
    learners: list[Learner] = []
    first_line: dict[str, int] = {}
    folded: dict[str, tuple[str, int]] = {}
    line = 1
    for row in reader:
        line = reader.line_num
        if not row or all(not cell.strip() for cell in row):
            problems.append(f"{name}, line {line}: an empty row (remove it)")
            continue
        if len(row) > len(columns):
            surplus = ", ".join(repr(c) for c in row[len(columns):])
            problems.append(f"{name}, line {line}: {len(row)} values for {len(columns)} columns "
                            f"(values under no column: {surplus}; a comma inside a value needs quotes)")
            continue
        values = {lowered[i]: (row[i].strip() if i < len(row) else "") for i in range(len(columns))}
        student, repo = values["student"], values["repo"]
        if not student:
            problems.append(f"{name}, line {line}: no student")
        elif _BAD_NAME.search(student) or student.startswith("."):
            problems.append(f"{name}, line {line}: the student {student!r} cannot name a folder "
                            "(no '/', '\\', control characters or leading '.')")
        elif len(student.encode("utf-8")) > MAX_NAME_BYTES:
            problems.append(f"{name}, line {line}: the student {student[:20]!r}… is {len(student.encode('utf-8'))} "
                            f"bytes long in UTF-8, over the {MAX_NAME_BYTES} a folder name may take here (a letter "
                            "such as 'é' takes 2 bytes, '李' 3); shorten it")
        elif student in first_line:
            problems.append(f"{name}, line {line}: duplicate student {student!r} (first on line {first_line[student]})")
        elif folded_name(student) in folded:
            other, at = folded[folded_name(student)]
            problems.append(f"{name}, line {line}: the student {student!r} differs from {other!r} (line {at}) only in "
                            "case or spaces: their folders would be one on macOS and Windows; tell them apart")
        if student:
            folded.setdefault(folded_name(student), (student, line))
        if not repo:
            problems.append(f"{name}, line {line}: no repo for {student or 'this row'!r}")
        if student and student not in first_line:
            first_line[student] = line
        extra = {columns[i]: values[lowered[i]] for i in range(len(columns)) if lowered[i] not in REQUIRED}
        said = tuple(f"{name}, line {line}: {warning}" for warning in look_alikes({"student": student, **extra}))
        learners.append(Learner(student=student, repo=repo, line=line, extra=extra, warnings=said))
    if problems:
        raise RosterError("\n".join(problems))
    if not learners:
        raise RosterError(f"{name}: the roster has a header but no learners")
    return Roster(path=path, learners=learners, extra_columns=extra_columns)


# Columns holding a person's name: each word is checked on its own there ("Анна Smith" is two honest words);
# in any other column (an e-mail, an LMS id, a section) the whole value is one word.
NAME_COLUMNS = {"student", "name", "fullname", "firstname", "lastname", "givenname", "familyname", "surname"}
# Scripts that are written together in one word (Unicode's UTS #39): Japanese, Korean, Chinese with Bopomofo.
_TOGETHER = ({"HAN", "HIRAGANA", "KATAKANA"}, {"HAN", "HANGUL"}, {"HAN", "BOPOMOFO"})


def look_alikes(values: dict[str, str]) -> list[str]:
    """A warning for each value (``{column: value}``) with characters that can pass for others.

    - a word of letters from more than one script, as ``аna@example.edu`` with a Cyrillic ``а``: it reads as
      ``ana@example.edu`` and is not (one learner passing for another, an LMS id matching nobody);
    - a compatibility character (fullwidth ``ｅ``, mathematical ``𝐞``: Unicode's NFKC form differs);
    - an invisible character (a zero-width space, a direction mark: Unicode category Cf).

    Only a warning (printed, and in the learner's note): names in two scripts exist. A letter's script is
    the first word of its Unicode name (LATIN, CYRILLIC, GREEK, CJK for Han...): the standard library has
    no script property, and this is the part of UTS #39's mixed-script test a roster needs, without a
    package for the grader to install.
    """
    warnings = []
    for column, value in values.items():
        key = re.sub(r"[\s_-]+", "", column).casefold()
        words = re.findall(r"[^\W\d_]+", value) if key in NAME_COLUMNS else [value]
        found = []
        for word in words:
            scripts: dict[str, list[str]] = {}
            for c in word:
                script = _script(c)
                if script:
                    scripts.setdefault(script, []).append(c)
            if len(scripts) > 1 and not any(set(scripts) <= together for together in _TOGETHER):
                main = max(scripts, key=lambda k: len(scripts[k]))
                odd = [c for k, cs in scripts.items() if k != main for c in cs]
                names = " and ".join(sorted(k.title() for k in scripts))
                found.append(f"mixes {names} letters ({_described(odd)})")
        odd = [c for c in value if unicodedata.normalize("NFKC", c) != unicodedata.normalize("NFC", c)
               and unicodedata.category(c)[0] in "LN"]
        if odd:
            found.append(f"has compatibility characters that pass for others ({_described(odd)})")
        hidden = [c for c in value if unicodedata.category(c) == "Cf"]
        if hidden:
            found.append(f"has invisible characters ({_described(hidden)})")
        if found:
            warnings.append(f"the {column} {submissions.shortened(repr(value), 120)} {'; '.join(found)}: a look-alike "
                            "of another? check it")
    return warnings


def _script(c: str) -> str | None:
    """The script of a letter (the first word of its Unicode name; CJK is Han), or None for anything else."""
    if not unicodedata.category(c).startswith("L"):
        return None  # digits, punctuation, marks and spaces belong to every script
    word = unicodedata.name(c, "").split(" ", 1)[0]
    if word == "CJK":
        return "HAN"
    return word if word.isalpha() and word not in ("MODIFIER", "FULLWIDTH", "HALFWIDTH", "MATHEMATICAL") else None


def _described(chars: list[str]) -> str:
    """The first three characters, each with its Unicode name and code point."""
    unique = list(dict.fromkeys(chars))
    said = ", ".join(f"{c!r}: {unicodedata.name(c, 'unnamed')}, U+{ord(c):04X}" for c in unique[:3])
    return said + (f" and {len(unique) - 3} more" if len(unique) > 3 else "")


def folded_name(student: str) -> str:
    """A name as macOS and Windows folders compare it: one Unicode form, case folded, spaces collapsed."""
    return " ".join(unicodedata.normalize("NFC", student).casefold().split())


def shared(learners: list[Learner], where: Callable[[str], str],
           git_host: str = "https://github.com") -> dict[str, list[Learner]]:
    """Learners whose repositories are one (``where`` maps a roster's repo to where it is fetched from).

    Repositories are compared by identity (:func:`submissions.identity`), not by spelling: a trailing ``/``,
    ``.git``, a symbolic link, ``ssh://`` for ``https://``, a user, port ``:443``, ``www.`` or upper case on
    GitHub do not make another repository. Returns ``{student: [the other learners with the same
    repository]}`` for every learner who shares one.
    """
    by_place: dict[str, list[Learner]] = {}
    for x in learners:
        by_place.setdefault(submissions.identity(where(x.repo), git_host), []).append(x)
    return {x.student: [y for y in group if y is not x] for group in by_place.values() if len(group) > 1
            for x in group}


def repository_problems(roster: Roster, where: Callable[[str], str], sharing: dict[str, list[Learner]], *,
                        outside: bool = True, shared: bool = True) -> list[str]:
    """Both checks' lines (``_outside``, ``_shared``) at once, in the roster's line order.

    One list sorted by line reads as the roster does: an instructor fixes it from the top, and a line that fails
    both checks has its two messages together (outside first).
    """
    found = ([(x.line, 0, said) for x, said in _outside(roster, where)] if outside else []) + \
        ([(x.line, 1, said) for x, said in _shared(roster, sharing)] if shared else [])
    return [said for _, _, said in sorted(found, key=lambda f: f[:2])]


def _shared(roster: Roster, sharing: dict[str, list[Learner]]) -> list[tuple[Learner, str]]:
    problems = []
    for x in roster.learners:
        earlier = [y for y in sharing.get(x.student, []) if y.line < x.line]
        if earlier:
            also = "" if x.repo == earlier[0].repo else f" (there written {_said(earlier[0].repo)})"
            problems.append((x, f"{roster.path.name}, line {x.line}: {x.student!r} has the repository of "
                                f"{earlier[0].student!r} (line {earlier[0].line}): {_said(x.repo)}{also}; one "
                                "repository per learner (--allow-shared grades it for each and flags the rows)"))
    return problems


def _outside(roster: Roster, where: Callable[[str], str]) -> list[tuple[Learner, str]]:
    """A line for every learner whose repository is a local folder outside the roster's folder.

    A local path can name any repository on the grading machine (the instructor's own course copy, with its
    answer key): only the learners' repositories, kept in or under the roster's folder, are graded unless the
    instructor says otherwise (``--allow-outside-paths``). Symbolic links are followed before the check.
    """
    base = Path(os.path.realpath(roster.path.parent))
    problems = []
    for x in roster.learners:
        folder = submissions.local_path(where(x.repo))
        if folder is not None and not folder.is_relative_to(base):
            problems.append((x, f"{roster.path.name}, line {x.line}: {x.student!r}: the repository {_said(x.repo)} "
                                f"is {submissions.shortened(str(folder))}, outside the roster's folder {base}: a local "
                                "repository must be in it (--allow-outside-paths grades one elsewhere)"))
    return problems


def _said(repo: str) -> str:
    """A roster's repo in a message: without credentials, and short."""
    return submissions.shortened(submissions.shown(repo))


def decrypt(path: Path, passphrase: str) -> str:
    """The text of a roster encrypted with ``gpg --symmetric`` (``roster.csv.gpg``), decrypted with ``passphrase``.

    For a class whose roster is bigger than a CI secret holds (48 KB on GitHub): the encrypted file is
    committed, its passphrase is the secret. gpg itself decrypts (it is on every GitHub runner and most
    Linux systems; a Python wrapper of it would add a dependency for one call): with a throwaway home
    folder, so no keyring is read or written, no agent is started (``--no-autostart``: symmetric
    decryption needs none, and none is left running), and the passphrase goes through a pipe, never a
    command line. The plain text is returned, never written here.

    Raises:
        RosterError: no such file, no gpg, an empty passphrase, or a file gpg cannot decrypt with it (a
            wrong passphrase, a file that is not gpg's, or one altered since it was encrypted).
    """
    import shutil
    import subprocess
    import tempfile

    if not path.is_file():
        raise RosterError(f"no encrypted roster at {path}")
    if not passphrase:
        raise RosterError(f"{path.name}: no passphrase to decrypt it with (the secret CLASS_ROSTER_KEY is empty)")
    gpg = shutil.which("gpg")
    if gpg is None:
        raise RosterError(f"{path.name}: gpg is not installed, and the roster is encrypted with it "
                          "(sudo apt-get install gnupg)")
    with tempfile.TemporaryDirectory(prefix="kata-gpg-") as home:
        proc = subprocess.run([gpg, "--batch", "--quiet", "--no-tty", "--no-autostart", "--homedir", home,
                               "--pinentry-mode", "loopback", "--passphrase-fd", "0", "--decrypt", str(path)],
                              input=passphrase.encode("utf-8"), capture_output=True, timeout=60, check=False)
    if proc.returncode != 0:
        said = [line for line in proc.stderr.decode("utf-8", "replace").splitlines() if line.strip()]
        why = said[-1] if said else f"exit code {proc.returncode}"
        raise RosterError(f"{path.name}: gpg cannot decrypt it ({why}): "
                          "a wrong passphrase (the secret CLASS_ROSTER_KEY), or not a file written by "
                          "gpg --symmetric")
    try:
        return proc.stdout.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise RosterError(f"{path.name}: decrypted, but not UTF-8 text (save the roster as CSV, UTF-8, "
                          "then encrypt it)") from None
