"""A chapter is its files and its entries in the course's shared lists: each one is here, or a test names it.

For every chapter ``kata/project.py`` finds (an answer key in ``reference/`` and a test file), in the words of
CONTRIBUTING.md's "What a chapter is":

- its files: stub, solution, key, tests, page, notebook source and built notebook, its mutants
  (``tests/mutants/chapterNN.toml``: at least one planted mistake, and its mutation figures adding up with its
  equivalent mutants, at the goal), for a chapter beyond the
  book (Part II on) its audit script, and, only if its tests read a snapshot (``snapshot(CHAPTER)``), the
  snapshot and its builder;
- its entries: the page in mkdocs.yml's nav, under its part's section (the nav is where a chapter's part is said:
  ``kata.project.parts``), a line in docs/index.md's table of chapters (under its part's title);
- grading.toml names only real chapters, steps and tests (by ``kata.grading.strict``, as the grade checks it);
- README.md and docs/index.md state only the chapter counts the course has.

Every check is a function returning one message per missing entry, naming the chapter and the entry; each is
shown to fail (with that message) on a copy of the list with the entry taken out.
"""

from __future__ import annotations

import ast
import itertools
import json
import re
from pathlib import Path

import pytest

from kata import project
from kata.grading import points, strict
from tests import mutants
from tests.mutants import MUTANTS, Mutant, figures, load

ROOT = project.ROOT
CHAPTERS = project.chapters()
NUMBER_WORDS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9,
                "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14, "fifteen": 15}


def part(chapter, mkdocs_yml: str | None = None) -> int:
    """The part a chapter belongs to, 1, 2, … in the order of mkdocs.yml's nav (``kata.project.parts``)."""
    titles = project.parts(mkdocs_yml=mkdocs_yml)
    return titles.index(project.part_title(chapter.number, mkdocs_yml=mkdocs_yml)) + 1


def book_problems(chapters, mkdocs_yml: str | None = None) -> list[str]:
    """A key says "Book chapter" exactly when mkdocs.yml's nav lists its page in Part I (the nav's first part)."""
    wrong = [c.number for c in chapters if c.source.startswith("Book chapter") != (part(c, mkdocs_yml) == 1)]
    return [f"chapters whose key's source and mkdocs.yml's nav disagree about the book (Part I, the nav's first "
            f"part): {wrong}"] if wrong else []


def order_problems(chapters, mkdocs_yml: str | None = None) -> list[str]:
    """No chapter is in an earlier part than the chapter before it (parts in the nav's order)."""
    titles = project.parts(mkdocs_yml=mkdocs_yml)
    problems = []
    for before, chapter in itertools.pairwise(chapters):
        was, now = (project.part_title(c.number, mkdocs_yml=mkdocs_yml) for c in (before, chapter))
        if titles.index(now) < titles.index(was):
            problems.append(f"mkdocs.yml's nav puts chapter {chapter.number} in \"{now}\", an earlier part than "
                            f"chapter {before.number}'s \"{was}\": list each chapter in its part, parts in order")
    return problems


def test_the_book_is_part_i_and_only_part_i():
    """a chapter's key says "Book chapter" exactly when mkdocs.yml's nav lists its page in Part I (the book)"""
    problems = book_problems(CHAPTERS)
    assert not problems, "\n".join(problems)


def _read(relative: str) -> str:
    return (ROOT / relative).read_text(encoding="utf-8")


def reads_a_snapshot(test_source: str) -> bool:
    """Whether a chapter's test file reads its stored snapshot (``snapshot(CHAPTER)``, ``snapshots.load``)."""
    for node in ast.walk(ast.parse(test_source)):
        if isinstance(node, ast.Call):
            f = node.func
            name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else ""
            if name == "snapshot" or (name == "load" and isinstance(f, ast.Attribute)
                                      and isinstance(f.value, ast.Name) and f.value.id == "snapshots"):
                return True
    return False


# -- the files ---------------------------------------------------------------------------------------------
def files(chapter, root: Path = ROOT) -> dict[str, str]:
    """{path: what it is} of every file the chapter must have."""
    nn, module = f"{chapter.number:02d}", chapter.module
    found = {
        f"exercises/{module}.py": "the stubs (python -m kata.authoring.stubgen solutions/... > exercises/...)",
        f"solutions/{module}.py": "the reference implementation",
        f"reference/{module}.toml": "the answer key",
        f"tests/test_{module}.py": "the tests",
        chapter.page: "the page (the key's `page`)",
        f"notebooks/src/{module}.py": f"the notebook's source (nox -s notebooks-build -- --scaffold {chapter.number})",
        f"notebooks/{module}.ipynb": "the notebook (nox -s notebooks-build)",
    }
    test_file = root / f"tests/test_{module}.py"
    if test_file.is_file() and reads_a_snapshot(test_file.read_text(encoding="utf-8")):
        found[f"tests/snapshots/chapter{nn}.py"] = "the builder of the snapshot its tests read (its build(seed=None))"
        found[f"tests/snapshots/chapter{nn}.npz"] = f"the snapshot its tests read (python -m kata.authoring.snapshots " \
                                                    f"{chapter.number})"
    if part(chapter) >= 2:
        found[f"scripts/audit_{module}.py"] = "the audit that computes the key's exact values (beyond the book)"
    return found


def missing_files(chapter, root: Path = ROOT) -> list[str]:
    return [f"chapter {chapter.number}: {path} is missing: {what}"
            for path, what in files(chapter, root).items() if not (root / path).is_file()]


# -- mkdocs.yml's nav: where a chapter's part is said ------------------------------------------------------
def nav_problems(chapter, mkdocs_yml: str) -> list[str]:
    """Whether the chapter's page is in the nav under a part's section, in ``kata.project.part_title``'s words."""
    try:
        project.part_title(chapter.number, mkdocs_yml=mkdocs_yml)
    except ValueError as e:
        return [str(e)]
    return []


# -- tests/mutants/chapterNN.toml ------------------------------------------------------------------------
def mutant_problems(chapter, mutants: list[Mutant]) -> list[str]:
    if not any(m.chapter == chapter.number for m in mutants):
        return [f"chapter {chapter.number} has no planted mistake in tests/mutants/chapter{chapter.number:02d}.toml "
                "(add a [[mistake]] with old, new and named for each classic mistake)"]
    return []


def stray_mutant_problems(mutants: list[Mutant], numbers: set[int]) -> list[str]:
    return [f"tests/mutants/chapter{m.chapter:02d}.toml: the mistake {m.named!r} is of chapter {m.chapter}, which "
            f"there is not (chapters: {', '.join(str(n) for n in sorted(numbers))})" for m in mutants
            if m.chapter not in numbers]


# -- the chapter's mutation figures (tests/mutants/chapterNN.toml's [mutation]) -----------------------------
def mutation_problems(chapter, recorded: dict[int, dict]) -> list[str]:
    """Whether the chapter has its figures, they add up with its equivalent mutants, and meet the goal (95 %)."""
    n = chapter.number
    if n not in recorded:
        return [f"chapter {n} has no mutation figures in tests/mutants/chapter{n:02d}.toml (run nox -s mutation -- {n} "
                "--record)"]
    s = recorded[n]
    if s["mutants"] != s["killed"] + s["equivalent"] + s["survived"]:
        return [f"tests/mutants/chapter{n:02d}.toml: {s['mutants']} mutants is not {s['killed']} killed + "
                f"{s['equivalent']} equivalent (its [[equivalent]] entries) + {s['survived']} survived (run nox -s "
                f"mutation -- {n} --record)"]
    if s["score"] < 0.95:
        return [f"chapter {n} kills {100 * s['score']:.1f}% of its non-equivalent mutants; the goal is 95%"]
    return []


# -- docs/index.md's table of chapters ---------------------------------------------------------------------
def index_sections(index_md: str) -> dict[str, str]:
    """{linked page under docs/: the ## heading of the section of docs/index.md linking it}."""
    found = {}
    for heading, body in re.findall(r"^## ([^\n]+)\n(.*?)(?=^## |\Z)", index_md, re.M | re.S):
        for target in re.findall(r"\]\(([^)#\s]+)", body):
            found.setdefault(target, heading.strip())
    return found


def index_problems(chapter, index_md: str, mkdocs_yml: str) -> list[str]:
    """Whether docs/index.md links the chapter's page under the ``## `` heading of its part's title in the nav."""
    page = chapter.page.removeprefix("docs/")
    try:
        want = project.part_title(chapter.number, mkdocs_yml=mkdocs_yml)
    except ValueError:
        return []  # nav_problems names it
    linked = index_sections(index_md)
    if page not in linked:
        return [f"chapter {chapter.number}'s page {chapter.page} is not in docs/index.md's table of chapters (add a "
                f"row under \"## {want}\", its part's title in mkdocs.yml's nav)"]
    if linked[page] != want:
        return [f"chapter {chapter.number}'s page {chapter.page} is linked in docs/index.md under \"## {linked[page]}\", "
                f"not under \"## {want}\", its part's title in mkdocs.yml's nav"]
    return []


# -- chapter counts in README.md and docs/index.md ---------------------------------------------------------
def count_problems(name: str, text: str, chapters=CHAPTERS) -> list[str]:
    """Every "N chapters" a page states must be the number of Part I chapters, said in a Part I sentence.

    The parts after it grow a chapter at a time, so no page counts them (or the whole course): the lists of chapters are
    mkdocs.yml's nav and docs/index.md's table, both checked above.
    """
    book = sum(part(c) == 1 for c in chapters)
    problems = []
    words = "|".join(NUMBER_WORDS)
    for sentence in re.split(r"(?<=[.!?])\s+", text):
        for m in re.finditer(rf"\b({words}|\d+)\s+(?:short\s+)?chapters\b", sentence, re.I):
            said = m.group(1).lower()
            n = NUMBER_WORDS.get(said) or int(said)
            later = re.search(r"Part I[IV]", sentence[:m.start()])
            if not re.search(r"Part I\b", sentence) or later or n != book:
                problems.append(f"{name} says \"{m.group(0)}\": the course has {book} chapters in Part I (the book) "
                                f"and {len(chapters) - book} after it; count only Part I, in a sentence about it")
    return problems


# -- the checks --------------------------------------------------------------------------------------------
IDS = {"ids": lambda c: f"chapter{c.number}"}


def test_chapters_are_found():
    """kata/project.py finds chapters, numbered 1, 2, … with the book's before those beyond it"""
    numbers = [c.number for c in CHAPTERS]
    assert numbers == list(range(1, len(numbers) + 1)), f"chapters found: {numbers}"
    problems = order_problems(CHAPTERS)
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("chapter", CHAPTERS, **IDS)
def test_every_chapter_has_all_its_files(chapter):
    """stub, solution, key, tests, page, notebook source and notebook, snapshot, audit (beyond the book)"""
    assert not missing_files(chapter), "\n".join(missing_files(chapter))


@pytest.mark.parametrize("chapter", CHAPTERS, **IDS)
def test_every_chapter_page_is_in_the_nav_of_its_part(chapter):
    """mkdocs.yml's nav lists the page under a part's section (which says the chapter's part)"""
    problems = nav_problems(chapter, _read("mkdocs.yml"))
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("chapter", CHAPTERS, **IDS)
def test_every_chapter_has_a_planted_mistake(chapter):
    """tests/mutants/chapterNN.toml plants at least one mistake into the chapter's solution"""
    problems = mutant_problems(chapter, MUTANTS)
    assert not problems, "\n".join(problems)


def test_every_planted_mistake_names_a_chapter():
    """each file of tests/mutants/ is of a chapter there is"""
    problems = stray_mutant_problems(MUTANTS, {c.number for c in CHAPTERS})
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("chapter", CHAPTERS, **IDS)
def test_every_chapter_has_its_mutation_figures(chapter):
    """tests/mutants/chapterNN.toml has the chapter's figures, adding up with its equivalent mutants, at the goal"""
    problems = mutation_problems(chapter, figures())
    assert not problems, "\n".join(problems)


def test_the_mutation_table_has_the_columns_nox_s_mutation_prints():
    """CONTRIBUTING.md's table head is scripts/mutation.py's, and its rows are the chapters' recorded figures"""
    from scripts import mutation

    text = _read("CONTRIBUTING.md")
    assert mutation.TABLE_HEAD in text.split("## Mutation testing", 1)[-1]
    s = {"mutants": 1234, "killed": 1200, "equivalent": 30, "survived": 4, "score": 1200 / 1204}
    assert mutation.row(7, s) == "| 7 | 1234 | 1200 | 30 | 4 | 99.7% |"
    assert all(mutation.row(n, s) in text for n, s in figures().items())


@pytest.mark.parametrize("chapter", CHAPTERS, **IDS)
def test_every_chapter_is_in_the_home_pages_table_of_its_part(chapter):
    """docs/index.md links the page in its part's section"""
    problems = index_problems(chapter, _read("docs/index.md"), _read("mkdocs.yml"))
    assert not problems, "\n".join(problems)


def test_grading_toml_names_real_chapters_steps_and_tests():
    """the course's grading.toml loads (numbers, known keys) and names only chapters, steps and checks there are

    The one test of the shipped file: by ``kata.grading.strict`` and ``kata.grading.points``, which ``nox -s grade``
    runs on it, never a copy of them.
    """
    strict.check(ROOT / "grading.toml", ROOT)
    assert points.load(ROOT / "grading.toml").source == "grading.toml"


@pytest.mark.parametrize("name", ["README.md", "docs/index.md", "docs/notation.md"])
def test_no_page_counts_chapters_the_course_does_not_have(name):
    """a page may say how many chapters Part I has (the book's); nothing counts a later part or the whole course"""
    problems = count_problems(name, _read(name))
    assert not problems, "\n".join(problems)


# -- each check fails, naming the missing entry ------------------------------------------------------------
def _chapter(number: int):
    return next(c for c in CHAPTERS if c.number == number)


def test_a_missing_file_is_named(tmp_path):
    """a copy of chapter 12 without its notebook source, its snapshot, its builder and its audit script: each named"""
    chapter = _chapter(12)
    for path in files(chapter):
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_bytes((ROOT / path).read_bytes())
    assert missing_files(chapter, tmp_path) == []
    (tmp_path / "notebooks/src/chapter12_rope.py").unlink()
    (tmp_path / "scripts/audit_chapter12_rope.py").unlink()
    (tmp_path / "tests/snapshots/chapter12.npz").unlink()
    (tmp_path / "tests/snapshots/chapter12.py").unlink()
    problems = missing_files(chapter, tmp_path)
    assert [p.split(":")[1].strip() for p in problems] == [
        "notebooks/src/chapter12_rope.py is missing", "tests/snapshots/chapter12.py is missing",
        "tests/snapshots/chapter12.npz is missing", "scripts/audit_chapter12_rope.py is missing"], problems
    assert not reads_a_snapshot(_read(_chapter(1).test_file)) and "tests/snapshots/chapter01.py" not in files(_chapter(1))
    assert all(p.startswith("chapter 12: ") for p in problems)


def test_a_page_missing_from_the_nav_is_named():
    """mkdocs.yml without chapter 12's line: 'chapter 12's page docs/chapters/12-rope.md is not in mkdocs.yml's nav'"""
    text = _read("mkdocs.yml")
    line = next(x for x in text.splitlines() if x.strip().endswith("chapters/12-rope.md"))
    parts = '("Part I: the book", "Part II: beyond the book", "Part III: fast", "Part IV: adapt and align")'
    assert nav_problems(_chapter(12), text.replace(line + "\n", "")) == [
        f"chapter 12's page docs/chapters/12-rope.md is not in mkdocs.yml's nav: list it under its part's section "
        f"{parts}, or under a new section for a new part"]
    moved = text.replace(line + "\n", "").replace("  - Errata: errata.md", line.replace("      -", "  -") +
                                                   "\n  - Errata: errata.md")
    assert nav_problems(_chapter(12), moved) == [
        f"chapter 12's page docs/chapters/12-rope.md is at the top of mkdocs.yml's nav: list it under its part's "
        f"section {parts}, or under a new section for a new part"]


def test_a_page_in_the_wrong_part_is_named():
    """mkdocs.yml with chapter 12 under Part III: the parts out of order, named (under Part I: not the book)"""
    text = _read("mkdocs.yml")
    line = next(x for x in text.splitlines() if x.strip().endswith("chapters/12-rope.md")) + "\n"
    later = text.replace(line, "").replace("  - \"Part III: fast\":\n", "  - \"Part III: fast\":\n" + line)
    assert order_problems(CHAPTERS, later) == [
        "mkdocs.yml's nav puts chapter 13 in \"Part II: beyond the book\", an earlier part than chapter 12's "
        "\"Part III: fast\": list each chapter in its part, parts in order"]
    earlier = text.replace(line, "").replace("  - \"Part I: the book\":\n", "  - \"Part I: the book\":\n" + line)
    assert book_problems(CHAPTERS, earlier) == [
        "chapters whose key's source and mkdocs.yml's nav disagree about the book (Part I, the nav's first part): [12]"]


def test_a_chapter_without_a_planted_mistake_is_named():
    """no planted mistake for chapter 11, or one for a chapter 99: named"""
    assert mutant_problems(_chapter(11), [m for m in MUTANTS if m.chapter != 11]) == [
        "chapter 11 has no planted mistake in tests/mutants/chapter11.toml (add a [[mistake]] with old, new and "
        "named for each classic mistake)"]
    stray = Mutant(99, "a", "b", "a stray")
    assert stray_mutant_problems([*MUTANTS, stray], {1, 2}) == [
        f"tests/mutants/chapter{m.chapter:02d}.toml: the mistake {m.named!r} is of chapter {m.chapter}, which there is "
        "not (chapters: 1, 2)" for m in [*MUTANTS, stray] if m.chapter not in {1, 2}]


def test_a_planted_mistake_without_its_words_is_named(tmp_path):
    """a [[mistake]] lacking `named` (or with a key too many), or a file not named by its chapter, stops the loading"""
    (tmp_path / "chapter02.toml").write_text("[[mistake]]\nold = 'a'\nnew = 'b'\nnamed = 'c'\n\n"
                                             "[[mistake]]\nchapter = 2\nold = 'a'\nnew = 'b'\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"chapter02.toml: mistake 2 has the keys \['chapter', 'new', 'old'\]"):
        load(tmp_path)
    (tmp_path / "chapter02.toml").unlink()
    (tmp_path / "chapter2.toml").write_text("", encoding="utf-8")
    with pytest.raises(ValueError, match=r"mutants/chapter2.toml: a chapter's mutants are in chapterNN.toml"):
        load(tmp_path)


def test_a_chapter_without_figures_or_whose_figures_do_not_add_up_is_named():
    """no [mutation] for chapter 12, a count swapped (as the old printout's order invited), a score below the goal"""
    recorded = figures()
    assert mutation_problems(_chapter(12), {n: s for n, s in recorded.items() if n != 12}) == [
        "chapter 12 has no mutation figures in tests/mutants/chapter12.toml (run nox -s mutation -- 12 --record)"]
    s = recorded[12]
    swapped = {**s, "survived": s["equivalent"] + 1}
    assert mutation_problems(_chapter(12), {12: swapped}) == [
        f"tests/mutants/chapter12.toml: {s['mutants']} mutants is not {s['killed']} killed + {s['equivalent']} "
        f"equivalent (its [[equivalent]] entries) + {s['equivalent'] + 1} survived (run nox -s mutation -- 12 --record)"]
    weak = {"mutants": 100, "killed": 90, "equivalent": 0, "survived": 10, "score": 0.9}
    assert mutation_problems(_chapter(12), {12: weak}) == [
        "chapter 12 kills 90.0% of its non-equivalent mutants; the goal is 95%"]


def test_recorded_figures_are_written_into_the_chapters_file_and_the_table(tmp_path):
    """record() rewrites a [mutation] in place or adds one; figures() reads it back or names it malformed; fill() the table"""
    from scripts import mutation

    path = tmp_path / "chapter12.toml"
    path.write_text(_read("tests/mutants/chapter12.toml"), encoding="utf-8")
    mutants.record(12, {"mutants": 300, "killed": 280, "survived": 6}, tmp_path)
    again = mutants.figures(tmp_path)[12]
    assert (again["mutants"], again["killed"], again["survived"]) == (300, 280, 6)
    assert path.read_text(encoding="utf-8").count("[mutation]") == 1
    assert len(mutants.load(tmp_path)) == sum(m.chapter == 12 for m in MUTANTS)
    mutants.record(25, {"mutants": 3, "killed": 3, "survived": 0}, tmp_path)
    assert mutants.figures(tmp_path)[25]["score"] == 1.0
    (tmp_path / "chapter26.toml").write_text("# Chapter 26's mutants\n\n# -- planted\n\n[[mistake]]\nold = 'a'\n"
                                             "new = 'b'\nnamed = 'c'\n", encoding="utf-8")
    mutants.record(26, {"mutants": 4, "killed": 4, "survived": 0}, tmp_path)
    assert (tmp_path / "chapter26.toml").read_text(encoding="utf-8").startswith(
        "# Chapter 26's mutants\n\n[mutation]\nmutants = 4\nkilled = 4\nsurvived = 0\n\n# -- planted\n\n[[mistake]]")
    (tmp_path / "chapter25.toml").write_text("[mutation]\nmutants = 3\nkilled = 'all'\nsurvived = 0\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"chapter25.toml: \[mutation\] holds .*it needs exactly the counts mutants"):
        mutants.figures(tmp_path)
    text = _read("CONTRIBUTING.md")
    row = mutation.row(12, figures()[12])
    assert mutation.fill(text.replace(row, "| 12 | 1 | 1 | 0 | 0 | 100.0% |")) == text  # pages.py writes it back


def test_a_chapter_missing_from_the_home_page_is_named():
    """docs/index.md without chapter 11's row, or with it in Part I's table: named"""
    text = _read("docs/index.md")
    row = next(x for x in text.splitlines() if "(chapters/11-multi-head-attention.md)" in x)
    nav = _read("mkdocs.yml")
    assert index_problems(_chapter(11), text.replace(row + "\n", ""), nav) == [
        "chapter 11's page docs/chapters/11-multi-head-attention.md is not in docs/index.md's table of chapters "
        "(add a row under \"## Part II: beyond the book\", its part's title in mkdocs.yml's nav)"]
    first = next(x for x in text.splitlines() if "(chapters/01-sequences.md)" in x)
    moved = text.replace(row + "\n", "").replace(first, first + "\n" + row)
    assert index_problems(_chapter(11), moved, nav) == [
        "chapter 11's page docs/chapters/11-multi-head-attention.md is linked in docs/index.md under "
        "\"## Part I: the book\", not under \"## Part II: beyond the book\", its part's title in mkdocs.yml's nav"]


def test_grading_toml_entries_that_name_nothing_are_named(tmp_path):
    """a [checks] key naming no test, a [steps] key naming no step, a [chapters] key naming no chapter"""
    path = tmp_path / "grading.toml"
    path.write_text("\n".join([
        "[chapters]", "10 = 30", "99 = 10",
        "[steps]", '"4.3" = 2', '"12.99" = 2',
        "[checks]", '"12:test_rope_backward_matches_central_differences" = 2', '"12:test_that_does_not_exist" = 2',
        'test_nowhere_at_all = 2', ""]), encoding="utf-8")
    with pytest.raises(strict.StrictError) as caught:
        strict.check(path, ROOT)
    said = [line.split(": ", 1)[1].split(";")[0] for line in str(caught.value).splitlines()]
    assert said == [
        '[chapters] "99" is not a chapter of the course (chapters: '
        f'{CHAPTERS[0].number}–{CHAPTERS[-1].number})',
        '[steps] "12.99" is not a worksheet step of the course',
        '[checks] "12:test_that_does_not_exist" is not a check of the course (chapter:test name)',
        '[checks] "test_nowhere_at_all" is not the test name of a check beyond the worksheet']


def test_a_hard_coded_chapter_count_is_named():
    """'Ten chapters lead from …' (the old README) and 'Part I is twelve chapters' are named"""
    assert count_problems("README.md", "Ten chapters lead from next-token prediction to a transformer.") != []
    assert count_problems("x.md", "Part I, the book, is twelve chapters long.")[0].startswith(
        "x.md says \"twelve chapters\": the course has 10 chapters in Part I")
    assert count_problems("x.md", "Part I, the book, is ten chapters long.") == []


def test_recording_from_an_earlier_run_keeps_its_statuses_only_for_the_same_mutants(tmp_path):
    """--record --survivors JSON: each mutant's earlier status, if that run holds every mutant as it is now"""
    from scripts import mutation

    now = [mutation.Mutant(f"solutions.m.x_f__mutmut_{k}", 1, "m", "f", 3, "a + b", f"a - b{k}") for k in (1, 2)]
    earlier = tmp_path / "run.json"
    earlier.write_text(json.dumps([{"name": m.name, "original": m.original, "mutated": m.mutated,
                                    "status": status} for m, status in zip(now, ("killed", "survived"), strict=True)]))
    assert mutation.earlier_run(str(earlier), now) == {now[0].name: "killed", now[1].name: "survived"}
    changed = [now[0], mutation.Mutant(now[1].name, 1, "m", "f", 3, "a + b", "a * b")]
    with pytest.raises(SystemExit, match=r"does not hold 1 of the 2 mutants as they are now \(the first: "
                                         r"solutions.m.x_f__mutmut_2\)"):
        mutation.earlier_run(str(earlier), changed)
