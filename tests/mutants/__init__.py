r"""A chapter's mutants of its solution, in ``tests/mutants/chapterNN.toml``: planted mistakes and equivalent mutants.

**Planted mistakes** (``[[mistake]]``): each replaces the exact ``old`` text of the chapter's solution (where it
occurs exactly once) with ``new``, and says the words it must be ``named`` by. ``tests/test_suite_proves.py``
plants each one and requires (1) that some test of the chapter fails and (2) that the first failing check says
"looks like: <named>", i.e. the mistake is named where the learner reads first, and (3) from Part II on, that
this check is a worksheet step. A mistake that hand-sized numbers cannot show by its nature (an overflow, a
speed, a batch axis the worksheet does not have) says why in ``beyond``; it must still be named first. ``named``
is matched in any case as part of a failing message that says "looks like:": the words the check prints, i.e.
the answer key's ``[[steps.mistakes]]`` name, or the test's own. A chapter plants one for each classic mistake
of its page; ``tests/test_course_files.py`` can only check that it plants at least one.

**Equivalent mutants** (``[[equivalent]]``): survivors of ``nox -s mutation -- N`` that cannot change what a
learner's code is required to do, each matched by its ``function`` and the changed text (``original``,
``mutated``, copied from a ``--json`` run's file) and given its ``reason``. They are left out of the chapter's score;
``tests/test_mutation_equivalent.py`` keeps them honest (each must still be a mutant mutmut makes, and still
survive).

**Mutation figures** (``[mutation]``: ``mutants``, ``killed``, ``survived``): the chapter's last
``nox -s mutation -- N --record``, which writes them here (its equivalent mutants are the ``[[equivalent]]``
entries); ``python scripts/pages.py`` gathers every chapter's into CONTRIBUTING.md's mutation table.

Strings in '...' are taken as written; strings in "..." use TOML's escapes (\n, \").
"""

import re
import tomllib
from dataclasses import dataclass
from pathlib import Path

from kata import project

FOLDER = Path(__file__).parent
FIGURES = ("mutants", "killed", "survived")  # a chapter's [mutation] table


@dataclass(frozen=True)
class Mutant:
    """One planted mistake."""

    chapter: int
    old: str  # exact text in the chapter's solution
    new: str  # what the mistake writes instead
    named: str  # words the failure must say after "looks like:"
    beyond: str = ""  # why no worksheet step can show it (then a check beyond the worksheet names it first)

    @property
    def file(self) -> str:
        """The chapter's solution file in solutions/ (``chapter04_attention.py``)."""
        return f"{project.chapter(self.chapter).module}.py"


def chapters(folder: Path = FOLDER) -> dict[int, dict]:
    """Each chapter's file, read: {number: its tables}; a file not named ``chapterNN.toml`` is a ``ValueError``."""
    found = {}
    for path in sorted(folder.glob("*.toml")):
        name = re.fullmatch(r"chapter(\d\d)\.toml", path.name)
        if not name:
            raise ValueError(f"tests/mutants/{path.name}: a chapter's mutants are in chapterNN.toml (chapter04.toml)")
        found[int(name[1])] = tomllib.loads(path.read_text(encoding="utf-8"))
    return found


def figures(folder: Path = FOLDER) -> dict[int, dict]:
    """Each chapter's ``[mutation]`` figures, with ``equivalent`` (its entries) and ``score``, killed of non-equivalent.

    A chapter without them is left out; figures other than three counts are a ``ValueError`` naming the file.
    """
    found = {}
    for number, tables in chapters(folder).items():
        if "mutation" not in tables:
            continue
        counts = tables["mutation"]
        if set(counts) != set(FIGURES) or not all(isinstance(v, int) and v >= 0 for v in counts.values()):
            raise ValueError(f"chapter{number:02d}.toml: [mutation] holds {counts}; it needs exactly the counts "
                             f"{', '.join(FIGURES)} (nox -s mutation -- {number} --record writes them)")
        done = counts["killed"] + counts["survived"]
        found[number] = {**counts, "equivalent": len(tables.get("equivalent", [])),
                         "score": counts["killed"] / done if done else 1.0}
    return found


def record(number: int, counts: dict, folder: Path = FOLDER) -> Path:
    """Write chapter ``number``'s figures (``FIGURES`` of ``counts``) as its file's ``[mutation]``, in place."""
    path = folder / f"chapter{number:02d}.toml"
    block = "[mutation]\n" + "".join(f"{k} = {counts[k]}\n" for k in FIGURES)
    text = path.read_text(encoding="utf-8") if path.exists() else ""
    if re.search(r"^\[mutation\]$", text, re.M):
        text = re.sub(r"^\[mutation\]\n(?:\w+ = \d+\n)*", lambda _: block, text, count=1, flags=re.M)
    else:  # after the file's opening comment, where the other chapters have it
        lines = text.splitlines(keepends=True)
        k = next((i for i, line in enumerate(lines) if not line.startswith("#")), len(lines))
        head, rest = "".join(lines[:k]), "".join(lines[k:]).lstrip("\n")
        text = f"{head}\n{block}\n{rest}" if head else f"{block}\n{rest}"
    path.write_text(text, encoding="utf-8")
    return path


def load(folder: Path = FOLDER) -> list[Mutant]:
    """Every ``[[mistake]]``, by chapter, in order; a malformed entry is a ``ValueError`` naming it."""
    fields = {"old", "new", "named"}
    found = []
    for number, tables in chapters(folder).items():
        for k, entry in enumerate(tables.get("mistake", []), start=1):
            if not fields <= set(entry) <= fields | {"beyond"}:
                raise ValueError(f"chapter{number:02d}.toml: mistake {k} has the keys {sorted(entry)}; each needs "
                                 f"exactly {sorted(fields)}, and may say why no worksheet step shows it in 'beyond'")
            found.append(Mutant(chapter=number, **entry))
    return found


def equivalents(folder: Path = FOLDER) -> list[dict]:
    """Every ``[[equivalent]]``, by chapter, each with its ``chapter``."""
    return [{"chapter": number, **entry} for number, tables in chapters(folder).items()
            for entry in tables.get("equivalent", [])]


MUTANTS = load()
