r"""No stub hands over the code its learner writes (issue 31, items 1-2: the learner derives).

A stub is what the learner reads before writing: each public function's docstring (the solution's, word for word:
``tests/test_sync.py``), the given ``_check_*`` calls and ``raise NotImplementedError("N.k name: nudge (K lines)")``.
Two checks per chapter, on its ``exercises/`` module:

- **the message** gives the step id, a nudge in words — what to compute and why, or the maths in words and unicode
  (Q Kᵀ, √d_k, Σ over rows, "the inverse rotation") — and ends with its size budget ``(K lines)`` (``(K lines plus
  a width check)`` too). It holds no Python or NumPy: no ``@``, no ``.T``, no ``np.``/``numpy.``/``math.``, no
  ``**``, no call with arguments (``name(...)``, a letter's too: ``f(up)``, ``σ(x)``), no index or slice
  (``name[...]``, ``0::2``), no tuple of names (``(seq, n_heads, d_head)``: a call's arguments), no ``=`` (an
  assignment ``dX = ...`` or a keyword argument ``side='right'``; ``<=`` and ``>=`` are comparisons, allowed), no
  backquotes. A NumPy tool may be named in words ("a lower triangle of ones", "a reshape that puts the head axis
  first").
- **the message names what, never the steps** (issue 31, item 1): after ``N.k name:`` it says what the function
  computes and, where it helps, the idea (the maths in words, the one trap its page warns about), then its
  budget: "4.3 softmax: the probabilities along axis, safe for scores of 1000 (3 lines)". The body's order of
  operations is the learner's to find, so the text between ``name:`` and the budget is refused for any of
  an order word ("first", "then", "next", "finally", "afterwards"); a semicolon; an opening instruction, its
  first word an imperative of ``INSTRUCTIONS`` ("subtract the max …", "split on white space …"); or three or
  more parts cut by commas, colons or dashes ("subtract the max along axis, exponentiate, divide by the sum";
  "forward, loss, dlogits" too: a list of names is joined by "and", or named by what they are, "the three
  projections"). One comma is allowed ("the new rows' attention over every position so far, and the grown
  cache"). It is a rule of thumb, not grammar: it refuses every recipe issue 31 quoted and passes the nudges of
  ``exercises/``; reading the message does the rest.
- **the docstring** says what, never how as code. Maths in ``$$…$$`` or ``$…$`` is left alone. In the prose around
  it: no ``@``, no ``.T``, no ``np.``/``numpy.``/``math.``, no ``**``, no slice (a ``[…]`` holding ``:``, or
  ``0::2``), no keyword argument written without spaces (``axis=-1``; maths with spaces, ``x = 0``, is prose), and
  no line that is a Python statement other than an expression (``Y = X @ W``, ``return a + b``, ``total += x``; a
  line of prose that happens to parse as an expression, a list of shapes, is prose: the patterns above judge it).
  Inline code (double backquotes) is allowed when it only NAMES something: a name or keyword (``softmax``,
  ``raise``, ``None``), a literal or a container of names and literals (``[0, 1]``, ``{"step": 0, "m": {k:
  zeros}}``, ``-inf``), an attribute of a name that is not a module's (``x.shape``), an entry by a name or constant
  (``ids[k]``, ``params[name]``; no slice), arithmetic and comparisons of names and constants (``h*d_head``,
  ``vocab_size - 256``; no ``@``, no ``**``), a parameter's value (``axis=-1``, ``start = t``: one name given a
  name or a literal), and a call of a function the learner writes (any chapter's) or of ``range``/``len``, with
  such arguments (``softmax([1000, 1001])``, ``merge_heads(split_heads(X, n))``) — how a function is called is what
  it promises, not its body. Anything else in double backquotes — a method call (``X.reshape(...)``), a NumPy call,
  ``@`` — is code. Backquoted text that is not Python (``.npz``, ``params/<key>``, ``|i − j|``) is read as prose.

The ``Raises:`` lines are read like the rest: they name what is refused, not how to test for it.

A docstring's maths is a formula, never the body as pseudo-code, and its prose never lists the calls the body
makes (issue 31: ``encode``, ``train_bpe``, ``choose_next``, ``generate``). So a docstring is also refused for:

- a loop written in its maths: ``\text{for …}`` (or while, repeat, until) whose line ends in a colon, as in
  ``\text{for } ((a, b), t) \text{ in merges}: \\`` (a quantifier, ``W \leftarrow W - η g \text{ for } W
  \in \{…\}``, ends in no colon and is maths);
- one name, or tuple of names, given a value twice in one block of maths (``(z, C) = …`` and again ``(z, C) =
  …``): steps in order, not a formula; a sequence written with indices (``\mathrm{ids}_{t+1} = …``) is maths;
- a sentence of prose naming three or more of the learner's functions in double backquotes, chained by "then"
  at least twice (``softmax_with_temperature``, then ``top_k_filter``, then ``sample_index``), or ordered by two
  or more of "first", "then", "next", "finally" ("cut into heads first (``split_heads``), then rotated
  (``apply_rope``) … put side by side (``merge_heads``)"): the body's calls in order. Naming a function to say
  what a value is like (``as merge_pair does``) stays allowed.
"""

from __future__ import annotations

import ast
import re

import pytest

from kata import learners_code, project
from kata.judge import answer_key

ROOT = answer_key.ROOT
CHAPTERS = answer_key.chapters()
MODULES = {"np", "numpy", "math"}
CALLABLE_BUILTINS = {"range", "len"}

ORDER_WORDS = re.compile(r"\b(?:first|then|next|finally)\b", re.I)
STEP_ORDER = re.compile(r"\b(?:first|then|next|finally|afterwards)\b", re.I)
STEP_ID = re.compile(r"^\s*[\d./]+\s+\w+:\s*")
PART_BREAKS = re.compile(r",|:|\s[—–]\s|—")  # an en dash between numbers (17.1–17.3) is a range, not a break
INSTRUCTIONS = {  # a message that opens with one of these gives an order, not what is computed
    "add", "append", "apply", "attend", "call", "carry", "check", "clip", "compute", "copy", "count", "cut",
    "decode", "divide", "draw", "embed", "encode", "exponentiate", "feed", "join", "keep", "loop", "look", "mask",
    "merge", "multiply", "normalise", "normalize", "order", "pick", "prefill", "project", "put", "rank", "read",
    "record", "recompute", "refuse", "repeat", "replace", "reshape", "return", "rotate", "round", "run", "scale",
    "shift", "sort", "split", "stack", "start", "subtract", "sum", "take", "tally", "transpose", "use", "walk",
    "write",
}
MATHS = re.compile(r"\$\$.*?\$\$|\$[^$\n]+\$", re.S)
INLINE = re.compile(r"``(.+?)``", re.S)
BUDGET = re.compile(r"\((\d+) lines?\b[^()]*\)$")

IN_ANY_TEXT = {  # outside maths, in a message or a docstring's prose
    "`@` (a matrix product written in Python)": re.compile(r"@"),
    "`.T` (a NumPy transpose)": re.compile(r"\.T\b"),
    "a NumPy or math call (`np.`, `math.`)": re.compile(r"\b(?:np|numpy|math)\.\w"),
    "`**` (Python's power)": re.compile(r"\*\*"),
    "a slice (`:` inside brackets, or `0::2`)": re.compile(r"\[[^\]\n]*:[^\]\n]*\]|\w::\w|::\d"),
}
IN_A_MESSAGE = {
    "a call with arguments (`name(...)`)": re.compile(r"\b[^\W\d]\w*\((?!\s*\))"),
    "an index (`name[...]`)": re.compile(r"\b[^\W\d]\w*\["),
    "`=` (an assignment or a keyword argument)": re.compile(r"(?<![<>=!])=(?!=)"),
    "backquotes (code)": re.compile(r"`"),
    "a tuple of names (the arguments of a call: `(seq, n_heads, d_head)`)": re.compile(
        r"\((?:\s*[^\W\d]\w*\s*,)+\s*[^\W\d]\w*\s*\)"),
}
LOOP_IN_MATHS = re.compile(r"\\text\{\s*(?:for|while|repeat|until)\b[^\n]*:[ \t]*(?:\\\\)?[ \t]*$", re.M)
STATEMENTS_IN_MATHS = re.compile(r"\\\\|\\qquad|\\quad|;|\\begin\{\w+\*?\}|\\end\{\w+\*?\}")
IN_A_DOCSTRING = {
    "a keyword argument (`name=value`)": re.compile(r"\b[^\W\d]\w*=(?!=)[^\s=]"),
}


def _learners_functions() -> set[str]:
    """The public functions of every chapter's stubs: what a docstring may show being called."""
    return {name for chapter in project.chapters() for name in learners_code.functions_of(chapter)}


CALLABLE = _learners_functions() | CALLABLE_BUILTINS


def names_something(node: ast.AST) -> bool:
    """Whether an expression only names something (see the module docstring), rather than computes."""
    match node:
        case ast.Name() | ast.Constant():
            return True
        case ast.UnaryOp(op=ast.USub() | ast.UAdd() | ast.Not()):
            return names_something(node.operand)
        case ast.Attribute():
            root = node.value
            while isinstance(root, ast.Attribute):
                root = root.value
            return isinstance(root, ast.Name) and root.id not in MODULES and names_something(node.value)
        case ast.List() | ast.Tuple() | ast.Set():
            return all(names_something(e) for e in node.elts)
        case ast.Dict():
            return all(k is None or names_something(k) for k in node.keys) and all(map(names_something, node.values))
        case ast.Subscript():
            return (names_something(node.value) and not any(isinstance(n, ast.Slice) for n in ast.walk(node.slice))
                    and names_something(node.slice))
        case ast.BinOp():
            return (not isinstance(node.op, ast.MatMult | ast.Pow)
                    and all(isinstance(n, ast.Name | ast.Constant | ast.BinOp | ast.UnaryOp | ast.operator
                                       | ast.unaryop | ast.Load) for n in ast.walk(node)))
        case ast.Compare():
            return names_something(node.left) and all(map(names_something, node.comparators))
        case ast.Call():
            return (isinstance(node.func, ast.Name) and node.func.id in CALLABLE
                    and all(names_something(a) for a in node.args)
                    and all(names_something(k.value) for k in node.keywords))
    return False


def _parses(text: str, mode: str) -> ast.AST | None:
    try:
        return ast.parse(text, mode=mode)
    except SyntaxError:
        return None


def inline_is_code(text: str) -> bool | None:
    """Whether backquoted text is code (True), only names something (False), or is not Python (None)."""
    text = text.strip()
    if text.isidentifier():
        return False  # a name or a keyword: ``softmax``, ``raise``, ``None``
    expression = _parses(text, "eval")
    if expression is not None:
        return not names_something(expression.body)
    module = _parses(text, "exec")
    if module is None:
        return None
    return not all(_gives_a_value(s) for s in module.body)


def _line_is_code(line: str) -> bool:
    """A whole line of prose that is a Python statement computing something (not a bare name or value)."""
    line = line.strip()
    if not line or line.isidentifier():
        return False
    module = _parses(line, "exec")
    if module is None:
        return False
    return not all(isinstance(s, ast.Expr) or _gives_a_value(s) or _an_argument_entry(s) for s in module.body)


def _an_argument_entry(statement: ast.stmt) -> bool:
    """``bits: 8 or 4.``: an ``Args:`` entry, a parameter's name and what it may be (an annotation with no value)."""
    return isinstance(statement, ast.AnnAssign) and statement.value is None and isinstance(statement.target, ast.Name)


def _gives_a_value(statement: ast.stmt) -> bool:
    """``start = t``, ``axis=-1``: one name given a name or a literal, how a parameter's value is named."""
    return (isinstance(statement, ast.Assign) and len(statement.targets) == 1
            and isinstance(statement.targets[0], ast.Name)
            and isinstance(statement.value, ast.Name | ast.Constant | ast.UnaryOp) and names_something(statement.value))


def _found(text: str, patterns: dict[str, re.Pattern]) -> list[str]:
    return [f"{why}: {m.group(0).strip()!r} in {text.strip()!r}"
            for why, pattern in patterns.items() for m in [pattern.search(text)] if m]


def code_in_message(message: str) -> list[str]:
    """What in a stub's NotImplementedError message is Python or NumPy (empty: none)."""
    text = MATHS.sub(" ", message)
    found = _found(text, IN_ANY_TEXT | IN_A_MESSAGE)
    if not BUDGET.search(message.strip()):
        found.append(f"no size budget '(K lines)' at its end: {message!r}")
    return found


def steps_in_message(message: str) -> list[str]:
    """How a stub's message lists the body's steps rather than naming what it computes (empty: it does not)."""
    text = message.strip()
    budget = BUDGET.search(text)
    nudge = STEP_ID.sub("", text[:budget.start()] if budget else text, count=1).strip()
    found = [f"an order word {w!r}" for w in STEP_ORDER.findall(nudge)]
    if ";" in nudge:
        found.append("a semicolon (one step after another)")
    opening = re.match(r"[^\W\d]\w*", nudge)
    if opening and opening.group(0).lower() in INSTRUCTIONS:
        found.append(f"it opens with an instruction, {opening.group(0)!r}, not what is computed")
    parts = [p.strip() for p in PART_BREAKS.split(nudge)]
    if len(parts) >= 3:
        found.append(f"{len(parts)} parts cut by commas, colons or dashes (a list of steps): "
                     + " | ".join(parts))
    return [f"{item} in {text!r}" for item in found]


def recipe_in_maths(maths: str) -> list[str]:
    """A block of maths written as the body's steps: a loop header, or a name given a value twice."""
    found = [f"a loop written in maths: {m.group(0).strip()!r}" for m in LOOP_IN_MATHS.finditer(maths)]
    targets = [re.sub(r"\s+|&", "", part.split("=", 1)[0]) for part in STATEMENTS_IN_MATHS.split(maths) if "=" in part]
    twice = sorted({t for t in targets if t and targets.count(t) > 1})
    found += [f"one name given a value twice in maths (steps, not a formula): {t!r}" for t in twice]
    return found


def calls_in_order(prose: str) -> list[str]:
    """Sentences listing three or more of the learner's functions chained by 'then': the body's calls in order."""
    found = []
    for sentence in re.split(r"(?<=[.;])\s", prose):
        named = [n for n in re.findall(r"``(\w+)``", sentence) if n in CALLABLE]
        chained = len(re.findall(r"``\w+``[^.;]*?\bthen\b", sentence))
        if len(named) >= 3 and max(chained, len(ORDER_WORDS.findall(sentence))) >= 2:
            found.append(f"the body's calls in order: {' '.join(sentence.split())!r}")
    return found


def code_in_docstring(docstring: str) -> list[str]:
    """What in a public function's docstring is Python or NumPy code, or the body as a recipe (empty: none)."""
    found = [item for m in MATHS.finditer(docstring) for item in recipe_in_maths(m.group(0))]
    prose = MATHS.sub(" ", docstring)
    found += calls_in_order(prose)
    for m in INLINE.finditer(prose):
        verdict = inline_is_code(m.group(1))
        if verdict:
            found.append(f"code in double backquotes: ``{m.group(1)}``")
        elif verdict is None:
            found += _found(m.group(1), IN_ANY_TEXT)
    prose = INLINE.sub(" ", prose)
    for line in prose.splitlines():
        found += _found(line, IN_ANY_TEXT | IN_A_DOCSTRING)
        if _line_is_code(line):
            found.append(f"a line of Python: {line.strip()!r}")
    return found


def _public_functions(chapter) -> list[ast.FunctionDef]:
    tree = ast.parse((ROOT / "exercises" / f"{chapter.module}.py").read_text(encoding="utf-8"))
    return [n for n in tree.body if isinstance(n, ast.FunctionDef) and not n.name.startswith("_")]


def _messages(function: ast.FunctionDef) -> list[str]:
    """The NotImplementedError messages a stub raises (implicitly joined strings are one constant)."""
    return [node.exc.args[0].value for node in ast.walk(function)
            if isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call) and isinstance(node.exc.func, ast.Name)
            and node.exc.func.id == "NotImplementedError" and node.exc.args
            and isinstance(node.exc.args[0], ast.Constant) and isinstance(node.exc.args[0].value, str)]


def _messages_refused(chapter, rule) -> dict[str, list[str]]:
    """{function: what ``rule`` finds in its stub's messages}, for each function where it finds something."""
    return {f.name: found for f in _public_functions(chapter)
            if (found := [item for message in _messages(f) for item in rule(message)])}


MESSAGE_RULES = {  # what a stub's message must not do: (the rule, what it does, what to write instead)
    "code": (code_in_message, "hand over code",
             "Say what to compute, or the maths, in words (a NumPy tool by its name in words), keep '(K lines)'."),
    "steps": (steps_in_message, "list the body's steps",
              "Name what the function computes (and the idea or the trap, if it helps), keep '(K lines)'."),
}


@pytest.mark.parametrize("rule", MESSAGE_RULES)
@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda c: c.module)
def test_no_stub_message_hands_over_code_or_lists_steps(chapter, rule):
    """each stub's NotImplementedError message says what to compute, in words, with its budget: no code, no steps"""
    refuse, does, instead = MESSAGE_RULES[rule]
    bad = _messages_refused(chapter, refuse)
    assert not bad, (f"exercises/{chapter.module}.py: {len(bad)} stub message(s) {does} — "
                     + "; ".join(f"{name}: {', '.join(items)}" for name, items in bad.items()) + f". {instead}")


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda c: c.module)
def test_no_docstring_hands_over_code(chapter):
    """each public function's docstring says what, with maths in $$…$$, and no Python or NumPy recipe"""
    bad = {f.name: found for f in _public_functions(chapter)
           for found in [code_in_docstring(ast.get_docstring(f) or "")] if found}
    assert not bad, (
        f"exercises/{chapter.module}.py (and its solution, word for word): {len(bad)} docstring(s) hand over code — "
        + "; ".join(f"{name}: {', '.join(items)}" for name, items in bad.items())
        + ". State what is computed (the formula in $$…$$, the shapes), never how, as Python.")


@pytest.mark.parametrize(("text", "code"), [
    ("4.1 raw_scores: Q @ K.T (1 line)", True),
    ("4.5 causal_mask: True on and below the diagonal — np.tril (1 line)", True),
    ("12.4 apply_rope: rotate_pairs(X, rope_angles(seq, d, base, start)) (2 lines)", True),
    ("16.4 sample_index: searchsorted with side='right' (2 lines)", True),
    ("7.2 linear_backward: dX = dY W^T (3 lines)", True),
    ("14.2 count_pairs: zip ids with ids[1:] (3 lines)", True),
    ("12.3 rotate_pairs: features 0::2 and 1::2 (6 lines)", True),
    ("11.1 split_heads: reshape to (seq, n_heads, d_head), move the head axis first (4 lines)", True),
    ("11.1 split_heads: a reshape that puts the head axis first (4 lines)", False),
    ("12.1 rope_frequencies: base to the power −2i/d (4 lines)", False),
    ("12.1 rope_frequencies: base ** (-2 * i / d)", True),  # and no budget
    ("4.2 attention_scores: the raw scores over √d_k (2 lines)", False),
    ("9.5 residual_feed_forward: x plus its feed-forward (2 lines plus a width check)", False),
    ("9.7 relu_backward: keep d_out where x > 0, zero where x <= 0 (1 line)", False),
])
def test_the_message_rule_reads_code_as_code(text, code):
    """the message check finds the code of issue 31's examples and passes a nudge in words"""
    assert bool(code_in_message(text)) is code, code_in_message(text)


@pytest.mark.parametrize(("text", "steps"), [
    ("4.3 softmax: subtract the max along axis, exponentiate, divide by the sum (3 lines)", True),
    ("16.6 attention_with_cache: with t the number of cached positions, project and cut into heads, rotate the new"
     " queries and keys from position t, put the new keys and values after the cached ones, mask so that new row i"
     " sees positions 0 … t+i, attend in each head, merge, project (8 lines)", True),
    ("7.x backward_trace: run forward, then one line per link from dlogits back to dWQ, dWK, dWV (18 lines)", True),
    ("1.1 encode: split on white space, look each token up in VOCAB (4 lines)", True),  # an instruction
    ("2.3 dot: multiply the entries pairwise and add the products up (4 lines)", True),
    ("10.16 transformer_loss_and_grads: forward, cross_entropy, backward (3 lines)", True),  # a list of names
    ("11.4 merge_heads: split_heads undone: the head axis back behind seq, each position's heads side by side"
     " (2 lines)", True),
    ("7.12 backward: backward_trace then pick the loss (2 lines)", True),
    ("6.3 output_backward: dcontext is W_O times dlogits; dWO is their outer product (3 lines)", True),
    ("17.4 tile_pairs: query tiles — key tiles — pairs (4 lines)", True),
    ("4.3 softmax: the probabilities along axis, safe for scores of 1000 (3 lines)", False),
    ("16.6 attention_with_cache: the new rows' attention over every position so far, and the grown cache (8 lines)",
     False),
    ("17.6 flash_attention_forward: the output of every row, read off the state of steps 17.1–17.3 (6 lines)", False),
    ("11.4 merge_heads: split_heads undone, each position's heads side by side in one row (2 lines)", False),
    ("9.5 residual_feed_forward: x plus its feed-forward (2 lines plus a width check)", False),
])
def test_the_message_rule_reads_steps_as_steps(text, steps):
    """the steps check refuses issue 31's recipes (the body in words, in order) and passes a nudge naming what"""
    assert bool(steps_in_message(text)) is steps, steps_in_message(text)


@pytest.mark.parametrize(("text", "code"), [
    ("Returns ``X.reshape(seq, n_heads, d_head)`` moved.", True),
    ("Computed as ``one_hot(ids, V) @ table``.", True),
    ("Read with ``np.load(path, allow_pickle=False)``.", True),
    ("Bytes are ``list(text.encode(\"utf-8\"))``.", True),
    ("Context ``ids[:k]``.", True),
    ("Pair them:\n    zip(ids, ids[1:])\n", True),
    ("    dX = dY @ W.T", True),
    ("    counts = Counter(pairs)", True),
    ("The structure::\n\n    W_gate and W_up (d_model, d_ff), W_down", False),
    ("``softmax([1000, 1001])`` must be ``[0.2689, 0.7311]``, not ``nan``; entries of ``-inf`` get 0.", False),
    ("``merge_heads(split_heads(X, n))`` gives back X; columns ``h*d_head`` to ``(h+1)*d_head - 1``.", False),
    ("the ``raise``; ``{\"step\": 0, \"m\": {k: zeros}}``; ``params[name]``; ``errors=\"replace\"``; ``start = t``",
     False),
    ("$$S = Q K^\\top$$ and $R = Q K^\\top$; C = AB, shape (m, p); y = x + F(x) sends the gradient back.", False),
    ("a ``.npz`` file of ``params/<key>`` entries, ``|i − j|`` hops", False),
    ("$$\\begin{aligned}\n&\\text{for } ((a, b), t) \\text{ in merges, in order}: \\\\\n"
     "&\\quad \\mathrm{ids} \\leftarrow \\mathrm{merge\\_pair}(\\mathrm{ids}, (a, b), t)\n\\end{aligned}$$", True),
    ("$$W \\leftarrow W - \\eta g \\qquad \\text{for } W \\in \\{W_Q, W_K\\}$$", False),
    ("$$\\begin{gathered}\n(z, C) = \\mathrm{gpt\\_forward}(\\mathrm{prompt}), \\\\\n"
     "i_n = \\mathrm{choose\\_next}(z_{\\text{last}}, u_n),\\qquad (z, C) = \\mathrm{gpt\\_forward}([i_n], C)\n"
     "\\end{gathered}$$", True),
    ("$$\\mathrm{ids}_{t+1} = \\mu_t(\\mathrm{ids}_t),\\qquad \\mathrm{ids}_{256} = \\text{the bytes}$$", False),
    ("Otherwise: ``softmax_with_temperature``, then ``top_k_filter`` if top_k is given, then ``top_p_filter``\n"
     "if top_p is given, then ``sample_index`` with u.", True),
    ("A resumed run (``load_checkpoint``, then ``adamw_step``) continues exactly.", False),
    ("Q and K are cut into heads first\n(``split_heads``), then each head's queries and keys are rotated (``apply_rope``"
     "), and\ntheir outputs are put side by side (``merge_heads``) and projected by W_O.", True),
    ("RoPE turns Q_h and K_h first (as ``apply_rope`` does), like ``split_heads`` and ``merge_heads``.", False),
])
def test_the_docstring_rule_reads_code_as_code(text, code):
    """the docstring check finds Python in prose and in double backquotes, and passes maths and names"""
    assert bool(code_in_docstring(text)) is code, code_in_docstring(text)
