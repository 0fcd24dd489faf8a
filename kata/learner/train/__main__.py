"""``python -m kata.learner.train``: the command (and, with ``--child``, the child process)."""

import sys

from . import main

sys.exit(main(sys.argv[1:]))
