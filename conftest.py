"""Root conftest: loads the kata plugin so that `--impl`, `--steps` and `--progress` work from anywhere.

Options must be defined here, at the repository root, for `pytest --impl ...` to see them. The plugin's are
the learner's. The rest is the authors' suite's (inert in a chapter run and in the student edition):

- ``--chapter N`` (repeatable; ``nox -s selfcheck -- --chapter 4``) keeps chapter N's share of whatever was
  collected: its chapter test file, every test parametrized by that chapter (a chapter of the answer
  key, one of its steps, a planted mutant of it, ``chapter=N``, its module, test file or page), and the quick
  tests marked ``every_chapter``, which check all chapters at once.
- Under pytest-xdist (``-n logical --dist loadgroup``, as ``nox -s selfcheck`` runs it) a test module stays in one
  process, so its fixtures are made once, unless its tests are marked ``spread`` (each case may run in any
  process: they share nothing costly) or name their own ``xdist_group``. Groups holding ``proof`` or ``slow``
  tests are handed out first (in the order collected; those of several tests, a module's, before single
  ones), so that no long one starts last while the other processes idle; the quick tests fill in at the end.
  (pytest-xdist's own ``loadgroup`` renames each test ``…@group`` to say its group, which pytest 9 no longer
  lets it do: here the workers write each test's group to a file and the scheduler, ``Grouped``, reads it.)
- ``proof``: a heavy proof that ``nox -s selfcheck`` leaves to ``nox -s proofs`` (``.ci/run`` runs both).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
from pathlib import Path

import pytest

pytest_plugins = ["kata.judge.plugin"]

CHAPTER_FILE = re.compile(r"(?:^|/)test_chapter(\d+)(?:_\w+)?\.py$")
CHAPTER_TEXT = re.compile(r"(?<![A-Za-z])chapter(\d\d)(?=[_.]|$)|(?:^|/)chapters/(\d\d)-")
MARKERS = (
    "slow: takes seconds, not milliseconds (a whole grade, a notebook run, a student edition); still part of "
    "selfcheck, and handed out first under pytest-xdist",
    "every_chapter: checks every chapter at once; kept by --chapter N for any N",
    "proof: a heavy proof, run by `nox -s proofs` (.ci/run runs it after `nox -s selfcheck`), not by selfcheck",
    "spread: under pytest-xdist each case may run in another process (the cases share no costly fixture)",
)


def pytest_addoption(parser: pytest.Parser) -> None:
    """Add ``--chapter``."""
    parser.addoption("--chapter", action="append", type=int, default=[], metavar="N",
                     help="only chapter N's share of the tests (repeatable): its chapter test file and every test "
                          "about that chapter (its answer key, sync, pages, snapshots, notebook, mutants...)")


GROUPS = pytest.StashKey[Path]()  # the folder where pytest-xdist's workers write each test's group
PROOF = re.compile(r"\bmark\.proof\b")  # how a test file marks its tests proof (decorator, pytestmark, param)


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """``-m proof`` (``nox -s proofs``): a test file that marks no test ``proof`` is not even collected.

    Collecting the whole suite in every pytest-xdist worker, to deselect all but the proofs, cost each worker
    3 s of CPU. ``pytest_collection_modifyitems`` below refuses a proof marked where this cannot see it.
    """
    if (config.option.markexpr or "").strip() != "proof" or collection_path.suffix != ".py" \
            or not collection_path.name.startswith("test_"):
        return None
    return True if PROOF.search(collection_path.read_text(encoding="utf-8")) is None else None


def pytest_configure(config: pytest.Config) -> None:
    """Register the suite's markers; under pytest-xdist, a folder for the groups."""
    for line in MARKERS:
        config.addinivalue_line("markers", line)
    if getattr(config.option, "dist", "no") == "loadgroup" and not hasattr(config, "workerinput"):
        config.stash[GROUPS] = Path(tempfile.mkdtemp(prefix="kata-xdist-groups-"))


def pytest_unconfigure(config: pytest.Config) -> None:
    """Remove the groups' folder."""
    if GROUPS in config.stash:
        shutil.rmtree(config.stash[GROUPS], ignore_errors=True)


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node) -> None:
    """Tell each pytest-xdist worker where to write the groups."""
    if GROUPS in node.config.stash:
        node.workerinput["kata_groups"] = str(node.config.stash[GROUPS])


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log):
    """``--dist loadgroup``: hand out the groups the workers wrote (``group_of``), in the order collected."""
    if GROUPS not in config.stash:
        return None
    from xdist.scheduler import LoadScopeScheduling

    class Grouped(LoadScopeScheduling):
        groups: dict[str, str] | None = None

        def _split_scope(self, nodeid: str) -> str:
            if self.groups is None:
                written = sorted(config.stash[GROUPS].glob("*.json"))
                self.groups = json.loads(written[0].read_text(encoding="utf-8")) if written else {}
            return self.groups.get(nodeid) or nodeid.split("::")[0]

    return Grouped(config, log)


def chapters_in(value, name: str = "") -> set[int]:
    """The chapter numbers a test's parameter stands for (empty: none).

    A chapter of the answer key, one of its steps, a planted mutant (``.number`` or ``.chapter``), ``chapter=N``,
    or a text or path naming a chapter's module, test file or page (``chapter04_attention``,
    ``docs/chapters/04-attention.md``).
    """
    from kata.judge import answer_key

    if isinstance(value, bool):
        return set()
    if isinstance(value, answer_key.Chapter):
        return {value.number}
    if isinstance(value, int):
        return {value} if name == "chapter" else set()
    chapter = getattr(value, "chapter", None)
    if isinstance(chapter, int) and not isinstance(chapter, bool):
        return {chapter}
    if isinstance(value, os.PathLike):
        try:
            value = os.path.relpath(value, answer_key.ROOT)
        except ValueError:  # another drive (Windows)
            value = os.fspath(value)
    if isinstance(value, str):
        return {int(a or b) for a, b in CHAPTER_TEXT.findall(value.replace(os.sep, "/"))}
    if isinstance(value, (tuple, list)):
        return set().union(*(chapters_in(v) for v in value)) if value else set()
    return set()


def chapters_of(item: pytest.Item) -> set[int]:
    """The chapters a test is about: its chapter test file's, and those of its parameters."""
    found = set()
    m = CHAPTER_FILE.search(item.nodeid.split("::")[0])
    if m:
        found.add(int(m.group(1)))
    callspec = getattr(item, "callspec", None)
    for name, value in (callspec.params.items() if callspec else ()):
        found |= chapters_in(value, name)
    return found


def group_of(item: pytest.Item) -> str:
    """The pytest-xdist group of a test: its own ``xdist_group``, itself when ``spread``, else its module."""
    marker = item.get_closest_marker("xdist_group")
    if marker is not None:
        return str(marker.args[0] if marker.args else marker.kwargs.get("name", "default"))
    if item.get_closest_marker("spread") is not None:
        return item.nodeid
    return item.nodeid.split("::")[0]


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist reads the groups
def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list) -> None:
    """``--chapter N``: keep chapter N's tests. Under pytest-xdist: group the tests, the long ones' groups first.

    First, a test marked ``proof`` in a file whose text does not say ``mark.proof`` is refused: ``-m proof``
    would not collect it (``pytest_ignore_collect``).
    """
    marked = {item.path for item in items if item.get_closest_marker("proof") is not None}
    hidden = sorted(str(path) for path in marked if PROOF.search(path.read_text(encoding="utf-8")) is None)
    if hidden:
        raise pytest.UsageError(f"tests marked proof where `-m proof` does not look (write pytest.mark.proof in the "
                                f"file): {', '.join(hidden)}")
    wanted = set(config.getoption("chapter"))
    if wanted:
        keep, drop = [], []
        for item in items:
            every = item.get_closest_marker("every_chapter") is not None
            (keep if every or chapters_of(item) & wanted else drop).append(item)
        if drop:
            config.hook.pytest_deselected(items=drop)
        items[:] = keep
    folder = getattr(config, "workerinput", {}).get("kata_groups")
    if not folder:  # not a pytest-xdist worker under --dist loadgroup (the workers collect, and run what they get)
        return
    groups: dict[str, list] = {}
    for item in items:
        groups.setdefault(group_of(item), []).append(item)
    heavy = {name for name, members in groups.items()
             if any(i.get_closest_marker("proof") or i.get_closest_marker("slow") for i in members)}
    # The heavy groups of several tests first (a module's: a minute of shared fixtures and tool runs, which
    # started last would keep one process busy while the others idle), then the single heavy tests, the rest.
    order = {name: (name not in heavy, name in heavy and len(groups[name]) == 1) for name in groups}
    items[:] = [i for name in sorted(groups, key=order.__getitem__) for i in groups[name]]
    written = {item.nodeid: name for name, members in groups.items() for item in members}
    path = Path(folder) / f"{config.workerinput['workerid']}.json"
    path.with_suffix(".tmp").write_text(json.dumps(written), encoding="utf-8")
    os.replace(path.with_suffix(".tmp"), path)
