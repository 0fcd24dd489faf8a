"""Benchmark ``nox -s serve``'s speculative decoding against chapter 16's cached generation, in wall-clock time.

On a trained run and its draft (``nox -s train -- --model gpt``, then ``nox -s serve``, which trains
``runs/gpt/serve/draft/``), with the code a benchmark measures unless told (``learners_code.measured_impl``:
``solutions`` in the authors' edition, your work in a learner's, exercises/ with your notebooks' answers), on one
NumPy thread as the tools use: the run's prompt is continued by ``--n`` tokens (256) at ``--temperature`` (1; 0
is greedy), in turn

1. by chapter 16's cached generation: one prefill, then one ``gpt_forward`` call per token from the KV cache,
   each token drawn by ``sample_index`` from ``softmax_with_temperature`` (what ``nox -s generate`` does);
2. by speculative decoding with k = 1, 2, 3 and 4 (``kata.learner.serve.speculative``; ``nox -s serve`` uses 4):
   the draft (``DraftDecoder``, the server's fused NumPy, with its cache; ``--draft`` another draft's folder)
   proposes k tokens, the target reads them in one ``gpt_forward`` call, their k + 1 rows become p in one call of
   chapter 4's ``softmax``, chapter 20's ``speculative_step`` keeps or replaces them.

Each is timed ``--repeat`` times (3) with other seeds, alternating, and the best time of each is kept (the least
disturbed by the neighbours); the CPU time of this process is printed beside it, which the neighbours disturb
less. The goal: speculative decoding at least 1.5× faster. Printed first: what each call of a round costs (best of
100, in µs and in target steps: the target on 1 to k + 1 tokens, ``speculative_step`` at each k with every draft
token accepted, its dearest), then for each k the acceptance rate and tokens per target call E of the timed rounds,
and the speed-up those calls allow, E·(a cached token) / (k·(a draft step) + (the target on k + 1 tokens, their
softmax and ``speculative_step``)), at k = 4 with a free draft too and the acceptance rate 1.5× would need
(chapter 20's ``expected_tokens``). The calls are timed alone, their data in the cache: in the generation, where
the draft's calls and the target's take turns, each costs more, so the measured speed-up falls short of it.

Usage: ``nox -s bench-serve -- [runs/gpt] [--impl FOLDER] [--n 256] [--repeat 3] [--temperature 1]
[--draft FOLDER]`` (a learner's session too), or
``python benchmarks/bench_serve.py …``; ``nox -s bench`` ends with it.
This is not a test: it prints numbers (and ratios) and exits 0, whatever they are; without a run and its draft
it says how to make them and exits 0; an unfinished chapter it calls (14, 16 or 20) stops it with exit code 1 and
the trainer's message ("chapter 20 is not finished: …"). The load average is printed first.
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
from kata.learner.serve import (  # noqa: E402
    CHAPTERS,
    DraftDecoder,
    K,
    distribution,
    distributions,
    draft_distribution,
    draft_sample,
    read_run,
    speculative,
)
from kata.learner.train.child import describe, learner_frames  # noqa: E402
from kata.learner.train.gpt import model_from_arrays  # noqa: E402

GOAL = 1.5  # speculative decoding must be at least this many times faster


def chapters(impl: str) -> SimpleNamespace:
    """The implementation's chapters 11-20 that serving calls, as ``c11`` … ``c20``."""
    return SimpleNamespace(**{key: project.chapter_module(impl, n) for key, n in CHAPTERS.items()})


def cached(ch, model: dict, n_heads: int, prompt: list[int], n: int, rng, context: int, temperature: float = 1.0
           ) -> list[int]:
    """Chapter 16's cached generation, restarting from half the context as nox -s generate does."""
    ids = list(prompt)
    logits, caches = ch.c16.gpt_forward(np.array(prompt), model, n_heads, None)
    held = len(prompt)
    for _ in range(n):
        nxt = int(ch.c16.sample_index(distribution(ch, np.asarray(logits)[-1], temperature), float(rng.random())))
        ids.append(nxt)
        if held >= context:
            window = ids[-(context // 2):]
            logits, caches = ch.c16.gpt_forward(np.array(window), model, n_heads, None)
            held = len(window)
        else:
            logits, caches = ch.c16.gpt_forward(np.array([nxt]), model, n_heads, caches)
            held += 1
    return ids


def best_us(f, n: int = 100) -> float:
    """Microseconds of f() (best of n: the least disturbed by the neighbours)."""
    best = float("inf")
    for _ in range(n):
        began = time.perf_counter()
        f()
        best = min(best, time.perf_counter() - began)
    return best * 1e6


def held(context: int) -> int:
    """Positions in the caches when a call is timed: 32, or fewer where a round of K + 1 more would not fit."""
    return max(1, min(32, context - K - 1))


def breakdown(ch, target: dict, n_heads: int, draft: dict, d_heads: int, context: int) -> dict:
    """Microseconds of each call a round makes, after ``held(context)`` positions (best of 100 each)."""
    at = held(context)
    ids = np.arange(at + 1) % len(target["tok_emb"])
    _, t_caches = ch.c16.gpt_forward(ids[:at], target, n_heads, None)
    _, d_caches = ch.c16.gpt_forward(ids[:at], draft, d_heads, None)
    rows = np.asarray(ch.c16.gpt_forward(ids, target, n_heads, None)[0])[-(K + 1):]
    row = rows[-1]
    p = distribution(ch, row, 1.0)
    fused = DraftDecoder(draft, d_heads, context)
    q = draft_distribution(fused.feed(list(ids))[-1], 1.0)
    fused.keep(at)

    def draft_step() -> None:
        fused.feed([1])
        fused.keep(at)

    x = int(np.argmax(np.minimum(p, q)))  # a token both like: a round that accepts all K (the dearest)
    return {
        "target, 1 token": best_us(lambda: ch.c16.gpt_forward(ids[:1], target, n_heads, t_caches)),
        **{f"target, {k + 1} tokens": best_us(lambda k=k: ch.c16.gpt_forward(ids[:k + 1], target, n_heads, t_caches))
           for k in range(1, K + 1)},
        "draft, your gpt_forward": best_us(lambda: ch.c16.gpt_forward(ids[:1], draft, d_heads, d_caches)),
        "draft, fused (DraftDecoder)": best_us(draft_step),
        "draft's q and its draw": best_us(lambda: draft_sample(draft_distribution(row, 1.0), 0.5)),
        "softmax_with_temperature": best_us(lambda: distribution(ch, row, 1.0)),
        f"softmax of {K + 1} rows (distributions)": best_us(lambda: distributions(ch, rows, 1.0)),
        "sample_index": best_us(lambda: ch.c16.sample_index(p, 0.5)),
        **{f"speculative_step, k = {k}": best_us(lambda k=k: ch.c20.speculative_step(
            [x] * k, np.stack([q] * k), np.stack([p] * (k + 1)), [0.0] * k + [0.5])) for k in range(1, K + 1)},
    }


def main(argv: list[str] | None = None) -> int:
    """Print the two generations' times and their ratio; 0 whatever they are."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("run", nargs="?", default=str(ROOT / "runs" / "gpt"))
    p.add_argument("--impl", default=learners_code.measured_impl(),
                   help="package name or folder whose chapters run (default: solutions where it is, else your work)")
    p.add_argument("--n", type=int, default=256)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--temperature", type=float, default=1.0, help="both ways' temperature (default 1; 0: greedy)")
    p.add_argument("--draft", default=None, help="another draft's folder (default RUN/serve/draft)")
    args = p.parse_args(argv)
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    folder = Path(args.run)
    draft_file = Path(args.draft or folder / "serve" / "draft") / "model.npz"
    try:
        path, _, s = read_run(folder)
    except Exception as err:  # noqa: BLE001 - any reason there is no run to measure: say how to make one
        print(f"speculative decoding: skipped ({err}); train a run and its draft first: nox -s train -- --model gpt; "
              "nox -s serve")
        return 0
    if not draft_file.is_file():
        print(f"speculative decoding: skipped (no draft at {draft_file}); `nox -s serve -- {folder}` trains it")
        return 0
    impl = project.impl_folder(args.impl)
    try:
        return measure(chapters(args.impl), args, path, s, draft_file, learners_code.shown(impl))
    except Exception as err:  # noqa: BLE001 - the learner's code failed: say where, as the trainer does
        if not learner_frames(err.__traceback__, impl.resolve()):
            raise
        print(describe(err, impl.resolve(), learners_code.shown(impl), "measuring"), file=sys.stderr)
        return 1


def measure(ch, args, path: Path, s, draft_file: Path, shown: str) -> int:
    """Time each call of a round, then the cached generation and speculative decoding at every k; print them."""
    with np.load(path, allow_pickle=False) as a:
        target, merges, n_heads, context = model_from_arrays(dict(a))
    with np.load(draft_file, allow_pickle=False) as a:
        draft, _, d_heads, _ = model_from_arrays(dict(a))
    prompt = [int(i) for i in ch.c14.encode(s.prompt, merges)][-context:]
    print(f"target {path} ({len(target['blocks'])} blocks, d_model {s.d_model}), draft {draft_file} "
          f"({len(draft['blocks'])} block, d_model {draft['tok_emb'].shape[1]}); {args.n} tokens at temperature "
          f"{args.temperature:g}, "
          f"{shown}/")
    calls = breakdown(ch, target, n_heads, draft, d_heads, context)
    step = calls["target, 1 token"]
    print(f"  one call, after {held(context)} positions (best of 100):")
    for name, us in calls.items():
        print(f"    {name:34s} {us:7.1f} µs = {us / step:.2f} target steps")
    ks = range(1, K + 1)
    wall, cpu = {k: float("inf") for k in (0, *ks)}, {k: float("inf") for k in (0, *ks)}
    rounds: dict[int, list] = {k: [] for k in ks}
    for r in range(args.repeat):  # alternating, so that a busy moment hurts all alike
        for k in (0, *ks):
            began, began_cpu = time.perf_counter(), time.process_time()
            if k == 0:
                cached(ch, target, n_heads, prompt, args.n, np.random.default_rng(r), context, args.temperature)
            else:
                rounds[k] += speculative(ch, target, draft, (n_heads, d_heads), prompt, args.n, args.temperature,
                                         np.random.default_rng(r), context, alphas=False, k=k)["rounds"]
            wall[k] = min(wall[k], time.perf_counter() - began)
            cpu[k] = min(cpu[k], time.process_time() - began_cpu)
    print(f"  chapter 16, cached: {wall[0]:.3f} s ({args.n / wall[0]:.0f} tokens/s; CPU {cpu[0]:.3f} s)")
    one = step + calls["softmax_with_temperature"] + calls["sample_index"]  # a cached token: its call, p, its draw
    drafting = calls["draft, fused (DraftDecoder)"] + calls["draft's q and its draw"]

    def verifying(k: int) -> float:  # the target on k + 1 tokens, their softmax, speculative_step (all accepted)
        return calls[f"target, {k + 1} tokens"] + calls[f"softmax of {K + 1} rows (distributions)"] + calls[
            f"speculative_step, k = {k}"]

    for k in ks:
        a = np.array(rounds[k])
        alpha, tokens = a.sum() / np.minimum(a + 1, k).sum(), np.mean(a + 1)
        print(f"  speculative, k = {k}: {wall[k]:.3f} s ({args.n / wall[k]:.0f} tokens/s; CPU {cpu[k]:.3f} s); "
              f"acceptance rate {alpha:.3f}, {tokens:.2f} tokens per target call; speed-up "
              f"{wall[0] / wall[k]:.2f}x (CPU {cpu[0] / cpu[k]:.2f}x; the calls allow "
              f"{tokens * one / (k * drafting + verifying(k)):.2f}x)")
    tokens = float(np.mean(np.array(rounds[K]) + 1))
    per_round = K * drafting + verifying(K)
    needed = GOAL * per_round / one
    alpha = next((a / 1000 for a in range(1001) if sum((a / 1000) ** np.arange(K + 1)) >= needed), None)
    print(f"  what the calls allow at k = {K}: {tokens:.2f} tokens × {one:.0f} µs (a cached token) / ({K} × "
          f"{drafting:.0f} µs drafting + {verifying(K):.0f} µs verifying: the target on {K + 1} tokens, their "
          f"softmax, speculative_step) = {tokens * one / per_round:.2f}x; with a free draft "
          f"{tokens * one / verifying(K):.2f}x; {GOAL}x needs {needed:.2f} tokens per call: " + (
              f"an acceptance rate of {alpha:.2f} (chapter 20's expected_tokens)" if alpha is not None
              else f"more than the {K + 1} a round can give"))
    a = np.array(rounds[K])
    alpha = float(a.sum() / np.minimum(a + 1, K).sum())
    allow = {k: float(ch.c20.expected_tokens(alpha, k)) * one / (k * drafting + verifying(k)) for k in ks}
    print(f"  k from the acceptance rate at k = {K}, {alpha:.3f}, by chapter 20's expected_tokens and the calls: "
          + ", ".join(f"k = {k}: {x:.2f}x" for k, x in allow.items()) + f"; best k = {max(allow, key=allow.get)}")
    best = max(ks, key=lambda k: wall[0] / wall[k])
    ratio = wall[0] / wall[K]
    print(f"  speed-up at k = {K}: {ratio:.2f}x, best k = {best}: {wall[0] / wall[best]:.2f}x "
          f"(goal at least {GOAL}x): {'met' if max(ratio, wall[0] / wall[best]) >= GOAL else 'NOT met'}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
