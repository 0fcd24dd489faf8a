"""Pages are whole wherever they are read, and agree with each other about the running example.

- Every worksheet, hints and errata block is written into its page (``scripts/pages.py``) and matches the
  answer key today: a page read in an editor or on GitHub shows what the site shows.
- Every step's anchor (``#step-N-k``, where ``nox -s hint`` links) exists in the page's Markdown itself.
- Statements of the running example ("The cat that I saw yesterday sat on the mat", the four-token
  vocabulary) agree with the answer key on every page, in the README and in the notebooks' sources.
"""

import ast
import importlib.util
import re
from pathlib import Path

import pytest

from kata import project
from kata.judge import answer_key

ROOT = answer_key.ROOT
DOCS = ROOT / "docs"
CHAPTERS = answer_key.chapters()
NUMBER_WORDS = {w: i for i, w in enumerate(
    "zero one two three four five six seven eight nine ten eleven twelve".split())}


def _load(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.every_chapter
def test_every_block_is_written_out_and_in_sync_with_the_answer_key():
    """`python scripts/pages.py --check`: no page differs from a fresh rendering of its blocks"""
    stale = _load(ROOT / "scripts" / "pages.py", "kata_scripts_pages").stale(write=False)
    assert not stale, f"out of date: {[p.relative_to(ROOT).as_posix() for p in stale]}; run python scripts/pages.py"


@pytest.mark.every_chapter
def test_no_marker_is_left_without_its_block():
    """every opening marker has its closing one, with the generated text between them"""
    hook = _load(DOCS / "hooks" / "answer_key.py", "kata_docs_hook_answer_key_test")
    for page in sorted(DOCS.rglob("*.md")):
        text = page.read_text(encoding="utf-8")
        for m in hook.BLOCK.finditer(text):
            assert m.group(0).rstrip().endswith(f"<!-- /kata:{m.group(1)} {m.group(2)} -->"), (
                f"{page.relative_to(ROOT)}: {m.group(0)[:40]} has no block written out (python scripts/pages.py)")


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda c: f"chapter{c.number}")
def test_the_page_in_the_repository_shows_every_step_its_hints_and_errata(chapter):
    """the .md file has the worksheet row with its anchor, the three hints of every step, and the errata"""
    text = (ROOT / chapter.page).read_text(encoding="utf-8")
    for kind in ("worksheet", "hints", "errata"):
        assert f"<!-- /kata:{kind} {chapter.number} -->" in text, f"{chapter.page}: no {kind} block"
    for step in chapter.steps:
        assert f'<a id="{step.anchor}"></a>**{step.id}**' in text, f"{chapter.page}: no row for step {step.id}"
        for hint in step.hints:
            assert hint in text, f"{chapter.page}: step {step.id}'s hint {hint[:40]!r} is missing"
        if step.erratum:
            assert step.erratum in text, f"{chapter.page}: step {step.id}'s erratum is missing"


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda c: f"chapter{c.number}")
def test_the_worksheets_answers_are_folded_under_its_steps(chapter):
    """the worksheet block lists the steps (with their anchors) openly, and their answers only in a <details> after

    A learner trial: the answer table sat right under the blank worksheet on every page, so a pencil learner saw the
    printed and exact values before working them. The page in the repository (GitHub folds <details> too), the
    site and the notebook render the same block.
    """
    from kata.judge.checks import show

    text = (ROOT / chapter.page).read_text(encoding="utf-8")
    block = text[text.index(f"<!-- kata:worksheet {chapter.number} -->"):text.index(f"<!-- /kata:worksheet {chapter.number} -->")]
    steps, fold, answers = block.partition("<details")
    assert fold and answers.count("</details>") == 1 and answers.rstrip().endswith("</details>"), (
        f"{chapter.page}: the worksheet's answers are not folded in one <details> block after its steps")
    for step in chapter.steps:
        assert f'<a id="{step.anchor}"></a>**{step.id}**' in steps, f"{chapter.page}: step {step.id} not listed openly"
        answer = f"`{show(step.exact)}`".replace("|", "\\|")
        assert answer not in steps and answer in answers, (
            f"{chapter.page}: step {step.id}'s exact value {answer[:60]} is not (only) in the folded answers")


def test_nox_hint_links_to_an_anchor_in_the_repository():
    """`nox -s hint -- N.k` prints docs/chapters/NN-topic.md#step-N-k: that file has that anchor"""
    source = (ROOT / "kata" / "learner" / "hints.py").read_text(encoding="utf-8")
    assert 'print(f"docs: {chapter.page}#{step.anchor}")' in source
    for chapter in CHAPTERS:
        text = (ROOT / chapter.page).read_text(encoding="utf-8")
        for step in chapter.steps:
            assert f'id="{step.anchor}"' in text, f"{chapter.page}#{step.anchor} does not exist"


# -- the running example, stated the same everywhere ----------------------------------------------------------
def _readable_files() -> list[Path]:
    files = [ROOT / "README.md", *sorted(DOCS.rglob("*.md"))]
    files += sorted((ROOT / "notebooks" / "src").glob("*.py")) if (ROOT / "notebooks" / "src").is_dir() else []
    return files


def _sentences(path: Path):
    """(line number, sentence) of every sentence of a page, paragraphs joined across line breaks."""
    lines = path.read_text(encoding="utf-8").splitlines()
    paragraph, start = [], 1
    for number, line in enumerate([*lines, ""], start=1):
        if line.strip() and not line.lstrip().startswith(("|", "```")):
            if not paragraph:
                start = number
            paragraph.append(line.strip().lstrip("#").strip())
            continue
        text = " ".join(paragraph)
        for sentence in re.split(r"(?<=[.!?])\s+(?=[A-Z*\"(])", text):
            yield start, sentence
        paragraph = []


def _number(word: str) -> int:
    return int(word) if word.isdigit() else NUMBER_WORDS[word.lower()]


HOPS = re.compile(r"\b(\d+|" + "|".join(NUMBER_WORDS) + r")\s+(?:words?|hand-overs?|hops?|positions?)\b", re.I)


def test_every_statement_of_the_cat_sat_distance_agrees():
    """'sat' is as many words after 'cat' on every page as step 1.4's answer (5) and the sentence itself say"""
    sentence = "The cat that I saw yesterday sat on the mat"
    words = sentence.lower().split()
    expected = words.index("sat") - words.index("cat")
    step = answer_key.load(1).step("1.4")
    assert step.exact == expected, f"step 1.4's answer {step.exact} is not the sentence's {expected}"
    wrong = []
    for path in _readable_files():
        for line, text in _sentences(path):
            if not (re.search(r"\bcat\b", text, re.I) and re.search(r"\bsat\b", text, re.I)):
                continue
            if re.search(r"attention|attends", text, re.I):
                continue  # attention's distance is 1 (step 1.5), whatever the words between
            for m in HOPS.finditer(text):
                if _number(m.group(1)) != expected:
                    wrong.append(f"{path.relative_to(ROOT)}:{line}: {m.group(0)!r} in {text[:120]!r}")
    assert not wrong, f"'sat' is {expected} words after 'cat' (step 1.4), but:\n" + "\n".join(wrong)


def test_every_statement_of_the_vocabulary_ids_agrees():
    """'A is 0', 'B = 1', …: every page gives each token the id it has in chapter 1's VOCAB

    Parts I and II run on chapter 1's vocabulary; from Part III on the pages' capitals are maths (A an advantage,
    B a batch, C a capacity), so their chapter pages are not read here.
    """
    tree = ast.parse((ROOT / "exercises" / "chapter01_sequences.py").read_text(encoding="utf-8"))
    vocab = next(ast.literal_eval(n.value) for n in tree.body
                 if isinstance(n, ast.Assign) and any(getattr(t, "id", "") == "VOCAB" for t in n.targets))
    ids = {token: i for i, token in enumerate(vocab)}
    wrong = []
    for path in _readable_files():
        chapter = re.match(r"(\d\d)-", path.name) if path.parent.name == "chapters" else None
        if chapter and project.part_title(int(chapter.group(1))) not in project.parts()[:2]:
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            for m in re.finditer(r"(?<![\w$])([A-D])\s*(?:=|is)\s*(\d)\b(?!\s*[.,]\d)", line):
                if ids.get(m.group(1)) != int(m.group(2)):
                    wrong.append(f"{path.relative_to(ROOT)}:{number}: {m.group(0)!r}")
    assert not wrong, f"the vocabulary is {ids}, but:\n" + "\n".join(wrong)
