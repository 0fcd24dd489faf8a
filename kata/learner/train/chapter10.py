r"""Chapter 10's transformer as a model of the trainer: one character per token, the tool's Adam, greedy samples.

- **Parameters**: your ``init_params`` (its shapes checked), held as views into one float64 vector
  (``Flat``) so that Adam updates them all in a few operations.
- **A step**: a random window of ``context + 1`` characters (all the windows' starts drawn at once from a
  generator seeded with ``--seed``), your ``transformer_loss_and_grads`` once, then Adam (the optimiser lives here:
  no chapter teaches it) at ``--lr`` for the first half, falling linearly to a tenth by the last step.
- **Observations**: every ``--sample-every`` steps a greedy sample from ``--prompt``; at the end a longer one and
  each layer's attention weights on the corpus's first 24 characters from the prompt on.
- **model.npz**: every parameter under ``blocks.0.WQ``-style keys, the vocabulary as character codes, a format
  number; ``nox -s generate`` continues a prompt with it through your ``transformer_forward``.

Part of ``nox -s train`` (``kata/learner/train/__init__.py`` tells the whole story).
"""

# ruff: noqa: D102 - a model's methods are documented once, on the interface they implement (model.Model)
from __future__ import annotations

import json
import math
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from .corpus import Corpus, TrainError, load_corpus
from .gradcheck import compare, numerical
from .model import Model, Probe, command, read_model_file, smoothed_tail

BLOCK_KEYS = ("ln1_gamma", "ln1_beta", "WQ", "WK", "WV", "ln2_gamma", "ln2_beta", "W1", "b1", "W2", "b2")


FINAL_CHARS = 200  # characters of the final sample


ATTENTION_CHARS = 24  # characters of the attention maps


FORMAT = 1  # model.npz's kata_format


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

    def as_dict(self) -> dict:
        """The settings as plain data."""
        return asdict(self)


def learning_rate(s: Settings, step: int) -> float:
    """``lr`` for the first half of the steps, then falling linearly to ``lr / 10`` at the last step (from 1)."""
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

    def by_name(self) -> dict[str, np.ndarray]:
        """Every parameter (a view) under its ``blocks.0.WQ``-style name."""
        return {npz_key(p): get(self.params, p) for p in self.paths}

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


def tiny_model(rng: np.random.Generator, vocab=5, d_model=4, d_ff=6, n_layers=2, max_len=6) -> Flat:
    """Random parameters of every documented shape, larger than ``init_params``'s so every path matters."""
    model = Flat(shapes(vocab, d_model, d_ff, n_layers, max_len))
    model.vector[...] = rng.normal(0.0, 0.7, model.vector.size)
    for path, array in zip(model.paths, (get(model.params, p) for p in model.paths), strict=True):
        if path[-1].endswith("gamma"):
            array += 1.0  # scales around 1, as after init_params
    return model


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


def _one_line(text: str, width: int = 100) -> str:
    flat = text.replace("\n", "↵")
    return flat if len(flat) <= width else flat[:width - 1] + "…"


class Chapter10(Model):
    """Chapter 10's transformer (``--model chapter10``, the default): ``docs/train-it.md``."""

    name, label = "chapter10", "model"
    chapters = generate_chapters = {"c10": 10}
    bar_window = 50
    bad_loss = "transformer_loss_and_grads returned the loss {loss!r}; it must be a finite float"
    peeking = ("transformer_forward lets positions see later ones: changing only the last token changed the logits "
               "of earlier positions. Look at attention_forward: the causal mask. A model that sees the next "
               "character learns to copy it and cannot write on its own.")
    rerun = "`nox -s chapter10` shows"
    GPT_ONLY = ("vocab_size", "heads", "batch", "warmup", "min_lr", "eval_every", "stop_at", "experts", "top_k",
                "balance")

    # --- this process ---
    def plan(self, args) -> tuple[Settings, dict]:
        for name in self.GPT_ONLY:
            if getattr(args, name) is not None:
                raise TrainError(f"--{name.replace('_', '-')} is an option of --model gpt")
        if args.resume:
            raise TrainError("--resume is an option of --model gpt")
        d = Settings()
        for name in ("corpus", "steps", "lr", "d_model", "d_ff", "layers", "context", "seed", "prompt"):
            if getattr(args, name) is None:
                setattr(args, name, getattr(d, name))
        for name, least in (("steps", 1), ("d_model", 1), ("layers", 0), ("context", 2), ("d_ff", 0),
                            ("sample_every", 0), ("seed", 0)):
            if getattr(args, name) < least:
                raise TrainError(f"--{name.replace('_', '-')} must be at least {least}, got {getattr(args, name)}")
        if not (math.isfinite(args.lr) and args.lr > 0):
            raise TrainError(f"--lr must be a positive number, got {args.lr}")
        corpus = load_corpus(args.corpus, args.context)
        s = Settings(corpus=args.corpus, steps=args.steps, lr=args.lr, d_model=args.d_model, d_ff=args.d_ff,
                     layers=args.layers, context=args.context, seed=args.seed, prompt=args.prompt,
                     sample_every=args.sample_every).resolved(corpus)
        if any(c not in corpus.vocab for c in s.prompt):
            raise TrainError(f"--prompt {s.prompt!r} has characters that are not in the corpus: "
                             f"{sorted({c for c in s.prompt if c not in corpus.vocab})}")
        self.corpus = corpus
        return s, {"corpus": asdict(corpus)}

    def default_name(self, args) -> str:
        return self.corpus.name

    def header(self, s: Settings, shown: str, out: Path, args, modules: dict, made_of: dict[str, str]) -> str:
        corpus = self.corpus
        return (f"training {made_of[modules['c10']]} on {corpus.source}: {len(corpus.text):,} characters, "
                f"{len(corpus.vocab)} distinct\n  d_model {s.d_model}, d_ff {s.d_ff}, {s.layers} "
                f"layer{'s' * (s.layers != 1)}, context {s.context}, {s.steps} steps of Adam at lr {s.lr:g}, seed "
                f"{s.seed}  ->  {out}/")

    def shown_observation(self, event: dict, s: Settings) -> str:
        label = "final" if event.get("final") else f"step {event['step']:>{len(str(s.steps))}}"
        return f"  {label}  loss {event['loss']:.3f}  {_one_line(event['text'])}"

    def write_run(self, out: Path, s: Settings, args, result: dict, started: float, chapters: dict[int, str]) -> list:
        from .figures import attention_figure, loss_figure

        corpus, losses, samples = self.corpus, result["losses"], result["history"]
        (out / "samples.txt").write_text(
            "".join(f"step {x['step']} (loss {x['loss']:.3f}, greedy from {s.prompt!r}):\n{x['text']}\n\n"
                    for x in samples), encoding="utf-8")
        run = {
            "settings": asdict(s), "impl": args.impl or "exercises",
            "chapters": {str(n): where for n, where in chapters.items()},
            "corpus": {"name": corpus.name, "source": corpus.source, "characters": len(corpus.text),
                       "vocab_size": len(corpus.vocab)},
            "first_loss": losses[0], "final_loss": smoothed_tail(losses),
            "final_loss_means": f"mean of the last {min(100, len(losses))} steps",
            "seconds": round(time.perf_counter() - started, 3), "train_seconds": round(result["train_seconds"], 3),
            "cpu_seconds": round(result["cpu_seconds"] + time.process_time(), 3),
            "tokens_per_second": round(s.steps * s.context / result["train_seconds"], 1),
            "final_sample": samples[-1]["text"], "losses": losses,
        }
        (out / "run.json").write_text(json.dumps(run, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        name = {"zen": "the Zen of Python", "book": "Coriolanus, act I"}.get(corpus.name, corpus.name)
        return [("loss.png", loss_figure(losses, len(corpus.vocab), f"Training loss on {name}")),
                ("attention.png", attention_figure(result["attention_text"], result["attention"],
                                                   f"Attention weights on {result['attention_text']!r}"))]

    def summary(self, out: Path, s: Settings, args, result: dict, started: float) -> str:
        losses = result["losses"]
        return (f"\ndone in {time.perf_counter() - started:.1f} s ({result['train_seconds']:.1f} s training, "
                f"{s.steps * s.context / result['train_seconds']:,.0f} tokens/s): loss {losses[0]:.3f} at step 1 -> "
                f"{smoothed_tail(losses):.3f} (mean of the last {min(100, s.steps)} steps)\n"
                f"final sample, greedy from {s.prompt!r}:\n\n{result['history'][-1]['text']}\n\n"
                f"wrote {out}/: loss.png, attention.png, samples.txt, model.npz, run.json\n"
                "next: " + command("nox", "-s", "generate", "--", str(out), "--prompt", s.prompt, "--n", "200"))

    # --- the gradient check ---
    def probe(self, ch, rng: np.random.Generator) -> Probe:
        model = tiny_model(rng)
        ids, targets = np.array([1, 3, 1, 0, 4, 2]), np.array([3, 1, -1, 4, 2, 1])
        c10 = ch.c10

        def loss_and_grads():
            loss, grads = c10.transformer_loss_and_grads(ids, targets, model.params)
            g = model.flatten(grads)
            return loss, {npz_key(p): g[model.offsets[k]:model.offsets[k + 1]].reshape(model.shapes[k])
                          for k, p in enumerate(model.paths)}

        return Probe(model.by_name(), lambda: float(c10.transformer_loss_and_grads(ids, targets, model.params)[0]),
                     loss_and_grads, lambda x: c10.transformer_forward(x, model.params)[0], ids, 5)

    def backward_order(self, probe: Probe) -> list[tuple[str, str]]:
        n_layers = len({k.split(".")[1] for k in probe.params if k.startswith("blocks.")})
        order = [("WO", "transformer_backward"), ("lnf_gamma", "layer_norm_backward"),
                 ("lnf_beta", "layer_norm_backward")]
        for i in reversed(range(n_layers)):
            order += [(f"blocks.{i}.{k}", "ffn_backward") for k in ("W1", "b1", "W2", "b2")]
            order += [(f"blocks.{i}.{k}", "layer_norm_backward") for k in ("ln2_gamma", "ln2_beta")]
            order += [(f"blocks.{i}.{k}", "attention_backward") for k in ("WQ", "WK", "WV")]
            order += [(f"blocks.{i}.{k}", "layer_norm_backward") for k in ("ln1_gamma", "ln1_beta")]
        return [*order, ("tok_emb", "transformer_backward"), ("pos_emb", "transformer_backward")]

    def shown(self, name: str) -> str:
        return shown_path(tuple(int(k) if k.isdigit() else k for k in name.split(".")))

    def unchained(self, function: str) -> str:
        return function if function == "transformer_backward" else \
            "transformer_backward (the layer functions are right on their own: look at how it chains them)"

    def one_function_checks(self, ch, rng: np.random.Generator):
        ch = ch.c10
        seq, d, d_ff = 4, 4, 6
        x = rng.normal(0, 1, (seq, d))
        R = rng.normal(0, 1, (seq, d))  # loss = Σ R ⊙ output, so the output's gradient is R

        def results(got, n):
            got = list(got) if isinstance(got, (tuple, list)) else [got]
            return (got + [None] * n)[:n]

        gamma, beta = 1 + rng.normal(0, 0.3, d), rng.normal(0, 0.3, d)
        ln = lambda: float(np.sum(R * ch.layer_norm(x, gamma, beta)))  # noqa: E731
        yield compare("layer_norm_backward", "layer_norm", ("dx", "dgamma", "dbeta"),
                      results(ch.layer_norm_backward(x, gamma, R), 3), [numerical(ln, a) for a in (x, gamma, beta)])
        W = [rng.normal(0, 0.6, (d, d)) for _ in range(3)]
        att = lambda: float(np.sum(R * ch.attention_forward(x, *W)[0]))  # noqa: E731
        _, cache = ch.attention_forward(x, *W)
        yield compare("attention_backward", "attention_forward", ("dx", "dWQ", "dWK", "dWV"),
                      results(ch.attention_backward(R, cache), 4), [numerical(att, a) for a in (x, *W)])
        F = [rng.normal(0, 0.6, (d, d_ff)), rng.normal(0, 0.3, d_ff), rng.normal(0, 0.6, (d_ff, d)),
             rng.normal(0, 0.3, d)]
        ffn = lambda: float(np.sum(R * ch.ffn_forward(x, *F)[0]))  # noqa: E731
        _, cache = ch.ffn_forward(x, *F)
        yield compare("ffn_backward", "ffn_forward", ("dx", "dW1", "db1", "dW2", "db2"),
                      results(ch.ffn_backward(R, cache), 5), [numerical(ffn, a) for a in (x, *F)])
        logits, targets = rng.normal(0, 1, (seq, 5)), np.array([1, -1, 4, 0])
        ce = lambda: float(ch.cross_entropy(logits, targets)[0])  # noqa: E731
        yield compare("cross_entropy", "its own loss", ("d_logits",), results(ch.cross_entropy(logits, targets)[1:], 1),
                      [numerical(ce, logits)])
        block = tiny_model(rng, d_model=d, d_ff=d_ff, n_layers=1).params["blocks"][0]
        blk = lambda: float(np.sum(R * ch.block_forward(x, block)[0]))  # noqa: E731
        _, cache = ch.block_forward(x, block)
        dx, grads = ch.block_backward(R, cache)
        got = [dx, *(grads.get(k, np.nan) if isinstance(grads, dict) else np.nan for k in BLOCK_KEYS)]
        wants = [numerical(blk, x), *(numerical(blk, block[k]) for k in BLOCK_KEYS)]
        found = compare("block_backward", "block_forward", ("dx", *(f"d{k}" for k in BLOCK_KEYS)), got, wants)
        yield (found[0], found[1] + " (the layer functions inside it are right: look at how it joins them, "
                                    "the residual paths dy + dF)") if found else None

    # --- the loop ---
    def settings(self, given: dict) -> Settings:
        return Settings(**given)

    def prepare(self, ch, job: dict, s: Settings, resume, phase) -> tuple[dict, dict]:
        corpus = Corpus(**job["corpus"])
        vocab, data = corpus.vocab, corpus.ids()
        index = {c: i for i, c in enumerate(vocab)}
        missing = sorted({c for c in s.prompt if c not in index})
        if missing:
            raise TrainError(f"--prompt {s.prompt!r} has characters that are not in the corpus: {missing}")
        starts = np.random.default_rng(s.seed).integers(0, len(data) - s.context, size=s.steps)
        return {"corpus": corpus, "vocab": vocab, "ids": data, "prompt": [index[c] for c in s.prompt],
                "starts": starts}, {"start_step": 0}

    def start(self, ch, s: Settings, data: dict) -> tuple[Flat, Adam]:
        model = check_init(ch.c10, len(data["vocab"]), s)
        return model, Adam(model.vector.size, s.beta1, s.beta2, s.eps)

    def batch(self, data: dict, s: Settings, step: int) -> tuple[np.ndarray, np.ndarray]:
        at = data["starts"][step]  # a random window of context + 1 characters
        return data["ids"][at:at + s.context], data["ids"][at + 1:at + s.context + 1]

    def loss_and_grads(self, ch, params: Flat, batch, s: Settings):
        return ch.c10.transformer_loss_and_grads(batch[0], batch[1], params.params)

    def update(self, ch, params: Flat, state: Adam, grads, step: int, s: Settings):
        state.step(params.vector, params.flatten(grads), learning_rate(s, step + 1))
        return params, state, {}

    def observe_due(self, s: Settings, done: int) -> bool:
        return done % s.sample_every == 0 and done != s.steps

    def _text(self, ch, params: Flat, data: dict, s: Settings, n: int) -> tuple[list[int], str]:
        ids = sample(ch.c10, params.params, data["prompt"], n, s.context)
        return ids, "".join(data["vocab"][i] for i in ids)

    def observe(self, ch, params: Flat, data: dict, s: Settings, step: int, losses: list[float],
                seconds: float) -> tuple[dict, dict]:
        text = self._text(ch, params, data, s, s.sample_chars)[1]
        return {"step": step, "loss": smoothed_tail(losses), "text": text}, {}

    def finish(self, ch, params: Flat, data: dict, s: Settings, history: list[dict], losses: list[float],
               report) -> dict:
        final, text = self._text(ch, params, data, s, FINAL_CHARS)
        history.append({"step": s.steps, "loss": smoothed_tail(losses), "text": text})
        report({"event": "observe", **history[-1], "final": True})
        n = min(ATTENTION_CHARS, s.context)
        corpus, ids = data["corpus"], data["ids"]
        at = corpus.text.find(s.prompt)  # the corpus's own text from the prompt on, else the model's
        shown = list(ids[at:at + n]) if at >= 0 and at + n <= len(ids) else final[:n]
        return {"attention_text": "".join(data["vocab"][i] for i in shown),
                "attention": [m.tolist() for m in attention_maps(ch.c10, params.params, shown)]}

    def arrays(self, params: Flat, s: Settings, data: dict) -> dict[str, np.ndarray]:
        return model_arrays(params, data["vocab"])

    # --- generating ---
    def generate(self, ch, job: dict, send) -> None:
        arrays = dict(np.load(job["model"], allow_pickle=False))
        model, vocab = model_from_arrays(arrays)
        index = {c: i for i, c in enumerate(vocab)}
        context = model.shapes[model.paths.index(("pos_emb",))][0]
        ids = sample(ch.c10, model.params, [index[c] for c in job["prompt"]], job["n"], context, job["temperature"],
                     np.random.default_rng(job["seed"]))
        send({"event": "done", "text": "".join(vocab[i] for i in ids)})
