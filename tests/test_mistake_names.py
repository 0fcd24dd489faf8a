"""A classic mistake is named without handing over the gradient it got wrong (issue 31: the learner derives).

A failing check says "looks like: <name>" before the learner has asked for a hint, so a name says what the
learner did and where to look ("dx through W without its transpose", "which factor of R multiplies K?"), never
the right expression of a gradient the page leaves to derive ("dY W instead of dY Wᵀ", "dRᵀ K instead of dRᵀ Q",
"dQ itself, not Xᵀ dQ"). The hints' "formula" rung is where a derived result may be read, when asked for.

The rule checked, on every text a learner is shown when a check fails — each ``[[steps.mistakes]]`` ``name`` of
every answer key, each ``named`` of ``tests/mutants/`` (the words a planted mistake must be named by), and
every string in a chapter's test file (mistake names, check titles, messages) — is: **no text writes a gradient
next to a transpose.** A text fails when it holds a transpose mark ``ᵀ`` and a gradient: a name that starts with
``d`` and an upper-case letter (``dY``, ``dQ``, ``dW_e``), ``dL/d…``, ``d_out``, ``dlogits``, ``d merged``, or
``d`` and one lower-case letter (``dx``, ``dy``, ``dz``, ``dh``; not the word "do"). Shapes and sizes such as
``d_k``, ``d_model``, ``d_in`` are not gradients. Forward expressions with a transpose that the pages give
(``Q Kᵀ``, ``x W_Qᵀ``, ``(A B)ᵀ``) may stay: they hold no gradient.

Chapter 2's answer key is left out: the gradients of a matrix product, ``dC Bᵀ`` and ``Aᵀ dC``, are that
page's own formulas, so its mistakes ("dCᵀ B instead of dC Bᵀ") restate what the page gives, not a derivation.

Other derived results a name once stated (SiLU's slope, the softmax backward's shared sum, k3's slope) were
reworded by hand: the rule above is the part a pattern can hold.
"""

from __future__ import annotations

import ast
import re

import pytest

from kata.judge import answer_key
from tests import mutants

ROOT = answer_key.ROOT
CHAPTERS = answer_key.chapters()
PAGE_GIVES_THE_GRADIENT = {2}  # chapters whose page's formula is the transposed gradient itself

GRADIENT = re.compile(r"(?<![\w/′])(?:d(?:[A-Z]\w*|L/d\w+|_out\b|logits\b|[a-np-z]\b)|d merged\b)")


def _writes_a_transposed_gradient(text: str) -> bool:
    """True when ``text`` holds a transpose mark and a gradient (the module docstring's rule)."""
    return "ᵀ" in text and GRADIENT.search(text) is not None


def _test_file_strings(chapter) -> list[tuple[int, str]]:
    """Every string constant of the chapter's test file (f-strings' literal parts too), with its line."""
    tree = ast.parse((ROOT / chapter.test_file).read_text(encoding="utf-8"))
    return [(node.lineno, node.value) for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str)]


@pytest.mark.parametrize("chapter", [c for c in CHAPTERS if c.number not in PAGE_GIVES_THE_GRADIENT],
                         ids=lambda c: c.module)
def test_no_mistake_name_of_a_key_writes_a_transposed_gradient(chapter):
    """each answer key's mistake names say what went wrong, without a gradient written next to a transpose"""
    bad = [f"step {step.id}: {m.name!r}" for step in chapter.steps for m in step.mistakes
           if _writes_a_transposed_gradient(m.name)]
    assert not bad, (f"{chapter.path.name}: a mistake name writes a gradient with a transpose, which hands over "
                     "the derived result; name the mistake and where to look instead:\n  " + "\n  ".join(bad))


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda c: c.module)
def test_no_text_of_a_test_file_writes_a_transposed_gradient(chapter):
    """a chapter's test file shows no gradient written next to a transpose: not in a mistake name, a title or a message"""
    bad = [f"line {line}: {text!r}" for line, text in _test_file_strings(chapter) if _writes_a_transposed_gradient(text)]
    assert not bad, (f"{chapter.test_file}: a string writes a gradient with a transpose, which hands over the "
                     "derived result:\n  " + "\n  ".join(bad))


def test_no_planted_mistake_is_named_by_a_transposed_gradient():
    """tests/mutants/ names no planted mistake by a gradient written next to a transpose"""
    bad = [f"chapter {m.chapter}: {m.named!r}" for m in mutants.load()
           if m.chapter not in PAGE_GIVES_THE_GRADIENT and _writes_a_transposed_gradient(m.named)]
    assert not bad, "tests/mutants/: a `named` writes a gradient with a transpose:\n  " + "\n  ".join(bad)


@pytest.mark.parametrize("text", [
    "dY W instead of dY Wᵀ",
    "transposed: dlogitsᵀ ĥ instead of ĥᵀ dlogits",
    "dQ itself, not Xᵀ dQ",
    "W_O forgotten on the way back: d merged = d_out instead of d_out W_Oᵀ",
    "transposed gradient (dL/dhᵀ x instead of xᵀ dL/dh)",
    "dx through the experts only: the router's path, dz W_rᵀ, left out",
])
def test_the_rule_refuses_a_derived_gradient(text):
    """names the course once had, each stating a gradient with its transpose: refused"""
    assert _writes_a_transposed_gradient(text)


@pytest.mark.parametrize("text", [
    "K not transposed (Q K instead of Q Kᵀ)",
    "the projections transposed: x W_Qᵀ, x W_Kᵀ, x W_Vᵀ instead of x W_Q, x W_K, x W_V",
    "the merge transposed: W + (α / r) (A B)ᵀ",
    "dx through W without its transpose (W is square here: the shapes cannot tell)",
    "scaled by √d_model = 2 instead of √d_head = √2",
    "what does the softmax do with dQ",
])
def test_the_rule_accepts_forward_transposes_and_words(text):
    """forward expressions the pages give, and a gradient named in words without a transpose: accepted"""
    assert not _writes_a_transposed_gradient(text)


# -- no code in what a learner is shown: names, whys and hints say the idea ------------------------------------
# Maths stays (Q Kᵀ, x W_Q, softmax(z / T)); Python does not: a backquoted snippet, the matrix operator @
# between two operands, NumPy's .T, a method call (Q.reshape(2, 3, 2)), or an index in brackets written onto a
# name (logits[-1], X[0][0]), which a page writes as a subscript or in words (X₀₀, "the last row").
CODE = re.compile(r"`|(?<=[\w\])])\s*@\s*(?=[\w\[(])|\w\.T\b|[A-Za-z_]\w*(?:\[-?\d+\])+|\b[A-Za-z_]\w*\.[a-z_]\w*\(")


def _texts_shown(chapter) -> list[tuple[str, str]]:
    """(where, text) of every mistake name and why and every hint of a chapter's answer key."""
    found = []
    for step in chapter.steps:
        found += [(f"step {step.id}, hint {i + 1}", hint) for i, hint in enumerate(step.hints)]
        for m in step.mistakes:
            found += [(f"step {step.id}, mistake name", m.name)] + ([(f"step {step.id}, why", m.why)] if m.why else [])
    return found


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda c: c.module)
def test_no_name_why_or_hint_of_a_key_is_code(chapter):
    """each answer key's mistake names, whys and hints hold no code: no backquotes, no @, no .T, no name[0]"""
    bad = [f"{where}: {CODE.search(text).group()!r} in {text[:120]!r}" for where, text in _texts_shown(chapter)
           if CODE.search(text)]
    assert not bad, (f"{chapter.path.name}: a text a failing check or a hint shows is written as code; say the idea "
                     "(which row, which product) or write the maths:\n  " + "\n  ".join(bad))


@pytest.mark.parametrize("text", ["the last row, `logits[-1]`, follows the whole prompt", "logits[-1]", "X[0][0]²",
                                  "logits = context @ W_O", "[1, 2] @ [[3], [4]]", "Q.reshape(2, 3, 2)", "K.T"])
def test_the_code_rule_refuses_python(text):
    """snippets the keys once held: refused"""
    assert CODE.search(text)


@pytest.mark.parametrize("text", ["Q Kᵀ instead of K Qᵀ", "X₀₀ = 3", "x_k R_kj", "[[1, 2], [3, 4]]",
                                  "weights [0.3302, 0.6698]", "softmax(z / T) with T = 2", "dS Q_h instead of dS K_h"])
def test_the_code_rule_accepts_maths(text):
    """maths, lists of numbers and subscripts: accepted"""
    assert not CODE.search(text)
