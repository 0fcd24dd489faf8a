"""``nox -s train``: train a transformer built from your chapter 10 functions on real text, and watch it learn.

``nox -s train`` (your ``exercises/``; ``-- --impl solutions`` in the authors' edition) trains a character-level
model on the Zen of Python (``--corpus zen``, from the standard library's ``this`` module), a few pages of
Shakespeare shipped in ``data/`` (``--corpus book``) or any UTF-8 text file (``--corpus FILE``):

1. **Checks first.** Your ``transformer_loss_and_grads`` on a tiny model (its own random parameters), every
   gradient entry against central differences of your loss, in the order the backward pass computes them; and
   your ``transformer_forward`` must not let a position see a later one. A wrong gradient stops the run before
   training, naming the parameter and the function to look at (each layer function is then checked on its own
   the same way, so the message blames the function that is wrong, not the first one its error reaches).
2. **Training.** ``init_params`` gives the starting parameters; every step takes a random window of
   ``--context`` characters, calls your ``transformer_loss_and_grads`` once, and updates every parameter with
   Adam (the optimiser lives here: no chapter teaches it). The learning rate stays at ``--lr`` for the first
   half and falls linearly to a tenth of it by the end. A progress bar shows the step, the loss, tokens per
   second and the time left; every ``--sample-every`` steps a greedy sample from ``--prompt`` is printed.
3. **The run's folder** ``runs/<name>/``: ``loss.png``, ``attention.png`` (each layer's attention weights on the
   corpus's first 24 characters from the prompt on), ``samples.txt``, ``model.npz`` (the parameters and the vocabulary,
   plain arrays: ``np.load(..., allow_pickle=False)``) and ``run.json`` (the settings, ``first_loss``,
   ``final_loss``, ``seconds``, ``tokens_per_second``, the loss of every step). ``nox -s generate`` continues
   a prompt with a saved model. The same ``--seed`` gives the same run on the same machine (NumPy is held to
   one thread, so sums are always added up in the same order).

How your code is called. It is not graded here, so the tool may import it directly, but an endless loop in it
must not hang the tool silently. So your chapter 10 runs in a *child process* that imports it directly and
does the whole training; this process shows the progress and draws the figures. The child re-arms
``faulthandler``'s watchdog at least once a second around calls into your code: a call that runs longer than
``--timeout`` seconds (30 by default) makes it print where it was and exit, and the message names your
function and its file and line. If the child falls silent anyway, it is ended from here.

Why not ``kata.judge.proxy.Worker``, which the judge uses? Every call there sends all ~30 parameter arrays to
the worker as plain data, checks them for in-place edits and sends the gradients back: measured on the
course's two shared cores, one training step (d_model 32, 2 layers, 32 characters) took about 20 ms through
the Worker against 5 ms called directly, so the default run would take four times as long. In the child a
step costs what your NumPy costs (about 2 ms of CPU with the reference solution) plus the Adam update.
"""

from __future__ import annotations

import argparse
import codecs
import contextlib
import io
import json
import math
import os
import queue
import re
import shutil
import subprocess
import sys
import tempfile
import time
import traceback
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from .. import project
from ..judge.gradient import numerical_gradient
from ..process import Drain, kill_tree

BOOK = project.ROOT / "data" / "coriolanus.txt"
MAX_VOCAB = 1000  # distinct characters; beyond that a character-level model of a few pages learns nothing
FINAL_CHARS = 200  # characters of the final sample
ATTENTION_CHARS = 24  # characters of the attention maps
STARTUP = 60.0  # seconds the child may take to import NumPy and your chapter on a cold disk
GRACE = 10.0  # seconds past --timeout before the child is ended from here
THREADS = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "VECLIB_MAXIMUM_THREADS",
           "NUMEXPR_NUM_THREADS")
BLOCK_KEYS = ("ln1_gamma", "ln1_beta", "WQ", "WK", "WV", "ln2_gamma", "ln2_beta", "W1", "b1", "W2", "b2")


class TrainError(Exception):
    """A problem to report in one message (bad corpus, bad model file, failed check): no traceback."""


# -- the corpus -----------------------------------------------------------------------------------------
@dataclass
class Corpus:
    """A text, its characters (the vocabulary, sorted) and where it came from."""

    name: str
    text: str
    source: str

    @property
    def vocab(self) -> list[str]:
        """The distinct characters, sorted: token id i is ``vocab[i]``."""
        return sorted(set(self.text))

    def ids(self) -> np.ndarray:
        """The whole text as token ids."""
        index = {c: i for i, c in enumerate(self.vocab)}
        return np.array([index[c] for c in self.text], dtype=np.int64)


def zen() -> str:
    """The Zen of Python, from the standard library (``import this`` prints it; the module holds it in rot13)."""
    with contextlib.redirect_stdout(io.StringIO()):
        import this
    return codecs.decode(this.s, "rot13")


def load_corpus(which: str, context: int = 32) -> Corpus:
    """``zen``, ``book`` or a path to a UTF-8 text file, with a clear error for anything unusable.

    Raises:
        TrainError: the file is missing, a folder, empty, not UTF-8 text, too short for ``context``, or has
            more than ``MAX_VOCAB`` distinct characters.
    """
    if which == "zen":
        corpus = Corpus("zen", zen(), "the Zen of Python (PEP 20, from the standard library)")
    else:
        path = BOOK if which == "book" else Path(which).expanduser()
        shown = "--corpus book" if which == "book" else f"--corpus {which}"
        if not path.exists():
            raise TrainError(f"{shown}: there is no file {path} (give zen, book, or the path of a UTF-8 text file)")
        if path.is_dir():
            raise TrainError(f"{shown}: {path} is a folder; give a text file")
        data = path.read_bytes()
        if not data.strip():
            raise TrainError(f"{shown}: {path} is empty" + (" (only white space)" if data else ""))
        if b"\0" in data[:8192]:
            raise TrainError(f"{shown}: {path} is not text (it has NUL bytes: a binary file?)")
        try:
            text = data.decode("utf-8-sig")
        except UnicodeDecodeError as err:
            raise TrainError(f"{shown}: {path} is not UTF-8 text (byte 0x{data[err.start]:02x} at position "
                             f"{err.start} cannot be decoded: a binary file, or another encoding?)") from None
        text = text.replace("\r\n", "\n").replace("\r", "\n")
        name = "book" if which == "book" else re.sub(r"[^\w.-]+", "-", path.stem) or "corpus"
        source = ("William Shakespeare, Coriolanus, act I, scene 1 (public domain), data/coriolanus.txt"
                  if which == "book" else str(path))
        corpus = Corpus(name, text, source)
    need = max(64, context + 2)
    if len(corpus.text) < need:
        raise TrainError(f"--corpus {which}: {len(corpus.text)} characters is too short; training on windows of "
                         f"{context} characters needs at least {need}")
    if len(corpus.vocab) > MAX_VOCAB:
        raise TrainError(f"--corpus {which}: {len(corpus.vocab)} distinct characters; a character-level model "
                         f"of a few pages needs at most {MAX_VOCAB}")
    return corpus


# -- settings -------------------------------------------------------------------------------------------
@dataclass
class Settings:
    """Everything that decides a run (saved in run.json)."""

    corpus: str = "zen"
    steps: int = 4000
    lr: float = 5e-3
    d_model: int = 32
    d_ff: int = 0  # 0: four times d_model
    layers: int = 2
    context: int = 32
    seed: int = 0
    prompt: str = ""  # "": "Beautiful" for zen, else the corpus's first word
    sample_every: int = 0  # 0: an eighth of the steps
    sample_chars: int = 80
    beta1: float = 0.9
    beta2: float = 0.99
    eps: float = 1e-8

    def resolved(self, corpus: Corpus) -> Settings:
        """A copy with the defaults that depend on the corpus and the other settings filled in."""
        s = Settings(**asdict(self))
        s.d_ff = s.d_ff or 4 * s.d_model
        s.sample_every = s.sample_every or max(1, s.steps // 8)
        if not s.prompt:
            s.prompt = "Beautiful" if corpus.name == "zen" else (corpus.text.split() or [corpus.text[:8]])[0][:16]
        return s


def learning_rate(s: Settings, step: int) -> float:
    """``lr`` for the first half of the steps, then falling linearly to ``lr / 10`` at the last step."""
    half = s.steps / 2
    if step <= half:
        return s.lr
    return s.lr * (1.0 - 0.9 * (step - half) / (s.steps - half))


# -- parameter trees --------------------------------------------------------------------------------------
def paths(n_layers: int) -> list[tuple]:
    """Every parameter's place in the tree, as keys: ``("blocks", 0, "WQ")``, in a fixed order."""
    found: list[tuple] = [(k,) for k in ("tok_emb", "pos_emb")]
    for i in range(n_layers):
        found += [("blocks", i, k) for k in BLOCK_KEYS]
    return found + [(k,) for k in ("lnf_gamma", "lnf_beta", "WO")]


def shown_path(path: tuple) -> str:
    """``grads['blocks'][0]['WQ']`` for ``("blocks", 0, "WQ")``."""
    return "grads" + "".join(f"[{k!r}]" for k in path)


def npz_key(path: tuple) -> str:
    """``blocks.0.WQ`` for ``("blocks", 0, "WQ")``."""
    return ".".join(str(k) for k in path)


def get(tree, path: tuple):
    """The leaf of a tree at ``path``; KeyError, IndexError or TypeError when it is not there."""
    for key in path:
        tree = tree[key]
    return tree


def shapes(vocab: int, d_model: int, d_ff: int, n_layers: int, max_len: int) -> dict[tuple, tuple]:
    """The documented shape of every parameter (chapter 10's ``init_params``)."""
    block = {"ln1_gamma": (d_model,), "ln1_beta": (d_model,), "WQ": (d_model, d_model), "WK": (d_model, d_model),
             "WV": (d_model, d_model), "ln2_gamma": (d_model,), "ln2_beta": (d_model,), "W1": (d_model, d_ff),
             "b1": (d_ff,), "W2": (d_ff, d_model), "b2": (d_model,)}
    top = {"tok_emb": (vocab, d_model), "pos_emb": (max_len, d_model), "lnf_gamma": (d_model,),
           "lnf_beta": (d_model,), "WO": (d_model, vocab)}
    return {p: (block[p[2]] if p[0] == "blocks" else top[p[0]]) for p in paths(n_layers)}


class Flat:
    """The parameters as views into one float64 vector, so that Adam updates them all in a few operations.

    ``params`` is the nested dict your functions take; its arrays share memory with ``vector``.
    """

    def __init__(self, shape_of: dict[tuple, tuple], values=None) -> None:
        self.paths = list(shape_of)
        self.shapes = [shape_of[p] for p in self.paths]
        sizes = [math.prod(s) for s in self.shapes]
        self.offsets = np.cumsum([0, *sizes])
        self.vector = np.zeros(int(self.offsets[-1]))
        n_layers = sum(1 for p in self.paths if p[0] == "blocks") // len(BLOCK_KEYS)
        self.params: dict = {"blocks": [{} for _ in range(n_layers)]}
        for k, (path, shape) in enumerate(zip(self.paths, self.shapes, strict=True)):
            view = self.vector[self.offsets[k]:self.offsets[k + 1]].reshape(shape)
            if values is not None:
                view[...] = get(values, path)
            (self.params["blocks"][path[1]] if path[0] == "blocks" else self.params)[path[-1]] = view
        self.params = {k: self.params[k] for k in ("tok_emb", "pos_emb", "blocks", "lnf_gamma", "lnf_beta", "WO")}

    def flatten(self, grads, what: str = "grads") -> np.ndarray:
        """A gradient tree as one vector in the same order; TrainError if it does not mirror the parameters."""
        out = np.empty_like(self.vector)
        for k, (path, shape) in enumerate(zip(self.paths, self.shapes, strict=True)):
            try:
                leaf = get(grads, path)
            except (KeyError, IndexError, TypeError):
                raise TrainError(f"{what} has no {shown_path(path)[5:]}: the gradients must mirror params "
                                 "(same keys, same list of blocks; see init_params)") from None
            leaf = np.asarray(leaf, dtype=np.float64)
            if leaf.shape != shape:
                raise TrainError(f"{shown_path(path)} has shape {leaf.shape}; it must have its parameter's "
                                 f"shape {shape}")
            out[self.offsets[k]:self.offsets[k + 1]] = leaf.ravel()
        return out


class Adam:
    r"""Adam (Kingma & Ba, 2015) on one parameter vector: a running mean and a running mean square of the gradient.

    $$m \leftarrow \beta_1 m + (1-\beta_1) g,\quad v \leftarrow \beta_2 v + (1-\beta_2) g^2,\quad
      \theta \leftarrow \theta - \eta\, \frac{m / (1-\beta_1^t)}{\sqrt{v / (1-\beta_2^t)} + \epsilon}$$
    """

    def __init__(self, size: int, beta1: float, beta2: float, eps: float) -> None:
        self.m, self.v = np.zeros(size), np.zeros(size)
        self.beta1, self.beta2, self.eps, self.t = beta1, beta2, eps, 0

    def step(self, theta: np.ndarray, g: np.ndarray, lr: float) -> None:
        """Update ``theta`` in place with the gradient ``g``."""
        self.t += 1
        self.m *= self.beta1
        self.m += (1 - self.beta1) * g
        self.v *= self.beta2
        self.v += (1 - self.beta2) * (g * g)
        m_hat = self.m / (1 - self.beta1 ** self.t)
        v_hat = self.v / (1 - self.beta2 ** self.t)
        theta -= lr * m_hat / (np.sqrt(v_hat) + self.eps)


# -- the checks before training ---------------------------------------------------------------------------
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
    if culprit is None:
        path, function = wrong[0][:2]
        why = (f"{function}" if function == "transformer_backward" else
               "transformer_backward (the layer functions are right on their own: look at how it chains them)")
    else:
        function, why = culprit[0], f"{culprit[0]}: {culprit[1]}"
    path, _, mine, theirs, where = next((w for w in wrong if w[1] == function), wrong[0])
    others = [shown_path(w[0]) for w in wrong if w[0] != path]
    lines = [f"gradient check failed, before training: {shown_path(path)} is wrong: look at {why}.",
             f"  at index {tuple(int(i) for i in where)}: yours {mine:.6g}, central differences {theirs:.6g}"]
    if others:
        lines.append(f"  also wrong: {', '.join(others[:4])}" + (f" and {len(others) - 4} more" if len(others) > 4
                                                                  else ""))
    lines.append("Training with a wrong gradient would only waste your time: `nox -s chapter10` shows the failing "
                 "checks; fix them and train again.")
    raise TrainError("\n".join(lines))


# -- training -------------------------------------------------------------------------------------------
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


# -- figures ----------------------------------------------------------------------------------------------
def shown_char(c: str) -> str:
    """A character as an axis label: a space is ␣, a newline ↵, a tab →."""
    return {" ": "␣", "\n": "↵", "\t": "→"}.get(c, c)


def loss_figure(losses, vocab_size: int, title: str):
    """Loss by step (thin), its running mean (thick) and the loss of a uniform guess, ln(vocab)."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(7.0, 3.9), layout="constrained")
    ax = fig.subplots()
    steps = np.arange(1, len(losses) + 1)
    window = min(100, max(10, len(losses) // 10))
    ax.plot(steps, losses, color="#1f77b4", alpha=0.3, linewidth=0.7, label="one window's loss")
    ax.plot(steps, smooth(losses, window), color="#1f77b4", linewidth=2.2, label=f"mean of the last {window} steps")
    uniform = math.log(vocab_size)
    ax.axhline(uniform, color="#8c959f", linewidth=1, linestyle=(0, (4, 3)))
    ax.annotate(f"uniform guess: ln {vocab_size} ≈ {uniform:.2f}", (1, uniform), xycoords=("axes fraction", "data"),
                xytext=(-2, 3), textcoords="offset points", ha="right", va="bottom", color="#57606a", fontsize=9)
    ax.set(xlim=(0, len(losses)), ylim=(0, max(uniform, float(np.max(losses))) * 1.05), xlabel="step",
           ylabel="cross-entropy (nats per character)", title=title)
    ax.grid(axis="y", color="#d0d7de", linewidth=0.8)
    ax.legend(loc="lower left")
    return fig


def attention_figure(text: str, maps: list, title: str):
    """One heat map per layer: row i is how character i spreads its attention over characters 0 … i."""
    import matplotlib
    from matplotlib.figure import Figure

    labels = [shown_char(c) for c in text]
    n, layers = len(text), max(1, len(maps))
    cols = min(layers, 2)
    rows = math.ceil(layers / cols)
    fig = Figure(figsize=(3.3 * cols + 0.6, 3.5 * rows + 0.5), layout="constrained")
    axes = fig.subplots(rows, cols, squeeze=False).ravel()
    cmap = matplotlib.colormaps["Blues"].with_extremes(bad="#eeeeee")
    image = None
    for number, ax in enumerate(axes):
        if number >= len(maps):
            ax.axis("off")
            if not maps:
                ax.text(0.5, 0.5, "no attention layers (--layers 0)", ha="center", va="center")
            continue
        weights = np.ma.masked_array(maps[number], ~np.tril(np.ones((n, n), dtype=bool)))
        image = ax.imshow(weights, cmap=cmap, vmin=0.0, vmax=1.0, interpolation="nearest")
        ax.set_xticks(range(n), labels, fontsize=7)
        ax.set_yticks(range(n), labels, fontsize=7)
        ax.tick_params(length=0, top=True, bottom=False, labeltop=True, labelbottom=False)
        ax.set_title(f"layer {number + 1}", fontsize=10)
        ax.set_xlabel("attended to (key)", fontsize=8)
        ax.set_ylabel("attending (query)", fontsize=8)
        ax.xaxis.set_label_position("top")
        ax.spines[:].set_visible(False)
    if image is not None:
        bar = fig.colorbar(image, ax=list(axes), shrink=0.6, aspect=20)
        bar.set_label("attention weight")
        bar.outline.set_visible(False)
    fig.suptitle(title, fontsize=11, fontweight="bold")
    return fig


def save_png(fig, path: Path) -> None:
    """Write a figure as a PNG."""
    import matplotlib

    from ..style import STYLE

    with matplotlib.rc_context(STYLE):
        fig.savefig(path, format="png", dpi=120, metadata={"Software": None})


# -- the child process ------------------------------------------------------------------------------------
class Guarded:
    """Your chapter module, with a watchdog around every call.

    Past ``timeout`` s the process says where it was and exits (``faulthandler``, which works even while NumPy's
    C code runs). The watchdog is re-armed at most once a second, so a step pays nothing for it.
    """

    def __init__(self, module, timeout: float, log, beat) -> None:
        import faulthandler

        self._module, self._timeout, self._log, self._beat = module, timeout, log, beat
        self._faulthandler = faulthandler
        self._armed = 0.0
        self._functions: dict = {}

    def _arm(self) -> None:
        now = time.monotonic()
        if now - self._armed >= 1.0:
            self._faulthandler.dump_traceback_later(self._timeout, exit=True, file=self._log)
            self._armed = now
            self._beat()

    def __getattr__(self, name: str):
        if name.startswith("_"):
            raise AttributeError(name)
        if name not in self._functions:
            function = getattr(self._module, name)

            def call(*args, **kwargs):
                self._arm()
                return function(*args, **kwargs)

            call.__name__ = name
            self._functions[name] = call
        return self._functions[name]


def learner_frames(tb, folder: Path) -> list[traceback.FrameSummary]:
    """The frames of a traceback that are in the learner's folder."""
    return [f for f in traceback.extract_tb(tb) if Path(f.filename).resolve().is_relative_to(folder)]


def describe(err: BaseException, folder: Path, shown_folder: str, doing: str) -> str:
    """A learner's exception as one message: what, where in their file, and what to do."""
    frames = learner_frames(err.__traceback__, folder)
    inner = frames[-1]
    where = f"{shown_folder}/{Path(inner.filename).name}:{inner.lineno} in {inner.name}"
    head = f"{type(err).__name__}: {err}".strip()
    if isinstance(err, NotImplementedError):
        return (f"chapter 10 is not finished: {frames[0].name} stops at {where}\n  {head}\n"
                "Train once `nox -s chapter10` passes every step.")
    return (f"{frames[0].name} raised {head}\n  at {where}: {(inner.line or '').strip()}\n"
            f"  while {doing}. `nox -s chapter10` checks every function on its own.")


def child_main() -> int:
    """Run in the child process: read the job from stdin, write one JSON event per line to the original stdout."""
    job = json.loads(sys.stdin.readline())
    events = os.fdopen(os.dup(1), "w", encoding="utf-8", buffering=1)
    os.dup2(2, 1)  # what the learner's code prints goes to the log, not into the events

    def send(event: dict) -> None:
        events.write(json.dumps(event) + "\n")

    folder = Path(job["folder"])
    sys.path.insert(0, str(folder.parent))
    log = open(job["log"], "a", encoding="utf-8")  # noqa: SIM115 - open for the life of the process
    doing = "importing your chapter 10"
    last_beat = [0.0]

    def beat() -> None:
        if time.monotonic() - last_beat[0] > 1.0:
            last_beat[0] = time.monotonic()
            send({"event": "beat"})

    try:
        import faulthandler
        import importlib

        faulthandler.dump_traceback_later(job["timeout"], exit=True, file=log)
        module = importlib.import_module(f"{folder.name}.{job['module']}")
        ch = Guarded(module, job["timeout"], log, beat)
        if job["mode"] == "train":
            corpus = Corpus(**job["corpus"])
            s = Settings(**job["settings"])
            doing = "checking your gradients on a tiny model"
            send({"event": "phase", "what": doing})
            began = time.perf_counter()
            checked = check_gradients(ch)
            send({"event": "checked", **checked, "seconds": time.perf_counter() - began})
            doing = "training"

            def report(event: dict) -> None:
                nonlocal doing
                if event["event"] == "step":
                    doing = f"training (step {event['step'] + 1})"
                send(event)

            run = train_model(ch, corpus, s, report)
            np.savez(job["model"], **model_arrays(run["params"], corpus.vocab))
            send({"event": "done", "train_seconds": run["train_seconds"], "attention_text": run["attention_text"],
                  "attention": [m.tolist() for m in run["attention"]], "cpu_seconds": time.process_time()})
        else:
            doing = "generating"
            arrays = dict(np.load(job["model"], allow_pickle=False))
            model, vocab = model_from_arrays(arrays)
            index = {c: i for i, c in enumerate(vocab)}
            rng = np.random.default_rng(job["seed"])
            context = model.shapes[model.paths.index(("pos_emb",))][0]
            ids = sample(ch, model.params, [index[c] for c in job["prompt"]], job["n"], context, job["temperature"],
                         rng)
            send({"event": "done", "text": "".join(vocab[i] for i in ids)})
        faulthandler.cancel_dump_traceback_later()
        return 0
    except TrainError as err:
        send({"event": "failed", "message": str(err)})
        return 1
    except Exception as err:  # noqa: BLE001 - the learner's exception becomes a message; ours a traceback
        if err.__traceback__ is not None and learner_frames(err.__traceback__, folder.resolve()):
            send({"event": "failed", "message": describe(err, folder.resolve(), job["shown_folder"], doing)})
            return 1
        traceback.print_exc(file=log)
        send({"event": "failed", "message": f"the training tool failed while {doing}: {type(err).__name__}: {err} "
                                            "(the traceback is above)", "tool": True})
        return 1


# -- model files ------------------------------------------------------------------------------------------
FORMAT = 1


def model_arrays(model: Flat, vocab: list[str]) -> dict[str, np.ndarray]:
    """What model.npz holds: every parameter under ``blocks.0.WQ``-style keys, the vocabulary, a format number."""
    arrays = {npz_key(p): np.array(get(model.params, p)) for p in model.paths}
    arrays["vocab"] = np.array([ord(c) for c in vocab], dtype=np.int64)
    arrays["kata_format"] = np.array(FORMAT)
    return arrays


def model_from_arrays(arrays: dict) -> tuple[Flat, list[str]]:
    """Parameters and vocabulary back from model.npz's arrays; TrainError naming what does not fit."""
    if "vocab" not in arrays or "tok_emb" not in arrays or "pos_emb" not in arrays:
        raise TrainError("it has no vocab, tok_emb or pos_emb: not a model written by nox -s train")
    if int(np.asarray(arrays.get("kata_format", -1))) != FORMAT:
        raise TrainError(f"it has format {arrays.get('kata_format')!r}; this tool reads format {FORMAT}: train again")
    vocab_codes = np.asarray(arrays["vocab"])
    if vocab_codes.ndim != 1 or not np.issubdtype(vocab_codes.dtype, np.integer):
        raise TrainError("its vocab is not a list of character codes")
    vocab = [chr(int(c)) for c in vocab_codes]
    (v, d), (max_len, _) = np.shape(arrays["tok_emb"]), np.shape(arrays["pos_emb"])
    n_layers = len({k.split(".")[1] for k in arrays if k.startswith("blocks.")})
    d_ff = np.shape(arrays.get("blocks.0.W1", np.zeros((d, 4 * d))))[-1]
    want = shapes(len(vocab), d, d_ff, n_layers, max_len)
    for path, shape in want.items():
        key = npz_key(path)
        if key not in arrays:
            raise TrainError(f"it has no {key}")
        if np.shape(arrays[key]) != shape:
            raise TrainError(f"its {key} has shape {np.shape(arrays[key])}, expected {shape} "
                             f"(vocab {len(vocab)}, d_model {d}, d_ff {d_ff}, {n_layers} layers)")
    if v != len(vocab):
        raise TrainError(f"its tok_emb has {v} rows but its vocab {len(vocab)} characters")
    values: dict = {"blocks": [{} for _ in range(n_layers)]}
    for path in want:
        (values["blocks"][path[1]] if path[0] == "blocks" else values)[path[-1]] = arrays[npz_key(path)]
    return Flat(want, values), vocab


def load_model(folder: Path) -> tuple[Path, dict, list[str], int]:
    """A run folder's (or a model.npz's) model file, run.json (or {}), vocabulary and context.

    Raises:
        TrainError: no such file, not an .npz, pickled arrays, or arrays that do not make a model.
    """
    folder = Path(folder)
    path = folder / "model.npz" if folder.is_dir() else folder
    if not path.exists():
        hint = "" if folder.exists() else " (nox -s train writes runs/<name>/; `ls runs` lists them)"
        raise TrainError(f"there is no model at {path}{hint}")
    with path.open("rb") as f:
        if f.read(4) != b"PK\x03\x04":
            raise TrainError(f"{path} is not a model written by nox -s train (not a NumPy .npz file)")
    try:
        with np.load(path, allow_pickle=False) as npz:
            arrays = dict(npz)
    except ValueError as err:
        raise TrainError(f"{path} is not a model written by nox -s train: {err}") from None
    except (OSError, EOFError, KeyError) as err:  # zipfile errors are OSErrors or BadZipFile (an Exception)
        raise TrainError(f"{path} is not a model written by nox -s train (not a NumPy .npz file: {err})") from None
    except Exception as err:  # noqa: BLE001 - zipfile.BadZipFile and friends
        raise TrainError(f"{path} is not a model written by nox -s train ({type(err).__name__}: {err})") from None
    try:
        model, vocab = model_from_arrays(arrays)
    except TrainError as err:
        raise TrainError(f"{path} does not fit this tool: {err}") from None
    run_json = path.parent / "run.json"
    try:
        run = json.loads(run_json.read_text(encoding="utf-8")) if run_json.exists() else {}
    except ValueError:
        run = {}
    return path, run, vocab, int(np.shape(model.params["pos_emb"])[0])


# -- this process: start the child, show its progress, write the run ---------------------------------------
@dataclass
class Child:
    """The child process running a job, and what it says."""

    job: dict
    timeout: float
    events: queue.Queue = field(default_factory=queue.Queue)

    def __post_init__(self) -> None:
        self.tmp = tempfile.TemporaryDirectory(prefix="kata-train-")
        self.log_path = Path(self.tmp.name) / "child.log"
        self.log_path.touch()
        self.job = dict(self.job, log=str(self.log_path))
        path = [str(project.ROOT), *(p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p)]
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(path),
                   PYTHONIOENCODING="utf-8", PYTHONFAULTHANDLER="1")
        env.update({name: "1" for name in THREADS})  # one thread: faster at this size, and the same sums each run
        self.log = self.log_path.open("a", encoding="utf-8")
        self.proc = subprocess.Popen(
            [sys.executable, "-X", "utf8", "-m", "kata.learner.train", "--child"], stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, stderr=self.log, env=env, cwd=os.getcwd(),
            start_new_session=hasattr(os, "setsid"))
        self.proc.stdin.write(json.dumps(self.job).encode("utf-8") + b"\n")
        self.proc.stdin.close()
        Drain(self.proc.stdout, self._event).start()

    def _event(self, line: str | None) -> None:
        """One line from the child: an event (None once it has ended)."""
        if line is None:
            self.events.put(None)
            return
        try:
            self.events.put(json.loads(line))
        except ValueError:
            pass

    def next(self, started: bool) -> dict:
        """The next event; TrainError if the child hung, crashed or fell silent."""
        try:
            event = self.events.get(timeout=(self.timeout + GRACE) if started else STARTUP + self.timeout)
        except queue.Empty:
            self.stop()
            raise TrainError(self.hung(silent=True)) from None
        if event is None:
            self.proc.wait()
            raise TrainError(self.hung(silent=False))
        return event

    def hung(self, silent: bool) -> str:
        """What to say when the child stopped without an answer."""
        self.log.flush()
        text = self.log_path.read_text(encoding="utf-8", errors="replace")
        folder = Path(self.job["folder"]).resolve()
        if "Timeout (" in text:
            frames = re.findall(r'File "(.+?)", line (\d+) in (\S+)', text.split("Timeout (", 1)[1])
            mine = [(f, line, fn) for f, line, fn in frames if Path(f).resolve().is_relative_to(folder)]
            if mine:
                inner, outer = mine[0], mine[-1]
                where = f"{self.job['shown_folder']}/{Path(inner[0]).name}:{inner[1]} in {inner[2]}"
                called = f" (called as {outer[2]})" if outer[2] != inner[2] else ""
                return (f"your code did not return within {self.timeout:g} s: an endless loop? It was running "
                        f"{where}{called}. The run was stopped (--timeout sets the limit).")
            return f"a call did not return within {self.timeout:g} s; the run was stopped.\n{text[-2000:]}"
        if silent:
            return f"the training process said nothing for {self.timeout + GRACE:g} s and was stopped."
        tail = "\n".join(text.strip().splitlines()[-15:])
        return f"the training process ended unexpectedly (exit code {self.proc.returncode}):\n{tail}"

    def printed(self) -> str:
        """What the learner's code printed (the log without a traceback of ours)."""
        self.log.flush()
        return self.log_path.read_text(encoding="utf-8", errors="replace")

    def stop(self) -> None:
        """End the child (and anything it started)."""
        if self.proc.poll() is None:
            kill_tree(self.proc)

    def close(self) -> None:
        """Stop the child and remove its folder."""
        self.stop()
        self.log.close()
        self.tmp.cleanup()


def chapter10(impl: str) -> tuple[Path, str, str]:
    """(folder, module name, folder as shown) of an implementation's chapter 10; TrainError if it has none."""
    try:
        folder = project.impl_folder(impl)
    except SystemExit as err:
        raise TrainError(str(err)) from None
    found = project.chapter_files(folder).get(10)
    if found is None:
        raise TrainError(f"{folder} has no chapter10_*.py")
    shown = folder.relative_to(project.ROOT).as_posix() if folder.is_relative_to(project.ROOT) else str(folder)
    return folder, found.stem, shown


def parser() -> argparse.ArgumentParser:
    """The command line of ``nox -s train -- ...``."""
    d = Settings()
    p = argparse.ArgumentParser(
        prog="nox -s train --", description="Train a transformer made of your chapter 10 functions on real text.",
        epilog="Then: nox -s generate -- runs/<name> --prompt TEXT --n 200.")
    p.add_argument("--corpus", default="zen", help="zen (default: the Zen of Python), book (a few pages of "
                   "Shakespeare in data/), or the path of a UTF-8 text file")
    p.add_argument("--impl", default="exercises", help="package name or folder to train (default: exercises)")
    p.add_argument("--steps", type=int, default=d.steps, help=f"training steps, one window each (default {d.steps})")
    p.add_argument("--lr", type=float, default=d.lr, help=f"Adam's learning rate (default {d.lr:g}; it falls to a "
                   "tenth over the second half)")
    p.add_argument("--d-model", type=int, default=d.d_model, help=f"width of the stream (default {d.d_model})")
    p.add_argument("--d-ff", type=int, default=0, help="width of the feed-forward layer (default 4 × d_model)")
    p.add_argument("--layers", type=int, default=d.layers, help=f"number of blocks (default {d.layers})")
    p.add_argument("--context", type=int, default=d.context, help=f"characters per window (default {d.context})")
    p.add_argument("--seed", type=int, default=d.seed, help=f"seed: same seed, same run (default {d.seed})")
    p.add_argument("--prompt", default="", help="prompt of the samples (default: Beautiful for zen, else the "
                   "corpus's first word)")
    p.add_argument("--sample-every", type=int, default=0, help="steps between samples (default: an eighth of "
                   "the steps)")
    p.add_argument("--name", default="", help="the run's folder name under --runs (default: the corpus's name)")
    p.add_argument("--runs", default="runs", help="where run folders go (default: runs)")
    p.add_argument("--timeout", type=float, default=30.0, help="seconds one call into your code may take "
                   "(default 30)")
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    return p


def _validate(args) -> None:
    for name, least in (("steps", 1), ("d_model", 1), ("layers", 0), ("context", 2), ("d_ff", 0),
                        ("sample_every", 0)):
        if getattr(args, name) < least:
            raise TrainError(f"--{name.replace('_', '-')} must be at least {least}, got {getattr(args, name)}")
    if not (math.isfinite(args.lr) and args.lr > 0):
        raise TrainError(f"--lr must be a positive number, got {args.lr}")
    if not args.timeout > 0:
        raise TrainError(f"--timeout must be positive, got {args.timeout}")


def _progress(total: int):
    from tqdm import tqdm

    return tqdm(total=total, unit="step", dynamic_ncols=True, disable=None, leave=True,
                bar_format="{l_bar}{bar}| {n_fmt}/{total_fmt} [{elapsed}<{remaining}{postfix}]")


def _say(text: str, bar=None) -> None:
    if bar is not None and not bar.disable:
        bar.write(text)
    else:
        print(text, flush=True)


def _one_line(text: str, width: int = 100) -> str:
    flat = text.replace("\n", "↵")
    return flat if len(flat) <= width else flat[:width - 1] + "…"


def main(argv: list[str] | None = None) -> int:
    """Check, train, write the run folder; 0 when done, 1 when a check or your code stopped it, 2 for bad input."""
    args = parser().parse_args(argv)
    if args.child:
        return child_main()
    started = time.perf_counter()
    try:
        _validate(args)
        corpus = load_corpus(args.corpus, args.context)
        folder, module, shown_folder = chapter10(args.impl)
        s = Settings(corpus=args.corpus, steps=args.steps, lr=args.lr, d_model=args.d_model, d_ff=args.d_ff,
                     layers=args.layers, context=args.context, seed=args.seed, prompt=args.prompt,
                     sample_every=args.sample_every).resolved(corpus)
        if any(c not in corpus.vocab for c in s.prompt):
            raise TrainError(f"--prompt {s.prompt!r} has characters that are not in the corpus: "
                             f"{sorted({c for c in s.prompt if c not in corpus.vocab})}")
    except TrainError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    out = Path(args.runs) / (args.name or corpus.name)
    print(f"training {shown_folder}/{module}.py on {corpus.source}: {len(corpus.text):,} characters, "
          f"{len(corpus.vocab)} distinct")
    print(f"  d_model {s.d_model}, d_ff {s.d_ff}, {s.layers} layer{'s' * (s.layers != 1)}, context {s.context}, "
          f"{s.steps} steps of Adam at lr {s.lr:g}, seed {s.seed}  ->  {out}/", flush=True)
    with tempfile.TemporaryDirectory(prefix="kata-run-") as tmp:
        job = {"mode": "train", "folder": str(folder), "module": module, "shown_folder": shown_folder,
               "timeout": args.timeout, "corpus": asdict(corpus), "settings": asdict(s),
               "model": str(Path(tmp) / "model.npz")}
        child = Child(job, args.timeout)
        try:
            result = _follow(child, s, corpus)
        except TrainError as err:
            printed = child.printed().strip()
            if printed and "Timeout (" not in printed:
                print(f"(your code printed, last lines:)\n{chr(10).join(printed.splitlines()[-10:])}",
                      file=sys.stderr)
            print(f"\n{err}", file=sys.stderr)
            return 1
        except KeyboardInterrupt:
            print("\nstopped (Ctrl-C): nothing written", file=sys.stderr)
            return 130
        finally:
            child.close()
        out.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(job["model"], out / "model.npz")
    _write_run(out, corpus, s, args, result, started)
    seconds = time.perf_counter() - started
    first, final = result["losses"][0], smoothed_tail(result["losses"])
    print(f"\ndone in {seconds:.1f} s ({result['train_seconds']:.1f} s training, "
          f"{s.steps * s.context / result['train_seconds']:,.0f} tokens/s): loss {first:.3f} at step 1 -> "
          f"{final:.3f} (mean of the last {min(100, s.steps)} steps)")
    print(f"final sample, greedy from {s.prompt!r}:\n\n{result['samples'][-1]['text']}\n")
    print(f"wrote {out}/: loss.png, attention.png, samples.txt, model.npz, run.json")
    print(f'next: nox -s generate -- {out} --prompt "{s.prompt}" --n 200')
    return 0


def _follow(child: Child, s: Settings, corpus: Corpus) -> dict:
    """Show the child's progress until it is done; return the losses, samples and attention maps."""
    losses, samples = [], []
    bar = None
    started = False
    try:
        while True:
            event = child.next(started)
            kind = event.get("event")
            if kind == "beat":
                started = True
            elif kind == "phase":
                started = True
                print(f"  {event['what']} …", flush=True)
            elif kind == "checked":
                print(f"  ✓ all {event['parameters']} gradient numbers of a tiny model match central differences "
                      f"(largest difference {event['largest_difference']:.0e}); no position sees a later one",
                      flush=True)
                bar = _progress(s.steps)
            elif kind == "step":
                losses.append(event["loss"])
                if bar is not None:
                    bar.update(1)
                    if event["step"] % 10 == 0 or event["step"] == s.steps:
                        rate = event["step"] * s.context / max(event["train_seconds"], 1e-9)
                        bar.set_postfix_str(f"loss {smoothed_tail(losses, 50):.3f}, {rate:,.0f} tok/s", refresh=False)
            elif kind == "sample":
                samples.append({k: event[k] for k in ("step", "loss", "text")})
                label = "final" if event.get("final") else f"step {event['step']:>{len(str(s.steps))}}"
                _say(f"  {label}  loss {event['loss']:.3f}  {_one_line(event['text'])}", bar)
            elif kind == "failed":
                raise TrainError(event["message"])
            elif kind == "done":
                return {"losses": losses, "samples": samples, "train_seconds": event["train_seconds"],
                        "attention_text": event["attention_text"], "attention": event["attention"],
                        "child_cpu_seconds": event["cpu_seconds"]}
    finally:
        if bar is not None:
            bar.close()


def _write_run(out: Path, corpus: Corpus, s: Settings, args, result: dict, started: float) -> None:
    losses = result["losses"]
    name = {"zen": "the Zen of Python", "book": "Coriolanus, act I"}.get(corpus.name, corpus.name)
    import matplotlib

    from ..style import STYLE

    with matplotlib.rc_context(STYLE):
        save_png(loss_figure(losses, len(corpus.vocab), f"Training loss on {name}"), out / "loss.png")
        save_png(attention_figure(result["attention_text"], result["attention"],
                                  f"Attention weights on {result['attention_text']!r}"), out / "attention.png")
    (out / "samples.txt").write_text(
        "".join(f"step {x['step']} (loss {x['loss']:.3f}, greedy from {s.prompt!r}):\n{x['text']}\n\n"
                for x in result["samples"]), encoding="utf-8")
    seconds = time.perf_counter() - started
    run = {
        "settings": asdict(s), "impl": args.impl, "corpus": {"name": corpus.name, "source": corpus.source,
                                                             "characters": len(corpus.text),
                                                             "vocab_size": len(corpus.vocab)},
        "first_loss": losses[0], "final_loss": smoothed_tail(losses),
        "final_loss_means": f"mean of the last {min(100, len(losses))} steps", "seconds": round(seconds, 3),
        "train_seconds": round(result["train_seconds"], 3),
        "cpu_seconds": round(result["child_cpu_seconds"] + time.process_time(), 3),
        "tokens_per_second": round(s.steps * s.context / result["train_seconds"], 1),
        "final_sample": result["samples"][-1]["text"], "losses": losses,
    }
    (out / "run.json").write_text(json.dumps(run, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
