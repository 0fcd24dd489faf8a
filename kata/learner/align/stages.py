r"""The stages of ``nox -s align``, run in the child process on the learner's chapters (``ch.c13`` … ``ch.c24``).

**The GPT** is the one ``nox -s train -- --model gpt`` trained (``kata/learner/train/gpt.py``): its forward is your
chapter 13 blocks (``forward_hidden``), its backward your ``rms_norm_backward`` and ``prenorm_block_backward``
(``gpt.backward``) from a gradient ``dz`` of the logits that each stage works out from its loss.

**Which loss, whose code.** Every stage scores a response by the log-probabilities of its tokens, from your
chapter 23 (``token_log_probs``, ``response_mask``, ``sequence_log_prob``); its loss and the loss's gradient with
respect to those log-probabilities are your chapter 23's (``sft_loss``; ``dpo_loss``, ``dpo_grad``) or 24's
(``grpo_loss``, ``grpo_loss_grad``). The tool only carries that gradient into the logits:

$$\frac{\partial}{\partial z_i} \sum_j c_j \ell_j = c_i\,\bigl(\mathrm{onehot}(y_{i+1}) - \mathrm{softmax}(z_i)\bigr)$$

for $\ell_i = \log \mathrm{softmax}(z_i)_{y_{i+1}}$ and any coefficients $c$ (``add_grad``): for the fine-tuning
loss $c = -m / \sum m$ (chapter 23's mean over the response's tokens, written out: chapter 23 has no gradient of
``sft_loss``), for DPO $c = \partial L / \partial \log\pi$ times the response's mask, for GRPO $c = \partial L /
\partial \ell$ token by token.

**LoRA** (``Adapted``, your chapter 21). The adapted layer ``y = lora_forward(x, W, A, B, α) = x W + (α/r) x A B``
is linear in x, so it *is* the ordinary layer whose weight is ``lora_forward(I, W, A, B, α)`` (row i is the
layer's output for the i-th unit vector): the tool gives your blocks that weight, so the adapted model runs
through your chapter 13 unchanged. The adapter's gradients then come cheaply from the full weight gradient
$dW'$ your ``prenorm_block_backward`` returns for that weight: with $x = I$ and $dY = dW'$,
``lora_backward(dW', I, W, A, B, α)`` gives

$$dA = s\,dW' B^\top, \qquad dB = s\,A^\top dW', \qquad s = \alpha / r,$$

exactly the gradients of the adapter inside the layer ($dW' = x^\top dY$, so $s\,x^\top dY B^\top = s\,dW'B^\top$).
The frozen weights' gradients are computed (your block's backward returns them) and dropped. Your chapter 15's
AdamW moves A and B only (no weight decay), your ``lr_at`` sets the step size; at the end your ``lora_merge``
folds each adapter into its weight, and the merged model's logits must equal the adapted one's (1e-12).

Part of ``nox -s align`` (``kata/learner/align/__init__.py`` tells the whole story).
"""

from __future__ import annotations

import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np

from ..train.corpus import TrainError
from ..train.gpt import _log_softmax, backward, flat, forward_hidden, model_arrays, model_from_arrays, nested
from ..train.gradcheck import compare, numerical
from . import data as qa

MERGE_TOLERANCE = 1e-12  # the merged model's logits against the adapted one's


SAMPLE_QUESTIONS = 4  # held-out questions answered before and after, in the samples


SAMPLE_UNSEEN = 2  # questions about unseen sections answered before and after, in the lora stage's samples


ANSWER_TOKENS = 40  # tokens of a sampled answer at most (it stops at a line break)


# --- the model ----------------------------------------------------------------------------------------------------
def load(path: str) -> SimpleNamespace:
    """A GPT's model file: ``model`` (chapter 16's layout), ``merges``, ``n_heads``, ``context``."""
    with np.load(path, allow_pickle=False) as npz:
        arrays = dict(npz)
    model, merges, n_heads, context = model_from_arrays(arrays)
    return SimpleNamespace(model=model, merges=merges, n_heads=n_heads, context=context)


def save(path: Path, model: dict, base: SimpleNamespace) -> None:
    """Write ``model`` as a GPT model file like ``nox -s train``'s (``nox -s generate`` reads it)."""
    np.savez(path, **model_arrays(model, SimpleNamespace(n_heads=base.n_heads, context=base.context, kv_heads=0,
                                                              grouped=False), base.merges))  # multi-head attention


def forward(ch, model: dict, n_heads: int, ids: np.ndarray) -> tuple[np.ndarray, tuple]:
    """(logits (seq, vocab), what ``add_grad`` needs) of one sequence through your blocks."""
    x, caches = forward_hidden(ch, ids, model, n_heads)
    h = np.asarray(ch.c13.rms_norm(x, model["g_final"]), dtype=np.float64)
    return h @ model["W_out"], (x, caches, h)


def add_grad(ch, model: dict, ids: np.ndarray, saved: tuple, logits: np.ndarray, coef: np.ndarray,
             grads: dict) -> None:
    """Add to ``grads`` the gradient of ``Σ_i coef_i ℓ_i``, ℓ_i the log-probability of token i + 1.

    The module's formula for the logits, then the unembedding and your chapter 13's backward (``gpt.backward``).
    """
    rows = np.arange(len(ids) - 1)
    dz = np.zeros_like(logits)
    dz[:-1] = -coef[:, None] * np.exp(_log_softmax(logits[:-1]))
    dz[rows, ids[1:]] += coef
    x, caches, h = saved
    backward(ch, model, ids, x, caches, h, dz, grads)


def token_log_probs(ch, logits: np.ndarray, ids: np.ndarray) -> np.ndarray:
    """Your chapter 23's ``token_log_probs``, its answer checked: (seq − 1,) finite numbers."""
    got = np.asarray(ch.c23.token_log_probs(logits, ids), dtype=np.float64)
    if got.shape != (len(ids) - 1,) or not np.all(np.isfinite(got)):
        raise TrainError(f"token_log_probs returned shape {got.shape} for {len(ids)} tokens: expected "
                         f"({len(ids) - 1},) finite numbers, one per next token")
    return got


def response_mask(ch, prompt_len: int, seq_len: int) -> np.ndarray:
    """Your chapter 23's ``response_mask``, its answer checked: (seq_len − 1,) zeros and ones."""
    got = np.asarray(ch.c23.response_mask(prompt_len, seq_len), dtype=np.float64)
    if got.shape != (seq_len - 1,) or not np.all((got == 0) | (got == 1)):
        raise TrainError(f"response_mask({prompt_len}, {seq_len}) returned shape {got.shape}: expected "
                         f"({seq_len - 1},) zeros and ones")
    return got


def encode_pair(ch, merges: list, prompt: str, response: str, context: int) -> tuple[np.ndarray, int]:
    """(ids of prompt then response, at most ``context`` of them, the prompt's length): each encoded alone."""
    p = [int(i) for i in ch.c14.encode(prompt, merges)]
    r = [int(i) for i in ch.c14.encode(response, merges)]
    if not p or not r or len(p) >= context:
        raise TrainError(f"the prompt {prompt!r} does not fit a context of {context} tokens with an answer")
    return np.array((p + r)[:context], dtype=np.int64), len(p)


def fitting(ch, base: SimpleNamespace, sets: dict) -> dict:
    """``data.qa_sets``'s sets with only the pairs whose question leaves room in the context for an answer.

    TrainError when too few fit (a model trained with a very short ``--context``).
    """
    kept = {name: [(q, a) for q, a in pairs if len(ch.c14.encode(q, base.merges)) < base.context]
            for name, pairs in sets.items()}
    if len(kept["train"]) < 8 or not kept["held_out"] or not kept["unseen"]:
        raise TrainError(f"only {sum(map(len, kept.values()))} of the {sum(map(len, sets.values()))} questions fit "
                         f"this model's context of {base.context} tokens with room for an answer: train the GPT with "
                         "a longer --context")
    return kept


# --- the check before training ------------------------------------------------------------------------------------
def check_lora_backward(ch, seed: int = 21) -> dict:
    """Your ``lora_backward`` against central differences of your ``lora_forward``, on a small case, before training.

    The trainer's check (``train/gradcheck.py``: ``numerical``, ``compare``): a (3, 4) input, a (4, 5) weight and a
    rank-2 adapter, all random (B too: at B = 0 the gradient of A is 0 whatever the code), α = 3, and the loss
    ``Σ R ⊙ lora_forward(x, W, A, B, α)`` for a random R, so ``dY = R``; its gradients to x, A and B.

    Returns:
        ``{"numbers": n, "largest_difference": d}`` when they match.

    Raises:
        TrainError: naming ``lora_backward`` and the gradients that disagree.
    """
    rng = np.random.default_rng(seed)
    seq, d_in, d_out, r, alpha = 3, 4, 5, 2, 3.0
    x, W, A, B, R = (rng.normal(0.0, 1.0, shape) for shape in ((seq, d_in), (d_in, d_out), (d_in, r), (r, d_out),
                                                                (seq, d_out)))
    loss = lambda: float(np.sum(R * np.asarray(ch.c21.lora_forward(x, W, A, B, alpha), dtype=np.float64)))  # noqa: E731
    wants = [numerical(loss, a) for a in (x, A, B)]
    got = ch.c21.lora_backward(R.copy(), x.copy(), W.copy(), A.copy(), B.copy(), alpha)
    got = [got.get(k, np.nan) if isinstance(got, dict) else np.nan for k in ("x", "A", "B")]
    found = compare("lora_backward", "lora_forward", ("x", "A", "B"), got, wants)
    if found:
        raise TrainError(f"gradient check failed, before training: {found[0]}: {found[1]} (a (3, 4) input, a rank-2 "
                         f"adapter on a (4, 5) weight, α = 3). Training with a wrong gradient would only waste your "
                         f"time: `nox -s chapter21` shows the failing checks; fix them and run this stage again.")
    return {"numbers": sum(w.size for w in wants),
            "largest_difference": max(float(np.max(np.abs(np.asarray(g, dtype=np.float64) - w)))
                                      for g, w in zip(got, wants, strict=True))}


# --- LoRA (your chapter 21) ---------------------------------------------------------------------------------------
class Adapted:
    """A frozen GPT with a rank-r adapter beside each target weight; the adapters are the only parameters."""

    def __init__(self, ch, model: dict, targets: list[str], rank: int, alpha: float, seed: int) -> None:
        self.ch, self.alpha = ch, alpha
        self.frozen = {name: np.array(a) for name, a in flat(model).items()}
        self.targets = [name for name in self.frozen if name.split(".")[-1] in targets and name.startswith("blocks.")]
        if not self.targets:
            raise TrainError(f"--targets {','.join(targets)} names no weight of the GPT's blocks")
        self.eye = {}
        self.params = {}
        for k, name in enumerate(self.targets):
            d_in, d_out = self.frozen[name].shape
            A, B = ch.c21.lora_init(d_in, d_out, rank, seed=seed + k)
            A, B = np.asarray(A, dtype=np.float64), np.asarray(B, dtype=np.float64)
            if A.shape != (d_in, rank) or B.shape != (rank, d_out):
                raise TrainError(f"lora_init({d_in}, {d_out}, {rank}) returned A {A.shape} and B {B.shape}: "
                                 f"expected ({d_in}, {rank}) and ({rank}, {d_out})")
            self.params[f"{name}.A"], self.params[f"{name}.B"] = A, B
            self.eye.setdefault(d_in, np.eye(d_in))
        self.count = int(ch.c21.lora_parameter_count([self.frozen[n].shape for n in self.targets], rank))
        self.total = sum(a.size for a in self.frozen.values())

    def _weights(self, params: dict, fold) -> dict:
        arrays = dict(self.frozen)
        for name in self.targets:
            W = self.frozen[name]
            arrays[name] = np.asarray(fold(name, W, params[f"{name}.A"], params[f"{name}.B"]), dtype=np.float64)
            if arrays[name].shape != W.shape:
                raise TrainError(f"the adapted {name} has shape {arrays[name].shape}, expected {W.shape}")
        return nested(arrays)

    def adapted(self, params: dict) -> dict:
        """The model with each target weight the adapted layer's matrix, ``lora_forward(I, W, A, B, α)``."""
        return self._weights(params, lambda name, W, A, B: self.ch.c21.lora_forward(self.eye[W.shape[0]], W, A, B,
                                                                                    self.alpha))

    def merged(self, params: dict) -> dict:
        """The model with each adapter folded in by your ``lora_merge``: ``W + (α / r) A B``."""
        return self._weights(params, lambda name, W, A, B: self.ch.c21.lora_merge(W, A, B, self.alpha))

    def grads(self, full: dict, params: dict) -> dict:
        """The adapters' gradients from the full weight gradients: ``lora_backward(dW', I, W, A, B, α)``."""
        out = {}
        for name in self.targets:
            W = self.frozen[name]
            g = self.ch.c21.lora_backward(full[name], self.eye[W.shape[0]], W, params[f"{name}.A"],
                                          params[f"{name}.B"], self.alpha)
            if not isinstance(g, dict) or "A" not in g or "B" not in g:
                raise TrainError("lora_backward must return a dict with the keys 'x', 'A' and 'B'")
            out[f"{name}.A"] = np.asarray(g["A"], dtype=np.float64)
            out[f"{name}.B"] = np.asarray(g["B"], dtype=np.float64)
        return out


def optimise(ch, adapted: Adapted, params: dict, state: dict, full: dict, step: int,
             s: dict) -> tuple[dict, dict, float]:
    """One step of your chapter 15 on the adapters: clipping, ``lr_at``, ``adamw_step`` with no weight decay."""
    grads = adapted.grads(full, params)
    lr = float(ch.c15.lr_at(step, max_lr=s["lr"], warmup_steps=s["warmup"], total_steps=s["steps"],
                            min_lr=s["lr"] / 10))
    grads, norm = ch.c15.clip_by_global_norm(grads, 1.0)
    new, state = ch.c15.adamw_step(params, grads, state, lr, beta1=0.9, beta2=0.95, weight_decay=0.0)
    if not isinstance(new, dict) or set(new) != set(params):
        raise TrainError("adamw_step must return (new_params, new_state) with the keys of params")
    return {k: np.asarray(v, dtype=np.float64) for k, v in new.items()}, state, float(norm)


def fine_tune(ch, adapted: Adapted, params: dict, state: dict, s: dict, step_grads, measure, evals: list,
              send) -> tuple[dict, float, float]:
    """A stage's training steps; the trained adapters and the steps' seconds, on the clock and on this process's CPU.

    Each of the ``s["steps"]`` steps: ``step_grads(step, params)`` gives the loss and the full gradients,
    ``optimise`` steps the adapters, a ``step`` event is sent; every ``eval_every`` steps and at the last,
    ``measure(adapted model, steps done, seconds)`` joins ``evals`` and is sent as an ``eval`` event (not timed).
    """
    seconds = cpu = 0.0
    for step in range(s["steps"]):
        began, began_cpu = time.perf_counter(), time.process_time()
        loss, full = step_grads(step, params)
        params, state, norm = optimise(ch, adapted, params, state, full, step, s)
        seconds += time.perf_counter() - began
        cpu += time.process_time() - began_cpu
        send({"event": "step", "step": step, "loss": loss, "grad_norm": norm})
        if (step + 1) % s["eval_every"] == 0 or step + 1 == s["steps"]:
            evals.append(measure(adapted.adapted(params), step + 1, seconds))
            send({"event": "eval", **evals[-1]})
    return params, seconds, cpu


def zero_grads(model: dict) -> dict:
    """A zero gradient for every parameter (flat names)."""
    return {name: np.zeros_like(a) for name, a in flat(model).items()}


def answer(ch, model: dict, base: SimpleNamespace, prompt: str, vocab: dict) -> str:
    """The model's greedy answer to ``prompt``, up to a line break or ``ANSWER_TOKENS`` tokens."""
    ids = [int(i) for i in ch.c14.encode(prompt, base.merges)]
    start = len(ids)
    for _ in range(ANSWER_TOKENS):
        logits, _ = forward(ch, model, base.n_heads, np.array(ids[-base.context:]))
        ids.append(int(np.argmax(logits[-1])))
        if b"\n" in vocab[ids[-1]]:
            break
    return ch.c14.decode(ids[start:], vocab).split("\n")[0]


# --- stage 1: LoRA fine-tuning on questions and answers ----------------------------------------------------------
def sft_loss(ch, model: dict, base, items: list, grads: dict | None = None) -> float:
    """Your chapter 23's fine-tuning loss of ``items`` ((ids, prompt length) each): the mean over response tokens.

    With ``grads``, the loss's gradient is added to them.
    """
    rows, masks, saved = [], [], []
    for ids, plen in items:
        logits, keep = forward(ch, model, base.n_heads, ids)
        rows.append(token_log_probs(ch, logits, ids))
        masks.append(response_mask(ch, plen, len(ids)))
        saved.append((logits, keep))
    width = max(len(r) for r in rows)
    L, M = np.zeros((len(rows), width)), np.zeros((len(rows), width))
    for b, (r, m) in enumerate(zip(rows, masks, strict=False)):
        L[b, :len(r)], M[b, :len(m)] = r, m
    loss = float(ch.c23.sft_loss(L, M))
    if grads is not None:
        for (ids, _), m, (logits, keep) in zip(items, masks, saved, strict=False):
            add_grad(ch, model, ids, keep, logits, -m / M.sum(), grads)
    return loss


def stage_lora(ch, job: dict, send, status: dict) -> None:
    """LoRA fine-tuning, prompt masked: the answer loss of each set before and after, samples, the merged model.

    The sets are ``data.qa_sets``'s: ``held_out`` (taught sections asked in a phrasing never trained on), the goal's
    measure; ``unseen`` (sections never taught); and a sample of the training questions.
    """
    s, out = job["settings"], Path(job["out"])
    base = load(job["model"])
    vocab = ch.c14.build_vocab(base.merges)
    sets = fitting(ch, base, qa.qa_sets())
    enc = lambda pairs: [encode_pair(ch, base.merges, q, a, base.context) for q, a in pairs]  # noqa: E731
    train_items, held_items, unseen_items = enc(sets["train"]), enc(sets["held_out"]), enc(sets["unseen"])
    sample = train_items[::max(1, len(train_items) // len(unseen_items))][:len(unseen_items)]
    adapted = Adapted(ch, base.model, s["targets"], s["rank"], s["alpha"], s["seed"])
    params = adapted.params
    state = ch.c15.adamw_init(params)
    asked = sets["held_out"][:SAMPLE_QUESTIONS] + sets["unseen"][:SAMPLE_UNSEEN]
    before = [answer(ch, base.model, base, q, vocab) for q, _ in asked]

    def measure(model: dict, step: int, seconds: float) -> dict:
        return {"step": step, "held_out": sft_loss(ch, model, base, held_items),
                "unseen": sft_loss(ch, model, base, unseen_items), "train": sft_loss(ch, model, base, sample),
                "seconds": round(seconds, 3)}

    evals = [measure(base.model, 0, 0.0)]
    send({"event": "ready", "pairs": len(train_items), "held_out_pairs": len(held_items),
          "unseen_pairs": len(unseen_items), "trained": adapted.count, "parameters": adapted.total,
          "targets": adapted.targets, **evals[0]})
    status["doing"] = "fine-tuning"

    def step_grads(step: int, params: dict) -> tuple[float, dict]:
        rng = np.random.default_rng([s["seed"], step])
        picked = rng.choice(len(train_items), size=min(s["batch"], len(train_items)), replace=False)
        batch = [train_items[i] for i in picked]
        model = adapted.adapted(params)
        full = zero_grads(model)
        return sft_loss(ch, model, base, batch, full), full

    params, seconds, cpu = fine_tune(ch, adapted, params, state, s, step_grads, measure, evals, send)
    model, merged = adapted.adapted(params), adapted.merged(params)
    gap = max(float(np.max(np.abs(forward(ch, model, base.n_heads, ids)[0] - forward(ch, merged, base.n_heads,
                                                                                      ids)[0])))
              for ids, _ in held_items)
    after = [answer(ch, merged, base, q, vocab) for q, _ in asked]
    out.mkdir(parents=True, exist_ok=True)
    save(out / "sft.npz", merged, base)
    np.savez(out / "adapter.npz", **params)
    send({"event": "done", "evals": evals, "merge_gap": gap, "train_seconds": seconds, "train_cpu_seconds": cpu,
          "samples": [{"question": q, "answer": a, "before": b, "after": c,
                       "set": "held_out" if i < SAMPLE_QUESTIONS else "unseen"}
                      for i, ((q, a), b, c) in enumerate(zip(asked, before, after, strict=False))]})


# --- stage 2: DPO on preference pairs -----------------------------------------------------------------------------
def stage_dpo(ch, job: dict, send, status: dict) -> None:
    """DPO with a new adapter on the fine-tuned model, which is also the frozen reference.

    Trained on the training questions (``data.qa_sets``), a rejection drawn anew at every step; the preference
    accuracy and reward margin of the held-out questions (and the accuracy on unseen sections) at every
    evaluation, answers before and after.
    """
    s, out = job["settings"], Path(job["out"])
    base = load(job["model"])  # the fine-tuned model of stage 1: the policy's start and the reference
    vocab = ch.c14.build_vocab(base.merges)
    sets = fitting(ch, base, qa.qa_sets())
    train = sets["train"]

    def encode(triples):
        return [(encode_pair(ch, base.merges, q, c, base.context), encode_pair(ch, base.merges, q, r, base.context))
                for q, c, r in triples]

    train_chosen = [encode_pair(ch, base.merges, q, a, base.context) for q, a in train]
    held_triples = qa.preference_pairs(sets["held_out"], seed=s["seed"] + 1)
    held_pairs = encode(held_triples)
    unseen_pairs = encode(qa.preference_pairs(sets["unseen"], seed=s["seed"] + 2))

    def logp(model, item):
        (ids, plen) = item
        logits, keep = forward(ch, model, base.n_heads, ids)
        return float(ch.c23.sequence_log_prob(logits, ids, plen)), logits, keep

    ref_chosen = [logp(base.model, c)[0] for c in train_chosen]
    ref_held = np.array([(logp(base.model, c)[0], logp(base.model, r)[0]) for c, r in held_pairs])
    ref_unseen = np.array([(logp(base.model, c)[0], logp(base.model, r)[0]) for c, r in unseen_pairs])
    beta = s["beta"]

    def measure(model, step: int, seconds: float) -> dict:
        pol = np.array([(logp(model, c)[0], logp(model, r)[0]) for c, r in held_pairs])
        chosen = np.asarray(ch.c23.implicit_reward(pol[:, 0], ref_held[:, 0], beta), dtype=np.float64)
        rejected = np.asarray(ch.c23.implicit_reward(pol[:, 1], ref_held[:, 1], beta), dtype=np.float64)
        margin = chosen - rejected
        unseen = np.array([(logp(model, c)[0], logp(model, r)[0]) for c, r in unseen_pairs]) - ref_unseen
        return {"step": step, "loss": float(ch.c23.dpo_loss(pol[:, 0], pol[:, 1], ref_held[:, 0], ref_held[:, 1],
                                                            beta)),
                "accuracy": float(np.mean(margin > 0)), "margin": float(np.mean(margin)),
                "accuracy_shuffled": float(np.mean(margin[0::2] > 0)),
                "accuracy_other": float(np.mean(margin[1::2] > 0)),
                "chosen_reward": float(np.mean(chosen)), "rejected_reward": float(np.mean(rejected)),
                "accuracy_unseen": float(np.mean(unseen[:, 0] > unseen[:, 1])),
                "reference_prefers": float(np.mean(ref_held[:, 0] > ref_held[:, 1])), "seconds": round(seconds, 3)}

    adapted = Adapted(ch, base.model, s["targets"], s["rank"], s["alpha"], s["seed"])
    params = adapted.params
    state = ch.c15.adamw_init(params)
    evals = [measure(base.model, 0, 0.0)]
    asked = held_triples[:SAMPLE_QUESTIONS]
    before = [answer(ch, base.model, base, q, vocab) for q, _, _ in asked]
    send({"event": "ready", "pairs": len(train), "held_out_pairs": len(held_pairs),
          "unseen_pairs": len(unseen_pairs), "trained": adapted.count,
          "parameters": adapted.total, "targets": adapted.targets, **evals[0]})
    status["doing"] = "DPO"

    def step_grads(step: int, params: dict) -> tuple[float, dict]:
        rng = np.random.default_rng([s["seed"], step])
        picked = rng.choice(len(train), size=min(s["batch"], len(train)), replace=False)
        pairs = [(train_chosen[i], encode_pair(ch, base.merges, train[i][0], rejection(train, i, rng), base.context))
                 for i in picked]
        model = adapted.adapted(params)
        scored = [(logp(model, c), logp(model, r)) for c, r in pairs]
        pc = np.array([c[0] for c, _ in scored])
        pr = np.array([r[0] for _, r in scored])
        rc = np.array([ref_chosen[i] for i in picked])
        rr = np.array([logp(base.model, r)[0] for _, r in pairs])
        loss = float(ch.c23.dpo_loss(pc, pr, rc, rr, beta))
        d_c, d_r = (np.asarray(d, dtype=np.float64) for d in ch.c23.dpo_grad(pc, pr, rc, rr, beta))
        if d_c.shape != pc.shape or d_r.shape != pc.shape:
            raise TrainError(f"dpo_grad returned shapes {d_c.shape} and {d_r.shape}, expected {pc.shape} each")
        full = zero_grads(model)
        for b in range(len(picked)):
            for (ids, plen), (_, logits, keep), d in ((pairs[b][0], scored[b][0], d_c[b]),
                                                      (pairs[b][1], scored[b][1], d_r[b])):
                add_grad(ch, model, ids, keep, logits, d * response_mask(ch, plen, len(ids)), full)
        return loss, full

    params, seconds, cpu = fine_tune(ch, adapted, params, state, s, step_grads, measure, evals, send)
    merged = adapted.merged(params)
    after = [answer(ch, merged, base, q, vocab) for q, _, _ in asked]
    out.mkdir(parents=True, exist_ok=True)
    save(out / "dpo.npz", merged, base)
    send({"event": "done", "evals": evals, "train_seconds": seconds, "train_cpu_seconds": cpu,
          "samples": [{"question": q, "chosen": c, "rejected": r, "before": b, "after": a}
                      for (q, c, r), b, a in zip(asked, before, after, strict=False)]})


def rejection(pairs: list, i: int, rng: np.random.Generator) -> str:
    """A worse answer to question ``i``: its words shuffled, or another section's answer, each half the time.

    Drawn anew at every step, so that the policy learns what makes an answer worse, not which answers it saw.
    Another section's: an answer that is not question ``i``'s (a section is trained in several phrasings).
    """
    if rng.random() < 0.5:
        return qa.shuffled(pairs[i][1], rng)
    others = sorted({a for _, a in pairs} - {pairs[i][1]})
    return others[int(rng.integers(len(others)))]


STAGES = {"lora": stage_lora, "dpo": stage_dpo}


def work(ch, job: dict, send, status: dict) -> None:
    """The child's work: your ``lora_backward`` checked (``check_lora_backward``), then the stage the job names.

    ``child_main``'s ``work``.
    """
    status["doing"] = "checking your lora_backward against central differences"
    send({"event": "lora_checked", **check_lora_backward(ch)})
    STAGES[job["stage"]](ch, job, send, status)
