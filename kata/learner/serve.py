r"""``nox -s serve -- runs/gpt``: serve the GPT you trained faster and smaller with your chapters 17-20.

The page is ``docs/serve-gpt.md``.

It takes a finished run of ``nox -s train -- --model gpt`` and shows, with numbers on that very model, what Part
III's four chapters buy:

1. **Tiled attention (chapter 17).** The prefill of validation windows with every head's attention computed by
   your ``flash_attention_forward`` (causal, in tiles, never a seq × seq matrix) gives the logits of chapter 16's
   ``gpt_forward`` to ``TILED_ATOL`` (1e-12), for a tile that divides the context and one that does not.
2. **Int8 weights (chapter 19).** Every matrix quantized to int8 with one absmax scale per output channel (your
   ``absmax_scale``, ``quantize_symmetric``, ``dequantize``; the embedding per token, its rows being what is
   read): the validation loss within ``INT8_GAP`` (0.02 nats) of the float model's, and the weights' bytes.
3. **Speculative decoding (chapter 20).** A draft GPT of one block, trained for 1500 steps on the same corpus
   by the same trainer (``runs/gpt/serve/draft/``) and run by the server's fused NumPy (``DraftDecoder``, its
   logits checked against your ``gpt_forward``'s to ``DRAFT_ATOL``), proposes ``k`` = 4 tokens; your
   ``speculative_step`` keeps or replaces them after one call of the target (your ``gpt_forward``). Shown: the
   acceptance rate (by position too), the tokens per target call against chapter 20's ``expected_tokens``, and
   that the text has the target's distribution: exactly for the first token (the probability of each token
   computed from your functions equals p to 1e-12) and by a chi-square test over many independent rounds. Its
   wall-clock speed-up over chapter 16's cached generation is measured by ``nox -s bench-serve``
   (``benchmarks/bench_serve.py``), never here.
4. **Grouped-query attention (chapter 18).** A GPT with ``--kv-heads`` key/value heads, trained exactly like
   the run (``nox -s train -- --kv-heads``, ``runs/gpt/serve/gqa<kv>/``): its validation loss within
   ``GQA_GAP`` (0.05 nats) of the run's, and its KV cache, built by your ``decode_step`` one token at a time
   (its logits checked against the full forward), smaller by n_heads / n_kv_heads, as your ``kv_cache_bytes``
   says.

The draft and the grouped-query model are trained once; a second ``nox -s serve`` reuses them (``--retrain``
trains them again). Everything is written into the run's folder: ``serve.json`` and the figures
``serve_acceptance.png``, ``serve_memory.png``, ``serve_loss.png``.

Your chapters run in the trainer's child process (``train.Child``), with its watchdog; an unfinished chapter
is refused at once, with the message the trainer gives ("chapter 17 is not finished: …"), before anything is
trained.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

import numpy as np

from . import train
from .train.corpus import TrainError
from .train.gpt import (
    GptSettings,
    corpus_text,
    eval_windows,
    flat,
    is_gpt,
    mean_loss,
    model_from_arrays,
    nested,
    tokenize,
    widen,
)
from .train.model import command

K = 4  # draft tokens per round
TILED_ATOL = 1e-12  # the tiled prefill's logits against chapter 16's
INT8_GAP = 0.02  # nats: int8 weights against the float model
GQA_GAP = 0.05  # nats: the grouped-query model against the run
CACHE_ATOL = 1e-9  # the grouped-query model's cached logits (your decode_step) against its full forward
DRAFT_ATOL = 1e-12  # the draft's fused forward (DraftDecoder) against chapter 16's gpt_forward
EXACT_ATOL = 1e-12  # the first token's distribution, from your chapter 20, against the target's
P_VALUE = 1e-3  # the chi-square test's p-value below which the draws are not the target's
PREFILL_WINDOWS = 4  # validation windows prefilled both ways
CHAPTERS = {"c04": 4, "c11": 11, "c12": 12, "c13": 13, "c14": 14, "c16": 16, "c17": 17, "c18": 18, "c19": 19, "c20": 20}
SERVE_JSON = "serve.json"
FIGURES = ("serve_acceptance.png", "serve_memory.png", "serve_loss.png")


# --- the run folder ------------------------------------------------------------------------------------------
def read_run(folder: Path) -> tuple[Path, dict, GptSettings]:
    """(model.npz's path, run.json, the run's settings) of a finished GPT run; TrainError naming what is wrong."""
    folder = Path(folder)
    if not folder.is_dir():
        raise TrainError(f"{folder} is not a run folder (`nox -s train -- --model gpt` writes runs/gpt/)")
    path, arrays = train.read_model_file(folder)
    if not is_gpt(arrays):
        raise TrainError(f"{path} is not a GPT: serve takes a run of `nox -s train -- --model gpt`")
    try:
        model, _, n_heads, context = model_from_arrays(arrays)
    except TrainError as err:
        raise TrainError(f"{path} is damaged: {err}") from None
    run_json = folder / "run.json"
    if not run_json.is_file():
        raise TrainError(f"{folder} has no run.json: the run did not finish (`nox -s train -- --model gpt --resume` "
                         "finishes it)")
    try:
        run = json.loads(run_json.read_text(encoding="utf-8"))
        s = GptSettings(**run["settings"]).check()
        float(run["final_val_loss"])
    except (ValueError, TypeError, KeyError, AttributeError, TrainError) as err:
        raise TrainError(f"{run_json} is damaged or not a GPT run's ({type(err).__name__}: {err})") from None
    d = model["tok_emb"].shape[1]
    found = {"d_model": d, "n_heads": n_heads, "context": context, "layers": len(model["blocks"]),
             "vocab_size": model["tok_emb"].shape[0]}
    for name, value in found.items():
        if getattr(s, name) != value:
            raise TrainError(f"{run_json} says {name} {getattr(s, name)} but {path} has {value}: they are not one run")
    if s.grouped or model["blocks"][0]["WK"].shape[1] != d:
        raise TrainError(f"{folder} is a grouped-query run (--kv-heads {s.kv_heads}): serve takes a multi-head run "
                         "and trains the grouped-query model itself")
    return path, run, s


def _train_argv(s: GptSettings) -> list[str]:
    """``nox -s train`` options that give the settings ``s``."""
    words = ["--model", "gpt"]
    for option, name in train.GPT.OPTIONS.items():
        value = getattr(s, name)
        if value != getattr(GptSettings(), name):
            words += [f"--{option.replace('_', '-')}", str(value)]
    return words


def draft_settings(s: GptSettings, steps: int, d_model: int | None) -> GptSettings:
    """The draft: one block, one head, narrower, on the run's tokenizer, context and seed."""
    d = d_model or max(2, min(32, s.d_model // 2) // 2 * 2)
    return GptSettings(vocab_size=s.vocab_size, d_model=d, n_heads=1, layers=1, d_ff=max(2, round(8 * d / 3)),
                       context=s.context, batch=s.batch, steps=steps, warmup=min(s.warmup, steps // 10),
                       eval_every=max(1, steps // 4), seed=s.seed, prompt=s.prompt, lr=s.lr, min_lr=s.min_lr).check()


def trained(folder: Path, name: str, s: GptSettings, impl: str | None, retrain: bool, timeout: float,
            what: str = "") -> Path:
    """``folder/serve/name``, trained with settings ``s`` by ``nox -s train`` unless it was already; TrainError.

    The training is ``train.main``'s, in this process: its progress (a bar with the time left, or a line every 5 %
    where the output is not a terminal) is the trainer's. ``what`` names the model in the line before it.
    """
    out = folder / "serve" / name
    marker = out / "serve_settings.json"
    wanted = {"settings": s.as_dict(), "impl": impl}
    if not retrain and marker.is_file() and (out / "model.npz").is_file() and (out / "run.json").is_file():
        try:
            if json.loads(marker.read_text(encoding="utf-8")) == wanted:
                print(f"  ✓ {out}/ was trained before with these settings (--retrain trains it again)", flush=True)
                return out
        except ValueError:
            pass
    argv = [*_train_argv(s), "--runs", str(folder / "serve"), "--name", name, "--timeout", f"{timeout:g}"]
    if impl is not None:
        argv += ["--impl", impl]
    print(f"\ntraining {what or name}, {s.steps:,} steps (once: a second `nox -s serve` reuses it)\n"
          f"$ {command('nox', '-s', 'train', '--', *argv)}", flush=True)
    marker.unlink(missing_ok=True)
    code = train.main(argv)
    if code != 0:
        raise TrainError(f"training {out}/ stopped (exit code {code}): see above")
    marker.write_text(json.dumps(wanted) + "\n", encoding="utf-8")
    return out


# --- the child: your chapters ----------------------------------------------------------------------------------
def preflight(ch) -> None:
    """Call every function of chapters 17-20 that serving uses once, on a tiny case: a stub stops here, at once."""
    rng = np.random.default_rng(0)
    X = rng.normal(0.0, 1.0, (3, 2))
    ch.c17.flash_attention_forward(X, X, X, 2, causal=True)
    ch.c18.group_sum(rng.normal(0.0, 1.0, (2, 3, 2)), 1)
    ch.c18.decode_step(X[:1], X[:1, :1], X[:1, :1], None, 2, 1)
    ch.c18.kv_cache_bytes(1, 1, 2, 3, 8)
    scale = ch.c19.absmax_scale(X, 8, per_channel=True)
    ch.c19.dequantize(ch.c19.quantize_symmetric(X, scale, 8), scale)
    p, q = np.array([0.5, 0.3, 0.2]), np.array([0.2, 0.3, 0.5])
    ch.c20.acceptance_probability(p, q, 0)
    ch.c20.residual_distribution(p, q)
    ch.c20.acceptance_rate(p, q)
    ch.c20.expected_tokens(0.5, K)
    ch.c20.speculative_step([0], q[None], np.stack([p, p]), [0.5, 0.5])


def _arr(value) -> np.ndarray:
    return np.asarray(value, dtype=np.float64)


def _block_parts(ch, x: np.ndarray, block: dict, n_heads: int, kv_heads: int, start: int = 0):
    """Pre-norm attention's rotated queries and keys and its values, as heads (your chapters 11-13)."""
    h = _arr(ch.c13.rms_norm(x, block["g1"]))
    Qh = _arr(ch.c12.apply_rope(ch.c11.split_heads(h @ block["WQ"], n_heads), 10000.0, start))
    Kh = _arr(ch.c12.apply_rope(ch.c11.split_heads(h @ block["WK"], kv_heads), 10000.0, start))
    Vh = _arr(ch.c11.split_heads(h @ block["WV"], kv_heads))
    return Qh, Kh, Vh


def _block_rest(ch, x: np.ndarray, attended: np.ndarray, block: dict) -> np.ndarray:
    """The block after attention: W_O, the residual, RMSNorm, SwiGLU and the second residual."""
    x1 = x + attended @ block["WO"]
    f = ch.c13.swiglu(_arr(ch.c13.rms_norm(x1, block["g2"])), block["W_gate"], block["W_up"], block["W_down"])[0]
    return x1 + _arr(f)


def tiled_logits(ch, ids, model: dict, n_heads: int, tile: int) -> np.ndarray:
    """The GPT's logits with every head's attention from your ``flash_attention_forward`` (causal, in tiles).

    The block is chapter 13's: your ``rms_norm``, ``split_heads`` and ``apply_rope`` before attention, your
    ``merge_heads`` and ``swiglu`` after; only the attention is chapter 17's.
    """
    x = model["tok_emb"][np.asarray(ids)]
    for block in model["blocks"]:
        Qh, Kh, Vh = _block_parts(ch, x, block, n_heads, n_heads)
        heads = [_arr(ch.c17.flash_attention_forward(q, k, v, tile, causal=True)[0])
                 for q, k, v in zip(Qh, Kh, Vh, strict=True)]
        x = _block_rest(ch, x, _arr(ch.c11.merge_heads(np.stack(heads))), block)
    return _arr(ch.c13.rms_norm(x, model["g_final"])) @ model["W_out"]


def chapter16_logits(ch, ids, model: dict, n_heads: int) -> np.ndarray:
    """The prefill's logits from your chapter 16's ``gpt_forward`` (no cache)."""
    return _arr(ch.c16.gpt_forward(np.asarray(ids), model, n_heads, None)[0])


def quantized(ch, model: dict) -> tuple[dict, dict]:
    """Every matrix int8 with a scale per output channel (your chapter 19), dequantized; and the bytes.

    W_Q … W_down and W_out get one scale per column (output channel); the embedding one per row, each token's
    vector being what is read (quantized as its transpose). The gains stay float64. Returns (the model with the
    dequantized matrices, {"float64": bytes of the run's weights, "int8": bytes of the int8 matrices, "scales":
    bytes of their scales and the gains in float64}).
    """
    out, ints, scales = {}, 0, 0
    for name, W in flat(model).items():
        if W.ndim != 2:
            out[name], scales = W, scales + W.nbytes
            continue
        M = W.T if name == "tok_emb" else W  # per row of the embedding: per column of its transpose
        s = _arr(ch.c19.absmax_scale(M, 8, per_channel=True))
        q = np.asarray(ch.c19.quantize_symmetric(M, s, 8))
        if q.dtype != np.int8 or q.shape != M.shape:
            raise TrainError(f"quantize_symmetric must return int8 of the matrix's shape {M.shape}; it returned "
                             f"{q.dtype} of shape {q.shape} for {name}: `nox -s chapter19`")
        if s.shape != (M.shape[1],):
            raise TrainError(f"absmax_scale(per_channel=True) must return one scale per column, shape "
                             f"({M.shape[1]},); it returned {s.shape} for {name}: `nox -s chapter19`")
        D = _arr(ch.c19.dequantize(q, s))
        out[name] = D.T if name == "tok_emb" else D
        ints, scales = ints + q.nbytes, scales + s.nbytes
    return nested(out), {"float64": sum(a.nbytes for a in flat(model).values()), "int8": ints, "scales": scales}


def distribution(ch, row: np.ndarray, temperature: float) -> np.ndarray:
    """What a token is drawn from: your ``softmax_with_temperature`` (temperature 0: the argmax, one-hot)."""
    if temperature == 0:
        p = np.zeros(len(row))
        p[int(np.argmax(row))] = 1.0
        return p
    return _arr(ch.c16.softmax_with_temperature(row, temperature))


def distributions(ch, rows: np.ndarray, temperature: float) -> np.ndarray:
    """``distribution`` of every row of logits (m, vocab) at once: your chapter 4 ``softmax`` of rows / T, one call.

    The same maths as your ``softmax_with_temperature``, which takes one row: the target's k + 1 rows of a round
    cost one call instead of k + 1 (temperature 0: each row's argmax, one-hot).
    """
    if temperature == 0:
        P = np.zeros(rows.shape)
        P[np.arange(len(rows)), np.argmax(rows, axis=1)] = 1.0
        return P
    return _arr(ch.c04.softmax(rows / temperature))


class Decoder:
    """A GPT with its KV caches, through your chapter 16's ``gpt_forward``; the caches can be cut back.

    Chapter 16 fixes a block's cache as ``{"K", "V"}``, each (n_heads, t, d_head): keeping the first t positions
    is ``K[:, :t]``, which is how speculative decoding forgets the draft tokens the target rejected.
    """

    def __init__(self, ch, model: dict, n_heads: int) -> None:
        self.ch, self.model, self.n_heads = ch, model, n_heads
        self.caches, self.held = None, 0

    def feed(self, ids: list[int]) -> np.ndarray:
        """Logits (len(ids), vocab) of the new ids after the positions held."""
        logits, self.caches = self.ch.c16.gpt_forward(np.asarray(ids), self.model, self.n_heads, self.caches)
        self.held += len(ids)
        return _arr(logits)

    def keep(self, t: int) -> None:
        """Forget every position from t on."""
        if t >= self.held:
            return
        try:
            self.caches = [{"K": c["K"][:, :t], "V": c["V"][:, :t]} for c in self.caches]
        except (TypeError, KeyError, IndexError):
            raise TrainError("gpt_forward's caches are not chapter 16's: one dict {'K', 'V'} per block, each "
                             "(n_heads, t, d_head)") from None
        self.held = t

    def reset(self) -> None:
        """Forget everything."""
        self.caches, self.held = None, 0


class DraftDecoder:
    """The draft GPT with its KV caches, run by the server's own fused NumPy (not your chapters).

    Its logits equal chapter 16's ``gpt_forward``'s to rounding (``DRAFT_ATOL``, checked by ``nox -s serve``).

    Why not your ``gpt_forward``: on models this small a call's time is Python's (every function, every check of
    its input), not arithmetic, so a one-block draft through chapter 16 costs a third of the two-block target's
    step whatever its width, and speculative decoding cannot pay (``benchmarks/bench_serve.py`` measures it).
    A server runs its draft as lean as it can; which draft it runs never changes what comes out, only how fast
    (chapter 20: every token has the target's distribution whatever q is). So the draft's block is written out
    once, here, in as few NumPy calls as it takes: every gain folded into the matrix after it, W_Q's 1/√d_head
    into W_Q, and chapter 12's rotation, x·cos + swap(x)·sin with swap(x) = (−x₁, x₀) in each pair, made of one
    product with [W_Q W_K, W_Q W_K swapped, W_V] and the cos and sin tabled for the whole context; its caches are
    arrays of the context's length, so cutting them back is one number. The target is always your chapters.
    """

    def __init__(self, model: dict, n_heads: int, context: int, eps: float = 1e-6) -> None:
        d = model["tok_emb"].shape[1]
        self.E, self.W_out = model["tok_emb"], model["g_final"][:, None] * model["W_out"]
        self.n_heads, self.d_head, self.context, self.eps = n_heads, d // n_heads, context, eps
        pair = np.arange(0, d, 2)  # (2i, 2i+1) of every head: chapter 12's frequency i of its head
        angles = np.outer(np.arange(context), 10000.0 ** -(pair % self.d_head / self.d_head))  # (context, d/2)
        self.cos = np.tile(np.repeat(np.cos(angles), 2, axis=1), 2)  # (context, 2d): each pair's, for q and k
        self.sin = np.tile(np.repeat(np.sin(angles), 2, axis=1), 2)
        swap = np.zeros((d, d))  # x @ swap = (−x₁, x₀) in every pair
        swap[pair + 1, pair], swap[pair, pair + 1] = -1.0, 1.0
        self.blocks = []
        for b in model["blocks"]:
            Q, K = b["g1"][:, None] * b["WQ"] / np.sqrt(self.d_head), b["g1"][:, None] * b["WK"]
            self.blocks.append({"W": np.concatenate([Q, K, Q @ swap, K @ swap, b["g1"][:, None] * b["WV"]], axis=1),
                                "WO": b["WO"], "W_gu": b["g2"][:, None] * np.concatenate([b["W_gate"], b["W_up"]], 1),
                                "W_down": b["W_down"], "K": np.zeros((n_heads, context, self.d_head)),
                                "V": np.zeros((n_heads, context, self.d_head))})
        self.held = 0

    def _normed(self, x: np.ndarray) -> np.ndarray:
        """RMSNorm without its gain (folded into the next matrix)."""
        return x / np.sqrt((x * x).sum(axis=1, keepdims=True) / x.shape[1] + self.eps)

    def feed(self, ids: list[int]) -> np.ndarray:
        """Logits (len(ids), vocab) of the new ids after the positions held."""
        t, m, H, dh = self.held, len(ids), self.n_heads, self.d_head
        if t + m > self.context:
            raise TrainError(f"the draft holds {t} positions and was fed {m} more: past its context {self.context}")
        d = H * dh
        x = self.E[ids]  # (m, d)
        for b in self.blocks:
            y = self._normed(x) @ b["W"]  # (m, 5d): q k, their swaps, v
            qk = (y[:, :2 * d] * self.cos[t:t + m] + y[:, 2 * d:4 * d] * self.sin[t:t + m]).reshape(m, 2, H, dh)
            b["K"][:, t:t + m] = qk[:, 1].transpose(1, 0, 2)  # (H, m, dh), rotated
            b["V"][:, t:t + m] = y[:, 4 * d:].reshape(m, H, dh).transpose(1, 0, 2)
            S = qk[:, 0].transpose(1, 0, 2) @ b["K"][:, :t + m].transpose(0, 2, 1)  # (H, m, t+m), 1/√d_head in W_Q
            if m > 1:  # one new row sees every position: nothing to mask
                S = np.where(np.arange(t + m) <= t + np.arange(m)[:, None], S, -np.inf)
            w = np.exp(S - S.max(axis=2, keepdims=True))
            heads = (w / w.sum(axis=2, keepdims=True)) @ b["V"][:, :t + m]  # (H, m, dh)
            x = x + heads.transpose(1, 0, 2).reshape(m, d) @ b["WO"]
            gu = self._normed(x) @ b["W_gu"]
            a, u = gu[:, :len(b["W_down"])], gu[:, len(b["W_down"]):]  # SwiGLU's gate and up
            x = x + a / (1.0 + np.exp(-a)) * u @ b["W_down"]
        self.held = t + m
        return self._normed(x) @ self.W_out

    def keep(self, t: int) -> None:
        """Forget every position from t on (the arrays stay; what lies past ``held`` is overwritten)."""
        self.held = min(self.held, t)

    def reset(self) -> None:
        """Forget everything."""
        self.held = 0


def draft_distribution(row: np.ndarray, temperature: float) -> np.ndarray:
    """The draft's q from its logits row, the server's own: softmax(z / T), or the argmax one-hot at T = 0."""
    if temperature == 0:
        q = np.zeros(len(row))
        q[int(np.argmax(row))] = 1.0
        return q
    e = np.exp((row - row.max()) / temperature)
    return e / e.sum()


def draft_sample(q: np.ndarray, u: float) -> int:
    """The token drawn from q by u, by the inverse cumulative distribution (as chapter 16's ``sample_index``)."""
    c = np.cumsum(q)
    i = int(np.searchsorted(c, u, side="right"))
    return i if i < len(q) else int(np.flatnonzero(q)[-1])


def speculative(ch, target: dict, draft: dict, heads: tuple[int, int], prompt: list[int], n: int,
                temperature: float, rng: np.random.Generator, context: int, alphas: bool = True, k: int = K) -> dict:
    """``n`` tokens after ``prompt`` by speculative decoding: the draft proposes k, your ``speculative_step`` decides.

    One round: the draft (``DraftDecoder``, with its cache) proposes x₀ … x₃, each drawn from its distribution q;
    the target reads the last token and the four in one call of your ``gpt_forward`` (rows p₀ … p₄, in one call
    of your chapter 4 ``softmax``: ``distributions``); your ``speculative_step`` returns the tokens kept and the one
    the target adds; both caches are cut back to what was kept. When a round could pass the context the model was
    trained on, both restart from the last half of the context (positions from 0), as ``nox -s generate`` does.
    Returns the ids, the rounds (tokens accepted in each) and, per position, how often it was verified and accepted,
    with chapter 20's α of each verified (p, q) (``alphas`` False: not computed, as when the generation is timed).
    """
    tgt, drf = Decoder(ch, target, heads[0]), DraftDecoder(draft, heads[1], context)
    ids, start = list(prompt), 0
    if len(ids) > 1:
        tgt.feed(ids[:-1])
        drf.feed(ids[:-1])
    reached, accepted, rates, rounds = np.zeros(k, int), np.zeros(k, int), [], []
    while len(ids) - len(prompt) < n:
        if len(ids) - start + k > context:
            start = len(ids) - max(1, context // 2)
            tgt.reset()
            drf.reset()
            if len(ids) - start > 1:
                tgt.feed(ids[start:-1])
                drf.feed(ids[start:-1])
        xs, qs = [], []
        rows = drf.feed(ids[start + drf.held:])
        for i in range(k):
            if i:
                rows = drf.feed(xs[-1:])
            qs.append(draft_distribution(rows[-1], temperature))
            xs.append(draft_sample(qs[-1], float(rng.random())))
        ps = distributions(ch, tgt.feed(ids[start + tgt.held:] + xs)[-(k + 1):], temperature)
        out = ch.c20.speculative_step(xs, np.stack(qs), ps, rng.random(k + 1))
        out = [int(t) for t in out]
        a = len(out) - 1
        if not 1 <= len(out) <= k + 1 or out[:a] != xs[:a]:
            raise TrainError(f"speculative_step returned {out} for the draft {xs}: it must return the accepted draft "
                             "tokens, in order, then one token (`nox -s chapter20`)")
        for i in range(min(a + 1, k)):
            reached[i] += 1
            accepted[i] += i < a
            if alphas:
                rates.append(float(ch.c20.acceptance_rate(ps[i], qs[i])))
        rounds.append(a)
        ids += out
        tgt.keep(len(ids) - 1 - start)
        drf.keep(len(ids) - 1 - start)
    return {"ids": ids[:len(prompt) + n], "rounds": rounds, "reached": reached.tolist(),
            "accepted": accepted.tolist(),
            "alpha_mean": float(np.mean(rates)) if rates else None}


def first_token_exact(ch, p: np.ndarray, q: np.ndarray) -> np.ndarray:
    """The probability that a round's first token is y, from your chapter 20: q(y)·a(y) + (1 − α)·r(y).

    Token y comes out of the first position when the draft proposes y (probability q(y)) and it is accepted
    (``acceptance_probability``), or when the proposal is rejected (1 − ``acceptance_rate``) and y is drawn from
    the ``residual_distribution``. Chapter 20 proves the sum is p(y); here it is computed on the real models.
    """
    out = np.array([q[y] * ch.c20.acceptance_probability(p, q, y) if q[y] > 0 else 0.0 for y in range(len(p))])
    alpha = float(ch.c20.acceptance_rate(p, q))
    if alpha < 1.0 and np.any(p > q):
        out = out + (1.0 - alpha) * _arr(ch.c20.residual_distribution(p, q))
    return out


def chi_square(counts: np.ndarray, p: np.ndarray) -> tuple[float, int, float]:
    """(statistic, degrees of freedom, p-value) of counts against the distribution p.

    Tokens expected fewer than 5 times are pooled into one cell. The p-value uses the Wilson-Hilferty
    approximation of the chi-square distribution (accurate to a few per cent from 3 degrees of freedom on):
    written here because the course has no SciPy.
    """
    n = counts.sum()
    expected = n * p
    big = expected >= 5
    obs = np.append(counts[big], counts[~big].sum())
    exp = np.append(expected[big], expected[~big].sum())
    if exp[-1] < 5:
        obs, exp = obs[:-1], exp[:-1]
        obs[-1] += counts[~big].sum()
        exp[-1] += expected[~big].sum()
    stat = float(np.sum((obs - exp) ** 2 / exp))
    df = max(1, len(obs) - 1)
    z = ((stat / df) ** (1 / 3) - (1 - 2 / (9 * df))) / math.sqrt(2 / (9 * df))
    return stat, df, 0.5 * math.erfc(z / math.sqrt(2))


def many_rounds(ch, target: dict, draft: dict, heads: tuple[int, int], prompt: list[int], draws: int,
                temperature: float, rng: np.random.Generator) -> np.ndarray:
    """How often each token came first in ``draws`` independent rounds of K = 4 from the prompt (counts, (vocab,)).

    Every round is a real one, as ``speculative`` plays it (the draft proposes four tokens by ``DraftDecoder``,
    the target reads them through your ``gpt_forward``, your ``speculative_step`` decides), each with fresh uniform
    draws; the models' distributions are remembered by the tokens they follow, since many rounds share their first
    proposals.
    """
    tgt, drf = Decoder(ch, target, heads[0]), DraftDecoder(draft, heads[1], len(prompt) + K)
    if len(prompt) > 1:
        tgt.feed(prompt[:-1])
        drf.feed(prompt[:-1])
    t_caches, held, last = tgt.caches, drf.held, prompt[-1]
    seen_q: dict[tuple, np.ndarray] = {}
    seen_p: dict[tuple, np.ndarray] = {}

    def q_after(xs: tuple) -> np.ndarray:
        if xs not in seen_q:
            drf.keep(held)
            seen_q[xs] = draft_distribution(drf.feed([last, *xs])[-1], temperature)
        return seen_q[xs]

    counts = np.zeros(target["tok_emb"].shape[0], dtype=np.int64)
    for _ in range(draws):
        xs, qs = [], []
        for _ in range(K):
            qs.append(q_after(tuple(xs)))
            xs.append(draft_sample(qs[-1], float(rng.random())))
        key = tuple(xs)
        if key not in seen_p:
            logits = _arr(ch.c16.gpt_forward(np.array([last, *xs]), target, heads[0], t_caches)[0])
            seen_p[key] = distributions(ch, logits, temperature)
        counts[int(ch.c20.speculative_step(xs, np.stack(qs), seen_p[key], rng.random(K + 1))[0])] += 1
    return counts


def gqa_cached_logits(ch, ids, model: dict, n_heads: int, kv_heads: int) -> tuple[np.ndarray, list]:
    """A grouped-query GPT decoded one token at a time with your ``decode_step``: (logits, the caches at the end).

    Each block: your ``rms_norm``, the narrow W_K and W_V, ``split_heads`` and ``apply_rope`` from the position,
    your chapter 18 ``decode_step`` (which keeps n_kv_heads keys and values per position), then W_O and SwiGLU.
    """
    caches: list = [None] * len(model["blocks"])
    rows = []
    for pos, token in enumerate(ids):
        x = model["tok_emb"][[token]]
        for b, block in enumerate(model["blocks"]):
            Qh, Kh, Vh = _block_parts(ch, x, block, n_heads, kv_heads, pos)
            merge = ch.c11.merge_heads
            out, caches[b] = ch.c18.decode_step(_arr(merge(Qh)), _arr(merge(Kh)), _arr(merge(Vh)), caches[b],
                                                n_heads, kv_heads)
            x = _block_rest(ch, x, _arr(out), block)
        rows.append(_arr(ch.c13.rms_norm(x, model["g_final"])) @ model["W_out"])
    return np.concatenate(rows), caches


def _cache_bytes(caches) -> int:
    try:
        return int(sum(np.asarray(c["K"]).nbytes + np.asarray(c["V"]).nbytes for c in caches))
    except (TypeError, KeyError):
        raise TrainError("a cache is not a dict {'K', 'V'} of arrays (chapters 16 and 18 fix that)") from None


def _load(path: str) -> tuple[dict, list, int, int]:
    with np.load(path, allow_pickle=False) as npz:
        return model_from_arrays(dict(npz))


def serve_child(ch, job: dict, send, status: dict) -> None:
    """In the trainer's child (``child_main``'s ``work``): ``job["part"]`` "check" or "speculate".

    "check" runs chapters 17 and 19 (tiled prefill, int8 weights); "speculate" chapters 20 and 18.
    """
    status["doing"] = "serving"  # VERBS: "Serve once nox -s chapterN passes"
    phase = lambda what: send({"event": "phase", "what": what})  # noqa: E731
    preflight(ch)
    s = GptSettings(**job["settings"])
    model, merges, n_heads, context = _load(job["model"])
    phase("encoding the corpus with your BPE (the run's merges)")
    tokens = tokenize(ch, corpus_text(s.corpus), s, merges)
    windows = eval_windows(tokens.val, s.context)
    if job["part"] == "check":
        send({"event": "done", **check_part(ch, model, n_heads, context, windows, phase)})
    else:
        send({"event": "done", **speculate_part(ch, job, s, model, n_heads, merges, windows, phase)})


def check_part(ch, model: dict, n_heads: int, context: int, windows: np.ndarray, phase) -> dict:
    """Chapter 17's prefill and chapter 19's int8 weights, measured."""
    phase("the prefill through your flash_attention_forward")
    tiles = sorted({max(1, context // 4), max(1, context * 3 // 8)})
    gaps = {}
    for tile in tiles:
        gaps[tile] = max(float(np.max(np.abs(tiled_logits(ch, w[:-1], model, n_heads, tile)
                                             - chapter16_logits(ch, w[:-1], model, n_heads))))
                         for w in windows[:PREFILL_WINDOWS])
    phase("int8 weights with your absmax_scale, quantize_symmetric and dequantize")
    q_model, weights = quantized(ch, model)
    float_loss = mean_loss(ch, model, n_heads, windows)
    int8_loss = mean_loss(ch, q_model, n_heads, windows)
    return {"tiled": {"tiles": tiles, "largest_difference": {str(t): g for t, g in gaps.items()},
                      "windows": min(PREFILL_WINDOWS, len(windows)), "positions": context},
            "int8": {"float_loss": float_loss, "int8_loss": int8_loss, "gap": int8_loss - float_loss,
                     "bytes": weights}}


def speculate_part(ch, job: dict, s: GptSettings, model: dict, n_heads: int, merges: list, windows: np.ndarray,
                   phase) -> dict:
    """Chapter 20's speculative decoding with the draft, and chapter 18's grouped-query model, measured."""
    draft, d_merges, d_heads, _ = _load(job["draft"])
    gqa, g_merges, g_heads, _ = _load(job["gqa"])
    if d_merges != merges or g_merges != merges:
        raise TrainError("the draft or the grouped-query model has another tokenizer than the run: your train_bpe "
                         "did not learn the same merges from the same text (serve --retrain trains them again)")
    heads, T = (n_heads, d_heads), job["temperature"]
    prompt = [int(i) for i in ch.c14.encode(s.prompt, merges)][-s.context:] or [int(windows[0][0])]
    phase(f"speculative decoding: {job['n']} tokens, k = {K}")
    rng = np.random.default_rng(job["seed"])
    gen = speculative(ch, model, draft, heads, prompt, job["n"], T, rng, s.context)
    vocab = ch.c14.build_vocab(merges)
    p0 = distribution(ch, chapter16_logits(ch, prompt, model, n_heads)[-1], T)
    q0 = draft_distribution(DraftDecoder(draft, d_heads, len(prompt)).feed(prompt)[-1], T)
    w = [int(i) for i in windows[0][:-1]]
    fused = DraftDecoder(draft, d_heads, len(w))
    fused = np.concatenate([fused.feed(w[:len(w) // 2]), *(fused.feed([i]) for i in w[len(w) // 2:])])
    draft_gap = float(np.max(np.abs(fused - chapter16_logits(ch, w, draft, d_heads))))
    exact = first_token_exact(ch, p0, q0)
    phase(f"{job['draws']:,} independent rounds from the prompt")
    counts = many_rounds(ch, model, draft, heads, prompt, job["draws"], T, rng)
    stat, df, p_value = chi_square(counts, p0)
    control = chi_square(counts, q0) if not np.allclose(p0, q0) else (0.0, df, 1.0)
    kv = gqa["blocks"][0]["WK"].shape[1] // (s.d_model // n_heads)
    phase(f"the grouped-query model ({n_heads} query heads, {kv} key/value head{'s' if kv > 1 else ''}) and its cache")
    ids = windows[0][:-1]
    cached, g_caches = gqa_cached_logits(ch, ids, gqa, n_heads, kv)
    full = _arr(ch.c16.gpt_forward(ids, widen(gqa, n_heads), n_heads, None)[0])
    mha_caches = ch.c16.gpt_forward(ids, model, n_heads, None)[1]
    d_head, layers = s.d_model // n_heads, len(model["blocks"])
    formula = {h: int(ch.c18.kv_cache_bytes(layers, h, d_head, len(ids), 8)) for h in (n_heads, kv)}
    rounds = np.array(gen["rounds"])
    alpha = float(np.sum(gen["accepted"]) / max(1, np.sum(gen["reached"])))
    return {
        "speculative": {
            "k": K, "temperature": T, "tokens": job["n"], "rounds": len(rounds), "draft_vs_chapter16": draft_gap,
            "tokens_per_target_call": float(np.mean(rounds + 1)), "acceptance_rate": alpha,
            "alpha_mean": gen["alpha_mean"], "expected_tokens": float(ch.c20.expected_tokens(alpha, K)),
            "reached": gen["reached"], "accepted": gen["accepted"],
            "by_position": [a / r if r else None for a, r in zip(gen["accepted"], gen["reached"], strict=True)],
            "accepted_counts": np.bincount(rounds, minlength=K + 1).tolist(),
            "text": ch.c14.decode(gen["ids"], vocab),
            "first_token": {"largest_difference": float(np.max(np.abs(exact - p0))), "alpha": float(
                ch.c20.acceptance_rate(p0, q0))},
            "draws": {"rounds": job["draws"], "chi_square": stat, "df": df, "p_value": p_value,
                      "against_draft": {"chi_square": control[0], "df": control[1], "p_value": control[2]},
                      "total_variation": float(0.5 * np.sum(np.abs(counts / counts.sum() - p0)))},
        },
        "losses": {"draft": mean_loss(ch, draft, d_heads, windows),
                   "gqa": mean_loss(ch, widen(gqa, n_heads), n_heads, windows)},
        "gqa": {"kv_heads": int(kv), "n_heads": n_heads, "positions": len(ids),
                "cache_bytes": _cache_bytes(g_caches), "mha_cache_bytes": _cache_bytes(mha_caches),
                "formula": {str(h): b for h, b in formula.items()},
                "cached_vs_full": float(np.max(np.abs(cached - full)))},
    }


# --- this process ----------------------------------------------------------------------------------------------
def parser() -> argparse.ArgumentParser:
    """The command line of ``nox -s serve -- ...``."""
    p = argparse.ArgumentParser(prog="nox -s serve --", description="Serve a GPT trained by `nox -s train -- "
                                "--model gpt` faster and smaller with your chapters 17-20 (docs/serve-gpt.md).")
    p.add_argument("run", nargs="?", default="runs/gpt", help="the run's folder (default runs/gpt)")
    p.add_argument("--kv-heads", type=int, default=None, help="key/value heads of the grouped-query model "
                   "(default: half the run's heads)")
    p.add_argument("--draft-steps", type=int, default=1500, help="training steps of the one-block draft "
                   "(default 1500)")
    p.add_argument("--draft-d-model", type=int, default=None, help="the draft's width (default: half the run's, "
                   "at most 32)")
    p.add_argument("--n", type=int, default=200, help="tokens to generate by speculative decoding (default 200)")
    p.add_argument("--draws", type=int, default=2000, help="independent rounds for the test of the distribution "
                   "(default 2000)")
    p.add_argument("--temperature", type=float, default=1.0, help="the temperature of both models' distributions "
                   "(default 1: the model's own; 0: greedy)")
    p.add_argument("--seed", type=int, default=0, help="seed of the uniform draws (default 0)")
    p.add_argument("--retrain", action="store_true", help="train the draft and the grouped-query model again")
    p.add_argument("--impl", default=None, help="package name or folder whose chapters run (default: your work, "
                   "exercises/ with your saved notebooks' finished functions)")
    p.add_argument("--timeout", type=float, default=train.TIMEOUT,
                   help="seconds of CPU one call into your code may use")
    return p


def _child(job: dict, timeout: float) -> dict:
    child = train.Child({"kind": "gpt", "mode": "serve", **job}, timeout, entry="kata.learner.serve")
    try:
        return child.follow("GPT", lambda event: event if event.get("event") == "done" else None)
    finally:
        child.close()


def main(argv: list[str] | None = None) -> int:
    """Serve a run: 0 when every claim holds, 1 when one does not or your code failed, 2 for bad input."""
    if list(argv or [])[:1] == ["--child"]:  # the child process (``Child(entry=...)``): the job comes on stdin
        from .train.child import child_main

        return child_main(serve_child)
    args = parser().parse_args(argv)
    started = time.perf_counter()
    folder = Path(args.run)
    try:
        for name, least in (("n", 1), ("draws", 1), ("draft_steps", 1), ("seed", 0)):
            if getattr(args, name) < least:
                raise TrainError(f"--{name.replace('_', '-')} must be {least} or more, got {getattr(args, name)}")
        if not (math.isfinite(args.temperature) and args.temperature >= 0):
            raise TrainError(f"--temperature must be a finite number, 0 or more, got {args.temperature}")
        if not args.timeout > 0:
            raise TrainError(f"--timeout must be positive, got {args.timeout}")
        path, run, s = read_run(folder)
        kv = args.kv_heads if args.kv_heads is not None else max(1, s.n_heads // 2)
        if not 1 <= kv < s.n_heads or s.n_heads % kv:
            raise TrainError(f"--kv-heads must divide the run's {s.n_heads} heads and be fewer, got {kv}")
        draft_s = draft_settings(s, args.draft_steps, args.draft_d_model)
        gqa_s = GptSettings(**{**s.as_dict(), "kv_heads": kv}).check()
        chapter_folder, modules, shown = train.chapters_of(args.impl, CHAPTERS)
    except TrainError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    print(f"serving {path} with {shown}/ chapters 17-20 (and 11-16)", flush=True)
    job = {"folder": str(chapter_folder), "modules": modules, "shown_folder": shown, "timeout": args.timeout,
           "settings": s.as_dict(), "model": str(path)}
    try:
        checked = _child({**job, "part": "check"}, args.timeout)
        print(_check_lines(checked, s), flush=True)
        draft = trained(folder, "draft", draft_s, args.impl, args.retrain, args.timeout,
                        f"the draft (1 block of width {draft_s.d_model})")
        gqa = trained(folder, f"gqa{kv}", gqa_s, args.impl, args.retrain, args.timeout,
                      f"the grouped-query model ({kv} key/value head{'s' if kv > 1 else ''}, trained like your run)")
        print(f"\nspeculative decoding with {draft}/ and the grouped-query model {gqa}/:", flush=True)
        spec = _child({**job, "part": "speculate", "draft": str(draft / "model.npz"), "gqa": str(gqa / "model.npz"),
                       "n": args.n, "draws": args.draws, "temperature": args.temperature, "seed": args.seed},
                      args.timeout)
    except TrainError as err:
        print(f"\n{err}", file=sys.stderr)
        return 1
    result = _result(checked, spec, run, s, draft_s, args, time.perf_counter() - started)
    (folder / SERVE_JSON).write_text(json.dumps(result, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    from .train.figures import write_figures

    write_figures(folder, lambda: figures(result))
    print(_spec_lines(result), flush=True)
    failed = [claim for claim, ok in result["claims"].items() if not ok]
    print(f"\nwrote {folder}/: {SERVE_JSON}, {', '.join(FIGURES)}", flush=True)
    if failed:
        print(f"\nnot shown: {', '.join(failed)} (docs/serve-gpt.md says what to do)", file=sys.stderr)
        return 1
    return 0


def _result(checked: dict, spec: dict, run: dict, s: GptSettings, draft_s: GptSettings, args, seconds: float) -> dict:
    int8, tiled, sp, g = checked["int8"], checked["tiled"], spec["speculative"], spec["gqa"]
    losses = {"float": int8["float_loss"], "int8": int8["int8_loss"], **spec["losses"]}
    claims = {
        "tiled prefill equals chapter 16's (1e-12)": max(tiled["largest_difference"].values()) <= TILED_ATOL,
        f"int8 loss within {INT8_GAP} nats": abs(int8["gap"]) <= INT8_GAP,
        "the draft's fused forward gives chapter 16's logits (1e-12)": sp["draft_vs_chapter16"] <= DRAFT_ATOL,
        "first token's distribution is the target's (1e-12)": sp["first_token"]["largest_difference"] <= EXACT_ATOL,
        f"many rounds pass the chi-square test (p-value >= {P_VALUE:g})": sp["draws"]["p_value"] >= P_VALUE,
        f"grouped-query loss within {GQA_GAP} nats": losses["gqa"] - losses["float"] <= GQA_GAP,
        "grouped-query cache smaller by n_heads / n_kv_heads":
            g["cache_bytes"] * g["n_heads"] == g["mha_cache_bytes"] * g["kv_heads"]
            and g["formula"][str(g["kv_heads"])] == g["cache_bytes"] and g["cached_vs_full"] <= CACHE_ATOL,
    }
    return {"run": run["settings"], "draft": draft_s.as_dict(), "unigram_entropy": run.get("unigram_entropy"),
            "tiled": tiled, "int8": int8, "speculative": sp, "gqa": g, "losses": losses, "claims": claims,
            "seconds": round(seconds, 1), "options": {k: v for k, v in vars(args).items() if k != "run"}}


def _check_lines(checked: dict, s: GptSettings) -> str:
    t, q = checked["tiled"], checked["int8"]
    b = q["bytes"]
    gaps = ", ".join(f"tile {tile}: {g:.1e}" for tile, g in t["largest_difference"].items())
    return (f"  ✓ tiled prefill (chapter 17): {t['windows']} validation windows of {t['positions']} tokens, largest "
            f"difference from chapter 16's logits {gaps} (at most {TILED_ATOL:g})\n"
            f"  {'✓' if abs(q['gap']) <= INT8_GAP else '✗'} int8 weights (chapter 19): validation loss "
            f"{q['int8_loss']:.4f} against {q['float_loss']:.4f} in float64, {q['gap']:+.4f} nats (at most "
            f"{INT8_GAP}); weights {b['float64']:,} bytes in float64 -> {b['int8']:,} in int8 + {b['scales']:,} of "
            f"scales and gains ({b['float64'] / (b['int8'] + b['scales']):.1f}x smaller)")


def _spec_lines(r: dict) -> str:
    sp, g, losses = r["speculative"], r["gqa"], r["losses"]
    by = "  ".join(f"{i + 1}: {a:.2f}" for i, a in enumerate(sp["by_position"]) if a is not None)
    d = sp["draws"]
    return (
        f"  ✓ speculative decoding (chapter 20), k = {sp['k']}, temperature {sp['temperature']:g}: {sp['tokens']} "
        f"tokens in {sp['rounds']} target calls, {sp['tokens_per_target_call']:.2f} tokens per call (chapter 20's "
        f"expected_tokens at this α: {sp['expected_tokens']:.2f})\n"
        f"    acceptance rate {sp['acceptance_rate']:.3f} (Σ min(p, q) averaged over the same positions: "
        f"{sp['alpha_mean']:.3f}); by draft position {by}\n"
        f"  {'✓' if r['claims'][next(c for c in r['claims'] if c.startswith('first'))] else '✗'} the first token's "
        f"distribution q·min(1, p/q) + (1 − α)·residual equals the target's p to "
        f"{sp['first_token']['largest_difference']:.1e} (α there {sp['first_token']['alpha']:.3f})\n"
        f"  {'✓' if d['p_value'] >= P_VALUE else '✗'} {d['rounds']:,} independent rounds: the first token's counts "
        f"against p: chi-square {d['chi_square']:.1f} on {d['df']} degrees of freedom, p-value {d['p_value']:.3f}; "
        f"against the draft's q instead: p-value {d['against_draft']['p_value']:.1e}\n"
        f"  {'✓' if losses['gqa'] - losses['float'] <= GQA_GAP else '✗'} grouped-query attention (chapter 18), "
        f"{g['kv_heads']} key/value head{'s' if g['kv_heads'] > 1 else ''} for {g['n_heads']}: KV cache of "
        f"{g['positions']} positions {g['cache_bytes']:,} bytes against {g['mha_cache_bytes']:,} "
        f"({g['mha_cache_bytes'] / g['cache_bytes']:.0f}x "
        f"smaller, as kv_cache_bytes says), validation loss {losses['gqa']:.4f} against {losses['float']:.4f} "
        f"({losses['gqa'] - losses['float']:+.4f} nats, at most {GQA_GAP}); its cached logits equal its full forward "
        f"to {g['cached_vs_full']:.1e}\n"
        f"  the draft (1 block, d_model {r['draft']['d_model']}): validation loss {losses['draft']:.4f}; run by the "
        f"server's fused NumPy, its logits {sp['draft_vs_chapter16']:.1e} from your gpt_forward's (at most "
        f"{DRAFT_ATOL:g})\n"
        f"  a sample: {sp['text'][:160]!r}")


# --- figures ---------------------------------------------------------------------------------------------------
def figures(r: dict) -> list:
    """(file name, figure): acceptance by draft position, memory per variant, validation loss per variant."""
    from matplotlib.figure import Figure

    from ..style import MUTED, PALETTE

    sp = r["speculative"]
    fig = Figure(figsize=(6.4, 3.6), layout="constrained")
    ax = fig.subplots()
    pos = [i + 1 for i, a in enumerate(sp["by_position"]) if a is not None]
    rates = [a for a in sp["by_position"] if a is not None]
    ax.bar(pos, rates, color=PALETTE[0], width=0.6, label="accepted, when reached")
    reached = np.array(sp["reached"], dtype=float) / max(1, sp["rounds"])
    ax.plot(range(1, len(reached) + 1), reached, color=PALETTE[1], marker="o", label="share of rounds that reach it")
    for x, a in zip(pos, rates, strict=True):
        ax.annotate(f"{a:.2f}", (x, a), xytext=(0, 3), textcoords="offset points", ha="center", fontsize=9)
    ax.set(xlabel="draft token's position in the round", ylabel="share", ylim=(0, 1.08), xticks=range(1, sp["k"] + 1),
           title=f"Acceptance by position: {sp['tokens_per_target_call']:.2f} tokens per target call")
    ax.grid(axis="y")
    ax.legend(loc="upper right")
    acceptance = fig

    b, g = r["int8"]["bytes"], r["gqa"]
    fig = Figure(figsize=(7.6, 3.6), layout="constrained")
    left, right = fig.subplots(1, 2)
    names, sizes = ["float64", "int8"], [b["float64"], b["int8"] + b["scales"]]
    left.bar(names, [x / 1024 for x in sizes], color=[PALETTE[0], PALETTE[2]], width=0.6)
    left.set(ylabel="KiB", title="Weights")
    names = [f"{g['n_heads']} KV heads", f"{g['kv_heads']} KV heads"]
    right.bar(names, [g["mha_cache_bytes"] / 1024, g["cache_bytes"] / 1024], color=[PALETTE[0], PALETTE[3]],
              width=0.6)
    right.set(ylabel="KiB", title=f"KV cache, {g['positions']} positions")
    for ax, vals in ((left, sizes), (right, [g["mha_cache_bytes"], g["cache_bytes"]])):
        for i, v in enumerate(vals):
            ax.annotate(f"{v / 1024:,.1f}", (i, v / 1024), xytext=(0, 3), textcoords="offset points", ha="center",
                        fontsize=9)
        ax.grid(axis="y")
    fig.suptitle("Memory per variant")
    memory = fig

    losses = r["losses"]
    fig = Figure(figsize=(6.4, 3.6), layout="constrained")
    ax = fig.subplots()
    names = ["float64", "int8", f"{g['kv_heads']} KV heads", "draft"]
    vals = [losses["float"], losses["int8"], losses["gqa"], losses["draft"]]
    ax.bar(names, vals, color=[PALETTE[0], PALETTE[2], PALETTE[3], PALETTE[4]], width=0.6)
    for i, v in enumerate(vals):
        ax.annotate(f"{v:.3f}", (i, v), xytext=(0, 3), textcoords="offset points", ha="center", fontsize=9)
    if r.get("unigram_entropy"):
        ax.axhline(r["unigram_entropy"], color=MUTED, linewidth=1, linestyle=(0, (4, 3)))
        ax.annotate("unigram entropy", (1, r["unigram_entropy"]), xycoords=("axes fraction", "data"),
                    xytext=(-2, 3), textcoords="offset points", ha="right", va="bottom", color=MUTED, fontsize=9)
    ax.set(ylabel="validation loss (nats per token)", title="Validation loss per variant",
           ylim=(0, max([*vals, r.get("unigram_entropy") or 0]) * 1.12))
    ax.grid(axis="y")
    return [("serve_acceptance.png", acceptance), ("serve_memory.png", memory), ("serve_loss.png", fig)]


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
