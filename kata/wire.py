"""Plain data between the judge and the worker: JSON and ``.npy`` bytes, never pickle, never code.

Both sides import this module and nothing else of each other. A message is one frame::

    u32 length of the JSON header | JSON header | blob 0 | blob 1 | ...

The header says how long each blob is. Values inside it are JSON scalars (None, bool, int, float, str)
or tagged objects:

==================  ============================================================================
``{"t": "a"}``      a NumPy array: blob ``b`` holds its ``.npy`` bytes (read with allow_pickle=False)
``{"t": "n"}``      a NumPy scalar (float64, int64, bool_, …): a 0-d ``.npy`` blob
``{"t": "y"}``      a ``bytes`` value (a token's bytes, chapter 14): blob ``b`` holds it as it is
``{"t": "l"}``      a list of values ``v``; ``"u"`` a tuple; ``"d"`` a dict (keys ``k``, values ``v``; a
                    ``Counter``, ``OrderedDict`` or ``defaultdict`` arrives as a plain dict)
``{"t": "h"}``      a handle: an object that is not plain data stays in the worker; ``id`` names it
``{"t": "r"}``      (worker to judge) this result *is* the judge's argument array number ``i``
``"r"``, ``"v"``    (worker to judge, on an array) it is argument array ``r`` itself, or a view of argument
                    ``v`` at byte ``offset`` with ``strides`` (the blob holds its values all the same)
``{"t": "f"}``      (worker to judge) a function of the learner's: the judge calls it by name
``{"t": "c"}``      (judge to worker) a function of the test's: each call asks the judge (a callback)
==================  ============================================================================

Why not pickle (or otter's and pytest-forked's way of shipping results back): unpickling runs code of
the sender's choosing, and the sender is the learner's process. Why not ``multiprocessing``: its
connections pickle too. This module is the small part of such a library that is safe here.
"""

from __future__ import annotations

import collections
import functools
import io
import json
import math
import re
import struct
from typing import Any, BinaryIO

import numpy as np

MAX_FRAME = 64 * 1024 * 1024  # bytes in one message, header and blobs together (a chapter needs far less)
MAX_DEPTH = 64  # nesting of lists, tuples and dicts
MAX_ITEMS = 1_000_000  # values in one message
ARRAY_KINDS = "biufc"  # booleans, integers, floats, complex numbers: what a kata function computes
_LEN = struct.Struct("<I")
# the standard library's dicts go as dicts (a learner's ``Counter`` of pairs is the dict it promised); a class
# of the learner's own, a dict or not, stays in the worker behind a handle
PLAIN_DICTS = (collections.Counter, collections.OrderedDict, collections.defaultdict)


class WireError(Exception):
    """A message that is not plain data, too large, or malformed."""


class Handle:
    """The judge's name for an object that lives in the worker (a learner's cache object, say).

    Passing it back to a learner's function passes the worker's object. It is valid for the worker
    process that made it: after a restart it names nothing.
    """

    __slots__ = ("generation", "id", "type_name")

    def __init__(self, id: int, type_name: str, generation: int) -> None:
        self.id, self.type_name, self.generation = id, type_name, generation

    def __repr__(self) -> str:
        return f"<{self.type_name} object in the learner's process>"


# -- frames -------------------------------------------------------------------------------------------
def write_frame(stream: BinaryIO, header: dict, blobs: list[bytes]) -> None:
    """Write one message and flush it."""
    header = dict(header, blobs=[len(b) for b in blobs])
    text = json.dumps(header, separators=(",", ":"), allow_nan=True).encode("utf-8")
    stream.write(_LEN.pack(len(text)) + text + b"".join(blobs))
    stream.flush()


def _read_exactly(stream: BinaryIO, n: int) -> bytes:
    chunks, left = [], n
    while left:
        chunk = stream.read(left)
        if not chunk:
            raise EOFError("the other process closed the channel")
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def read_frame(stream: BinaryIO, limit: int = MAX_FRAME) -> tuple[dict, list[bytes]]:
    """Read one message; a malformed or oversized one is a ``WireError``, a closed channel ``EOFError``."""
    (size,) = _LEN.unpack(_read_exactly(stream, _LEN.size))
    if size > limit:
        raise WireError(f"a message header of {size} bytes is over the limit of {limit}")
    try:
        header = json.loads(_read_exactly(stream, size))
    except (UnicodeDecodeError, json.JSONDecodeError, ValueError, RecursionError) as err:
        raise WireError(f"a message header is not JSON: {err}") from None
    lengths = header.get("blobs") if isinstance(header, dict) else None
    if not isinstance(lengths, list) or not all(type(n) is int and n >= 0 for n in lengths):
        raise WireError("a message header does not list its blobs")
    if size + sum(lengths) > limit:
        raise WireError(f"a message of {size + sum(lengths)} bytes is over the limit of {limit}")
    return header, [_read_exactly(stream, n) for n in lengths]


# -- values -------------------------------------------------------------------------------------------
def array_bytes(arr: np.ndarray) -> bytes:
    """An array as ``.npy`` bytes (refuses object arrays: they would need pickle).

    The bytes are those ``np.lib.format.write_array`` writes. For numbers, NumPy's header is written once per
    dtype, shape and order (``_npy_header``, by NumPy itself) and the data appended: ``write_array`` builds
    and pads the header anew for every array, which was a third of a small call's time on each side.
    """
    arr = np.asarray(arr)
    if arr.dtype.kind in ARRAY_KINDS and arr.dtype.names is None and arr.ndim <= 32:
        fortran = bool(arr.flags.f_contiguous and not arr.flags.c_contiguous)
        return _npy_header(arr.dtype, arr.shape, fortran) + arr.tobytes(order="F" if fortran else "C")
    buf = io.BytesIO()
    np.lib.format.write_array(buf, arr, allow_pickle=False)
    return buf.getvalue()


@functools.lru_cache(maxsize=4096)
def _npy_header(dtype: np.dtype, shape: tuple, fortran: bool) -> bytes:
    """The ``.npy`` header NumPy writes for an array of this dtype, shape and order (written by NumPy)."""
    buf = io.BytesIO()
    np.lib.format.write_array_header_1_0(buf, {"descr": np.lib.format.dtype_to_descr(dtype),
                                               "fortran_order": fortran, "shape": shape})
    return buf.getvalue()


_NPY_V1 = b"\x93NUMPY\x01\x00"
_NPY_HEADER = re.compile(rb"\{'descr': '([<>|=]?[biufc][0-9]{1,2})', 'fortran_order': (True|False), "
                         rb"'shape': \(([0-9, ]*)\), \} *\n")


def _read_plain(blob: bytes) -> np.ndarray | None:
    """The common case of ``read_array``, read without NumPy's header parser.

    NumPy parses every header with ``ast.literal_eval``, which compiles it: that was 70 % of a call's time
    in the worker. The headers NumPy itself writes for numbers have one fixed form, matched here by a
    regular expression (nothing is evaluated; each distinct header once, ``_plain_header``); anything else
    goes to NumPy's reader.
    """
    if blob[:8] != _NPY_V1 or len(blob) < 10:
        return None
    (size,) = struct.unpack("<H", blob[8:10])
    if size > _CACHED_HEADER:  # NumPy's own headers for numbers are short; a long one is a worker's, read afresh
        return None
    header = _plain_header(blob[10:10 + size])
    if header is None:
        return None
    dtype, shape, order, count = header
    if len(blob) - 10 - size != count * dtype.itemsize:
        return None
    flat = np.frombuffer(blob, dtype=dtype, count=count, offset=10 + size)
    return flat.reshape(shape, order=order).copy(order="K")


_CACHED_HEADER = 512  # bytes: NumPy writes 118 for most shapes, 182 for 32 dimensions; 4096 of them hold 2 MB at most


@functools.lru_cache(maxsize=4096)
def _plain_header(text: bytes) -> tuple[np.dtype, tuple, str, int] | None:
    """A header NumPy writes for numbers, read: (dtype, shape, order, number of items); None for any other."""
    found = _NPY_HEADER.fullmatch(text)
    if found is None:
        return None
    parts = [p.strip() for p in found.group(3).decode().split(",")]
    if not all(p.isdigit() for p in parts if p) or parts.count("") > 1:
        return None
    shape = tuple(int(p) for p in parts if p)
    return np.dtype(found.group(1).decode()), shape, "F" if found.group(2) == b"True" else "C", math.prod(shape)


def read_array(blob: bytes) -> np.ndarray:
    """``.npy`` bytes as an array, with ``allow_pickle=False`` and numbers only."""
    plain = _read_plain(blob)
    if plain is not None:
        return plain
    try:
        arr = np.lib.format.read_array(io.BytesIO(blob), allow_pickle=False)
    except (ValueError, OSError, EOFError, SyntaxError, TypeError) as err:
        raise WireError(f"an array in the message is not valid .npy data: {err}") from None
    if arr.dtype.kind not in ARRAY_KINDS or arr.dtype.names is not None:
        raise WireError(f"an array of dtype {arr.dtype} is not plain numbers")
    return arr


class Encoder:
    """Turns a value into a JSON tree plus blobs.

    Args:
        handle: called with an object that is not plain data; returns the JSON for it (the worker stores
            the object and returns a handle; the judge refuses, since it only sends plain data).
        arrays: when given, every array encoded is appended here in order (the worker compares them
            after a call to see which ones the call changed in place).
    """

    def __init__(self, handle, arrays: list | None = None, alias=None) -> None:
        self.blobs: list[bytes] = []
        self.handle = handle
        self.arrays = arrays
        self.alias = alias  # the worker: an array that is (a view of) an argument goes back as such
        self.count = 0

    def blob(self, data: bytes) -> int:
        """Store ``data`` as the next blob; return its number."""
        self.blobs.append(data)
        return len(self.blobs) - 1

    def encode(self, value: Any, depth: int = 0) -> Any:
        """The JSON form of ``value``."""
        self.count += 1
        if depth > MAX_DEPTH or self.count > MAX_ITEMS:
            raise WireError(f"the value is nested deeper than {MAX_DEPTH} or holds over {MAX_ITEMS} items")
        t = type(value)
        if value is None or t is bool or t is str:
            return value
        if t is int:
            return value if abs(value) < 2**63 else float(value)
        if t is float:
            return value
        if t is bytes:
            return {"t": "y", "b": self.blob(value)}
        if isinstance(value, np.ndarray) and value.dtype.kind in ARRAY_KINDS and value.dtype.names is None:
            if self.arrays is not None:
                self.arrays.append(value)
            tree = {"t": "a", "b": self.blob(array_bytes(value))}
            if self.alias is not None:
                tree.update(self.alias(value) or {})
            return tree
        if isinstance(value, np.generic) and np.asarray(value).dtype.kind in ARRAY_KINDS:
            return {"t": "n", "b": self.blob(array_bytes(np.asarray(value)))}
        if t is list or t is tuple:
            return {"t": "l" if t is list else "u", "v": [self.encode(v, depth + 1) for v in value]}
        if t is dict or t in PLAIN_DICTS:
            return {"t": "d", "k": [self.encode(k, depth + 1) for k in value],
                    "v": [self.encode(v, depth + 1) for v in value.values()]}
        return self.handle(value)


def decode(tree: Any, blobs: list[bytes], handle, arrays: list | None = None, depth: int = 0) -> Any:
    """The value of a JSON tree from ``Encoder`` (``handle`` resolves ``{"t": "h"}`` and ``{"t": "r"}``)."""
    if depth > MAX_DEPTH:
        raise WireError(f"the value is nested deeper than {MAX_DEPTH}")
    if tree is None or type(tree) in (bool, str, int, float):
        return tree
    if type(tree) is not dict:
        raise WireError(f"unexpected {type(tree).__name__} in a message")
    tag = tree.get("t")
    if tag == "a" and ("r" in tree or "v" in tree):
        return handle(tree)  # the judge's own argument, or a view of it
    if tag in ("a", "n"):
        index = tree.get("b")
        if type(index) is not int or not 0 <= index < len(blobs):
            raise WireError("an array refers to a blob that is not there")
        arr = read_array(blobs[index])
        if tag == "n":
            if arr.ndim != 0:
                raise WireError("a NumPy scalar arrived with a shape")
            return arr[()]
        if arrays is not None:
            arrays.append(arr)
        return arr
    if tag == "y":
        index = tree.get("b")
        if type(index) is not int or not 0 <= index < len(blobs):
            raise WireError("bytes that refer to a blob that is not there")
        return bytes(blobs[index])
    if tag in ("l", "u"):
        items = tree.get("v")
        if type(items) is not list:
            raise WireError("a list without items")
        values = [decode(v, blobs, handle, arrays, depth + 1) for v in items]
        return values if tag == "l" else tuple(values)
    if tag == "d":
        keys, values = tree.get("k"), tree.get("v")
        if type(keys) is not list or type(values) is not list or len(keys) != len(values):
            raise WireError("a dict whose keys and values do not pair up")
        out = {}
        for k, v in zip(keys, values, strict=True):
            key = decode(k, blobs, handle, arrays, depth + 1)
            try:
                hash(key)
            except TypeError:
                raise WireError("a dict key that cannot be a key") from None
            out[key] = decode(v, blobs, handle, arrays, depth + 1)
        return out
    if tag in ("h", "r", "f", "c"):
        return handle(tree)
    raise WireError(f"unknown tag {tag!r} in a message")
