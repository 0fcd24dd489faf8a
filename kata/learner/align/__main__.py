"""``python -m kata.learner.align``: the child process of ``nox -s align`` (and the tool itself)."""

import sys

from . import main

sys.exit(main(sys.argv[1:]))
