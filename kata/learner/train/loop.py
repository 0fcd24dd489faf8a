"""The training loop: Adam steps on random windows, greedy samples, the attention maps of the trained model.

Part of ``nox -s train`` (``kata/learner/train/__init__.py`` tells the whole story).
"""

from __future__ import annotations

import time

import numpy as np

from .corpus import Corpus, TrainError
from .model import Adam, Flat, Settings, get, learning_rate, shapes, shown_path

FINAL_CHARS = 200  # characters of the final sample


ATTENTION_CHARS = 24  # characters of the attention maps


def sample(ch, params: dict, prompt_ids, n: int, context: int, temperature: float = 0.0, rng=None) -> list[int]:
    """The prompt and ``n`` more token ids, each from your ``transformer_forward`` on the last ``context`` ones.

    Temperature 0 takes the most likely token (greedy, as chapter 10's ``generate``); a temperature T > 0
    draws from softmax(logits / T) with ``rng``.
    """
    ids = [int(i) for i in prompt_ids]
    for _ in range(n):
        logits, _ = ch.transformer_forward(np.array(ids[-context:], dtype=np.int64), params)
        row = np.asarray(logits, dtype=np.float64)[-1]
        if temperature <= 0:
            ids.append(int(np.argmax(row)))
        else:
            z = (row - row.max()) / temperature
            p = np.exp(z)
            ids.append(int(rng.choice(len(row), p=p / p.sum())))
    return ids


def attention_maps(ch, params: dict, ids) -> list[np.ndarray]:
    """Each layer's attention weights on ``ids``.

    The stream comes from your ``embed``, ``layer_norm`` and ``block_forward``; the weights are recomputed here
    from their documented formula (a cache is yours to shape, so it is not read).
    """
    x = np.asarray(ch.embed(np.asarray(ids, dtype=np.int64), params), dtype=np.float64)
    mask = np.tril(np.ones((len(ids), len(ids)), dtype=bool))
    maps = []
    for block in params["blocks"]:
        h = np.asarray(ch.layer_norm(x, block["ln1_gamma"], block["ln1_beta"]), dtype=np.float64)
        scores = (h @ block["WQ"]) @ (h @ block["WK"]).T / np.sqrt(h.shape[1])
        scores = np.where(mask, scores, -np.inf)
        weights = np.exp(scores - scores.max(axis=1, keepdims=True))
        maps.append(weights / weights.sum(axis=1, keepdims=True))
        x = np.asarray(ch.block_forward(x, block)[0], dtype=np.float64)
    return maps


def check_init(ch, vocab: int, s: Settings) -> Flat:
    """Your ``init_params`` for the run's sizes, copied into a flat vector; TrainError if a shape is off."""
    params = ch.init_params(vocab, s.d_model, s.d_ff, s.layers, s.context, seed=s.seed)
    want = shapes(vocab, s.d_model, s.d_ff, s.layers, s.context)
    for path, shape in want.items():
        try:
            got = np.shape(get(params, path))
        except (KeyError, IndexError, TypeError):
            raise TrainError(f"init_params({vocab}, {s.d_model}, {s.d_ff}, {s.layers}, {s.context}) has no "
                             f"params{shown_path(path)[5:]}: see its docstring for the layout") from None
        if got != shape:
            raise TrainError(f"init_params: params{shown_path(path)[5:]} has shape {got}, expected {shape}")
    return Flat(want, params)


def train_model(ch, corpus: Corpus, s: Settings, report=lambda event: None) -> dict:
    """Train with your chapter 10 module ``ch``; ``report`` receives every event (step, sample). Returns the run.

    ``s`` must be resolved (``Settings.resolved``). Used by the child process and by the docs' figures.
    """
    vocab = corpus.vocab
    data = corpus.ids()
    model = check_init(ch, len(vocab), s)
    index = {c: i for i, c in enumerate(vocab)}
    missing = sorted({c for c in s.prompt if c not in index})
    if missing:
        raise TrainError(f"--prompt {s.prompt!r} has characters that are not in the corpus: {missing}")
    prompt = [index[c] for c in s.prompt]
    adam = Adam(model.vector.size, s.beta1, s.beta2, s.eps)
    rng = np.random.default_rng(s.seed)
    starts = rng.integers(0, len(data) - s.context, size=s.steps)  # a random window of context + 1 characters
    losses, samples, seconds = [], [], 0.0
    for step in range(1, s.steps + 1):
        began = time.perf_counter()
        at = starts[step - 1]
        loss, grads = ch.transformer_loss_and_grads(data[at:at + s.context], data[at + 1:at + s.context + 1],
                                                    model.params)
        loss = float(loss)
        if not np.isfinite(loss):
            raise TrainError(f"the loss became {loss} at step {step}: the steps are too large; try a smaller --lr "
                             f"(now {s.lr:g})")
        adam.step(model.vector, model.flatten(grads), learning_rate(s, step))
        seconds += time.perf_counter() - began
        losses.append(loss)
        report({"event": "step", "step": step, "loss": loss, "train_seconds": seconds})
        if step % s.sample_every == 0 and step != s.steps:
            text = "".join(vocab[i] for i in sample(ch, model.params, prompt, s.sample_chars, s.context))
            samples.append({"step": step, "loss": smoothed_tail(losses), "text": text})
            report({"event": "sample", **samples[-1]})
    final = sample(ch, model.params, prompt, FINAL_CHARS, s.context)
    samples.append({"step": s.steps, "loss": smoothed_tail(losses), "text": "".join(vocab[i] for i in final)})
    report({"event": "sample", **samples[-1], "final": True})
    n = min(ATTENTION_CHARS, s.context)
    at = corpus.text.find(s.prompt)  # the corpus's own text from the prompt on, else the model's
    shown = list(data[at:at + n]) if at >= 0 and at + n <= len(data) else final[:n]
    return {"params": model, "losses": losses, "samples": samples, "train_seconds": seconds,
            "attention_text": "".join(vocab[i] for i in shown), "attention": attention_maps(ch, model.params, shown)}


def smoothed_tail(losses: list[float], n: int = 100) -> float:
    """The mean loss of the last ``n`` steps (one window's loss is noisy)."""
    return float(np.mean(losses[-n:]))


def smooth(losses, window: int) -> np.ndarray:
    """Running mean over the last ``window`` steps (fewer at the start)."""
    c = np.cumsum(np.concatenate([[0.0], np.asarray(losses, dtype=np.float64)]))
    k = np.arange(1, len(losses) + 1)
    return (c[k] - c[np.maximum(0, k - window)]) / np.minimum(k, window)
