"""Counterparts written here for NumPy and Python names of the ports' era that today's NumPy and Python removed
without a same-named replacement (public APIs only)."""

from __future__ import annotations

import inspect
from collections import namedtuple
from typing import Any

import numpy as np

NINF = -np.inf  # NumPy 2.0 removed np.NINF, np.PZERO and np.NZERO: the values they held
PZERO = 0.0
NZERO = -0.0


def asscalar(a: Any) -> Any:
    """NumPy < 1.23's `np.asscalar(a)`: `a.item()`, the Python scalar of a one-element array."""
    return a.item()


def asfarray(a: Any, dtype: Any = np.float64) -> np.ndarray:
    """NumPy < 2.0's `np.asfarray(a, dtype)`: `a` as an array of a floating type (float64 unless `dtype` is
    inexact)."""
    dtype = np.dtype(dtype)
    return np.asarray(a, dtype=dtype if np.issubdtype(dtype, np.inexact) else np.float64)


def msort(a: Any) -> np.ndarray:
    """NumPy < 2.0's `np.msort(a)`: `np.sort(a, axis=0)`."""
    return np.sort(a, axis=0)


def in1d(ar1: Any, ar2: Any, assume_unique: bool = False, invert: bool = False, **kwargs: Any) -> np.ndarray:
    """NumPy < 2.4's `np.in1d`: `np.isin` over the flattened `ar1` (a 1-D result)."""
    return np.isin(np.ravel(ar1), ar2, assume_unique=assume_unique, invert=invert, **kwargs)


class _Cast(dict):
    """NumPy < 2.0's `np.cast`: `np.cast[dtype](x)` is `np.asarray(x).astype(dtype)`."""

    def __missing__(self, dtype: Any) -> Any:
        return lambda x: np.asarray(x).astype(dtype)


cast = _Cast()


ArgSpec = namedtuple("ArgSpec", "args varargs keywords defaults")


def getargspec(func: Any) -> ArgSpec:
    """Python < 3.11's `inspect.getargspec`: `inspect.getfullargspec` as the old four fields; like the old one, a
    ValueError for a function with keyword-only arguments or annotations (getfullargspec reads those)."""
    spec = inspect.getfullargspec(func)
    if spec.kwonlyargs or spec.annotations:
        raise ValueError(
            "Function has keyword-only parameters or annotations, use inspect.signature() API which can support them"
        )
    return ArgSpec(spec.args, spec.varargs, spec.varkw, spec.defaults)
