"""The corpus: a text to train on (the Zen of Python, a few pages of Shakespeare, any UTF-8 file).

Also ``TrainError``, the one error the tool reports without a traceback.

Part of ``nox -s train`` (``kata/learner/train/__init__.py`` tells the whole story).
"""

from __future__ import annotations

import codecs
import contextlib
import io
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ... import project

BOOK = project.ROOT / "data" / "coriolanus.txt"


MAX_VOCAB = 1000  # distinct characters; beyond that a character-level model of a few pages learns nothing
MAX_BYTES = 64 * 2**20  # a corpus file; NumPy training on two cores sees a few MB in a run, and a 1 GB file read
# whole (then decoded) would take the machine's memory before saying anything


class TrainError(Exception):
    """A problem to report in one message (bad corpus, bad model file, failed check): no traceback."""


@dataclass
class Corpus:
    """A text, its characters (the vocabulary, sorted) and where it came from."""

    name: str
    text: str
    source: str

    @property
    def vocab(self) -> list[str]:
        """The distinct characters, sorted: token id i is ``vocab[i]``."""
        return sorted(set(self.text))

    def ids(self) -> np.ndarray:
        """The whole text as token ids."""
        index = {c: i for i, c in enumerate(self.vocab)}
        return np.array([index[c] for c in self.text], dtype=np.int64)


def zen() -> str:
    """The Zen of Python, from the standard library (``import this`` prints it; the module holds it in rot13)."""
    with contextlib.redirect_stdout(io.StringIO()):
        import this
    return codecs.decode(this.s, "rot13")


def load_corpus(which: str, context: int = 32) -> Corpus:
    """``zen``, ``book`` or a path to a UTF-8 text file, with a clear error for anything unusable.

    Raises:
        TrainError: the file is missing, a folder, larger than ``MAX_BYTES``, empty, not UTF-8 text, too short
            for ``context``, or has
            more than ``MAX_VOCAB`` distinct characters.
    """
    if which == "zen":
        corpus = Corpus("zen", zen(), "the Zen of Python (PEP 20, from the standard library)")
    else:
        path = BOOK if which == "book" else Path(which).expanduser()
        shown = "--corpus book" if which == "book" else f"--corpus {which}"
        if not path.exists():
            raise TrainError(f"{shown}: there is no file {path} (give zen, book, or the path of a UTF-8 text file)")
        if path.is_dir():
            raise TrainError(f"{shown}: {path} is a folder; give a text file")
        size = path.stat().st_size
        if size > MAX_BYTES:
            raise TrainError(f"{shown}: {path} is {size / 2**20:,.0f} MB; a corpus may be at most "
                             f"{MAX_BYTES // 2**20} MB (a training run here sees a few MB of text: cut it down)")
        data = path.read_bytes()
        if not data.strip():
            raise TrainError(f"{shown}: {path} is empty" + (" (only white space)" if data else ""))
        if b"\0" in data[:8192]:
            raise TrainError(f"{shown}: {path} is not text (it has NUL bytes: a binary file?)")
        try:
            text = data.decode("utf-8-sig")
        except UnicodeDecodeError as err:
            raise TrainError(f"{shown}: {path} is not UTF-8 text (byte 0x{data[err.start]:02x} at position "
                             f"{err.start} cannot be decoded: a binary file, or another encoding?)") from None
        text = text.replace("\r\n", "\n").replace("\r", "\n")
        name = "book" if which == "book" else re.sub(r"[^\w.-]+", "-", path.stem) or "corpus"
        source = ("William Shakespeare, Coriolanus, act I, scene 1 (public domain), data/coriolanus.txt"
                  if which == "book" else str(path))
        corpus = Corpus(name, text, source)
    need = max(64, context + 2)
    if len(corpus.text) < need:
        raise TrainError(f"--corpus {which}: {len(corpus.text)} characters is too short; training on windows of "
                         f"{context} characters needs at least {need}")
    if len(corpus.vocab) > MAX_VOCAB:
        raise TrainError(f"--corpus {which}: {len(corpus.vocab)} distinct characters; a character-level model "
                         f"of a few pages needs at most {MAX_VOCAB}")
    return corpus
