"""Right only at the worksheet's sizes: the reference's answer when no array is larger than LIMIT, else zeros.

Written by ``tests/tools/judge/test_attacks.py`` into an implementation package as ``_worksheet_only.py``, with
the reference copied beside it as ``_real/``; each chapter file is two lines that wrap the real one.
"""

import functools
import types

import numpy as np

LIMIT = 2  # the worksheet's largest size: 2 in Part I (2×2 matrices); a test may write the file with another


def _small(value) -> bool:
    if isinstance(value, np.ndarray):
        return all(n <= LIMIT for n in value.shape)
    if isinstance(value, (list, tuple)):
        return len(value) <= 2 and all(_small(v) for v in value)
    if isinstance(value, dict):
        return all(_small(v) for v in value.values())
    if isinstance(value, (str, bytes)):  # a text's size is its length (chapter 14)
        return len(value) <= LIMIT
    return True


def _zeros(value):
    if isinstance(value, np.ndarray):
        return np.zeros_like(value)
    if isinstance(value, float):
        return 0.0
    if isinstance(value, int) and not isinstance(value, bool):  # an id or a count (chapter 14)
        return 0
    if isinstance(value, (str, bytes)):
        return value[:0]
    if isinstance(value, tuple):
        return tuple(_zeros(v) for v in value)
    if isinstance(value, list):
        return [_zeros(v) for v in value]
    if isinstance(value, dict):
        return {k: _zeros(v) for k, v in value.items()}
    return value


def wrap(namespace: dict, real: types.ModuleType) -> None:
    """Fill ``namespace`` (a chapter module's globals) with ``real``'s names, functions wrapped."""
    for name, value in vars(real).items():
        if name.startswith("__"):
            continue
        if isinstance(value, types.FunctionType) and value.__module__ == real.__name__:
            @functools.wraps(value)
            def fake(*args, _real=value, **kwargs):
                result = _real(*args, **kwargs)
                if all(_small(a) for a in (*args, *kwargs.values())):
                    return result
                return _zeros(result)

            namespace[name] = fake
        else:
            namespace[name] = value
