"""Benchmark `nox -s train`: the full default run on the reference solution, its time and its final loss.

Runs ``python -m kata train --impl solutions`` with every setting at its default (the Zen of Python, d_model 32,
2 layers, context 32, 4,000 steps of Adam, seed 0) into a temporary folder, as ``nox -s train -- --impl
solutions`` does, and prints the wall time of the whole command, the time spent in training steps, the CPU
time, the tokens per second, the first and final loss and the final sample. The issue's targets: at most 60 s
on a laptop-class CPU, a final loss below a third of the first, and a final sample from "Beautiful" that
contains "Beautiful is better than". On a shared machine the wall time says more about the neighbours than
about the code; the CPU time is the steadier figure.

Usage: python benchmarks/bench_train.py [extra options for train, e.g. --steps 2000]
It needs the `train` dependency group (matplotlib, tqdm): run it with `.nox/course/bin/python` after one
`nox -s train`, or install the group. This is not a test: it prints numbers and exits 0 if the run finished.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TARGET_SECONDS = 60.0
PHRASE = "Beautiful is better than"


def main(argv: list[str]) -> int:
    with tempfile.TemporaryDirectory(prefix="kata-bench-train-") as tmp:
        command = [sys.executable, "-m", "kata", "train", "--impl", "solutions", "--runs", tmp, "--name", "bench",
                   *argv]
        env = dict(os.environ, PYTHONPATH=str(ROOT))
        began = time.perf_counter()
        proc = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, check=False)
        wall = time.perf_counter() - began
        if proc.returncode != 0:
            print(proc.stdout[-3000:] + proc.stderr[-3000:])
            print(f"train failed (exit code {proc.returncode}) after {wall:.1f} s")
            return 1
        run = json.loads((Path(tmp) / "bench" / "run.json").read_text(encoding="utf-8"))
    s = run["settings"]
    first, final, sample = run["first_loss"], run["final_loss"], run["final_sample"]
    print(f"train benchmark: {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}" if hasattr(os, "getloadavg")
          else f"train benchmark: {os.cpu_count()} cores")
    print(f"  settings      {s['corpus']}, d_model {s['d_model']}, {s['layers']} layers, context {s['context']}, "
          f"{s['steps']} steps, lr {s['lr']:g}, seed {s['seed']}")
    print(f"  wall time     {wall:.1f} s for the whole command (target: at most {TARGET_SECONDS:g} s on a laptop)")
    print(f"  in training   {run['train_seconds']:.1f} s ({run['train_seconds'] / s['steps'] * 1000:.2f} ms per step), "
          f"{run['tokens_per_second']:,.0f} tokens/s")
    print(f"  cpu time      {run['cpu_seconds']:.1f} s (both processes)")
    print(f"  loss          {first:.3f} at step 1 -> {final:.3f} ({run['final_loss_means']}): "
          f"{'below' if final < first / 3 else 'NOT below'} a third of the first")
    print(f"  final sample  {'contains' if PHRASE in sample else 'does NOT contain'} {PHRASE!r}: "
          f"{sample[:80].replace(chr(10), ' / ')!r}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
