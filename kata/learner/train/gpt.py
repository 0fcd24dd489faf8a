r"""The GPT of ``nox -s train -- --model gpt`` as a model of the trainer (``docs/train-gpt.md``).

The model is the one chapter 16's ``gpt_forward`` runs: a token embedding, the pre-norm blocks of chapter 13, a
final RMSNorm and an unembedding, with no position embedding (RoPE rotates the queries and keys). The parameters
are a dict

    ``{"tok_emb": (vocab, d), "blocks": [chapter 13 block dicts], "g_final": (d,), "W_out": (d, vocab)}``

and, for chapter 15's optimiser (whose functions take a flat dict of arrays), the same arrays under flat names
``tok_emb``, ``blocks.0.WQ``, …, ``g_final``, ``W_out`` (``flat``, ``nested``).

Your code does every layer: ``prenorm_block`` and ``prenorm_block_backward`` (which use your chapters 11 and 12),
``rms_norm`` and ``rms_norm_backward``. What joins them is simple linear algebra, done here:

$$x_0 = E[\mathrm{ids}],\quad x_{l+1} = \mathrm{block}_l(x_l),\quad
  z = \mathrm{RMSNorm}_{g}(x_L)\,W_{out},\quad
  L = -\frac{1}{BT}\sum_{b,t} \log \mathrm{softmax}(z_{b,t})_{y_{b,t}}$$

and backwards $dz = (\mathrm{softmax}(z) - \mathrm{onehot}(y)) / BT$, $dW_{out} = h^\top dz$,
$dh = dz\,W_{out}^\top$, then your ``rms_norm_backward`` and ``prenorm_block_backward`` down the blocks, and
$dE[i] = \sum_{t:\,\mathrm{ids}_t = i} dx_0[t]$ (a token that appears twice adds both rows).

- **Tokens.** Your ``train_bpe`` learns ``vocab_size - 256`` merges from the whole corpus, your ``encode`` turns it
  into token ids, a piece of about 16,000 characters a call (``pieces``: the same ids as the whole text in one
  call); the last tenth is held out for validation. A resumed run reads the merges from its checkpoint
  and only encodes.
- **A step.** ``batch`` windows of ``context + 1`` tokens from the training split (their starts drawn from a
  generator seeded with ``(seed, step)``), the loss and gradients above, then your ``clip_by_global_norm``,
  ``lr_at`` and ``adamw_step``; the checkpoint is your ``save_checkpoint``'s.
- **Evaluations** before the first step, every ``eval_every`` steps and at the end: the mean loss on fixed
  windows of each split (the same windows every time, so the curves are comparable), and a greedy sample.
- **Generating** streams tokens with your chapter 16 and the KV cache, checked against the full forward (a
  mixture of experts: your ``attention_with_cache`` and your chapter 22, joined by ``moe.cached_forward``).

Part of ``nox -s train`` (``kata/learner/train/__init__.py`` tells the whole story).
"""

# ruff: noqa: D102 - a model's methods are documented once, on the interface they implement (model.Model)
from __future__ import annotations

import itertools
import json
import math
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from ... import learners_code
from . import moe as mixture
from .corpus import TrainError, load_corpus
from .gradcheck import compare, numerical
from .model import Model, Probe, command
from .moe import BALANCE, MOE_BLOCK_KEYS, TINY_BALANCE, Moe, active_parameters, expert_shapes

GPT_BLOCK_KEYS = ("g1", "WQ", "WK", "WV", "WO", "g2", "W_gate", "W_up", "W_down")  # chapter 13's BLOCK_KEYS


GPT_FORMAT = "kata-gpt-1"  # the marker of a GPT's model.npz


@dataclass
class GptSettings:
    """Everything that decides a GPT run (saved in run.json and in the checkpoint's checkpoint.json)."""

    corpus: str = "pydoc"
    vocab_size: int = 512
    d_model: int = 64
    n_heads: int = 4
    layers: int = 2
    d_ff: int = 176  # SwiGLU's width: about 8/3 of d_model, as the models that use it choose
    context: int = 64
    batch: int = 8
    steps: int = 2000
    lr: float = 3e-3
    min_lr: float = 3e-4
    warmup: int = 100
    weight_decay: float = 0.01
    clip: float = 1.0
    eval_every: int = 200
    seed: int = 0
    prompt: str = "A list is"
    validation: float = 0.1  # the last tenth of the tokens is held out
    kv_heads: int = 0  # key/value heads (chapter 18's grouped-query attention); 0: one per query head
    experts: int = 0  # experts per block (chapter 22's mixture of experts, moe.py); 0: the dense SwiGLU
    top_k: int = 0  # experts each token runs through, each of width d_ff / top_k
    balance: float = BALANCE  # the load-balancing loss's coefficient (a mixture of experts only)

    MOE = ("experts", "top_k", "balance")  # left out of a dense run's settings (its run.json is as before)

    @property
    def grouped(self) -> bool:
        """Whether fewer key/value heads than query heads are trained (``--kv-heads``, your chapter 18)."""
        return 0 < self.kv_heads < self.n_heads

    def check(self) -> GptSettings:
        """The settings themselves, after refusing the ones no run can use (TrainError naming the option)."""
        for name, least in (("vocab_size", 257), ("d_model", 2), ("n_heads", 1), ("layers", 1), ("d_ff", 1),
                            ("context", 2), ("batch", 1), ("steps", 1), ("warmup", 0), ("eval_every", 1),
                            ("seed", 0)):
            value = getattr(self, name)
            if not isinstance(value, int) or value < least:
                raise TrainError(f"--{name.replace('_', '-')} must be a whole number of at least {least}, "
                                 f"got {value!r}")
        if self.d_model % self.n_heads or (self.d_model // self.n_heads) % 2:
            raise TrainError(f"--d-model {self.d_model} must split into --heads {self.n_heads} heads of an even "
                             "width (RoPE turns pairs of features)")
        if not isinstance(self.kv_heads, int) or self.kv_heads < 0 or (self.kv_heads and self.n_heads % self.kv_heads):
            raise TrainError(f"--kv-heads must be a whole number that divides --heads {self.n_heads}, got "
                             f"{self.kv_heads!r}")
        if self.warmup > self.steps:
            raise TrainError(f"--warmup {self.warmup} is more than --steps {self.steps}")
        self._check_experts()
        for name in ("lr", "clip"):
            if not (np.isfinite(getattr(self, name)) and getattr(self, name) > 0):
                raise TrainError(f"--{name} must be a positive number, got {getattr(self, name)}")
        if not 0 <= self.min_lr <= self.lr:
            raise TrainError(f"--min-lr must be between 0 and --lr {self.lr:g}, got {self.min_lr:g}")
        if not (np.isfinite(self.weight_decay) and self.weight_decay >= 0):
            raise TrainError(f"--weight-decay must be 0 or more, got {self.weight_decay}")
        if not 0 < self.validation < 0.5:
            raise TrainError(f"the validation share must be between 0 and 0.5, got {self.validation}")
        return self

    def _check_experts(self) -> None:
        """Refuse --experts and --top-k values no mixture of experts can use (TrainError naming the option)."""
        for name in ("experts", "top_k"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise TrainError(f"--{name.replace('_', '-')} must be a whole number, got {value!r}")
        if not self.experts:
            if self.top_k:
                raise TrainError(f"--top-k {self.top_k} chooses among experts: give --experts too (e.g. --experts 4 "
                                 "--top-k 2)")
            return
        if self.experts < 2:
            raise TrainError(f"--experts must be at least 2 (one expert is the dense model), got {self.experts}")
        if not 1 <= self.top_k <= self.experts:
            raise TrainError(f"--top-k must be from 1 to --experts {self.experts} (the experts each token runs "
                             f"through), got {self.top_k}")
        if self.d_ff % self.top_k:
            raise TrainError(f"--d-ff {self.d_ff} must split into --top-k {self.top_k} experts' widths of a whole "
                             "number (each expert is d_ff / top_k wide, so a token's active parameters are the "
                             "dense model's)")
        if not (np.isfinite(self.balance) and self.balance >= 0):
            raise TrainError(f"--balance must be 0 or more, got {self.balance}")

    @property
    def moe(self) -> Moe | None:
        """What a mixture-of-experts model carries (``--experts``, your chapter 22), or None for the dense GPT."""
        return Moe(self.top_k, self.balance) if self.experts else None

    def as_dict(self) -> dict:
        """The settings as plain data (a dense run's without the mixture's three)."""
        d = asdict(self)
        return d if self.experts else {k: v for k, v in d.items() if k not in self.MOE}


def block_keys(moe: bool) -> tuple[str, ...]:
    """A block's keys: chapter 13's, or with a router and stacked experts for a mixture of experts (moe.py)."""
    return MOE_BLOCK_KEYS if moe else GPT_BLOCK_KEYS


def flat_names(layers: int, moe: bool = False) -> list[str]:
    """Every parameter's flat name, in a fixed order: ``tok_emb``, ``blocks.0.g1``, …, ``g_final``, ``W_out``."""
    return ["tok_emb", *(f"blocks.{i}.{k}" for i in range(layers) for k in block_keys(moe)), "g_final", "W_out"]


def flat(model: dict) -> dict[str, np.ndarray]:
    """The model's arrays under flat names (the same arrays, not copies)."""
    out = {"tok_emb": model["tok_emb"]}
    for i, block in enumerate(model["blocks"]):
        out.update({f"blocks.{i}.{k}": block[k] for k in block_keys("W_router" in block)})
    return {**out, "g_final": model["g_final"], "W_out": model["W_out"]}


def nested(arrays: dict[str, np.ndarray], moe: Moe | None = None) -> dict:
    """The model dict of chapter 16's layout from flat names (the same arrays, not copies).

    A mixture of experts (``blocks.0.W_router``) carries ``moe`` under ``"moe"``: what its forward needs.
    """
    layers = len({k.split(".")[1] for k in arrays if k.startswith("blocks.")})
    keys = block_keys("blocks.0.W_router" in arrays)
    model = {"tok_emb": arrays["tok_emb"],
             "blocks": [{k: arrays[f"blocks.{i}.{k}"] for k in keys} for i in range(layers)],
             "g_final": arrays["g_final"], "W_out": arrays["W_out"]}
    return {**model, "moe": moe} if moe is not None else model


def shapes(vocab: int, d_model: int, d_ff: int, layers: int, kv_width: int | None = None, experts: int = 0,
           top_k: int = 0) -> dict[str, tuple]:
    """Every parameter's shape, by flat name; ``kv_width`` (n_kv_heads · d_head): W_K and W_V's, if narrower.

    With ``experts``: each block's router and ``experts`` SwiGLUs of width d_ff / top_k, stacked (moe.py).
    """
    kv = kv_width or d_model
    block = {"g1": (d_model,), "WQ": (d_model, d_model), "WK": (d_model, kv), "WV": (d_model, kv),
             "WO": (d_model, d_model), "g2": (d_model,), "W_gate": (d_model, d_ff), "W_up": (d_model, d_ff),
             "W_down": (d_ff, d_model)}
    if experts:
        block.update(expert_shapes(d_model, d_ff, experts, top_k))
    top = {"tok_emb": (vocab, d_model), "g_final": (d_model,), "W_out": (d_model, vocab)}
    return {name: block[name.split(".")[2]] if name.startswith("blocks.") else top[name]
            for name in flat_names(layers, bool(experts))}


def init_model(vocab: int, d_model: int, d_ff: int, layers: int, seed: int, kv_width: int | None = None,
               experts: int = 0, top_k: int = 0) -> dict:
    """Starting parameters: gains 1, embeddings N(0, 1), each matrix normal with variance 1/fan-in.

    The two matrices that write into the stream (``WO``, ``W_down``) are also shrunk by √(2·layers), so the
    stream does not grow with depth. An expert's matrices are each one matrix of the stack (fan-in: the axis
    before the last); the router is a matrix like the others.

    (No chapter has an ``init_params`` for this model; the choice is the usual one, e.g. GPT-2's.)
    """
    rng = np.random.default_rng(seed)
    out = {}
    for name, shape in shapes(vocab, d_model, d_ff, layers, kv_width, experts, top_k).items():
        key = name.split(".")[-1]
        if key in ("g1", "g2", "g_final"):
            out[name] = np.ones(shape)
        elif key == "tok_emb":
            out[name] = rng.normal(0.0, 1.0, shape)
        else:
            scale = 1.0 / np.sqrt(shape[-2]) / (np.sqrt(2.0 * layers) if key in ("WO", "W_down") else 1.0)
            out[name] = rng.normal(0.0, scale, shape)
    return nested(out)


def kv_width(s: GptSettings) -> int | None:
    """The width of W_K and W_V of a grouped-query model (n_kv_heads · d_head); None for multi-head attention."""
    return s.kv_heads * (s.d_model // s.n_heads) if s.grouped else None


def widen(model: dict, n_heads: int) -> dict:
    """A grouped-query model as the multi-head model it equals: each key/value head's columns repeated for its group.

    Query head h reads key/value head ⌊h / g⌋ (chapter 18's contiguous groups), so repeating every head's columns
    of W_K and W_V g = n_heads / n_kv_heads times gives a multi-head model with the same outputs, which your
    chapters 13 and 16 run. A multi-head model is returned as it is. The other arrays are shared, not copied.
    """
    d = model["tok_emb"].shape[1]
    d_head = d // n_heads
    if all(b["WK"].shape[1] == d for b in model["blocks"]):
        return model

    def wide(W: np.ndarray) -> np.ndarray:
        kv = W.shape[1] // d_head
        return np.repeat(W.reshape(d, kv, d_head), n_heads // kv, axis=1).reshape(d, d)

    return {**model, "blocks": [{**b, "WK": wide(b["WK"]), "WV": wide(b["WV"])} for b in model["blocks"]]}


def narrow_grads(ch, grads: dict, n_heads: int, kv_heads: int) -> dict:
    """The gradients of a grouped-query model from those of its widened twin: your ``group_sum`` for W_K and W_V.

    Each key/value head was read by every query head of its group, so its columns' gradient is the sum of the
    group's (chapter 18); ``group_sum`` sums along the head axis of (n_heads, d_model, d_head).
    """
    out = dict(grads)
    for name, dW in grads.items():
        if name.split(".")[-1] in ("WK", "WV"):
            d = dW.shape[0]
            heads = dW.reshape(d, n_heads, d // n_heads).transpose(1, 0, 2)  # (n_heads, d_model, d_head)
            summed = np.asarray(ch.c18.group_sum(heads, kv_heads), dtype=np.float64)
            if summed.shape != (kv_heads, d, d // n_heads):
                raise TrainError(f"group_sum returned shape {summed.shape} for {heads.shape} and n_kv_heads "
                                 f"{kv_heads}; expected {(kv_heads, d, d // n_heads)}: `nox -s chapter18`")
            out[name] = summed.transpose(1, 0, 2).reshape(d, -1)
    return out


def check_group_sum(ch, rng: np.random.Generator) -> None:
    """Your ``group_sum`` against the sum over each contiguous group, once before training (TrainError if not)."""
    dH = rng.normal(0.0, 1.0, (4, 3, 2))
    got = np.asarray(ch.c18.group_sum(dH, 2), dtype=np.float64)
    want = dH.reshape(2, 2, 3, 2).sum(axis=1)
    if got.shape != want.shape or not np.allclose(got, want, rtol=1e-12, atol=1e-12):
        raise TrainError("group_sum (chapter 18) does not give each key/value head the sum of its group's "
                         "gradients (contiguous groups): the grouped-query model's W_K and W_V would learn wrongly. "
                         "`nox -s chapter18` names the mistake.")


def _log_softmax(z: np.ndarray) -> np.ndarray:
    z = z - z.max(axis=-1, keepdims=True)
    return z - np.log(np.exp(z).sum(axis=-1, keepdims=True))


def forward_hidden(ch, ids: np.ndarray, model: dict, n_heads: int) -> tuple[np.ndarray, list]:
    """The stream after the last block for one sequence (your ``prenorm_block`` each layer), and the caches."""
    x = model["tok_emb"][ids]
    caches = []
    for block in model["blocks"]:
        if "moe" in model:  # a mixture of experts: moe.py joins your chapter 13 and 22 functions
            x, cache = mixture.block_forward(ch, x, block, n_heads, model["moe"])
        else:
            x, cache = ch.c13.prenorm_block(x, block, n_heads)
        x = np.asarray(x, dtype=np.float64)
        caches.append(cache)
    return x, caches


def logits_of(ch, ids: np.ndarray, model: dict, n_heads: int) -> np.ndarray:
    """Logits (seq, vocab) of one sequence: your blocks, your ``rms_norm``, then ``@ W_out``."""
    x, _ = forward_hidden(ch, ids, model, n_heads)
    return np.asarray(ch.c13.rms_norm(x, model["g_final"]), dtype=np.float64) @ model["W_out"]


def mean_loss(ch, model: dict, n_heads: int, windows: np.ndarray, seen=None) -> float:
    """Mean cross-entropy (nats per token) of predicting each window's tokens 1.. from its tokens ..-1.

    ``seen(caches)``, if given, receives each window's block caches (a mixture of experts' loads are read there).
    """
    total = 0.0
    for w in windows:
        x, caches = forward_hidden(ch, w[:-1], model, n_heads)
        if seen is not None:
            seen(caches)
        logp = _log_softmax(np.asarray(ch.c13.rms_norm(x, model["g_final"]), dtype=np.float64) @ model["W_out"])
        total += -float(np.sum(logp[np.arange(len(w) - 1), w[1:]]))
    return total / (len(windows) * (windows.shape[1] - 1))


def loss(ch, model: dict, n_heads: int, windows: np.ndarray, each=None) -> float:
    """The batch's mean cross-entropy, plus a mixture's balancing loss: the number ``loss_and_grads`` differentiates.

    ``windows`` is (batch, context + 1) token ids: each row's first ``context`` tokens go in, and each position
    predicts the next one, through your chapter 13 functions, one window at a time. A mixture of experts
    (``model["moe"]``) adds ``balance`` times each window's load-balancing losses (summed over the layers),
    averaged over the windows (moe.py).

    ``each(ids, x, caches, h, dz, weight)``, if given, is called after each window's forward with the gradient of
    the loss at its logits (``loss_and_grads`` runs the backward there); without it, nothing is run backward: the
    gradient check's central differences call this twice per parameter entry.
    """
    count = windows.size - len(windows)  # predicted tokens
    total, balance = 0.0, 0.0
    weight = model["moe"].balance / len(windows) if "moe" in model else 0.0
    for w in windows:
        ids, targets = w[:-1], w[1:]
        x, caches = forward_hidden(ch, ids, model, n_heads)
        h = np.asarray(ch.c13.rms_norm(x, model["g_final"]), dtype=np.float64)
        logp = _log_softmax(h @ model["W_out"])
        rows = np.arange(len(ids))
        total += -float(np.sum(logp[rows, targets]))
        if weight:
            balance += weight * mixture.balance_and_loads(caches)[0]
        if each is not None:
            dz = np.exp(logp)
            dz[rows, targets] -= 1.0
            dz /= count
            each(ids, x, caches, h, dz, weight)
    return total / count + balance


def loss_and_grads(ch, model: dict, n_heads: int, windows: np.ndarray) -> tuple[float, dict[str, np.ndarray]]:
    """``loss`` and its gradient for every parameter, under flat names (forward and backward, a window at a time)."""
    grads = {name: np.zeros_like(a) for name, a in flat(model).items()}

    def backward_of(ids, x, caches, h, dz, weight) -> None:
        backward(ch, model, ids, x, caches, h, dz, grads, weight)

    return loss(ch, model, n_heads, windows, backward_of), grads


def backward(ch, model: dict, ids: np.ndarray, x: np.ndarray, caches: list, h: np.ndarray, dz: np.ndarray,
             grads: dict[str, np.ndarray], balance: float = 0.0) -> None:
    """Add to ``grads`` (flat names) the gradient of a loss whose gradient to one sequence's logits is ``dz``.

    ``x`` and ``caches`` are ``forward_hidden``'s, ``h`` the final RMSNorm's output (``logits = h @ W_out``). The
    unembedding here, then your ``rms_norm_backward`` and ``prenorm_block_backward`` down the blocks, and each row
    of the first block's input gradient added to the embedding row it was looked up from. A mixture of experts'
    blocks go back through moe.py, the load-balancing loss of this window at weight ``balance``.
    """
    grads["W_out"] += h.T @ dz
    dx, dg = ch.c13.rms_norm_backward(x, model["g_final"], dz @ model["W_out"].T)
    grads["g_final"] += np.asarray(dg, dtype=np.float64)
    dx = np.asarray(dx, dtype=np.float64)
    for i in reversed(range(len(model["blocks"]))):
        if "moe" in model:
            g = mixture.block_backward(ch, dx, caches[i], balance)
            for k in MOE_BLOCK_KEYS:
                grads[f"blocks.{i}.{k}"] += g[k]
            dx = g["x"]
            continue
        g = ch.c13.prenorm_block_backward(dx, caches[i])
        if not isinstance(g, dict) or "x" not in g:
            raise TrainError("prenorm_block_backward must return a dict with the key 'x' and one key per "
                             f"parameter; it returned {type(g).__name__}"
                             + (f" with the keys {sorted(g)}" if isinstance(g, dict) else ""))
        for k in GPT_BLOCK_KEYS:
            if k not in g:
                raise TrainError(f"prenorm_block_backward's dict has no gradient for {k!r}")
            grads[f"blocks.{i}.{k}"] += np.asarray(g[k], dtype=np.float64)
        dx = np.asarray(g["x"], dtype=np.float64)
    np.add.at(grads["tok_emb"], ids, dx)


def model_arrays(model: dict, settings: GptSettings, merges: list) -> dict[str, np.ndarray]:
    """What a GPT's model.npz holds: the parameters (flat names), the merges, ``n_heads``, ``context``, a marker.

    The BPE merges are rows (a, b, new id). Plain arrays: ``np.load(..., allow_pickle=False)`` reads it.
    """
    arrays = {name: np.array(a) for name, a in flat(model).items()}
    arrays["merges"] = np.array([(a, b, t) for (a, b), t in merges], dtype=np.int64).reshape(-1, 3)
    arrays["n_heads"] = np.array(settings.n_heads)
    arrays["context"] = np.array(settings.context)
    arrays["kv_heads"] = np.array(settings.kv_heads if settings.grouped else settings.n_heads)
    arrays["kata_format"] = np.array(GPT_FORMAT)
    if getattr(settings, "experts", 0):
        arrays["experts"], arrays["top_k"] = np.array(settings.experts), np.array(settings.top_k)
    return arrays


def is_gpt(arrays: dict) -> bool:
    """Whether a model file's arrays are a GPT's (``nox -s train -- --model gpt``)."""
    return str(np.asarray(arrays.get("kata_format", ""))) == GPT_FORMAT


def model_from_arrays(arrays: dict, mixture_ok: bool = False) -> tuple[dict, list, int, int]:
    """(model, merges, n_heads, context) from a GPT's model.npz arrays; TrainError naming what does not fit.

    A mixture of experts (``--experts``) is refused unless ``mixture_ok`` (``nox -s generate``): its model then
    carries ``"moe"`` (its top-k), as ``nested`` makes it for training.
    """
    if not is_gpt(arrays):
        raise TrainError(f"it is not a GPT written by nox -s train -- --model gpt (format {GPT_FORMAT!r})")
    experts, top_k = _experts_of(arrays)
    if experts and not mixture_ok:
        raise TrainError(f"it is a mixture-of-experts GPT (--experts {experts} --top-k {top_k}): this tool takes "
                         "a dense GPT (nox -s train -- --model gpt)")
    for key in ("tok_emb", "g_final", "W_out", "merges", "n_heads", "context", "blocks.0.WQ"):
        if key not in arrays:
            raise TrainError(f"it has no {key}")
    vocab, d = np.shape(arrays["tok_emb"])
    layers = len({k.split(".")[1] for k in arrays if k.startswith("blocks.")})
    d_ff = np.shape(arrays.get("blocks.0.W_up", np.zeros((d, 0))))[-1] * max(top_k, 1)  # an expert: d_ff / top_k
    n_heads = int(arrays["n_heads"])
    if n_heads < 1 or d % n_heads:
        raise TrainError(f"its n_heads {n_heads} does not divide d_model {d}")
    kv = int(arrays["kv_heads"]) if "kv_heads" in arrays else n_heads
    if kv < 1 or n_heads % kv:
        raise TrainError(f"its kv_heads {kv} does not divide n_heads {n_heads}")
    for name, shape in shapes(vocab, d, d_ff, layers, kv * (d // n_heads), experts, top_k).items():
        if name not in arrays:
            raise TrainError(f"it has no {name}")
        if np.shape(arrays[name]) != shape:
            raise TrainError(f"its {name} has shape {np.shape(arrays[name])}, expected {shape}")
    rows = np.asarray(arrays["merges"])
    if rows.ndim != 2 or rows.shape[1] != 3 or len(rows) != vocab - 256:
        raise TrainError(f"its merges have shape {rows.shape}, expected ({vocab - 256}, 3)")
    merges = [((int(a), int(b)), int(t)) for a, b, t in rows]
    params = {name: np.asarray(arrays[name], dtype=np.float64)
              for name in shapes(vocab, d, d_ff, layers, None, experts, top_k)}
    return nested(params, Moe(top_k) if experts else None), merges, n_heads, int(arrays["context"])


def _experts_of(arrays: dict) -> tuple[int, int]:
    """(experts, top_k) of a model file: (0, 0) for a dense GPT; TrainError for numbers no mixture can have."""
    if "experts" not in arrays:
        return 0, 0
    try:
        experts, top_k = int(arrays["experts"]), int(arrays["top_k"])
    except (KeyError, TypeError, ValueError):
        raise TrainError("its experts and top_k are not two whole numbers") from None
    if experts == 0:
        return 0, 0
    if experts < 2 or not 1 <= top_k <= experts:
        raise TrainError(f"its experts {experts} and top_k {top_k} are no mixture of experts (at least 2 experts, "
                         "top_k from 1 to experts)")
    return experts, top_k


EVAL_WINDOWS = 96  # windows of each split per evaluation


SAMPLE_TOKENS = 24  # tokens of the greedy sample at each evaluation


ATTENTION_TOKENS = 16  # tokens of the attention figure


CACHE_RTOL, CACHE_ATOL = 1e-6, 1e-8  # the cached rows against the full forward: equal but for rounding (1e-12 here)


CHECKPOINT, PROGRESS = "checkpoint.npz", "checkpoint.json"


def pydoc_text() -> str:
    """Python's own documentation: every help topic of ``pydoc_data.topics`` (``help("if")``), joined in order."""
    from pydoc_data.topics import topics

    return "".join(topics.values())


def corpus_text(which: str) -> str:
    """The text of ``--corpus``: ``pydoc`` (Python's own documentation), or whatever ``load_corpus`` reads."""
    return pydoc_text() if which == "pydoc" else load_corpus(which).text


@dataclass
class Tokens:
    """The corpus as token ids, split, with what the tokenizer measured."""

    merges: list
    train: np.ndarray
    val: np.ndarray
    bytes_per_token: float
    bpe_seconds: float
    encode_seconds: float

    @property
    def vocab_size(self) -> int:
        """256 bytes plus one id per merge."""
        return 256 + len(self.merges)

    def unigram_entropy(self) -> float:
        r"""The validation tokens' unigram entropy in nats, from their own frequencies: $-\sum_i p_i \ln p_i$.

        The loss of the best model that ignores context, had it known the validation split's frequencies: a
        model that beats it has learnt something about order.
        """
        p = np.bincount(self.val, minlength=self.vocab_size) / len(self.val)
        p = p[p > 0]
        return float(-np.sum(p * np.log(p)))


PIECE = 16_384  # characters of the text per call of your encode


def pieces(text: str, merges: list, size: int = PIECE) -> list[str]:
    """The text cut into pieces of about ``size`` characters, each cut where no learned token can lie across it.

    A token's bytes lie side by side in the text. A cut between two characters whose touching bytes (x, y) sit
    side by side in no learned token cannot split one, so the merges, replayed in order on each piece, make the
    same tokens as on the whole text: the pieces' ids, joined, are the whole text's, for any ``encode`` that
    keeps chapter 14's definition. So each call of your ``encode`` has a piece to do, well within ``--timeout``
    even for the plain replay of every merge over its text (the whole corpus in one call took 24 s of the 30 on
    a learner's machine). Merges that name an id not yet made leave the text whole (encode says what is wrong).
    """
    vocab = {i: bytes([i]) for i in range(256)}
    for (a, b), t in merges:
        if a not in vocab or b not in vocab:
            return [text]
        vocab[t] = vocab[a] + vocab[b]
    inside = {pair for token in vocab.values() for pair in itertools.pairwise(token)}
    out, start = [], 0
    while len(text) - start > size:
        cut = start + size
        while cut < len(text) and (text[cut - 1].encode("utf-8")[-1], text[cut].encode("utf-8")[0]) in inside:
            cut += 1
        if cut == len(text):
            break
        out.append(text[start:cut])
        start = cut
    return [*out, text[start:]]


def tokenize(ch, text: str, s: GptSettings, merges: list | None = None) -> Tokens:
    """Your BPE on the corpus (the given merges when resuming), split into training and validation ids."""
    began = time.perf_counter()
    if merges is None:
        merges = ch.c14.train_bpe(text, s.vocab_size)
        try:
            merges = [((int(a), int(b)), int(t)) for (a, b), t in merges]
        except (TypeError, ValueError):
            raise TrainError("train_bpe must return a list of ((a, b), new_id); it returned "
                             f"{type(merges).__name__}") from None
    bpe_seconds = time.perf_counter() - began
    if [t for _, t in merges] != list(range(256, 256 + len(merges))):
        raise TrainError("train_bpe's new ids must be 256, 257, … in turn")
    began = time.perf_counter()
    vocab = 256 + len(merges)
    parts = []
    for piece in pieces(text, merges):  # one call a piece: each call's --timeout is for a piece, not the corpus
        part = np.asarray(ch.c14.encode(piece, merges), dtype=np.int64)
        if part.ndim != 1:
            raise TrainError(f"encode must return a list of ids from 0 to {vocab - 1}")
        parts.append(part)
    ids = np.concatenate(parts)
    encode_seconds = time.perf_counter() - began
    if len(ids) == 0 or ids.min() < 0 or ids.max() >= vocab:
        raise TrainError(f"encode must return a list of ids from 0 to {vocab - 1}")
    cut = int(round(len(ids) * (1 - s.validation)))
    need = 2 * (s.context + 1)
    if cut < need or len(ids) - cut < need:
        raise TrainError(f"the corpus is {len(ids):,} tokens: too short for windows of --context {s.context} in "
                         "both the training and the validation split")
    return Tokens(merges, ids[:cut], ids[cut:], len(text.encode("utf-8")) / len(ids), bpe_seconds, encode_seconds)


def batch_at(tokens: np.ndarray, s: GptSettings, step: int) -> np.ndarray:
    """The windows of step ``step`` (from 0): (batch, context + 1) ids, drawn with a generator seeded (seed, step)."""
    starts = np.random.default_rng([s.seed, step]).integers(0, len(tokens) - s.context, size=s.batch)
    return np.stack([tokens[a:a + s.context + 1] for a in starts])


def eval_windows(tokens: np.ndarray, context: int) -> np.ndarray:
    """Up to ``EVAL_WINDOWS`` windows of ``context + 1`` ids spread evenly over a split (the same every time)."""
    n = max(1, min(EVAL_WINDOWS, (len(tokens) - 1) // context))
    starts = np.linspace(0, len(tokens) - context - 1, n).astype(np.int64)
    return np.stack([tokens[a:a + context + 1] for a in starts])


def greedy(ch, model: dict, n_heads: int, prompt: list[int], n: int, context: int) -> list[int]:
    """The prompt and ``n`` more ids, each the most likely after the last ``context`` (the whole forward each time)."""
    ids = list(prompt)
    for _ in range(n):
        ids.append(int(np.argmax(logits_of(ch, np.array(ids[-context:]), model, n_heads)[-1])))
    return ids


def attention_maps(ch, model: dict, n_heads: int, ids) -> list[np.ndarray]:
    """Every layer's attention weights on ``ids``: (n_heads, seq, seq) per layer.

    The stream comes from your ``prenorm_block``; the weights are recomputed from their documented formula with
    your ``rms_norm``, ``split_heads`` and ``apply_rope`` (a cache is yours to shape, so it is not read).
    """
    x = model["tok_emb"][np.asarray(ids)]
    n = len(ids)
    mask = np.tril(np.ones((n, n), dtype=bool))
    maps = []
    for block in model["blocks"]:
        h = np.asarray(ch.c13.rms_norm(x, block["g1"]), dtype=np.float64)
        q = np.asarray(ch.c12.apply_rope(ch.c11.split_heads(h @ block["WQ"], n_heads)), dtype=np.float64)
        k = np.asarray(ch.c12.apply_rope(ch.c11.split_heads(h @ block["WK"], n_heads)), dtype=np.float64)
        scores = np.where(mask, q @ k.transpose(0, 2, 1) / math.sqrt(q.shape[-1]), -np.inf)
        w = np.exp(scores - scores.max(axis=-1, keepdims=True))
        maps.append(w / w.sum(axis=-1, keepdims=True))
        step = (mixture.block_forward(ch, x, block, n_heads, model["moe"]) if "moe" in model
                else ch.c13.prenorm_block(x, block, n_heads))
        x = np.asarray(step[0], dtype=np.float64)
    return maps




def _checked_step(params: dict, new_params, new_state) -> None:
    """adamw_step's answer has the parameters' names and shapes (else TrainError)."""
    if not isinstance(new_params, dict) or set(new_params) != set(params):
        raise TrainError("adamw_step must return (new_params, new_state) with the keys of params")
    for k, a in params.items():
        if np.shape(new_params[k]) != a.shape:
            raise TrainError(f"adamw_step returned {k} of shape {np.shape(new_params[k])}; it has shape {a.shape}")
    if not isinstance(new_state, dict) or "step" not in new_state:
        raise TrainError("adamw_step's new state must be a dict with 'step', 'm' and 'v'")




TINY = {"vocab": 7, "d_model": 8, "n_heads": 2, "d_ff": 6, "layers": 2}


TINY_MOE = {"experts": 4, "top_k": 2}  # the tiny mixture of experts: four experts of width 3, two per token


def tiny_gpt(rng: np.random.Generator, moe: bool = False) -> dict:
    """A tiny GPT with every parameter random (gains around 1), so every path matters; ``moe``: with experts."""
    experts = TINY_MOE if moe else {}
    model = init_model(TINY["vocab"], TINY["d_model"], TINY["d_ff"], TINY["layers"], seed=0, **experts)
    for name, a in flat(model).items():
        a[...] = rng.normal(0.0, 0.5, a.shape) + (1.0 if name.split(".")[-1] in ("g1", "g2", "g_final") else 0.0)
    return nested(flat(model), Moe(TINY_MOE["top_k"], TINY_BALANCE)) if moe else model


def backward_order(layers: int, moe: bool = False) -> list[tuple[str, str]]:
    """Every parameter (flat name) with the function that computes its gradient, in the order the backward runs."""
    order = [("W_out", "the tool's unembedding"), ("g_final", "rms_norm_backward")]
    for i in reversed(range(layers)):
        order += [(f"blocks.{i}.{k}", "swiglu_backward") for k in ("W_gate", "W_up", "W_down")]
        if moe:
            order += [(f"blocks.{i}.W_router", "gates_backward")]
        order += [(f"blocks.{i}.g2", "rms_norm_backward")]
        order += [(f"blocks.{i}.{k}", "rope_multi_head_attention_backward") for k in ("WQ", "WK", "WV", "WO")]
        order += [(f"blocks.{i}.g1", "rms_norm_backward")]
    return [*order, ("tok_emb", "the tool's mixture-of-experts block (moe.py)" if moe else "prenorm_block_backward")]


def one_function_checks(ch, rng: np.random.Generator):
    """(function, what is wrong) for each layer function whose backward disagrees with its own forward."""
    seq, d, heads, d_ff = 4, 8, 2, 6
    x = rng.normal(0, 1, (seq, d))
    R = rng.normal(0, 1, (seq, d))  # loss = Σ R ⊙ output, so the output's gradient is R
    c13, c12 = ch.c13, ch.c12

    def parts(result, keys):
        return [result.get(k, np.nan) if isinstance(result, dict) else np.nan for k in keys]

    g = 1 + rng.normal(0, 0.3, d)
    rms = lambda: float(np.sum(R * c13.rms_norm(x, g)))  # noqa: E731
    got = c13.rms_norm_backward(x, g, R)
    got = [*got, None, None][:2] if isinstance(got, (tuple, list)) else [got, None]
    yield compare("rms_norm_backward", "rms_norm", ("dx", "dg"), got, [numerical(rms, a) for a in (x, g)])
    silu = lambda: float(np.sum(R * c13.silu(x)))  # noqa: E731
    yield compare("silu_backward", "silu", ("result",), [c13.silu_backward(x, R)], [numerical(silu, x)])
    F = [rng.normal(0, 0.6, (d, d_ff)), rng.normal(0, 0.6, (d, d_ff)), rng.normal(0, 0.6, (d_ff, d))]
    ffn = lambda: float(np.sum(R * c13.swiglu(x, *F)[0]))  # noqa: E731
    _, cache = c13.swiglu(x, *F)
    keys = ("x", "W_gate", "W_up", "W_down")
    yield compare("swiglu_backward", "swiglu", keys, parts(c13.swiglu_backward(R, cache), keys),
                  [numerical(ffn, a) for a in (x, *F)])
    H = rng.normal(0, 1, (heads, seq, d // heads))
    RH = rng.normal(0, 1, H.shape)
    rope = lambda: float(np.sum(RH * c12.apply_rope(H)))  # noqa: E731
    yield compare("rope_backward", "apply_rope (chapter 12)", ("result",), [c12.rope_backward(RH)],
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
    if hasattr(ch, "c22"):  # a mixture of experts: the router's gradient through the top-k gates
        yield mixture.gates_check(ch, rng)




def _check_cache(ch, model: dict, n_heads: int, ids: list[int], prefill: np.ndarray, decoded: np.ndarray) -> None:
    """The prefill's rows and the first decoded row against your chapter 13's full forward; TrainError if not.

    A mixture of experts: the cached rows are ``moe.cached_forward``'s (your ``attention_with_cache``), the full
    forward the trainer's (your ``rope_multi_head_attention``), both with the same mixture (``moe.block_forward``).
    """
    full = logits_of(ch, np.array(ids), model, n_heads)
    mixture_of_experts = "moe" in model
    for what, got, want in (("the prompt's rows (the prefill, caches=None)", prefill, full[:-1]),
                            (f"the first token decoded from the caches (position {len(ids) - 1})", decoded, full[-1:])):
        if np.shape(got) != np.shape(want) or not np.allclose(got, want, rtol=CACHE_RTOL, atol=CACHE_ATOL):
            gap = float(np.max(np.abs(got - want))) if np.shape(got) == np.shape(want) else float("nan")
            raise TrainError(
                "your KV cache disagrees with the full forward: "
                + (f"the logits of {what}, each block's attention your attention_with_cache, differ from those of "
                   "your rope_multi_head_attention over the whole sequence with no cache (the same mixture of "
                   if mixture_of_experts else
                   f"gpt_forward's logits of {what} differ from those of chapter 13's prenorm_block over the whole "
                   "sequence with no cache (")
                + f"largest difference {gap:.3g}, shape {np.shape(got)} against {np.shape(want)}). The text would be "
                "the wrong model's: `nox -s chapter16` names the mistake (positions restarted at 0, the cached keys "
                "rotated again or stored unrotated, the new rows not masked among themselves)"
                + ("; so does a router whose choice for a token depends on the other tokens of the window: "
                   "`nox -s chapter22`." if mixture_of_experts else "."))


def generate_gpt(ch, job: dict, send) -> None:
    """Continue a prompt with your chapter 16: one prefill, then one token at a time from the KV cache.

    Each token is your ``choose_next`` on the last row of logits with a uniform draw ``u`` from a generator
    seeded with ``--seed``. The model was trained on windows of ``context`` tokens; when the cache holds that
    many, the last half of them is fed again as a new prompt (positions from 0), so the model never sees a
    position it was not trained on. At the first token decoded from the caches the prefill's rows and that
    token's row are compared with the full forward of your chapter 13 (``prenorm_block`` over the whole
    sequence, no cache): a KV cache that disagrees stops the run, as a wrong gradient stops training.

    A mixture of experts (``--experts``) goes through ``moe.cached_forward`` instead of your ``gpt_forward`` (which
    takes chapter 13's blocks only): your ``attention_with_cache`` in every block, your chapter 22 routing each
    token to its experts, checked against the trainer's full forward in the same way.
    """
    with np.load(job["model"], allow_pickle=False) as npz:
        arrays = dict(npz)
    model, merges, n_heads, context = model_from_arrays(arrays, mixture_ok=True)
    model = widen(model, n_heads)  # a grouped-query model runs through chapter 16 as the multi-head model it equals
    vocab = ch.c14.build_vocab(merges)
    prompt = [int(i) for i in ch.c14.encode(job["prompt"], merges)][-context:]
    if not prompt:
        raise TrainError("--prompt is empty: give at least one character to continue")
    if "moe" in model:
        if not all(0 <= i < len(model["tok_emb"]) for i in prompt):
            raise TrainError(f"encode returned the ids {prompt}: each must be from 0 to {len(model['tok_emb']) - 1}")

        def forward(ids: np.ndarray, model: dict, n_heads: int, caches: list | None) -> tuple:
            return mixture.cached_forward(ch, ids, model, n_heads, caches)
    else:
        forward = ch.c16.gpt_forward
    rng = np.random.default_rng(job["seed"])
    ids = list(prompt)
    logits, caches = forward(np.array(prompt), model, n_heads, None)
    prefill, checked = np.asarray(logits, dtype=np.float64), False  # the latest prefill's rows, for the check
    held = len(prompt)
    for _ in range(job["n"]):
        row = np.asarray(logits, dtype=np.float64)[-1]
        nxt = int(ch.c16.choose_next(row, float(rng.random()), temperature=job["temperature"], top_k=job["top_k"],
                                     top_p=job["top_p"]))
        if not 0 <= nxt < len(vocab):
            raise TrainError(f"choose_next returned {nxt}, not an id from 0 to {len(vocab) - 1}")
        ids.append(nxt)
        send({"event": "token", "id": nxt, "bytes": list(vocab[nxt])})
        if held >= context:
            window = ids[-(context // 2):]
            logits, caches = forward(np.array(window), model, n_heads, None)
            held = len(window)
            prefill = np.asarray(logits, dtype=np.float64)
        else:
            logits, caches = forward(np.array([nxt]), model, n_heads, caches)
            held += 1
            if not checked:  # the caches hold the prefill's tokens and this one: ids[-held:]
                _check_cache(ch, model, n_heads, ids[-held:], prefill, np.asarray(logits, dtype=np.float64))
                checked = True
    send({"event": "done", "text": ch.c14.decode(ids, vocab), "prompt_tokens": len(prompt)})


class Gpt(Model):
    """The Part II GPT (``--model gpt``, the capstone): ``docs/train-gpt.md``."""

    name, label = "gpt", "GPT"
    chapters = {"c11": 11, "c12": 12, "c13": 13, "c14": 14, "c15": 15}  # what training calls
    generate_chapters = {"c13": 13, "c14": 14, "c16": 16}  # what generating calls: 13 for the check of the KV cache
    bar_window = 20
    resumable = observe_at_start = True
    bad_loss = "the loss of a tiny model is {loss!r}: look at rms_norm and prenorm_block"
    peeking = ("prenorm_block lets positions see later ones: changing only the last token changed the logits of "
               "earlier positions. Look at rope_multi_head_attention: the causal mask. A model that sees the next "
               "token learns to copy it and cannot write on its own.")
    rerun = "`nox -s chapter13` (and 11, 12; 22 and 7 with --experts) show"
    OPTIONS = {"steps": "steps", "lr": "lr", "d_model": "d_model", "d_ff": "d_ff", "layers": "layers",
               "context": "context", "seed": "seed", "prompt": "prompt", "vocab_size": "vocab_size",
               "heads": "n_heads", "batch": "batch", "warmup": "warmup", "min_lr": "min_lr",
               "eval_every": "eval_every", "corpus": "corpus", "kv_heads": "kv_heads", "experts": "experts",
               "top_k": "top_k", "balance": "balance"}  # option -> GptSettings field

    def chapters_for(self, s: GptSettings) -> dict[str, int]:
        return {**self.chapters, **({"c18": 18} if s.grouped else {}), **(mixture.CHAPTERS if s.experts else {})}

    # --- this process ---
    def plan(self, args) -> tuple[GptSettings, dict] | None:
        from .loop import read_progress

        given = [option for option in self.OPTIONS if getattr(args, option) is not None]
        if args.sample_every:
            raise TrainError("--sample-every is an option of --model chapter10 (a GPT samples at every evaluation: "
                             "--eval-every)")
        if args.resume:
            if given:
                raise TrainError(f"--resume continues with the stopped run's settings; leave out "
                                 f"--{given[0].replace('_', '-')}")
            out = Path(args.runs) / self.default_name(args)
            stopped = read_progress(self, out)
            s = stopped["settings"]
            if stopped["step"] >= s.steps:
                print(f"{out}/ is a finished run (step {stopped['step']} of {s.steps}): nothing to resume, nothing "
                      f"changed. Train again without --resume for a new run.")
                return None
        else:
            s = GptSettings(**{self.OPTIONS[o]: getattr(args, o) for o in given}).check()
            if s.corpus != "pydoc":
                raise TrainError(f"--model gpt trains on --corpus pydoc (Python's own documentation), got "
                                 f"{s.corpus!r}")
        if args.stop_at is not None and not 1 <= args.stop_at < s.steps:
            raise TrainError(f"--stop-at must be a step from 1 to {s.steps - 1}, got {args.stop_at}")
        return s, {}

    def default_name(self, args) -> str:
        return args.name or "gpt"

    def header(self, s: GptSettings, shown: str, out: Path, args, modules: dict, made_of: dict[str, str]) -> str:
        used = {**self.chapters, **(mixture.CHAPTERS if s.experts else {})}
        made = learners_code.made_of_words({n: made_of[modules[key]] for key, n in used.items()}, shown)
        if s.experts:
            p = active_parameters(s.d_model, s.d_ff, s.layers, s.experts, s.top_k)
            moe = (f"\n  a mixture of experts (your chapter 22): each block's SwiGLU is {s.experts} experts of d_ff / "
                   f"{s.top_k} = {s.d_ff // s.top_k}, {s.top_k} per token: {p['active']:,} active feed-forward "
                   f"parameters (the dense {p['dense']:,} + the routers' {p['router']:,}) of {p['total']:,}; "
                   f"load-balancing loss × {s.balance:g}")
        else:
            moe = ""
        return (f"training a GPT made of {made} on Python's own documentation (pydoc_data.topics)"
                + (" — resuming" if args.resume else "") +
                f"\n  BPE vocabulary {s.vocab_size}, d_model {s.d_model}, {s.n_heads} heads, {s.layers} layers, d_ff "
                f"{s.d_ff}" + (f", {s.kv_heads} key/value heads (your chapter 18)" if s.grouped else "") +
                f", context {s.context}, batch {s.batch}; {s.steps} steps of AdamW, lr {s.lr:g} (warm-up "
                f"{s.warmup}, cosine to {s.min_lr:g}), seed {s.seed}  ->  {out}/" + moe)

    def ready(self, event: dict) -> str:
        return (f"  ✓ {event['vocab_size']} tokens, {event['bytes_per_token']:.2f} bytes per token "
                f"(BPE {event['bpe_seconds']:.1f} s, encoding {event['encode_seconds']:.1f} s); "
                f"{event['train_tokens']:,} training and {event['val_tokens']:,} validation tokens; "
                f"unigram entropy {event['unigram_entropy']:.3f} nats")

    def shown_observation(self, event: dict, s: GptSettings) -> str:
        return (f"  step {event['step']:>5}  train {event['train_loss']:.3f}  validation {event['val_loss']:.3f}  "
                f"{event['sample']!r}"[:150])

    def write_run(self, out: Path, s: GptSettings, args, result: dict, started: float,
                  chapters: dict[int, str]) -> list:
        from .figures import gpt_loss_figure, head_attention_figure, loads_figure, schedule_figure

        info, evals = result["ready"], result["history"]
        floor = info["unigram_entropy"]
        run = {
            "model": "gpt", "settings": s.as_dict(), "impl": args.impl or "exercises",
            "chapters": {str(n): where for n, where in chapters.items()},
            "corpus": {"name": "pydoc", "source": "pydoc_data.topics (Python's own documentation)",
                       "train_tokens": info["train_tokens"], "val_tokens": info["val_tokens"]},
            "tokenizer": {"vocab_size": info["vocab_size"], "bytes_per_token": info["bytes_per_token"],
                          "bpe_seconds": info["bpe_seconds"], "encode_seconds": info["encode_seconds"]},
            "unigram_entropy": floor,
            "unigram_entropy_means": "the validation tokens' unigram entropy in nats, from their own frequencies",
            "evals": evals, "final_val_loss": evals[-1]["val_loss"], "below_unigram": floor - evals[-1]["val_loss"],
            "train_seconds": round(result["train_seconds"], 3), "tokens_per_s": round(result["rate"], 1),
            "seconds": round(time.perf_counter() - started, 3),
        }
        if s.experts:
            run["moe"] = {**active_parameters(s.d_model, s.d_ff, s.layers, s.experts, s.top_k),
                          "expert_width": s.d_ff // s.top_k, "balance": s.balance,
                          "loads_means": "each expert's share of the assignments on the validation windows, per layer"}
        (out / "run.json").write_text(json.dumps(run, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        return [("loss.png", gpt_loss_figure(evals, floor, "A GPT on Python's own documentation")),
                ("schedule.png", schedule_figure(result["schedule"], s.warmup)),
                ("attention.png", head_attention_figure(result["attention_tokens"], result["attention"],
                                                        "Every head's attention on the first validation tokens")),
                *([("loads.png", loads_figure(evals, s.experts, s.top_k))] if s.experts else [])]

    def summary(self, out: Path, s: GptSettings, args, result: dict, started: float) -> str:
        from .loop import CHECKPOINT, PROGRESS

        last, floor = result["history"][-1], result["ready"]["unigram_entropy"]
        gap = floor - last["val_loss"]
        return (f"\ndone: {result['train_seconds']:.1f} s of training steps ({result['rate']:,.0f} tokens/s); "
                f"validation loss {last['val_loss']:.3f} nats, {abs(gap):.3f} {'below' if gap >= 0 else 'above'} "
                f"the unigram entropy {floor:.3f}\n"
                f"wrote {out}/: run.json, loss.png, schedule.png, attention.png, "
                f"{'loads.png, ' if s.experts else ''}model.npz, {CHECKPOINT}, {PROGRESS}\n"
                + ("beside a dense run: nox -s align -- moe runs/gpt trains this mixture with that run's settings "
                   "and compares the two; " if s.experts else "")
                + "next: " + command("nox", "-s", "generate", "--", str(out), "--prompt", s.prompt,
                                     "--temperature", "0.8", "--top-p", "0.9"))

    # --- the gradient check ---
    def probe(self, ch, rng: np.random.Generator) -> Probe:
        model, heads = tiny_gpt(rng, moe=hasattr(ch, "c22")), TINY["n_heads"]  # chapter 22 given: --experts
        windows = np.array([[1, 3, 1, 0, 6, 2, 5], [4, 4, 2, 6, 0, 1, 3]])
        return Probe(flat(model), lambda: loss(ch, model, heads, windows),
                     lambda: loss_and_grads(ch, model, heads, windows), lambda ids: logits_of(ch, ids, model, heads),
                     windows[0, :-1], TINY["vocab"])

    def backward_order(self, probe: Probe) -> list[tuple[str, str]]:
        return backward_order(TINY["layers"], "blocks.0.W_router" in probe.params)

    def one_function_checks(self, ch, rng: np.random.Generator):
        return one_function_checks(ch, rng)

    def shown(self, name: str) -> str:
        return f"the gradient of {name}"

    def unchained(self, function: str) -> str:
        return f"{function} (the layer functions are right on their own: look at what it returns for this parameter)"

    # --- the loop ---
    def settings(self, given: dict) -> GptSettings:
        return GptSettings(**given)

    def prepare(self, ch, job: dict, s: GptSettings, resume: dict | None, phase) -> tuple[dict, dict]:
        phase("encoding the corpus with your BPE" if resume else "training your BPE on the corpus")
        if s.grouped:
            check_group_sum(ch, np.random.default_rng(s.seed))
        tokens = tokenize(ch, corpus_text(s.corpus), s, resume["merges"] if resume else None)
        if resume:
            tokens.bpe_seconds = resume.get("bpe_seconds", 0.0)
        data = {"tokens": tokens, "val_windows": eval_windows(tokens.val, s.context),
                "train_windows": eval_windows(tokens.train, s.context),
                "prompt": list(ch.c14.encode(s.prompt, tokens.merges)) if s.prompt else [int(tokens.val[0])],
                "vocab": ch.c14.build_vocab(tokens.merges)}
        return data, {"vocab_size": tokens.vocab_size, "bytes_per_token": tokens.bytes_per_token,
                      "train_tokens": len(tokens.train), "val_tokens": len(tokens.val),
                      "bpe_seconds": tokens.bpe_seconds, "encode_seconds": tokens.encode_seconds,
                      "unigram_entropy": tokens.unigram_entropy(), "start_step": resume["step"] if resume else 0}

    def start(self, ch, s: GptSettings, data: dict) -> tuple[dict, dict]:
        params = {k: np.array(a) for k, a in flat(init_model(data["tokens"].vocab_size, s.d_model, s.d_ff, s.layers,
                                                             s.seed, kv_width(s), s.experts, s.top_k)).items()}
        return params, ch.c15.adamw_init(params)

    def batch(self, data: dict, s: GptSettings, step: int) -> np.ndarray:
        return batch_at(data["tokens"].train, s, step)

    def loss_and_grads(self, ch, params: dict, batch: np.ndarray, s: GptSettings):
        if not s.grouped:
            return loss_and_grads(ch, nested(params, s.moe), s.n_heads, batch)
        loss, grads = loss_and_grads(ch, widen(nested(params, s.moe), s.n_heads), s.n_heads, batch)
        return loss, narrow_grads(ch, grads, s.n_heads, s.kv_heads)

    def update(self, ch, params: dict, state: dict, grads, step: int, s: GptSettings):
        lr = float(ch.c15.lr_at(step, max_lr=s.lr, warmup_steps=s.warmup, total_steps=s.steps, min_lr=s.min_lr))
        grads, norm = ch.c15.clip_by_global_norm(grads, s.clip)
        new_params, new_state = ch.c15.adamw_step(params, grads, state, lr, beta1=0.9, beta2=0.95,
                                                  weight_decay=s.weight_decay)
        _checked_step(params, new_params, new_state)
        return new_params, new_state, {"lr": lr, "grad_norm": float(norm)}

    tokens_per_step = staticmethod(lambda s: s.batch * s.context)
    checkpoint_every = staticmethod(lambda s: s.eval_every)

    def observe_due(self, s: GptSettings, done: int) -> bool:
        return done % s.eval_every == 0 or done == s.steps

    def observe(self, ch, params: dict, data: dict, s: GptSettings, step: int, losses: list[float],
                seconds: float) -> tuple[dict, dict]:
        model = widen(nested(params, s.moe), s.n_heads)
        seen: list = []
        entry = {"step": step, "train_loss": mean_loss(ch, model, s.n_heads, data["train_windows"]),
                 "val_loss": mean_loss(ch, model, s.n_heads, data["val_windows"], seen.append if s.experts else None),
                 "seconds": round(seconds, 3)}
        if s.experts:
            entry.update(mixture.loads_entry(seen))
        text = ch.c14.decode(greedy(ch, model, s.n_heads, data["prompt"], SAMPLE_TOKENS, s.context), data["vocab"])
        return entry, {"sample": text}

    def finish(self, ch, params: dict, data: dict, s: GptSettings, history: list[dict], losses, report) -> dict:
        shown = [int(i) for i in data["tokens"].val[:ATTENTION_TOKENS]]
        return {"schedule": [float(ch.c15.lr_at(t, max_lr=s.lr, warmup_steps=s.warmup, total_steps=s.steps,
                                                min_lr=s.min_lr)) for t in range(s.steps)],
                "attention_tokens": [data["vocab"][i].decode("utf-8", errors="replace") for i in shown],
                "attention": [m.tolist() for m in attention_maps(ch, widen(nested(params, s.moe), s.n_heads),
                                                                 s.n_heads, shown)]}

    def arrays(self, params: dict, s: GptSettings, data: dict) -> dict[str, np.ndarray]:
        return model_arrays(nested(params), s, data["tokens"].merges)

    # --- checkpoints ---
    def save(self, ch, path: Path, params: dict, state: dict) -> None:
        ch.c15.save_checkpoint(str(path), params, state)

    def restore(self, ch, path: Path, s: GptSettings, data: dict) -> tuple[dict, dict, int]:
        like = {k: np.zeros(shape) for k, shape in shapes(data["tokens"].vocab_size, s.d_model, s.d_ff,
                                                          s.layers, kv_width(s), s.experts, s.top_k).items()}
        params, state = ch.c15.load_checkpoint(str(path), like)
        return params, state, int(state["step"])

    def progress_extra(self, data: dict) -> dict:
        tokens = data["tokens"]
        return {"merges": [[a, b, t] for (a, b), t in tokens.merges], "bpe_seconds": tokens.bpe_seconds}

    def read_progress_extra(self, info: dict) -> None:
        info["merges"] = [((int(a), int(b)), int(t)) for a, b, t in info["merges"]]

    # --- generating ---
    def generate(self, ch, job: dict, send) -> None:
        generate_gpt(ch, job, send)
