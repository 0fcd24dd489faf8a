"""The model: the run's settings, the parameter tree as one flat vector, Adam, and the model file (``model.npz``).

Part of ``nox -s train`` (``kata/learner/train/__init__.py`` tells the whole story).
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from .corpus import Corpus, TrainError

BLOCK_KEYS = ("ln1_gamma", "ln1_beta", "WQ", "WK", "WV", "ln2_gamma", "ln2_beta", "W1", "b1", "W2", "b2")


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
    path, arrays = read_model_file(folder)
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


def read_model_file(folder: Path) -> tuple[Path, dict]:
    """A run folder's (or a model.npz's) path and arrays, read without pickle.

    Raises:
        TrainError: no such file, not an .npz, or pickled arrays.
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
    return path, arrays
