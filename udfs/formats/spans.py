"""Compiled loops over byte spans of a batch, for the columnar decoders (numba,
``cache=True``: compiled once, later processes load them from ``__pycache__``).

* :func:`gather_spans`: the spans ``b[starts[i]:ends[i]]`` as the offsets and data of a
  string array (a null span takes no bytes): one copy, where Arrow's ``take`` over a
  view of the batch costs a ``take`` index and a pass per element.
* :func:`json_array_of`: the texts of a batch laid out as one JSON array
  (``[t0,t1,...]``), for msgspec to validate the batch in one call: one copy, where
  ``np.insert`` of the commas, ``tobytes`` and the brackets took three.
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True, nogil=True)
def _gather(b, starts, ends, valid, use_valid):  # pragma: no cover - compiled
    n = len(starts)
    offs = np.empty(n + 1, dtype=np.int64)
    offs[0] = 0
    total = 0
    for i in range(n):
        if not use_valid or valid[i]:
            total += ends[i] - starts[i]
        offs[i + 1] = total
    out = np.empty(total, dtype=np.uint8)
    for i in range(n):
        o = offs[i]
        size = offs[i + 1] - o
        s = starts[i]
        out[o : o + size] = b[s : s + size]
    return offs, out


def gather_spans(
    b: np.ndarray, starts: np.ndarray, ends: np.ndarray, valid: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """(offsets int64 of n + 1, data uint8) of the spans; ``valid`` false: an empty span."""
    starts = np.ascontiguousarray(starts, dtype=np.int64)
    ends = np.ascontiguousarray(ends, dtype=np.int64)
    if valid is None:
        return _gather(b, starts, ends, np.zeros(0, dtype=np.bool_), False)
    return _gather(b, starts, ends, np.ascontiguousarray(valid, dtype=np.bool_), True)


@njit(cache=True, nogil=True)
def _json_array(b, off):  # pragma: no cover - compiled
    n = len(off) - 1
    size = len(b) + 2 + max(n - 1, 0)
    out = np.empty(size, dtype=np.uint8)
    out[0] = 91  # [
    o = 1
    for i in range(n):
        if i:
            out[o] = 44  # ,
            o += 1
        s, e = off[i], off[i + 1]
        out[o : o + e - s] = b[s:e]
        o += e - s
    out[o] = 93  # ]
    return out


def json_array_of(b: np.ndarray, off: np.ndarray) -> np.ndarray:
    """``[`` + the texts joined by ``,`` + ``]`` (uint8)."""
    return _json_array(b, np.ascontiguousarray(off, dtype=np.int64))


@njit(cache=True, nogil=True)
def _starts_with(b, starts, text):  # pragma: no cover - compiled
    out = np.zeros(len(starts), dtype=np.bool_)
    size = len(text)
    for i in range(len(starts)):
        s = starts[i]
        if s < 0 or s + size > len(b):
            continue
        same = True
        for j in range(size):
            if b[s + j] != text[j]:
                same = False
                break
        out[i] = same
    return out


def starts_with_at(b: np.ndarray, starts: np.ndarray, text: bytes) -> np.ndarray:
    """Whether ``b[starts[i]:]`` begins with ``text``, for each i."""
    return _starts_with(b, np.ascontiguousarray(starts, dtype=np.int64), np.frombuffer(text, dtype=np.uint8))
