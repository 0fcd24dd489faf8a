"""Known mistakes, planted one at a time into a copy of solutions/, that the suite must catch and name.

The mistakes themselves are data, in ``tests/mutants.toml`` (one ``[[mistake]]`` each: its chapter, the
exact ``old`` text of that chapter's solution, the ``new`` text, and the words it must be ``named`` by); this
module reads them. ``tests/test_suite_proves.py`` plants each one and requires (1) that some test of the
chapter fails and (2) that the first failing check says "looks like: <named>", i.e. the mistake is named where
the learner reads first, and (3) from Part II on, that this check is a worksheet step. A mistake that hand-sized
numbers cannot show by its nature (an overflow, a speed, a batch axis the worksheet does not have) says why in
``beyond``; it must still be named first.
"""

import tomllib
from dataclasses import dataclass
from pathlib import Path

from kata import project

LIST = Path(__file__).with_name("mutants.toml")


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


def load(path: Path = LIST) -> list[Mutant]:
    """Every ``[[mistake]]`` of the list, in order; a malformed entry is a ``ValueError`` naming it."""
    fields = {"chapter", "old", "new", "named"}
    found = []
    for k, entry in enumerate(tomllib.loads(path.read_text(encoding="utf-8")).get("mistake", []), start=1):
        if not fields <= set(entry) <= fields | {"beyond"}:
            raise ValueError(f"{path.name}: mistake {k} has the keys {sorted(entry)}; each needs exactly "
                             f"{sorted(fields)}, and may say why no worksheet step shows it in 'beyond'")
        found.append(Mutant(**entry))
    return found


MUTANTS = load()
