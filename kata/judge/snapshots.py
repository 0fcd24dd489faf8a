"""Stored snapshots: inputs and expected outputs of a chapter's functions, written by the authors from solutions/.

A chapter's tests compare the learner's results with ``tests/snapshots/chapterNN.npz`` instead of computing
them with a second implementation written in the test (which would hand the learner the answer). The file
holds plain arrays only and is read with ``allow_pickle=False``. Its builder, ``tests/snapshots/chapterNN.py`` beside
it (authors only), makes it from solutions/ (run ``python -m kata.authoring.snapshots N``), and
``tests/test_snapshots.py`` checks that the stored file is what the solutions give today.

Keys are paths: ``"layer_norm/2/x"``; a nested tree (a model's parameters) is stored leaf by leaf under
its prefix (``"model/0/params/blocks/1/W1"``: a number is a list index, ``[]`` an empty list) and rebuilt
with ``Snapshot.tree``.
"""

from __future__ import annotations

import importlib.util
import io
import sys
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from .answer_key import ROOT

FOLDER = ROOT / "tests" / "snapshots"

# How closely a stored snapshot must match what the builder makes today (tests/test_snapshots.py). Not exact:
# a new NumPy (or BLAS) may move the last bit of a sum, about 2.2e-16 of a loss, and a central difference with
# step 1e-6 divides that by 2e-6, so a stored gradient of a loss near 10 moves by up to about 1e-8 (NumPy 2.4.6
# moved chapter 10's by 2.2e-9). Any change a builder or a solution makes on purpose is far larger than this.
# This is the stored file against its builder, never a learner's answer against the file: a check that compares a
# learner's gradient with a stored (or freshly computed) central difference allows the estimate's own error, rtol
# 1e-5 and atol 1e-8 (1e-7 where the loss sums a whole model, chapters 10 and 11), because the defaults of
# `close` (rtol 1e-6, atol 1e-9) fail right code on entries near zero; CONTRIBUTING.md, "Tolerances", says why.
TOLERANCE = {"rtol": 1e-8, "atol": 1e-8}


def path(chapter: int) -> Path:
    """Where chapter ``chapter``'s snapshot lives."""
    return FOLDER / f"chapter{chapter:02d}.npz"


def builder_file(chapter: int) -> Path:
    """Where chapter ``chapter``'s snapshot builder lives, beside its snapshot (in the authors' copy only)."""
    return FOLDER / f"chapter{chapter:02d}.py"


def builder(chapter: int) -> Callable[[int | None], dict[str, np.ndarray]] | None:
    """``build(seed)`` of the chapter's builder file, loaded by its path; None without one (a learner's copy)."""
    file = builder_file(chapter)
    if not file.is_file():
        return None
    name = f"_kata_snapshot_builder_{chapter:02d}"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, file)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        sys.modules[name] = module
    return sys.modules[name].build


def flatten(tree: Any, prefix: str) -> dict[str, np.ndarray]:
    """A tree of dicts, lists and arrays (or numbers) as ``{path: array}``."""
    if isinstance(tree, dict):
        return {k: v for key in tree for k, v in flatten(tree[key], f"{prefix}/{key}").items()}
    if isinstance(tree, (list, tuple)):
        if not tree:  # an empty list (a model with no blocks) is kept as a marker
            return {f"{prefix}/[]": np.zeros(0)}
        return {k: v for i, item in enumerate(tree) for k, v in flatten(item, f"{prefix}/{i}").items()}
    return {prefix: np.asarray(tree)}


def write(chapter: int, data: dict[str, np.ndarray]) -> Path:
    """Write a snapshot (sorted keys, no pickled objects, the same bytes for the same data)."""
    target = path(chapter)
    target.parent.mkdir(parents=True, exist_ok=True)
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for key in sorted(data):
            blob = io.BytesIO()
            np.lib.format.write_array(blob, np.asarray(data[key]), allow_pickle=False)
            info = zipfile.ZipInfo(f"{key}.npy", date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(info, blob.getvalue())
    target.write_bytes(buffer.getvalue())
    return target


class Snapshot:
    """A chapter's stored inputs and outputs."""

    def __init__(self, data: dict[str, np.ndarray]) -> None:
        self.data = data

    def __getitem__(self, key: str) -> np.ndarray:
        """One stored array; a copy, so a test (or the learner's code) can never change the snapshot."""
        if key not in self.data:
            raise KeyError(f"the snapshot has no {key!r}: regenerate it with `python -m kata.authoring.snapshots`")
        return self.data[key].copy()

    def number(self, key: str) -> Any:
        """A stored scalar as a Python int or float."""
        return self[key].item()

    def count(self, prefix: str) -> int:
        """How many numbered cases ``prefix/0``, ``prefix/1``, … there are."""
        found = {k[len(prefix) + 1:].split("/")[0] for k in self.data if k.startswith(prefix + "/")}
        return len([f for f in found if f.isdigit()])

    def tree(self, prefix: str) -> Any:
        """The tree stored under ``prefix``, rebuilt: dicts, lists (numbered keys) and fresh arrays."""
        leaves = {k[len(prefix) + 1:]: v for k, v in self.data.items() if k.startswith(prefix + "/")}
        if not leaves:
            if prefix in self.data:
                return self[prefix]
            raise KeyError(f"the snapshot has no {prefix!r}: regenerate it with `python -m kata.authoring.snapshots`")
        root: dict = {}
        for key, value in leaves.items():
            node = root
            *parts, last = key.split("/")
            for part in parts:
                node = node.setdefault(part, {})
            node[last] = value.copy()
        return _lists(root)


def _lists(node: Any) -> Any:
    if not isinstance(node, dict):
        return node
    if set(node) == {"[]"}:
        return []
    if node and all(k.isdigit() for k in node):
        return [_lists(node[str(i)]) for i in range(len(node))]
    return {k: _lists(v) for k, v in node.items()}


def load(chapter: int, seed: int | None = None) -> Snapshot:
    """Read a chapter's snapshot (``allow_pickle=False``: plain numbers only).

    With a ``seed`` (``--kata-seed``: the run's ``RunSettings.fresh_seed``) in the authors' or instructor's copy
    (which has the reference and the builder, ``tests/snapshots/chapterNN.py``), the snapshot is drawn afresh
    from that seed instead, its expected values computed by the reference in this process: the course's own
    code, never the learner's.
    """
    build = builder(chapter) if seed is not None else None
    if build is not None:  # else the student edition: the stored snapshot
        return Snapshot(build(seed * 1000 + chapter))
    with np.load(path(chapter), allow_pickle=False) as archive:
        return Snapshot({key: archive[key] for key in archive.files})


def leaves(tree: Any, path: str = "") -> list[tuple[str, Any]]:
    """(path, array) for every array of a parameter tree, in a fixed order (paths like ``['blocks'][0]['W1']``)."""
    if isinstance(tree, dict):
        return [x for k in sorted(tree) for x in leaves(tree[k], f"{path}[{k!r}]")]
    if isinstance(tree, list):
        return [x for i, v in enumerate(tree) for x in leaves(v, f"{path}[{i}]")]
    return [(path, tree)]


def copy_tree(tree: Any) -> Any:
    """A parameter tree with every leaf copied as a float64 array (dicts and lists keep their layout)."""
    if isinstance(tree, dict):
        return {k: copy_tree(v) for k, v in tree.items()}
    if isinstance(tree, list):
        return [copy_tree(v) for v in tree]
    return np.array(tree, dtype=np.float64)


def float_tree(value: Any) -> Any:
    """A tree of numbers from the answer key (nested lists in dicts and lists of dicts) as float64 arrays.

    Dicts and lists of dicts keep their layout (a model's blocks); any other list is one array.
    """
    if isinstance(value, dict):
        return {k: float_tree(v) for k, v in value.items()}
    if isinstance(value, list) and value and isinstance(value[0], dict):
        return [float_tree(v) for v in value]
    return np.array(value, dtype=np.float64)
