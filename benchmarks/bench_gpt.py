"""Benchmark the capstone (``nox -s train -- --model gpt``): the KV cache's speed-up, BPE, and training tokens/s.

All in one run, on one NumPy thread as ``nox -s train`` uses, with the reference (``--impl solutions``) unless told:

1. **The KV cache.** A GPT of the default size (random weights: speed does not depend on them) continues an
   8-token prompt by 256 tokens twice: with chapter 16's ``generate`` (one prefill, then one token at a time from
   the cache), and by running the whole forward (``gpt_forward`` without a cache) over every token so far for each
   new one. Same draws ``u``, so both must write the same tokens. The goal: the cache at least 5× faster.
2. **BPE** on the capstone's corpus (``pydoc_data.topics``): ``train_bpe`` to 512 tokens, then ``encode``.
3. **Training**: tokens per second of the default training step (loss and gradients through chapter 13, clipping
   and AdamW from chapter 15), over a few steps.

Usage: python benchmarks/bench_gpt.py [--impl solutions] [--steps 20]
This is not a test: it prints numbers (and ratios) and exits 0, whatever they are. On a shared machine the
times say as much about the neighbours as about the code: the load average is printed first.
"""

from __future__ import annotations

import os

for _name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "VECLIB_MAXIMUM_THREADS"):
    os.environ.setdefault(_name, "1")  # before NumPy loads: one thread, as nox -s train

import argparse  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402
from types import SimpleNamespace  # noqa: E402

import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from kata import learners_code, project  # noqa: E402
from kata.learner.train.child import TIMEOUT  # noqa: E402
from kata.learner.train.gpt import (  # noqa: E402
    GptSettings,
    batch_at,
    flat,
    init_model,
    loss_and_grads,
    nested,
    pydoc_text,
    tokenize,
)

GOAL = 5.0  # the KV cache must be at least this many times faster
NEW_TOKENS = 256


def chapters(impl: str) -> SimpleNamespace:
    """The implementation's chapters 11-16 as ``c11`` … ``c16`` (``project.chapter_module``: a missing one named)."""
    return SimpleNamespace(**{f"c{n}": project.chapter_module(impl, n) for n in range(11, 17)})


def bench_cache(ch, s: GptSettings) -> None:
    """Generate NEW_TOKENS with the cache and without it; print both times and the ratio."""
    model = init_model(512, s.d_model, s.d_ff, s.layers, seed=0)
    prompt = [65, 32, 108, 105, 115, 116, 32, 105]  # "A list i" as bytes
    us = np.random.default_rng(0).random(NEW_TOKENS)
    began = time.perf_counter()
    cached = [int(i) for i in ch.c16.generate(prompt, model, s.n_heads, us, temperature=1.0)]
    with_cache = time.perf_counter() - began
    ids = list(prompt)
    began = time.perf_counter()
    for u in us:
        logits, _ = ch.c16.gpt_forward(np.array(ids), model, s.n_heads, None)
        ids.append(int(ch.c16.choose_next(logits[-1], float(u), temperature=1.0)))
    without = time.perf_counter() - began
    same = "the same tokens" if ids[len(prompt):] == cached else "DIFFERENT tokens"
    print(f"KV cache: {NEW_TOKENS} tokens after an {len(prompt)}-token prompt (d_model {s.d_model}, {s.layers} "
          f"layers, {s.n_heads} heads, vocab 512)")
    print(f"  with the cache       {with_cache:6.2f} s  ({NEW_TOKENS / with_cache:,.0f} tokens/s)")
    print(f"  whole forward each   {without:6.2f} s  ({NEW_TOKENS / without:,.0f} tokens/s); {same}")
    ratio = without / with_cache
    print(f"  speed-up             {ratio:6.1f}×  (goal: ≥ {GOAL:g}×: {'met' if ratio >= GOAL else 'NOT met'})")


def bench_bpe(ch, text: str, s: GptSettings):
    """Train and encode with chapter 14; print the times; return the tokens."""
    tokens = tokenize(ch, text, s)
    print(f"BPE on pydoc_data.topics ({len(text):,} characters): train_bpe to {tokens.vocab_size} tokens "
          f"{tokens.bpe_seconds:.2f} s (the capstone allows {TIMEOUT:g} s of CPU per call), "
          f"encode {tokens.encode_seconds:.2f} s, "
          f"{tokens.bytes_per_token:.2f} bytes per token")
    return tokens


def bench_training(ch, s: GptSettings, tokens, steps: int) -> None:
    """Time ``steps`` training steps of the default run; print tokens per second."""
    params = {k: np.array(a) for k, a in flat(init_model(tokens.vocab_size, s.d_model, s.d_ff, s.layers, 0)).items()}
    state = ch.c15.adamw_init(params)
    began = time.perf_counter()
    for step in range(steps):
        lr = ch.c15.lr_at(step, max_lr=s.lr, warmup_steps=s.warmup, total_steps=s.steps, min_lr=s.min_lr)
        _, grads = loss_and_grads(ch, nested(params), s.n_heads, batch_at(tokens.train, s, step))
        grads, _ = ch.c15.clip_by_global_norm(grads, s.clip)
        params, state = ch.c15.adamw_step(params, grads, state, lr, beta1=0.9, beta2=0.95,
                                          weight_decay=s.weight_decay)
    seconds = time.perf_counter() - began
    rate = steps * s.batch * s.context / seconds
    print(f"training: {steps} steps of {s.batch} × {s.context} tokens in {seconds:.2f} s: {rate:,.0f} tokens/s "
          f"({seconds / steps * 1000:.0f} ms per step; the default {s.steps} steps take about "
          f"{s.steps * seconds / steps / 60:.1f} min of steps)")


def main(argv: list[str] | None = None) -> int:
    """Run the three measurements once each."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--impl", default=learners_code.measured_impl(),
                        help="package or folder holding chapters 11-16 (default: solutions/ where it is, else "
                             "your work: exercises/ with your notebooks' answers)")
    parser.add_argument("--steps", type=int, default=20, help="training steps to time (default 20)")
    args = parser.parse_args(argv)
    ch = chapters(args.impl)
    s = GptSettings()
    load = f", load {os.getloadavg()[0]:.1f}" if hasattr(os, "getloadavg") else ""
    print(f"capstone benchmark ({args.impl}): {os.cpu_count()} cores{load}, one NumPy thread")
    if hasattr(ch, "c16"):
        bench_cache(ch, s)
    else:
        print(f"KV cache: {args.impl} has no chapter 16 yet")
    tokens = bench_bpe(ch, pydoc_text(), s)
    bench_training(ch, s, tokens, args.steps)
    return 0


if __name__ == "__main__":
    sys.exit(main())
