"""Every Part II answer key says what its audit computes (``scripts/audit_chapterNN_<topic>.py``).

The audits work from the formulas, apart from ``solutions/``: ``kata/authoring/audit.py`` runs each with ``--check``, which
compares every input, exact value, printed string and named mistake of the key with its own (numbers to 1e-12).
The comparison itself is shown able to fail on a key with one planted difference of each kind.
"""

import re
import shutil
import subprocess
import sys
import tomllib

import numpy as np
import pytest

from kata import project
from kata.authoring import audit

ROOT = project.ROOT
AUDITS = project.chapter_files(ROOT / "scripts", prefix="audit_")


def run(number: int, *args: str, root=ROOT) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kata.authoring.audit", str(number), *args], cwd=root,
                          capture_output=True, text=True, timeout=120, check=False)


@pytest.mark.parametrize("chapter", list(AUDITS), ids=lambda n: AUDITS[n].stem)
def test_the_answer_key_agrees_with_its_audit(chapter):
    """python -m kata.authoring.audit N --check finds no difference"""
    proc = run(chapter, "--check")
    assert proc.returncode == 0, proc.stdout + proc.stderr


@pytest.mark.parametrize("chapter", list(AUDITS), ids=lambda n: AUDITS[n].stem)
def test_the_audit_prints_every_step_of_its_key(chapter):
    """run without --check, the audit prints each step of the chapter's key"""
    proc = run(chapter)
    assert proc.returncode == 0, proc.stderr
    for step in project.chapter(chapter).steps:
        assert f"[{step.id}]" in proc.stdout, step.id


@pytest.mark.parametrize("chapter", [n for n in AUDITS if '"_page"' in AUDITS[n].read_text(encoding="utf-8")],
                         ids=lambda n: AUDITS[n].stem)
def test_the_numbers_a_page_gives_for_the_worksheet_are_its_audits(chapter):
    """an audit's ``_page`` rows (a table the page gives, e.g. chapter 11's exponentials) are on the page as audited

    ``_page`` maps a row's label to its numbers as printed; a line of the chapter's page must hold the label and
    then those strings in order, so a number the worksheet hands the learner is computed, not typed.
    """
    page = (ROOT / project.chapter(chapter).page).read_text(encoding="utf-8").splitlines()
    missing = []
    for label, numbers in audit.script(chapter).audit()["_page"].items():
        pattern = ".*".join(re.escape(part) for part in [label, *numbers])
        if not any(re.search(pattern, line) for line in page):
            missing.append(f"{label} {' '.join(numbers)}")
    assert not missing, f"{project.chapter(chapter).page} lacks the audited rows: {missing}"


def _chapter_7_pencil_table() -> dict[str, list[str]]:
    """Chapter 7 (Part I: no audit script) gives the pencil e^x for 7.19 and ln y for 7.20; computed here.

    From the key alone, apart from ``solutions/``: the old weights are 7.20's inputs, the new ones 7.15–7.18's
    exact values (X = I, so they are Q, K, V themselves); B's scores, its softmax, its context and the logits
    are written out with NumPy. The rows are checked on the page as an audit's ``_page`` rows are.
    """
    steps = {s.id: s for s in project.chapter(7).steps}
    old = [np.asarray(steps["7.20"].input(n), dtype=np.float64) for n in ("WQ", "WK", "WV", "WO")]
    new = [np.asarray(steps[sid].exact, dtype=np.float64) for sid in ("7.15", "7.16", "7.17", "7.18")]

    def b_scores_and_sum(WQ, WK, WV, WO):
        scores = WK @ WQ[1] / np.sqrt(2)  # B's query against the keys of A and B
        weights = np.exp(scores - scores.max()) / np.exp(scores - scores.max()).sum()
        return scores, float(np.exp((weights @ WV) @ WO).sum())

    scores, y_after = b_scores_and_sum(*new)
    _, y_before = b_scores_and_sum(*old)
    x = float(scores[1] - scores[0])
    return {"7.19: $x$": [f"{x:.7f}"], "$e^{x}$": [f"{np.exp(x):.7f}"],
            "7.20: $y = \\sum_j e^{z_j}$": [f"{y_before:.7f}", f"{y_after:.7f}"],
            "$\\ln y$": [f"{np.log(y_before):.7f}", f"{np.log(y_after):.7f}"]}


def test_the_numbers_chapter_7s_page_gives_the_pencil_are_computed():
    """chapter 7's e^x (7.19) and ln y (7.20), which no pencil gives to seven digits, are on its page as computed"""
    page = (ROOT / project.chapter(7).page).read_text(encoding="utf-8").splitlines()
    missing = [f"{label} {' '.join(numbers)}" for label, numbers in _chapter_7_pencil_table().items()
               if not any(re.search(".*".join(re.escape(part) for part in [label, *numbers]), line) for line in page)]
    assert not missing, f"{project.chapter(7).page} lacks the computed rows: {missing}"


PLANTED = {  # (what is changed in the key, the difference the comparison must name)
    "exact": (lambda s: s.update(exact=[0.5, 0.26]), "exact"),
    "printed": (lambda s: s.update(printed=["0.5000", "0.2501"]), "printed"),
    "a mistake's value": (lambda s: s["mistakes"][0].update(value=[0.0, 1.0]), "mistake 'halved'"),
    "a mistake left out": (lambda s: s.update(mistakes=[]), "lacks the mistake 'halved'"),
    "an input": (lambda s: s["inputs"].update(x=[1.0, 2.0]), "input 'x'"),
    "an input too many": (lambda s: s["inputs"].update(y=[1.0]), "input 'y' is not audited"),
}


@pytest.mark.parametrize("change", list(PLANTED), ids=str)
def test_the_comparison_names_a_planted_difference(change, tmp_path):
    """a key that differs from its audit in one place fails, naming the step and what differs"""
    audited = {"1.1": {"inputs": {"x": [1.0, 0.5]}, "exact": [0.5, 0.25], "printed": ["0.5000", "0.2500"],
                       "mistakes": {"halved": [0.25, 0.125]}}}
    step = {"id": "1.1", "inputs": {"x": [1.0, 0.5]}, "exact": [0.5, 0.25], "printed": ["0.5000", "0.2500"],
            "mistakes": [{"name": "halved", "value": [0.25, 0.125]}]}
    key = tmp_path / "chapter01_planted.toml"

    def write(s):
        lines = [f'id = "{s["id"]}"', f"exact = {s['exact']}", f"printed = {s['printed']!r}".replace("'", '"')]
        lines += [f"inputs.{k} = {v}" for k, v in s["inputs"].items()]
        lines += [f'[[steps.mistakes]]\nname = "{m["name"]}"\nvalue = {m["value"]}' for m in s["mistakes"]]
        key.write_text("[[steps]]\n" + "\n".join(lines) + "\n", encoding="utf-8")
        assert tomllib.loads(key.read_text(encoding="utf-8"))["steps"][0]["id"] == "1.1"

    write(step)
    assert audit.compare(key, audited) == []
    edit, named = PLANTED[change]
    edit(step)
    write(step)
    problems = audit.compare(key, audited)
    assert problems and all(p.startswith("1.1: ") for p in problems), problems
    assert any(named in p for p in problems), problems


def test_a_mistake_that_gives_the_right_answer_is_refused(tmp_path):
    """an audited mistake equal to the exact value cannot tell a learner anything: the comparison says so"""
    key = tmp_path / "chapter01_planted.toml"
    key.write_text('[[steps]]\nid = "1.1"\nexact = [1.0]\nprinted = ["1"]\n[[steps.mistakes]]\nname = "same"\n'
                   "value = [1.0]\n", encoding="utf-8")
    problems = audit.compare(key, {"1.1": {"exact": [1.0], "printed": ["1"], "mistakes": {"same": [1.0]}}})
    assert problems == ["1.1: the audit's mistake 'same' gives the right answer"]


def test_a_single_number_printed_as_a_list_of_one_says_what_to_write(tmp_path):
    """printed = ["1.0397"] for a single number: the line says printed is a bare string then, and what to write"""
    key = tmp_path / "chapter01_planted.toml"
    key.write_text('[[steps]]\nid = "1.1"\nexact = 1.0397\nprinted = ["1.0397"]\n', encoding="utf-8")
    problems = audit.compare(key, {"1.1": {"exact": 1.0397, "mistakes": {}}}, printed=lambda x: f"{x:.4f}")
    assert problems == ["1.1: printed ['1.0397'] but the audit prints '1.0397': the same strings, nested "
                        "differently; printed has the shape of exact (a bare string for a single number, a list "
                        'nested as exact for an array): write printed = "1.0397"']


def test_a_chapter_without_an_audit_is_named():
    """python -m kata.authoring.audit 4 (a Part I chapter, no audit script) says so and names the audits there are"""
    proc = run(4)
    assert proc.returncode != 0
    assert f"there is no audit of chapter 4 in {ROOT / 'scripts'} (audits: {', '.join(map(str, AUDITS))})" in proc.stderr


def test_an_audit_prints_before_its_chapter_has_a_key(tmp_path):
    """the audit comes first (CONTRIBUTING's order of work): without reference/ it prints; only --check needs the key"""
    shutil.copytree(ROOT / "kata", tmp_path / "kata", ignore=shutil.ignore_patterns("__pycache__"))
    (tmp_path / "scripts").mkdir()
    shutil.copy(AUDITS[12], tmp_path / "scripts")
    proc = run(12, root=tmp_path)
    assert proc.returncode == 0 and "[12.1]" in proc.stdout, proc.stderr
    proc = run(12, "--check", root=tmp_path)
    assert proc.returncode != 0 and "there is no answer key for chapter 12" in proc.stderr
