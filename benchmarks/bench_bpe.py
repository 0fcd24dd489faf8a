"""Benchmark chapter 14: train a 512-token byte-pair vocabulary on Python's own documentation, then encode it.

The corpus is ``pydoc_data.topics``, the help texts CPython ships (``help("if")`` reads them): every topic
joined, about 465,000 characters, always at hand and the same for a given Python. The capstone (``nox -s
train -- --model gpt``) gives one call into your code at most ``TIMEOUT`` s of CPU (30, its ``--timeout``), and
``train_bpe(text, 512)`` (256 merges) is one call: the figure printed beside the time is that limit, and the
CPU time is measured as the capstone measures it (``time.process_time``). The reference meets it by updating
the counts of the pairs around each merge instead of recounting the whole text per merge. Encoding the same
text replays the 256 merges (the reference: one heap of pairs, not one pass per merge). The benchmark checks
that the encoding is what training ended with: decode(encode(text)) == text.

Usage: python benchmarks/bench_bpe.py [--impl exercises] [--vocab-size 512]
Without --impl it measures the learner's work in a learner's edition (exercises/ with the saved notebooks'
answers) and the reference in the authors'. This is not a test: it prints numbers and exits 0, whatever they
are; an unfinished chapter 14 is refused as ``nox -s train`` refuses one ("chapter 14 is not finished: …"),
exit 1.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from kata import learners_code, project  # noqa: E402
from kata.learner.train.child import TIMEOUT, describe, learner_frames  # noqa: E402


def corpus() -> str:
    """Every help topic of this Python, joined in the order pydoc_data stores them."""
    from pydoc_data.topics import topics

    return "".join(topics.values())


def main(argv: list[str] | None = None) -> int:
    """Time training and encoding once each; print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--impl", default=learners_code.measured_impl(),
                        help="package holding chapter14_bpe (default: solutions/ where it is, "
                        "else your work: exercises/ with your notebooks' answers)")
    parser.add_argument("--vocab-size", type=int, default=512)
    args = parser.parse_args(argv)
    impl = project.impl_folder(args.impl)
    bpe = project.chapter_module(args.impl, 14)
    try:
        return measure(bpe, args.vocab_size)
    except Exception as err:  # noqa: BLE001 - the learner's code failed: say where, as the trainer does
        if not learner_frames(err.__traceback__, impl.resolve()):
            raise
        print(describe(err, impl.resolve(), learners_code.shown(impl), "measuring"), file=sys.stderr)
        return 1


def measure(bpe, vocab_size: int) -> int:
    """Train, encode and decode the corpus once each with chapter 14's module ``bpe``; print the figures."""
    text = corpus()
    n_bytes = len(text.encode("utf-8"))
    print(f"corpus: pydoc_data.topics, {len(text):,} characters, {n_bytes:,} bytes (Python {sys.version.split()[0]})")

    start, cpu = time.perf_counter(), time.process_time()
    merges = bpe.train_bpe(text, vocab_size)
    train_s, train_cpu = time.perf_counter() - start, time.process_time() - cpu
    print(f"train_bpe(text, {vocab_size}): {len(merges)} merges in {train_s:.2f} s, {train_cpu:.2f} s of CPU "
          f"(the capstone allows {TIMEOUT:g} s of CPU per call)")

    start = time.perf_counter()
    ids = bpe.encode(text, merges)
    encode_s = time.perf_counter() - start
    print(f"encode(text, merges): {len(ids):,} tokens in {encode_s:.2f} s "
          f"({n_bytes / len(ids):.2f} bytes per token)")

    start = time.perf_counter()
    back = bpe.decode(ids, bpe.build_vocab(merges))
    decode_s = time.perf_counter() - start
    print(f"decode(ids, vocab): {decode_s:.2f} s, round trip {'exact' if back == text else 'DIFFERS'}")
    vocab = bpe.build_vocab(merges)
    longest = max(merges, key=lambda m: len(vocab[m[1]]))[1] if merges else None
    if longest is not None:
        print(f"longest token: id {longest} = {vocab[longest].decode('utf-8', errors='replace')!r}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
