"""The progress of a run of steps, as every training tool shows it: ``nox -s train``, ``serve``'s and ``align``'s.

On a terminal, tqdm's bar: the step, the time so far and the time left, and what the tool adds (the loss, the
tokens per second). Where there is no terminal to draw it in (the output piped to a file or a log, as in CI or
an editor's task runner), tqdm disables itself, and the same progress is printed as a line every
``LINES``-th of the run instead, from tqdm's own ``format_meter`` with the bar left out (``LINE``), so that it
reads as the bar does. Without the line a piped run showed nothing between two evaluations (a learner trial of
``nox -s serve``: one line every 200 steps for 11 minutes).
"""

from __future__ import annotations

import time
from collections.abc import Callable

BAR = "{l_bar}{bar}| {n_fmt}/{total_fmt} [{elapsed}<{remaining}{postfix}]"  # on a terminal
LINE = "  {percentage:3.0f}% {n_fmt}/{total_fmt} steps [{elapsed}<{remaining}{postfix}]"  # the same, as a line
LINES = 20  # progress lines of a run whose output is not a terminal: one every 5 % of the steps
POSTFIX_EVERY = 10  # steps between two updates of the bar's postfix (computing it may cost)


class Progress:
    """The progress of ``total`` steps, ``initial`` of them done before (a resumed run): a bar, else lines."""

    def __init__(self, total: int, initial: int = 0) -> None:
        from tqdm import tqdm

        self._tqdm = tqdm
        self.bar = tqdm(total=total, initial=initial, unit="step", dynamic_ncols=True, disable=None, leave=True,
                        bar_format=BAR)
        self.total, self.initial, self.done = total, initial, initial
        self.every = max(1, total // LINES) if self.bar.disable else 0  # 0: the bar shows it
        self.began = time.monotonic()

    def step(self, postfix: Callable[[], str] | None = None) -> None:
        """One more step done; ``postfix()`` (the loss, the speed) is asked for only when it is shown."""
        self.done += 1
        self.bar.update(1)
        line = bool(self.every) and self.done % self.every == 0
        if postfix is None or not (line or self.done % POSTFIX_EVERY == 0 or self.done == self.total):
            text = None
        else:
            text = postfix()
            self.bar.set_postfix_str(text, refresh=False)
        if line:
            print(self.line(time.monotonic() - self.began, text), flush=True)

    def line(self, elapsed: float, postfix: str | None = None) -> str:
        """The progress as a line, ``elapsed`` seconds after it began: the bar's text without the bar."""
        return self._tqdm.format_meter(self.done, self.total, elapsed, unit="step", bar_format=LINE, postfix=postfix,
                                       initial=self.initial)

    def write(self, text: str) -> None:
        """A line of the tool's own (an evaluation, a sample), above the bar or among the progress lines."""
        if self.bar.disable:
            print(text, flush=True)
        else:
            self.bar.write(text)

    def close(self) -> None:
        """The bar's last state stays on the terminal."""
        self.bar.close()
