"""Benchmark ``nox -s serve``'s speculative decoding against chapter 16's cached generation, in wall-clock time.

On a trained run and its draft (``nox -s train -- --model gpt``, then ``nox -s serve``, which trains
``runs/gpt/serve/draft/``), with the reference (``--impl solutions``) unless told, on one NumPy thread as the tools
use: the run's prompt is continued by ``--n`` tokens (256) at temperature 1, in turn

1. by chapter 16's cached generation: one prefill, then one ``gpt_forward`` call per token from the KV cache,
   each token drawn by ``sample_index`` from ``softmax_with_temperature`` (what ``nox -s generate`` does);
2. by speculative decoding with k = 4 (``kata.learner.serve.speculative``): the draft proposes four tokens from
   its own cache, the target reads them in one call, chapter 20's ``speculative_step`` keeps or replaces them.

Each is timed ``--repeat`` times (3) with other seeds, alternating, and the best time of each is kept (the least
disturbed by the neighbours). The goal: speculative decoding at least 1.5× faster. Printed too: the acceptance
rate and tokens per target call of the timed rounds, the time of one target and one draft call, and the speed-up
those calls alone allow, E·t(target, 1) / (k·t(draft, 1) + t(target, k + 1)): on these small models a call costs
mostly Python, whatever its width, so a one-block draft costs about half a two-block target's call.

Usage: python benchmarks/bench_serve.py [runs/gpt] [--impl solutions] [--n 256] [--repeat 3]
This is not a test: it prints numbers (and ratios) and exits 0, whatever they are; without a run and its draft
it says how to make them and exits 0. The load average is printed first.
"""

from __future__ import annotations

import os

for _name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "VECLIB_MAXIMUM_THREADS"):
    os.environ.setdefault(_name, "1")  # before NumPy loads: one thread, as nox -s train

import argparse  # noqa: E402
import importlib  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402
from types import SimpleNamespace  # noqa: E402

import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from kata import project  # noqa: E402
from kata.learner.serve import CHAPTERS, K, distribution, read_run, speculative  # noqa: E402
from kata.learner.train.gpt import model_from_arrays  # noqa: E402

GOAL = 1.5  # speculative decoding must be at least this many times faster


def chapters(impl: str) -> SimpleNamespace:
    """The implementation's chapters 11-20 that serving calls, as ``c11`` … ``c20``."""
    folder = project.impl_folder(impl)
    if str(folder.parent) not in sys.path:
        sys.path.insert(0, str(folder.parent))
    files = project.chapter_files(folder)
    return SimpleNamespace(**{key: importlib.import_module(f"{folder.name}.{files[n].stem}")
                              for key, n in CHAPTERS.items()})


def cached(ch, model: dict, n_heads: int, prompt: list[int], n: int, rng, context: int) -> list[int]:
    """Chapter 16's cached generation at temperature 1, restarting from half the context as nox -s generate does."""
    ids = list(prompt)
    logits, caches = ch.c16.gpt_forward(np.array(prompt), model, n_heads, None)
    held = len(prompt)
    for _ in range(n):
        nxt = int(ch.c16.sample_index(distribution(ch, np.asarray(logits)[-1], 1.0), float(rng.random())))
        ids.append(nxt)
        if held >= context:
            window = ids[-(context // 2):]
            logits, caches = ch.c16.gpt_forward(np.array(window), model, n_heads, None)
            held = len(window)
        else:
            logits, caches = ch.c16.gpt_forward(np.array([nxt]), model, n_heads, caches)
            held += 1
    return ids


def call_ms(ch, model: dict, n_heads: int, rows: int) -> float:
    """Milliseconds of one cached ``gpt_forward`` call on ``rows`` new tokens after 32 held (best of 50)."""
    _, caches = ch.c16.gpt_forward(np.arange(32), model, n_heads, None)
    best = float("inf")
    for _ in range(50):
        began = time.perf_counter()
        ch.c16.gpt_forward(np.arange(rows), model, n_heads, caches)
        best = min(best, time.perf_counter() - began)
    return best * 1e3


def main(argv: list[str] | None = None) -> int:
    """Print the two generations' times and their ratio; 0 whatever they are."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("run", nargs="?", default=str(ROOT / "runs" / "gpt"))
    p.add_argument("--impl", default="solutions")
    p.add_argument("--n", type=int, default=256)
    p.add_argument("--repeat", type=int, default=3)
    args = p.parse_args(argv)
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    folder = Path(args.run)
    draft_file = folder / "serve" / "draft" / "model.npz"
    try:
        path, _, s = read_run(folder)
    except Exception as err:  # noqa: BLE001 - any reason there is no run to measure: say how to make one
        print(f"speculative decoding: skipped ({err}); train a run and its draft first: nox -s train -- --model gpt; "
              "nox -s serve")
        return 0
    if not draft_file.is_file():
        print(f"speculative decoding: skipped (no draft at {draft_file}); `nox -s serve -- {folder}` trains it")
        return 0
    ch = chapters(args.impl)
    with np.load(path, allow_pickle=False) as a:
        target, merges, n_heads, context = model_from_arrays(dict(a))
    with np.load(draft_file, allow_pickle=False) as a:
        draft, _, d_heads, _ = model_from_arrays(dict(a))
    prompt = [int(i) for i in ch.c14.encode(s.prompt, merges)][-context:]
    print(f"target {path} ({len(target['blocks'])} blocks, d_model {s.d_model}), draft {draft_file} "
          f"({len(draft['blocks'])} block, d_model {draft['tok_emb'].shape[1]}); {args.n} tokens at temperature 1, "
          f"k = {K}, {args.impl}/")
    t_ms, t5_ms, d_ms = call_ms(ch, target, n_heads, 1), call_ms(ch, target, n_heads, K + 1), call_ms(ch, draft,
                                                                                                     d_heads, 1)
    print(f"  one cached call: target {t_ms:.2f} ms (1 token), {t5_ms:.2f} ms ({K + 1} tokens); draft {d_ms:.2f} ms")
    best_c, best_s, rounds = float("inf"), float("inf"), []
    for r in range(args.repeat):
        began = time.perf_counter()
        cached(ch, target, n_heads, prompt, args.n, np.random.default_rng(r), context)
        best_c = min(best_c, time.perf_counter() - began)
        began = time.perf_counter()
        gen = speculative(ch, target, draft, (n_heads, d_heads), prompt, args.n, 1.0, np.random.default_rng(r),
                          context, alphas=False)
        best_s = min(best_s, time.perf_counter() - began)
        rounds += gen["rounds"]
    rounds = np.array(rounds)
    alpha = rounds.sum() / np.minimum(rounds + 1, K).sum()
    print(f"  chapter 16, cached: {best_c:.2f} s ({args.n / best_c:.0f} tokens/s)")
    print(f"  speculative, k = {K}: {best_s:.2f} s ({args.n / best_s:.0f} tokens/s); acceptance rate {alpha:.3f}, "
          f"{np.mean(rounds + 1):.2f} tokens per target call")
    ratio = best_c / best_s
    tokens = float(np.mean(rounds + 1))
    print(f"  what the calls alone allow: {tokens:.2f} tokens × {t_ms:.2f} ms / ({K} × {d_ms:.2f} + {t5_ms:.2f}) ms = "
          f"{tokens * t_ms / (K * d_ms + t5_ms):.2f}x (sampling and speculative_step's checks cost the rest)")
    print(f"  speed-up {ratio:.2f}x (goal at least {GOAL}x): {'met' if ratio >= GOAL else 'NOT met'}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
