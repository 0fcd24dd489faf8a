"""Benchmark chapter 10: training steps per second, and how far they are from NumPy's floor.

A training step is ``train_transformer`` for one epoch on one sequence: the forward pass, the loss, the
backward pass and the update. The floor is the same run's matrix multiplications alone — the 24 products
a step must compute (per block 7 forward and 14 backward, plus 3 for the output projection), on arrays of
the same shapes — timed in the same process. The ratio step / floor is what the chapter promises to keep
small (target: at most 3×); everything beyond the floor is NumPy's elementwise work and Python overhead.

Both are timed with one BLAS thread (set OPENBLAS_NUM_THREADS yourself to override): for matrices this
small a second thread does not help, and on a busy machine it makes every timing erratic. Both are timed
twice: with the C library's default memory allocator, which hands large freed blocks (a (64, 256) float64
array is 128 KiB) back to the operating system and so pays page faults on every step, and — on glibc —
with the allocator told to keep them (``mallopt``), which shows the cost of the arithmetic alone.

Usage: python benchmarks/bench_chapter10.py [--impl solutions] [--repeats 7]
This is not a test: it prints numbers and exits 0, whatever they are.
"""

from __future__ import annotations

import argparse
import ctypes
import ctypes.util
import os
import sys
import time
from pathlib import Path

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")  # before NumPy loads its BLAS

import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from kata import learners_code, project  # noqa: E402

VOCAB, D_MODEL, D_FF, N_LAYERS, SEQ = 64, 64, 256, 2, 64


def matmul_floor(params: dict, rng: np.random.Generator):
    """A function doing exactly the step's matrix products (same shapes), and nothing else."""
    x = rng.normal(size=(SEQ, D_MODEL))
    p_att = rng.random((SEQ, SEQ))
    z = rng.normal(size=(SEQ, D_FF))
    logits = rng.normal(size=(SEQ, VOCAB))

    def floor() -> None:
        for b in params["blocks"]:
            # forward: Q, K, V, scores, weighted values, FFN up and down
            q, k, v = x @ b["WQ"], x @ b["WK"], x @ b["WV"]
            s = q @ k.T
            _ = p_att @ v
            _ = x @ b["W1"]
            f = z @ b["W2"]
            # backward of the FFN: dW2, dr, dx, dW1
            _ = z.T @ f
            _ = f @ b["W2"].T
            _ = z @ b["W1"].T
            _ = x.T @ z
            # backward of attention: dV, dP, dQ, dK, dx (three), dWQ, dWK, dWV
            _ = p_att.T @ f
            _ = f @ v.T
            _ = s @ k
            _ = s.T @ q
            _ = q @ b["WQ"].T
            _ = k @ b["WK"].T
            _ = v @ b["WV"].T
            _ = x.T @ q
            _ = x.T @ k
            _ = x.T @ v
        # output projection: forward, dW_out, dh
        _ = x @ params["WO"]
        _ = x.T @ logits
        _ = logits @ params["WO"].T

    return floor


def best_time(fn, number: int, repeats: int) -> float:
    """Seconds per call: the best of ``repeats`` runs of ``number`` calls (the least disturbed one)."""
    fn()
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(number):
            fn()
        best = min(best, (time.perf_counter() - start) / number)
    return best


def main() -> None:
    """Time a training step and its matmul floor; print both and their ratio."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--impl", default=learners_code.measured_impl(),
                        help="whose chapter 10 to time (default: solutions/ where it exists, "
                        "else your work: exercises/ with your notebooks' answers)")
    parser.add_argument("--repeats", type=int, default=7, help="timing repeats; the best one counts")
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    ch = project.chapter_module(args.impl, 10)

    rng = np.random.default_rng(0)
    params = ch.init_params(VOCAB, D_MODEL, D_FF, N_LAYERS, SEQ, seed=0)
    ids = rng.integers(0, VOCAB, SEQ)
    targets = rng.integers(0, VOCAB, SEQ)
    data = [(ids, targets)]

    def step() -> None:
        ch.train_transformer(data, params, 0.01, 1)

    floor = matmul_floor(params, rng)
    print(f"chapter 10 ({args.impl}): d_model {D_MODEL}, {N_LAYERS} layers, d_ff {D_FF}, {SEQ} tokens, vocab {VOCAB}; "
          f"BLAS threads {os.environ['OPENBLAS_NUM_THREADS']}")
    report("default allocator", step, floor, args.repeats)
    if keep_freed_memory():
        report("allocator keeps freed memory", step, floor, args.repeats)


def report(label: str, step, floor, repeats: int) -> None:
    """Time step and floor, interleaved so a noisy neighbour disturbs both alike, and print them."""
    t_step, t_floor = float("inf"), float("inf")
    for _ in range(repeats):
        t_step = min(t_step, best_time(step, 20, 1))
        t_floor = min(t_floor, best_time(floor, 20, 1))
    print(f"  {label}:")
    print(f"    training step      {t_step * 1e3:8.3f} ms   ({1 / t_step:7.1f} steps/s)")
    print(f"    matmul floor       {t_floor * 1e3:8.3f} ms   (the same 24 products alone)")
    print(f"    step / floor       {t_step / t_floor:8.2f}×   (target ≤ 3×)")


def keep_freed_memory() -> bool:
    """On glibc, stop returning freed blocks to the operating system; False where that is not possible."""
    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name)
        m_trim_threshold, m_mmap_threshold = -1, -3  # from glibc's malloc.h
        return bool(libc.mallopt(m_trim_threshold, 1 << 30)) and bool(libc.mallopt(m_mmap_threshold, 1 << 25))
    except (OSError, AttributeError, TypeError):
        return False


if __name__ == "__main__":
    main()
