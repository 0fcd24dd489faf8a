"""``python -m kata COMMAND [ARGS]``: the learner's and instructor's tools (nox sessions call these).

Commands: grade, grade-class, watch, hint, worksheet, doctor, notebook-answers, release, bench-watch, train,
generate, serve, align.
"""

from __future__ import annotations

import importlib
import sys

COMMANDS = {
    "grade": "kata.grading.grade",
    "grade-class": "kata.grading.classroom",
    "watch": "kata.learner.watch",
    "hint": "kata.learner.hints",
    "worksheet": "kata.learner.worksheet",
    "doctor": "kata.learner.doctor",
    "notebook-answers": "kata.learner.notebook",
    "release": "kata.grading.release",
    "bench-watch": "kata.learner.bench_watch",
    "train": "kata.learner.train",
    "generate": "kata.learner.generate",
    "serve": "kata.learner.serve",
    "align": "kata.learner.align",
}


def main(argv: list[str]) -> int:
    """Run one command with its arguments; return its exit code."""
    if not argv or argv[0] not in COMMANDS:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    module = importlib.import_module(COMMANDS[argv[0]])
    return module.main(argv[1:])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
