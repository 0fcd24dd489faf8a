"""The kata machinery: the answer key, teaching comparisons, and the pytest plugin.

Learners never edit this package; tests import from it.
"""

from .answer_key import Chapter, Step, chapters, find_step, load
from .checks import close, expect, numerical_gradient, raises_clearly, show

__all__ = [
    "Chapter",
    "Step",
    "chapters",
    "close",
    "expect",
    "find_step",
    "load",
    "numerical_gradient",
    "raises_clearly",
    "show",
]
