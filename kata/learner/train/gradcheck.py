"""The checks before training: your gradients on a tiny model against central differences of your own loss.

Then each layer function on its own, so the message blames the function that is wrong.

Part of ``nox -s train`` (``kata/learner/train/__init__.py`` tells the whole story).
"""

from __future__ import annotations

import numpy as np

from ...judge.gradient import numerical_gradient
from .corpus import TrainError
from .model import BLOCK_KEYS, Flat, get, shapes, shown_path

RTOL, ATOL, H = 1e-4, 1e-6, 1e-5  # central differences of a float64 loss are good to ~1e-9 at h = 1e-5


def _wrong(got, want: np.ndarray) -> bool:
    """Whether ``got`` differs from the numerical ``want`` (a wrong shape, NaN or a value off the tolerance)."""
    try:
        got = np.asarray(got, dtype=np.float64)
    except (TypeError, ValueError):
        return True
    return got.shape != want.shape or not bool(np.all(np.abs(got - want) <= ATOL + RTOL * np.abs(want)))


def numerical(f, x: np.ndarray) -> np.ndarray:
    """Central differences (``numerical_gradient``) of ``f()``, which reads ``x``, as ``x``'s entries move.

    ``x`` is changed in place while it runs and restored after.
    """
    kept = x.copy()

    def at(value: np.ndarray) -> float:
        x[...] = value
        return f()

    try:
        return numerical_gradient(at, kept, eps=H)
    finally:
        x[...] = kept


def tiny_model(rng: np.random.Generator, vocab=5, d_model=4, d_ff=6, n_layers=2, max_len=6) -> Flat:
    """Random parameters of every documented shape, larger than ``init_params``'s so every path matters."""
    model = Flat(shapes(vocab, d_model, d_ff, n_layers, max_len))
    model.vector[...] = rng.normal(0.0, 0.7, model.vector.size)
    for path, array in zip(model.paths, (get(model.params, p) for p in model.paths), strict=True):
        if path[-1].endswith("gamma"):
            array += 1.0  # scales around 1, as after init_params
    return model


def backward_order(n_layers: int) -> list[tuple[tuple, str]]:
    """Every parameter with the function that computes its gradient, in the order the backward pass does."""
    order = [(("WO",), "transformer_backward"), (("lnf_gamma",), "layer_norm_backward"),
             (("lnf_beta",), "layer_norm_backward")]
    for i in reversed(range(n_layers)):
        order += [(("blocks", i, k), "ffn_backward") for k in ("W1", "b1", "W2", "b2")]
        order += [(("blocks", i, k), "layer_norm_backward") for k in ("ln2_gamma", "ln2_beta")]
        order += [(("blocks", i, k), "attention_backward") for k in ("WQ", "WK", "WV")]
        order += [(("blocks", i, k), "layer_norm_backward") for k in ("ln1_gamma", "ln1_beta")]
    return order + [(("tok_emb",), "transformer_backward"), (("pos_emb",), "transformer_backward")]


def _one_function_checks(ch, rng: np.random.Generator):
    """(function, what is wrong) for each layer function whose backward disagrees with its own forward."""
    seq, d, d_ff = 4, 4, 6
    x = rng.normal(0, 1, (seq, d))
    R = rng.normal(0, 1, (seq, d))  # loss = Σ R ⊙ output, so the output's gradient is R

    def compare(function, forward, names, got, wants):
        got = list(got) if isinstance(got, (tuple, list)) else [got]
        got += [None] * (len(names) - len(got))
        bad = [n for n, g, w in zip(names, got, wants, strict=False) if _wrong(g, w)]
        return (function, f"its {', '.join(bad)} disagree{'s' * (len(bad) == 1)} with central differences of "
                          f"{forward}, on its own") if bad else None

    gamma, beta = 1 + rng.normal(0, 0.3, d), rng.normal(0, 0.3, d)
    ln = lambda: float(np.sum(R * ch.layer_norm(x, gamma, beta)))  # noqa: E731
    yield compare("layer_norm_backward", "layer_norm", ("dx", "dgamma", "dbeta"), ch.layer_norm_backward(x, gamma, R),
                  [numerical(ln, a) for a in (x, gamma, beta)])
    W = [rng.normal(0, 0.6, (d, d)) for _ in range(3)]
    att = lambda: float(np.sum(R * ch.attention_forward(x, *W)[0]))  # noqa: E731
    _, cache = ch.attention_forward(x, *W)
    yield compare("attention_backward", "attention_forward", ("dx", "dWQ", "dWK", "dWV"),
                  ch.attention_backward(R, cache), [numerical(att, a) for a in (x, *W)])
    F = [rng.normal(0, 0.6, (d, d_ff)), rng.normal(0, 0.3, d_ff), rng.normal(0, 0.6, (d_ff, d)),
         rng.normal(0, 0.3, d)]
    ffn = lambda: float(np.sum(R * ch.ffn_forward(x, *F)[0]))  # noqa: E731
    _, cache = ch.ffn_forward(x, *F)
    yield compare("ffn_backward", "ffn_forward", ("dx", "dW1", "db1", "dW2", "db2"), ch.ffn_backward(R, cache),
                  [numerical(ffn, a) for a in (x, *F)])
    logits, targets = rng.normal(0, 1, (seq, 5)), np.array([1, -1, 4, 0])
    ce = lambda: float(ch.cross_entropy(logits, targets)[0])  # noqa: E731
    yield compare("cross_entropy", "its own loss", ("d_logits",), ch.cross_entropy(logits, targets)[1:],
                  [numerical(ce, logits)])
    block = tiny_model(rng, d_model=d, d_ff=d_ff, n_layers=1).params["blocks"][0]
    blk = lambda: float(np.sum(R * ch.block_forward(x, block)[0]))  # noqa: E731
    _, cache = ch.block_forward(x, block)
    dx, grads = ch.block_backward(R, cache)
    names = ("dx", *(f"d{k}" for k in BLOCK_KEYS))
    got = [dx, *(grads.get(k, np.nan) if isinstance(grads, dict) else np.nan for k in BLOCK_KEYS)]
    wants = [numerical(blk, x), *(numerical(blk, block[k]) for k in BLOCK_KEYS)]
    found = compare("block_backward", "block_forward", names, got, wants)
    yield (found[0], found[1] + " (the layer functions inside it are right: look at how it joins them, "
                                "the residual paths dy + dF)") if found else None


def check_gradients(ch, seed: int = 1234) -> dict:
    """Your gradients on a tiny model against central differences of your own loss, parameter by parameter.

    Returns:
        ``{"parameters": n, "largest_difference": d}`` when every gradient matches.

    Raises:
        TrainError: a wrong gradient (naming the parameter and the function to look at), grads that do not
            mirror params, a loss that is not a number, or logits that see the future.
    """
    rng = np.random.default_rng(seed)
    model = tiny_model(rng)
    ids = np.array([1, 3, 1, 0, 4, 2])
    targets = np.array([3, 1, -1, 4, 2, 1])
    loss, grads = ch.transformer_loss_and_grads(ids, targets, model.params)
    try:
        loss = float(loss)
    except (TypeError, ValueError):
        loss = None
    if loss is None or not np.isfinite(loss):
        raise TrainError(f"transformer_loss_and_grads returned the loss {loss!r}; it must be a finite float")
    g = model.flatten(grads)
    logits, _ = ch.transformer_forward(ids, model.params)
    changed = ids.copy()
    changed[-1] = (changed[-1] + 1) % 5
    later, _ = ch.transformer_forward(changed, model.params)
    if not np.allclose(np.asarray(logits)[:-1], np.asarray(later)[:-1], rtol=1e-9, atol=1e-12):
        raise TrainError("transformer_forward lets positions see later ones: changing only the last token changed "
                         "the logits of earlier positions. Look at attention_forward: the causal mask. A model that "
                         "sees the next character learns to copy it and cannot write on its own.")
    n = numerical(lambda: float(ch.transformer_loss_and_grads(ids, targets, model.params)[0]), model.vector)
    wrong, largest = [], 0.0
    for path, function in backward_order(len(model.params["blocks"])):
        k = model.paths.index(path)
        mine, theirs = g[model.offsets[k]:model.offsets[k + 1]], n[model.offsets[k]:model.offsets[k + 1]]
        largest = max(largest, float(np.max(np.abs(mine - theirs))))
        if _wrong(mine, theirs):
            i = int(np.argmax(np.abs(mine - theirs)))
            wrong.append((path, function, float(mine[i]), float(theirs[i]), np.unravel_index(i, model.shapes[k])))
    if not wrong:
        return {"parameters": int(model.vector.size), "largest_difference": largest}
    culprit = next((found for found in _one_function_checks(ch, np.random.default_rng(seed + 1)) if found), None)
    raise failure(wrong, culprit, shown_path, "`nox -s chapter10` shows",
                  lambda f: f if f == "transformer_backward" else
                  "transformer_backward (the layer functions are right on their own: look at how it chains them)")


def failure(wrong: list[tuple], culprit: tuple[str, str] | None, shown, rerun: str, unchained) -> TrainError:
    """The one message of a failed gradient check (chapter 10's model and the GPT alike).

    Args:
        wrong: ``(parameter, function, yours, central difference, index)`` of every wrong parameter, in the order
            the backward pass computes them.
        culprit: ``(function, why)`` of the first layer function that is wrong on its own, or None.
        shown: how a parameter is named in the message.
        rerun: the sessions that show the failing checks ("`nox -s chapter10` shows").
        unchained: what to look at when every layer function is right on its own, given the function that
            computes the first wrong parameter.
    """
    if culprit is None:
        function = wrong[0][1]
        why = unchained(function)
    else:
        function, why = culprit[0], f"{culprit[0]}: {culprit[1]}"
    name, _, mine, theirs, where = next((w for w in wrong if w[1] == function), wrong[0])
    others = [shown(w[0]) for w in wrong if w[0] != name]
    lines = [f"gradient check failed, before training: {shown(name)} is wrong: look at {why}.",
             f"  at index {tuple(int(i) for i in where)}: yours {mine:.6g}, central differences {theirs:.6g}"]
    if others:
        lines.append(f"  also wrong: {', '.join(others[:4])}" + (f" and {len(others) - 4} more" if len(others) > 4
                                                                  else ""))
    lines.append(f"Training with a wrong gradient would only waste your time: {rerun} the failing checks; fix them "
                 "and train again.")
    return TrainError("\n".join(lines))
