"""The checks before a GPT is trained: your gradients on a tiny GPT against central differences of its own loss.

Then each layer function on its own, innermost first, so the message blames the function that is wrong
(chapter 13's ``rms_norm_backward``, ``silu_backward``, ``swiglu_backward``, ``rope_multi_head_attention_backward``
and ``prenorm_block_backward``, chapter 12's ``rope_backward``), not the first gradient its error reaches.

Part of ``nox -s train`` (``kata/learner/train/__init__.py`` tells the whole story).
"""

from __future__ import annotations

import numpy as np

from .corpus import TrainError
from .gpt_model import GPT_BLOCK_KEYS, flat, init_model, logits_of, loss_and_grads
from .gradcheck import _wrong, failure, numerical

TINY = {"vocab": 7, "d_model": 8, "n_heads": 2, "d_ff": 6, "layers": 2}


def tiny_gpt(rng: np.random.Generator) -> dict:
    """A tiny GPT with every parameter random (gains around 1), so every path matters."""
    model = init_model(TINY["vocab"], TINY["d_model"], TINY["d_ff"], TINY["layers"], seed=0)
    for name, a in flat(model).items():
        a[...] = rng.normal(0.0, 0.5, a.shape) + (1.0 if name.split(".")[-1] in ("g1", "g2", "g_final") else 0.0)
    return model


def backward_order(layers: int) -> list[tuple[str, str]]:
    """Every parameter (flat name) with the function that computes its gradient, in the order the backward runs."""
    order = [("W_out", "the tool's unembedding"), ("g_final", "rms_norm_backward")]
    for i in reversed(range(layers)):
        order += [(f"blocks.{i}.{k}", "swiglu_backward") for k in ("W_gate", "W_up", "W_down")]
        order += [(f"blocks.{i}.g2", "rms_norm_backward")]
        order += [(f"blocks.{i}.{k}", "rope_multi_head_attention_backward") for k in ("WQ", "WK", "WV", "WO")]
        order += [(f"blocks.{i}.g1", "rms_norm_backward")]
    return [*order, ("tok_emb", "prenorm_block_backward")]


def _one_function_checks(ch, rng: np.random.Generator):
    """(function, what is wrong) for each layer function whose backward disagrees with its own forward."""
    seq, d, heads, d_ff = 4, 8, 2, 6
    x = rng.normal(0, 1, (seq, d))
    R = rng.normal(0, 1, (seq, d))  # loss = Σ R ⊙ output, so the output's gradient is R
    c13, c12 = ch.c13, ch.c12

    def compare(function, forward, names, got, wants):
        bad = [n for n, g, w in zip(names, got, wants, strict=True) if _wrong(g, w)]
        return (function, f"its {', '.join(bad)} disagree{'s' * (len(bad) == 1)} with central differences of "
                          f"{forward}, on its own") if bad else None

    def parts(result, keys):
        return [result.get(k, np.nan) if isinstance(result, dict) else np.nan for k in keys]

    g = 1 + rng.normal(0, 0.3, d)
    rms = lambda: float(np.sum(R * c13.rms_norm(x, g)))  # noqa: E731
    got = c13.rms_norm_backward(x, g, R)
    got = [*got, None, None][:2] if isinstance(got, (tuple, list)) else [got, None]
    yield compare("rms_norm_backward", "rms_norm", ("dx", "dg"), got, [numerical(rms, a) for a in (x, g)])
    silu = lambda: float(np.sum(R * c13.silu(x)))  # noqa: E731
    yield compare("silu_backward", "silu", ("its result",), [c13.silu_backward(x, R)], [numerical(silu, x)])
    F = [rng.normal(0, 0.6, (d, d_ff)), rng.normal(0, 0.6, (d, d_ff)), rng.normal(0, 0.6, (d_ff, d))]
    ffn = lambda: float(np.sum(R * c13.swiglu(x, *F)[0]))  # noqa: E731
    _, cache = c13.swiglu(x, *F)
    keys = ("x", "W_gate", "W_up", "W_down")
    yield compare("swiglu_backward", "swiglu", keys, parts(c13.swiglu_backward(R, cache), keys),
                  [numerical(ffn, a) for a in (x, *F)])
    H = rng.normal(0, 1, (heads, seq, d // heads))
    RH = rng.normal(0, 1, H.shape)
    rope = lambda: float(np.sum(RH * c12.apply_rope(H)))  # noqa: E731
    yield compare("rope_backward", "apply_rope (chapter 12)", ("its result",), [c12.rope_backward(RH)],
                  [numerical(rope, H)])
    W = {k: rng.normal(0, 0.6, (d, d)) for k in ("WQ", "WK", "WV", "WO")}
    att = lambda: float(np.sum(R * c13.rope_multi_head_attention(x, W, heads)[0]))  # noqa: E731
    _, cache = c13.rope_multi_head_attention(x, W, heads)
    keys = ("x", "WQ", "WK", "WV", "WO")
    yield compare("rope_multi_head_attention_backward", "rope_multi_head_attention", keys,
                  parts(c13.rope_multi_head_attention_backward(R, cache), keys),
                  [numerical(att, x), *(numerical(att, W[k]) for k in keys[1:])])
    block = tiny_gpt(rng)["blocks"][0]
    blk = lambda: float(np.sum(R * c13.prenorm_block(x, block, heads)[0]))  # noqa: E731
    _, cache = c13.prenorm_block(x, block, heads)
    keys = ("x", *GPT_BLOCK_KEYS)
    found = compare("prenorm_block_backward", "prenorm_block", keys, parts(c13.prenorm_block_backward(R, cache), keys),
                    [numerical(blk, x), *(numerical(blk, block[k]) for k in GPT_BLOCK_KEYS)])
    yield (found[0], found[1] + " (the layer functions inside it are right: look at how it joins them, the "
                                "residual paths dy + dF)") if found else None


def check_gpt_gradients(ch, seed: int = 1234) -> dict:
    """Your gradients on a tiny GPT against central differences of its loss, parameter by parameter.

    ``ch`` holds your chapters (``ch.c12``, ``ch.c13``). The loss and its gradients are ``loss_and_grads``:
    your layers, joined by the tool.

    Returns:
        ``{"parameters": n, "largest_difference": d}`` when every gradient matches.

    Raises:
        TrainError: a wrong gradient (naming the parameter and the function to look at), a loss that is not a
            number, or logits that see the future.
    """
    rng = np.random.default_rng(seed)
    model = tiny_gpt(rng)
    heads = TINY["n_heads"]
    windows = np.array([[1, 3, 1, 0, 6, 2, 5], [4, 4, 2, 6, 0, 1, 3]])
    logits = logits_of(ch, windows[0, :-1], model, heads)
    changed = windows[0, :-1].copy()
    changed[-1] = (changed[-1] + 1) % TINY["vocab"]
    later = logits_of(ch, changed, model, heads)
    if not np.allclose(logits[:-1], later[:-1], rtol=1e-9, atol=1e-12):
        raise TrainError("prenorm_block lets positions see later ones: changing only the last token changed the "
                         "logits of earlier positions. Look at rope_multi_head_attention: the causal mask. A model "
                         "that sees the next token learns to copy it and cannot write on its own.")
    loss, grads = loss_and_grads(ch, model, heads, windows)
    if not np.isfinite(loss):
        raise TrainError(f"the loss of a tiny model is {loss!r}: look at rms_norm and prenorm_block")
    params = flat(model)
    wrong, largest, count = [], 0.0, 0
    for name, function in backward_order(TINY["layers"]):
        mine = np.asarray(grads[name], dtype=np.float64)
        theirs = numerical(lambda: loss_and_grads(ch, model, heads, windows)[0], params[name])
        count += mine.size
        largest = max(largest, float(np.max(np.abs(mine - theirs))))
        if _wrong(mine, theirs):
            i = int(np.argmax(np.abs(mine - theirs)))
            wrong.append((name, function, float(mine.ravel()[i]), float(theirs.ravel()[i]),
                          np.unravel_index(i, mine.shape)))
    if not wrong:
        return {"parameters": count, "largest_difference": largest}
    culprit = next((found for found in _one_function_checks(ch, np.random.default_rng(seed + 1)) if found), None)
    raise failure(wrong, culprit, lambda name: f"the gradient of {name}", "`nox -s chapter13` (and 11, 12) show",
                  lambda f: f"{f} (the layer functions are right on their own: look at what it returns for this "
                            "parameter)")
