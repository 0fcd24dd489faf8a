r"""The GPT of ``nox -s train -- --model gpt``: its settings, its parameters, and the loss composed from your layers.

The model is the one chapter 16's ``gpt_forward`` runs (``docs/train-gpt.md``): a token embedding, the pre-norm
blocks of chapter 13, a final RMSNorm and an unembedding, with no position embedding (RoPE rotates the queries
and keys). The parameters are a dict

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

Part of ``nox -s train`` (``kata/learner/train/__init__.py`` tells the whole story).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from .corpus import TrainError

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
        if self.warmup > self.steps:
            raise TrainError(f"--warmup {self.warmup} is more than --steps {self.steps}")
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

    def as_dict(self) -> dict:
        """The settings as plain data."""
        return asdict(self)


def flat_names(layers: int) -> list[str]:
    """Every parameter's flat name, in a fixed order: ``tok_emb``, ``blocks.0.g1``, …, ``g_final``, ``W_out``."""
    return ["tok_emb", *(f"blocks.{i}.{k}" for i in range(layers) for k in GPT_BLOCK_KEYS), "g_final", "W_out"]


def flat(model: dict) -> dict[str, np.ndarray]:
    """The model's arrays under flat names (the same arrays, not copies)."""
    out = {"tok_emb": model["tok_emb"]}
    for i, block in enumerate(model["blocks"]):
        out.update({f"blocks.{i}.{k}": block[k] for k in GPT_BLOCK_KEYS})
    return {**out, "g_final": model["g_final"], "W_out": model["W_out"]}


def nested(arrays: dict[str, np.ndarray]) -> dict:
    """The model dict of chapter 16's layout from flat names (the same arrays, not copies)."""
    layers = len({k.split(".")[1] for k in arrays if k.startswith("blocks.")})
    return {"tok_emb": arrays["tok_emb"],
            "blocks": [{k: arrays[f"blocks.{i}.{k}"] for k in GPT_BLOCK_KEYS} for i in range(layers)],
            "g_final": arrays["g_final"], "W_out": arrays["W_out"]}


def shapes(vocab: int, d_model: int, d_ff: int, layers: int) -> dict[str, tuple]:
    """Every parameter's shape, by flat name."""
    block = {"g1": (d_model,), "WQ": (d_model, d_model), "WK": (d_model, d_model), "WV": (d_model, d_model),
             "WO": (d_model, d_model), "g2": (d_model,), "W_gate": (d_model, d_ff), "W_up": (d_model, d_ff),
             "W_down": (d_ff, d_model)}
    top = {"tok_emb": (vocab, d_model), "g_final": (d_model,), "W_out": (d_model, vocab)}
    return {name: block[name.split(".")[2]] if name.startswith("blocks.") else top[name] for name in flat_names(layers)}


def init_model(vocab: int, d_model: int, d_ff: int, layers: int, seed: int) -> dict:
    """Starting parameters: gains 1, embeddings N(0, 1), each matrix normal with variance 1/fan-in.

    The two matrices that write into the stream (``WO``, ``W_down``) are also shrunk by √(2·layers), so the
    stream does not grow with depth.

    (No chapter has an ``init_params`` for this model; the choice is the usual one, e.g. GPT-2's.)
    """
    rng = np.random.default_rng(seed)
    out = {}
    for name, shape in shapes(vocab, d_model, d_ff, layers).items():
        key = name.split(".")[-1]
        if key in ("g1", "g2", "g_final"):
            out[name] = np.ones(shape)
        elif key == "tok_emb":
            out[name] = rng.normal(0.0, 1.0, shape)
        else:
            scale = 1.0 / np.sqrt(shape[0]) / (np.sqrt(2.0 * layers) if key in ("WO", "W_down") else 1.0)
            out[name] = rng.normal(0.0, scale, shape)
    return nested(out)


def _log_softmax(z: np.ndarray) -> np.ndarray:
    z = z - z.max(axis=-1, keepdims=True)
    return z - np.log(np.exp(z).sum(axis=-1, keepdims=True))


def forward_hidden(ch, ids: np.ndarray, model: dict, n_heads: int) -> tuple[np.ndarray, list]:
    """The stream after the last block for one sequence (your ``prenorm_block`` each layer), and the caches."""
    x = model["tok_emb"][ids]
    caches = []
    for block in model["blocks"]:
        x, cache = ch.c13.prenorm_block(x, block, n_heads)
        x = np.asarray(x, dtype=np.float64)
        caches.append(cache)
    return x, caches


def logits_of(ch, ids: np.ndarray, model: dict, n_heads: int) -> np.ndarray:
    """Logits (seq, vocab) of one sequence: your blocks, your ``rms_norm``, then ``@ W_out``."""
    x, _ = forward_hidden(ch, ids, model, n_heads)
    return np.asarray(ch.c13.rms_norm(x, model["g_final"]), dtype=np.float64) @ model["W_out"]


def mean_loss(ch, model: dict, n_heads: int, windows: np.ndarray) -> float:
    """Mean cross-entropy (nats per token) of predicting each window's tokens 1.. from its tokens ..-1."""
    total = 0.0
    for w in windows:
        logp = _log_softmax(logits_of(ch, w[:-1], model, n_heads))
        total += -float(np.sum(logp[np.arange(len(w) - 1), w[1:]]))
    return total / (len(windows) * (windows.shape[1] - 1))


def loss_and_grads(ch, model: dict, n_heads: int, windows: np.ndarray) -> tuple[float, dict[str, np.ndarray]]:
    """The batch's mean cross-entropy and its gradient for every parameter, under flat names.

    ``windows`` is (batch, context + 1) token ids: each row's first ``context`` tokens go in, and each position
    predicts the next one. Forward and backward through your chapter 13 functions, one window at a time.
    """
    count = windows.size - len(windows)  # predicted tokens
    grads = {name: np.zeros_like(a) for name, a in flat(model).items()}
    total = 0.0
    for w in windows:
        ids, targets = w[:-1], w[1:]
        x, caches = forward_hidden(ch, ids, model, n_heads)
        h = np.asarray(ch.c13.rms_norm(x, model["g_final"]), dtype=np.float64)
        logp = _log_softmax(h @ model["W_out"])
        rows = np.arange(len(ids))
        total += -float(np.sum(logp[rows, targets]))
        dz = np.exp(logp)
        dz[rows, targets] -= 1.0
        dz /= count
        grads["W_out"] += h.T @ dz
        dx, dg = ch.c13.rms_norm_backward(x, model["g_final"], dz @ model["W_out"].T)
        grads["g_final"] += np.asarray(dg, dtype=np.float64)
        dx = np.asarray(dx, dtype=np.float64)
        for i in reversed(range(len(model["blocks"]))):
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
    return total / count, grads


def model_arrays(model: dict, settings: GptSettings, merges: list) -> dict[str, np.ndarray]:
    """What a GPT's model.npz holds: the parameters (flat names), the merges, ``n_heads``, ``context``, a marker.

    The BPE merges are rows (a, b, new id). Plain arrays: ``np.load(..., allow_pickle=False)`` reads it.
    """
    arrays = {name: np.array(a) for name, a in flat(model).items()}
    arrays["merges"] = np.array([(a, b, t) for (a, b), t in merges], dtype=np.int64).reshape(-1, 3)
    arrays["n_heads"] = np.array(settings.n_heads)
    arrays["context"] = np.array(settings.context)
    arrays["kata_format"] = np.array(GPT_FORMAT)
    return arrays


def is_gpt(arrays: dict) -> bool:
    """Whether a model file's arrays are a GPT's (``nox -s train -- --model gpt``)."""
    return str(np.asarray(arrays.get("kata_format", ""))) == GPT_FORMAT


def model_from_arrays(arrays: dict) -> tuple[dict, list, int, int]:
    """(model, merges, n_heads, context) from a GPT's model.npz arrays; TrainError naming what does not fit."""
    if not is_gpt(arrays):
        raise TrainError(f"it is not a GPT written by nox -s train -- --model gpt (format {GPT_FORMAT!r})")
    for key in ("tok_emb", "g_final", "W_out", "merges", "n_heads", "context", "blocks.0.WQ"):
        if key not in arrays:
            raise TrainError(f"it has no {key}")
    vocab, d = np.shape(arrays["tok_emb"])
    layers = len({k.split(".")[1] for k in arrays if k.startswith("blocks.")})
    d_ff = np.shape(arrays.get("blocks.0.W_up", np.zeros((d, 0))))[-1]
    for name, shape in shapes(vocab, d, d_ff, layers).items():
        if name not in arrays:
            raise TrainError(f"it has no {name}")
        if np.shape(arrays[name]) != shape:
            raise TrainError(f"its {name} has shape {np.shape(arrays[name])}, expected {shape}")
    rows = np.asarray(arrays["merges"])
    if rows.ndim != 2 or rows.shape[1] != 3 or len(rows) != vocab - 256:
        raise TrainError(f"its merges have shape {rows.shape}, expected ({vocab - 256}, 3)")
    merges = [((int(a), int(b)), int(t)) for a, b, t in rows]
    params = {name: np.asarray(arrays[name], dtype=np.float64) for name in shapes(vocab, d, d_ff, layers)}
    return nested(params), merges, int(arrays["n_heads"]), int(arrays["context"])
