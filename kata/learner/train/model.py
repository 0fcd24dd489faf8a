"""What a model is to the trainer: the interface the one loop, check, child and run writer ask (``Model``).

Two models implement it: chapter 10's transformer (``chapter10.py``) and the Part II GPT (``gpt.py``). A model
is what differs between them: its settings, its parameters and their optimiser, its corpus and tokenizer, its
forward and backward (the learner's chapters), what it shows during a run and what its run folder holds.
Everything else is written once: the child process (``child.py``), the gradient check (``gradcheck.py``), the
loop and its checkpoint (``loop.py``), the progress bar and the run's folder (``__init__.py``), the figures
(``figures.py``).

Also the model file reader both models share (``read_model_file``).

Part of ``nox -s train`` (``kata/learner/train/__init__.py`` tells the whole story).
"""

from __future__ import annotations

import shlex
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .corpus import TrainError


@dataclass
class Probe:
    """A tiny model for the gradient check: its arrays by name, and the learner's loss, gradients and logits on it.

    ``params`` are the very arrays ``loss`` reads: the check moves their entries in place (central differences).
    """

    params: dict[str, np.ndarray]
    loss: Callable[[], float]
    loss_and_grads: Callable[[], tuple[Any, dict[str, np.ndarray]]]
    logits: Callable[[np.ndarray], np.ndarray]
    ids: np.ndarray  # a sequence whose last token is changed to test the causal mask
    vocab: int


class Model:
    """One model the trainer can train (``--model NAME``).

    Every method gets the learner's chapters as ``ch`` (``ch.c10``, or ``ch.c11`` … ``ch.c16``, each call under
    the child's watchdog).
    """

    name = ""  # --model
    label = ""  # "a tiny {label}" in the check's message
    chapters: dict[str, int] = {}  # what training calls: {key of ch: chapter number}
    generate_chapters: dict[str, int] = {}  # what generating calls
    bar_window = 50  # steps in the progress bar's running loss
    resumable = False  # writes checkpoints; takes --resume and --stop-at
    observe_at_start = False  # an observation before the first step

    # --- this process: the command line, the messages, the run's folder ----------------------------------------
    def chapters_for(self, s) -> dict[str, int]:
        """What training with settings ``s`` calls: ``chapters``, and more for an option that needs another chapter."""
        return self.chapters

    def plan(self, args) -> tuple[Any, dict] | None:
        """(settings, what the child needs besides them) from the command line; TrainError for a bad option.

        None: nothing to do (what was said is printed).
        """
        raise NotImplementedError

    def default_name(self, args) -> str:
        """The run folder's name when --name is not given."""
        raise NotImplementedError

    def header(self, s, shown: str, out: Path, args, extra: dict, made_of: dict[str, str]) -> str:
        """What is trained, on what, with which settings: the run's first lines.

        ``made_of``: {module: where its functions come from} (``learners_code.made_of``: the file, or the notebook that
        answers it), so the run names the notebook a chapter was answered in.
        """
        raise NotImplementedError

    def ready(self, event: dict) -> str | None:
        """The line that says the data is ready (the child's ``ready`` event), or None."""
        return None

    def shown_observation(self, event: dict, s) -> str:
        """One line of the run's story for an observation (a sample, an evaluation)."""
        raise NotImplementedError

    def write_run(self, out: Path, s, args, result: dict, started: float,
                  chapters: dict[int, str]) -> list[tuple[str, Any]]:
        """Write the run's own files (run.json, …) into ``out``; return the figures to draw, as (file name, figure).

        ``chapters``: {chapter: where its functions come from} (``learners_code.chapters_made_of``), which run.json
        records as ``chapters`` beside ``impl``: a chapter answered in its notebook is named as such.
        """
        raise NotImplementedError

    def summary(self, out: Path, s, args, result: dict, started: float) -> str:
        """What is said when the run is done."""
        raise NotImplementedError

    # --- the child: the gradient check (gradcheck.check_gradients) -----------------------------------------------
    def probe(self, ch, rng: np.random.Generator) -> Probe:
        """A tiny model with every parameter random, and the learner's functions on it."""
        raise NotImplementedError

    def backward_order(self, probe: Probe) -> list[tuple[str, str]]:
        """Every parameter with the function that computes its gradient, in the order the backward pass does."""
        raise NotImplementedError

    def one_function_checks(self, ch, rng: np.random.Generator):
        """(function, what is wrong) for each layer function whose backward disagrees with its own forward."""
        raise NotImplementedError

    def shown(self, name: str) -> str:
        """A parameter as the check's message names it."""
        raise NotImplementedError

    bad_loss = "the loss is {loss!r}"  # the check's message when the tiny model's loss is not a finite float
    peeking = "positions see later ones"  # the check's message when the causal mask leaks
    rerun = ""  # "`nox -s chapter10` shows": where the failing checks are shown

    def unchained(self, function: str) -> str:
        """What to look at when every layer function is right alone, yet a gradient ``function`` computes is not."""
        raise NotImplementedError

    # --- the child: the data and the loop (loop.train) ---------------------------------------------------------
    def settings(self, given: dict):
        """The settings from their plain-data form (the job, checkpoint.json)."""
        raise NotImplementedError

    def prepare(self, ch, job: dict, s, resume: dict | None, phase: Callable[[str], None]) -> tuple[Any, dict]:
        """(the data the loop trains on, what the ``ready`` event tells this process about it)."""
        raise NotImplementedError

    def start(self, ch, s, data) -> tuple[Any, Any]:
        """(parameters, optimiser state) at step 0."""
        raise NotImplementedError

    def batch(self, data, s, step: int):
        """What step ``step`` (from 0) trains on; the same however the run got there."""
        raise NotImplementedError

    def loss_and_grads(self, ch, params, batch, s) -> tuple[Any, Any]:
        """The loss on ``batch`` and the gradient of every parameter."""
        raise NotImplementedError

    def update(self, ch, params, state, grads, step: int, s) -> tuple[Any, Any, dict]:
        """One optimiser step (``step`` from 0): (new parameters, new state, what the step event adds)."""
        raise NotImplementedError

    tokens_per_step = staticmethod(lambda s: s.context)

    def observe_due(self, s, done: int) -> bool:
        """Whether to observe after step ``done`` (from 1)."""
        raise NotImplementedError

    def observe(self, ch, params, data, s, step: int, losses: list[float], seconds: float) -> tuple[dict, dict]:
        """An observation after ``step`` steps (a sample, an evaluation): (what the history keeps, what is shown)."""
        raise NotImplementedError

    def finish(self, ch, params, data, s, history: list[dict], losses: list[float], report) -> dict:
        """What the run's end adds to the ``done`` event (plain data): the final sample, the attention maps."""
        raise NotImplementedError

    def arrays(self, params, s, data) -> dict[str, np.ndarray]:
        """What model.npz holds: plain arrays."""
        raise NotImplementedError

    # --- the child: checkpoints (resumable models only) ----------------------------------------------------------
    checkpoint_every = staticmethod(lambda s: 0)  # steps between checkpoints

    def save(self, ch, path: Path, params, state) -> None:
        """Write the weights and the optimiser's state to ``path``."""
        raise NotImplementedError

    def restore(self, ch, path: Path, s, data) -> tuple[Any, Any, int]:
        """(parameters, optimiser state, its step) from ``path``."""
        raise NotImplementedError

    def progress_extra(self, data) -> dict:
        """What checkpoint.json holds besides the settings, the step, the time and the history (plain data)."""
        return {}

    def read_progress_extra(self, info: dict) -> None:
        """Turn ``progress_extra``'s plain data in a read checkpoint.json back into what ``prepare`` takes."""

    # --- the child: generating (nox -s generate) -------------------------------------------------------------------
    def generate(self, ch, job: dict, send) -> None:
        """Continue ``job["prompt"]`` with a saved model; send the ``done`` event (and any on the way)."""
        raise NotImplementedError


def smoothed_tail(losses: list[float], n: int = 100) -> float:
    """The mean loss of the last ``n`` steps (one window's loss is noisy)."""
    return float(np.mean(losses[-n:]))


def smooth(losses, window: int) -> np.ndarray:
    """Running mean over the last ``window`` steps (fewer at the start)."""
    c = np.cumsum(np.concatenate([[0.0], np.asarray(losses, dtype=np.float64)]))
    k = np.arange(1, len(losses) + 1)
    return (c[k] - c[np.maximum(0, k - window)]) / np.minimum(k, window)


def read_model_file(folder: Path) -> tuple[Path, dict]:
    """A run folder's (or a model.npz's) path and arrays, read without pickle.

    Raises:
        TrainError: no such file, not an .npz, or pickled arrays.
    """
    folder = Path(folder)
    path = folder / "model.npz" if folder.is_dir() else folder
    if not path.exists():
        hint = "" if folder.exists() else " (nox -s train writes runs/<name>/; `ls runs` lists them)"
        raise TrainError(f"there is no model at {path}{hint}")
    with path.open("rb") as f:
        if f.read(4) != b"PK\x03\x04":
            raise TrainError(f"{path} is not a model written by nox -s train (not a NumPy .npz file)")
    try:  # the file opened here, so that it is closed when a damaged one makes np.load raise
        with path.open("rb") as f, np.load(f, allow_pickle=False) as npz:
            arrays = dict(npz)
    except ValueError as err:
        raise TrainError(f"{path} is not a model written by nox -s train: {err}") from None
    except (OSError, EOFError, KeyError) as err:  # zipfile errors are OSErrors or BadZipFile (an Exception)
        raise TrainError(f"{path} is not a model written by nox -s train (not a NumPy .npz file: {err})") from None
    except Exception as err:  # noqa: BLE001 - zipfile.BadZipFile and friends
        raise TrainError(f"{path} is not a model written by nox -s train ({type(err).__name__}: {err})") from None
    return path, arrays


def command(*words: str) -> str:
    """A command line to copy into a shell, every word quoted that needs it.

    A run's name or a prompt with $, =, <, a space or a quote stays one word, as the learner typed it.
    """
    return shlex.join(words)
