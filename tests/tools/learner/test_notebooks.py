"""The chapter notebooks: built from their sources, and checking in place what `nox -s chapterN` checks.

- Every chapter has ``notebooks/chapterNN_<topic>.ipynb``, in sync with ``notebooks/src/`` (jupytext) and
  with ``exercises/`` and the answer key it copies stubs and worksheet from: the worksheet, then per function
  a stub cell and a check cell under it, then ``kata.check()`` for the whole chapter.
- Executed headless (nbclient): with the stubs, every check cell reports every step "not started"; with the
  solutions pasted into the stub cells, every check cell reports every step and check passed.
- A wrong softmax checked in a notebook shows the same step, numbers and mistake as ``nox -s chapter4`` on
  the same code in a file.
- ``kata.check(f)`` checks exactly the object ``f`` as the kernel runs it (imported from a helper module
  beside the notebook, or under another name); a function that raises NameError in the kernel gets no
  verdict; a saved cell that never ran changes nothing (the live kernel is the truth).
- The saved notebooks' answers are graded like files (``python -m kata notebook-answers``, then ``--impl``).

The executions are slow (a kernel per notebook and a pytest run per check cell: about 0.7 s a check cell on
two cores, about a third of that when a warm judge answers, as the two proofs below let it: a learner's
JupyterLab does the same). The two that execute every chapter's notebook whole (stubs, then solutions: 32 notebooks, about
half of selfcheck's time) are marked ``proof``: `nox -s proofs` runs them (`.ci/run` runs it), and
`nox -s selfcheck -- --chapter N` runs chapter N's. The others are marked slow and stay in selfcheck.
"""

from __future__ import annotations

import ast
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import pytest

from kata import learners_code
from kata.judge import answer_key
from kata.learner import notebook as nb_tools

from .notebook_tools import CHECKED, ROOT, check_outputs, course_copy, execute, solved, solved_before

CHAPTERS = answer_key.chapters()
pytestmark = pytest.mark.spread  # no test here shares a fixture: under pytest-xdist each may run anywhere
nbformat = pytest.importorskip("nbformat", reason="the notebook dependency group (pyproject.toml) is not installed")


def _scripts_notebooks():
    spec = importlib.util.spec_from_file_location("kata_scripts_notebooks", ROOT / "scripts" / "notebooks.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _notebook(chapter):
    return nbformat.read(ROOT / "notebooks" / f"{chapter.module}.ipynb", as_version=4)


@pytest.mark.every_chapter
def test_every_notebook_is_built_from_its_source():
    """`python scripts/notebooks.py --check`: every .ipynb is what jupytext builds from notebooks/src/ today"""
    tools = _scripts_notebooks()
    have = {src.stem for src, _, _ in tools.sources()}
    assert have == {c.module for c in CHAPTERS}, f"chapters without a notebook source: {sorted({c.module for c in CHAPTERS} - have)}"
    stale = tools.stale(write=False)
    assert not stale, f"out of date: {[p.name for p in stale]}; run nox -s notebooks-build"


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda c: f"chapter{c.number}")
def test_the_notebooks_prose_is_drawn_from_the_page_never_copied(chapter):
    """a Markdown cell headed like a section of the chapter's page is that section's directive, not a hand copy"""
    import jupytext

    tools = _scripts_notebooks()
    titles = {t for t, _ in tools._sections((ROOT / chapter.page).read_text(encoding="utf-8"))} - set(tools.OWN_SECTIONS)
    source = jupytext.read(ROOT / "notebooks" / "src" / f"{chapter.module}.py", fmt="py:percent")
    copied = [line[3:] for c in source.cells if c.cell_type == "markdown"
              for line in c.source.splitlines()[:1] if line.startswith("## ") and line[3:].strip() in titles]
    assert not copied, (f"notebooks/src/{chapter.module}.py copies the page's sections {copied}: write "
                        f'<!-- kata:page-section "TITLE" --> instead (scripts/notebooks.py draws it from the page)')


def test_a_page_section_directive_names_a_section_of_the_page():
    """a directive naming a section the page does not have stops the build, naming the chapter and the title"""
    tools = _scripts_notebooks()
    chapter = CHAPTERS[0]
    with pytest.raises(ValueError, match=r'chapter01_\w+: <!-- kata:page-section "No such" -->: .* has no section'):
        tools.build('# %% [markdown]\n# <!-- kata:page-section "No such" -->\n', chapter)
    built = json.loads(tools.build('# %% [markdown]\n# <!-- kata:page-section "The idea" -->\n', chapter))
    assert built["cells"][0]["source"][0] == "## The idea\n"


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda c: f"chapter{c.number}")
def test_each_notebook_has_the_worksheet_and_a_stub_and_check_per_function(chapter):
    """the worksheet table with every step, each exercise stub verbatim with kata.check(name) right under it"""
    notebook = _notebook(chapter)
    markdown = "\n".join(c.source for c in notebook.cells if c.cell_type == "markdown")
    for step in chapter.steps:
        assert f'<a id="{step.anchor}"></a>**{step.id}**' in markdown, f"step {step.id} is not in the worksheet"
    assert "$" in markdown, "no formula in the notebook's Markdown"
    cells = [c for c in notebook.cells if c.cell_type == "code"]
    assert all(not c.get("outputs") for c in cells), "a built notebook has no outputs"
    assert f"CHAPTER = {chapter.number}" in cells[0].source
    stubs = _scripts_notebooks().stubs(chapter)
    sources = [c.source for c in cells]
    for name, stub in stubs.items():
        assert stub in sources, f"{name}'s cell is not the stub in exercises/"
        i = sources.index(stub)
        assert sources[i + 1] == f"kata.check({name})", f"no check cell under {name}"
    assert sources[-1] == "kata.check()"


def test_functions_are_taken_from_cells_without_running_them():
    """finished definitions (and helpers) come out of the cells with ast; stubs, magics and broken cells do not"""
    cells = ["%matplotlib inline\nimport math\n\ndef softmax(x, axis=-1):\n    return _norm(math.e ** x)",
             "def _norm(v):\n    return v / v.sum()",
             "def raw_scores(Q, K):\n    \"\"\"doc\"\"\"\n    raise NotImplementedError('4.1')",
             "def causal_mask(n:\n    broken",
             "print('never run')\nraise SystemExit"]
    imports, found = learners_code.answers(cells, ["softmax", "raw_scores", "causal_mask"])
    assert imports == ["import math"]
    assert list(found) == ["softmax", "_norm"]
    assert found["softmax"].startswith("def softmax(x, axis=-1):")


def test_a_check_belongs_to_the_chapter_function_it_calls_never_to_a_method_of_the_same_name():
    """kata.check(train_bpe) runs chapter 14's speed check; text.encode (str's) does not make it encode's (trial)"""
    chapter = answer_key.load(14)
    owner = nb_tools.owners(chapter)
    speed = "test_train_bpe_counts_once_and_updates_only_around_each_merge"
    assert owner[speed] == "train_bpe", owner[speed]
    tree = ast.parse((ROOT / chapter.test_file).read_text(encoding="utf-8"))
    title = next(ast.get_docstring(n) for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == speed)
    assert title.startswith("train_bpe"), f"nox -s chapter14 shows the check as {title!r}: name train_bpe first"


@pytest.fixture(scope="session")
def warm_runtime():
    """A private runtime folder for the warm judges the notebook proofs start; their sockets go at the end.

    A warm judge whose socket is gone stops within a second (``kata/judge/warm.py``).
    """
    folder = Path(tempfile.mkdtemp(prefix="kata-warm-"))  # short: a socket's path holds at most 107 bytes
    yield folder
    for socket in folder.glob("kata/*.sock"):
        socket.unlink(missing_ok=True)
    time.sleep(1.5)  # a warm judge checks its socket every second: gone, it ends and closes its log
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def warm_checks(warm_runtime, monkeypatch):
    """Check cells answered by a warm judge, as in a learner's JupyterLab (the suite switches it off elsewhere).

    On in CI too, where ``warm.enabled`` would leave it off (``CI`` set): these proofs are of what a learner's
    notebook does, and their judges live in this private runtime folder. The cold way is proved by the other
    notebook tests.
    """
    monkeypatch.setenv("KATA_WARM", "1")
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(warm_runtime))


@pytest.mark.proof
@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda c: f"chapter{c.number}")
def test_with_the_stubs_every_check_cell_says_not_started(chapter, warm_checks):
    """run headless as saved: every step and check of every check cell is 'not started', shown as HTML too"""
    outputs = check_outputs(execute(_notebook(chapter)))
    assert len(outputs) == len(_scripts_notebooks().stubs(chapter)) + 1
    for source, text, html in outputs:
        marked = re.findall(r"^\s+([✓✗·!⧗]) .*$", text, re.M)
        assert marked and set(marked) == {"·"}, f"{source}:\n{text}"
        assert re.search(rf"^chapter {chapter.number}: 0/\d+ steps, 0/\d+ checks$", text, re.M), f"{source}:\n{text}"
        assert "<pre" in html and "not started" in html, f"{source}: no HTML report"


@pytest.mark.proof
@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda c: f"chapter{c.number}")
def test_with_the_solutions_pasted_in_every_check_cell_passes(chapter, tmp_path, monkeypatch, warm_checks):
    """the solutions pasted into the stub cells (earlier chapters solved): every check cell reports all passed"""
    monkeypatch.setenv("KATA_EXERCISES", str(solved_before(chapter.number, tmp_path / "exercises")))
    outputs = check_outputs(execute(solved(_notebook(chapter), chapter.module)))
    assert outputs
    for source, text, _ in outputs:
        m = CHECKED.search(text)
        assert m and m.group(2) == m.group(3) and m.group(4) == m.group(5), f"{source}:\n{text}"
        assert set(re.findall(r"^\s+([✓✗·!⧗]) ", text, re.M)) == {"✓"}, f"{source}:\n{text}"


WRONG_SOFTMAX = textwrap.dedent('''\
    def softmax(x, axis=-1):
        """Forgets to subtract the maximum."""
        e = np.exp(x)
        return e / e.sum(axis=axis, keepdims=True)
''')


def _first_failure(text: str) -> str:
    block = text.split("first failing check, in full:", 1)[1]
    return block.split("\nchapter 4:", 1)[0].strip()


@pytest.mark.slow
def test_a_wrong_softmax_shows_the_same_step_and_mistake_as_nox_s_chapter4(tmp_path):
    """kata.check(softmax) in a notebook and nox -s chapter4 on the same code: same steps, failure and mistake"""
    notebook = _notebook(answer_key.load(4))
    setup = notebook.cells[1]
    notebook.cells = [setup, nbformat.v4.new_code_cell(WRONG_SOFTMAX), nbformat.v4.new_code_cell("kata.check(softmax)")]
    (_, in_notebook, _), = check_outputs(execute(notebook))
    impl = tmp_path / "wrong"
    shutil.copytree(ROOT / "exercises", impl, ignore=shutil.ignore_patterns("__pycache__"))
    path = impl / "chapter04_attention.py"
    path.write_text(path.read_text(encoding="utf-8") + "\n\n" + WRONG_SOFTMAX, encoding="utf-8")
    proc = subprocess.run([sys.executable, "-m", "pytest", "tests/test_chapter04_attention.py", "--steps",
                           "--impl", str(impl), "-p", "no:cacheprovider"],
                          cwd=ROOT, capture_output=True, text=True, timeout=300, check=False)
    in_file = proc.stdout
    assert "first failing check, in full:" in in_notebook, in_notebook
    assert "looks like:" in in_notebook, in_notebook
    assert _first_failure(in_notebook) == _first_failure(in_file), f"notebook:\n{in_notebook}\n\nnox:\n{in_file}"
    for line in in_notebook.splitlines():  # every softmax line of the notebook's list, as the chapter run shows it
        if re.match(r"^\s+[✓✗] ", line):
            assert line in in_file.splitlines(), f"{line!r} is not in the chapter run:\n{in_file}"


@pytest.mark.slow
def test_the_saved_notebooks_answers_are_graded_like_files(tmp_path):
    """a notebook saved with chapter 1 solved: python -m kata notebook-answers writes it out; grading it passes chapter 1"""
    root = tmp_path / "course"
    for folder in ("exercises", "notebooks"):
        shutil.copytree(ROOT / folder, root / folder, ignore=shutil.ignore_patterns("__pycache__", "src"))
    (root / "tests").mkdir()
    for chapter in CHAPTERS:
        shutil.copy2(ROOT / chapter.test_file, root / chapter.test_file)
    chapter = answer_key.load(1)
    saved = solved(_notebook(chapter), chapter.module)
    saved.cells[-1].source = "print('this cell is never run by the grader')\nraise SystemExit(1)"
    nbformat.write(saved, root / "notebooks" / f"{chapter.module}.ipynb")
    target = learners_code.write_package(tmp_path / "answers" / "exercises", root=root)
    written = (target / f"{chapter.module}.py").read_text(encoding="utf-8")
    assert "your answers from notebooks/chapter01_sequences.ipynb" in written and "never run" not in written
    out = tmp_path / "grade"
    proc = subprocess.run([sys.executable, "-m", "kata", "grade", "--chapters", "1,2", "--impl", str(target),
                           "--out", str(out)], cwd=ROOT, capture_output=True, text=True, timeout=600, check=False)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    results = json.loads((out / "results.json").read_text(encoding="utf-8"))
    status = {c["chapter"]: c["status"] for c in results["chapters"]}
    assert status == {1: "passed", 2: "not started"}, status


def test_grade_without_impl_counts_the_notebooks_like_the_chapter_sessions(tmp_path):
    """nox -s grade with no --impl: a chapter answered only in its saved notebook passes (instructor trial: 0 %)"""
    root = course_copy(tmp_path / "course")
    (root / "grading.toml").write_text("", encoding="utf-8")
    chapter = answer_key.load(1)
    nbformat.write(solved(_notebook(chapter), chapter.module), root / "notebooks" / f"{chapter.module}.ipynb")
    out = tmp_path / "grade"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    proc = subprocess.run([sys.executable, "-m", "kata", "grade", "--chapters", "1,2", "--out", str(out)], cwd=root,
                          env=env, capture_output=True, text=True, timeout=600, check=False)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "functions finished in notebooks/ in their place (chapters 1)" in proc.stdout, proc.stdout
    results = json.loads((out / "results.json").read_text(encoding="utf-8"))
    assert {c["chapter"]: c["status"] for c in results["chapters"]} == {1: "passed", 2: "not started"}
    assert results["implementation"] == "exercises and notebooks"


HELPER_SOFTMAX = textwrap.dedent('''\
    import numpy as np


    def softmax(x, axis=-1):
        """Written from the docstring: subtract the max, exponentiate, normalise; empty or all -inf refused."""
        x = np.asarray(x, dtype=float)
        if x.size == 0:
            raise ValueError("softmax of an empty array")
        top = np.max(x, axis=axis, keepdims=True)
        if np.any(np.isneginf(top)):
            raise ValueError("softmax of a row that is all -inf")
        e = np.exp(x - top)
        return e / np.sum(e, axis=axis, keepdims=True)
''')


@pytest.mark.slow
def test_check_takes_the_kernels_function_exactly_and_never_the_saved_file(tmp_path):
    """kata.check(f): f from a helper module, f under another name, a NameError function, a saved unrun import"""
    course = course_copy(tmp_path / "course")
    (course / "notebooks" / "my_helpers.py").write_text(HELPER_SOFTMAX, encoding="utf-8")
    saved = _notebook(answer_key.load(4))  # saved with a cell that never ran: an import that cannot work
    saved.cells.append(nbformat.v4.new_code_cell(
        "import no_such_module_anywhere\n\n\ndef raw_scores(Q, K):\n    return no_such_module_anywhere.f(Q, K)"))
    nbformat.write(saved, course / "notebooks" / "chapter04_attention.ipynb")
    live = _notebook(answer_key.load(4))
    cells = [live.cells[1], nbformat.v4.new_code_cell(WRONG_SOFTMAX)]
    cells += [nbformat.v4.new_code_cell(c) for c in (
        "from my_helpers import softmax\nkata.check(softmax)",
        "def softmax(x, axis=-1):\n    return x\n\nfrom solutions.chapter04_attention import softmax as good\n"
        "kata.check(good)",
        "def causal_mask(seq_len):\n    return np.tril(np.ones((seq_len, seq_len), dtype=bool)) & not_defined_here\n"
        "kata.check(causal_mask)",
        "kata.check(softmax)")]
    live.cells = cells
    executed = execute(live, folder=course / "notebooks")
    texts = []
    for cell in executed.cells[2:]:
        texts.append("".join(o.get("data", {}).get("text/plain", "") or o.get("text", "") for o in cell.outputs))
    helper, good, name_error, wrong = texts
    for text in (helper, good):  # the helper's and the solution's softmax: every softmax check passes
        m = CHECKED.search(text)
        assert m and m.group(2) == m.group(3) and m.group(4) == m.group(5), text
        assert "not started" not in text and "✗" not in text, text
    assert "✓" not in name_error and "NameError" in name_error and "not_defined_here" in name_error, name_error
    assert "✗" in wrong, wrong  # the kernel's latest softmax (return x), not the helper's or the solution's


@pytest.mark.slow
def test_a_chapter_answered_only_in_its_notebook_counts_in_progress_blame_and_doctor(tmp_path):
    """chapter 4 solved only in its notebook: progress passes it, chapter 5 unblamed, doctor and its run name it"""
    course = course_copy(tmp_path / "course")
    for number in (1, 2, 3, 5):  # every chapter chapter 5 builds on is solved in exercises/, but chapter 4
        module = answer_key.load(number).module
        shutil.copy2(ROOT / "solutions" / f"{module}.py", course / "exercises" / f"{module}.py")
    env = {**os.environ, "KATA_WARM": "0", "PYTHONPATH": str(course)}

    def run(*args: str) -> str:  # with pytest's cache: the blame notes read what the last run found
        proc = subprocess.run([sys.executable, "-m", "pytest", *args],
                              cwd=course, env=env, capture_output=True, text=True, timeout=600, check=False)
        return proc.stdout + proc.stderr

    def status(text: str, number: int) -> str:
        m = re.search(rf"^\s+{number}\s.*\d+/\d+\s+(\S.*?)\s*$", text, re.M)
        return m.group(1) if m else text

    files = [answer_key.load(n).test_file for n in (3, 4, 5)]
    before = run(*files, "--progress")  # chapter 4 untouched: chapter 5, which calls it, cannot pass
    assert [status(before, n) for n in (3, 4, 5)] == ["done", "not started", "in progress"], before
    chapter = answer_key.load(4)
    nbformat.write(solved(_notebook(chapter), chapter.module), course / "notebooks" / f"{chapter.module}.ipynb")
    after, unblamed = run(*files, "--progress"), run(files[-1], "--steps")  # pytest's cache: what progress found
    assert [status(after, n) for n in (3, 4, 5)] == ["done"] * 3, after
    answered = run(files[1], "--steps")  # the file checked is named: the notebook, not exercises/ (learner trial)
    assert "chapter 4: Attention Intuition  (notebooks/chapter04_attention.ipynb)" in answered, answered
    assert "which is not started" not in unblamed and "fix chapter 4" not in unblamed, unblamed
    doctor = subprocess.run([sys.executable, "-m", "kata", "doctor"], cwd=course, env=env, capture_output=True,
                            text=True, timeout=300, check=False).stdout
    assert "the notebook's wins" in doctor and "from notebooks/chapter04_attention.ipynb" in doctor, doctor
    assert re.search(r"^\s+4\s+\S+\s+yes\s+0/\d+  answered in notebooks/chapter04_attention.ipynb$", doctor,
                     re.M), doctor  # the row says the notebook answers the chapter (learner trial)
