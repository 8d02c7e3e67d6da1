"""One compiled pass over the bytes of a batch of valid JSON texts: the tokens the
columnar decoders read (:class:`udfs.formats.columnar.Tokens`).

The numpy way to find them takes a dozen passes over the batch and a binary search per
token (which quotes are escaped, which structural characters sit inside a string, the
depth, each colon's enclosing object and record): 20% of a Debezium batch's decoding.
This pass is a loop over the bytes, compiled by numba (``cache=True``: a Python worker
compiles it once, later processes load it from ``__pycache__``).

Input: the bytes of *valid* JSON texts laid end to end (each record validated by
msgspec first: a quote opens and closes a string within its text, brackets balance) and
their offsets. Output arrays, in text order:

* ``qpos``: the unescaped quotes (a string is the pair ``2k``, ``2k+1``);
* ``str_bs``: whether string ``k`` holds a backslash;
* ``spos``, ``scls``, ``level``: the structural characters outside strings, their class
  (``STRUCT_CLASS``) and the depth of the container they are in (an opener: the depth
  of the one it opens);
* ``colons``: the colons' token indices, ``parent``: the token opening each colon's
  object, ``crec``: each colon's text.
"""

from __future__ import annotations

import numpy as np
from numba import njit

_OPEN_OBJ, _CLOSE_OBJ, _OPEN_ARR, _CLOSE_ARR, _COLON, _COMMA = range(1, 7)
_K_STR, _K_INT, _K_FRAC, _K_TRUE, _K_FALSE, _K_NULL, _K_OBJ, _K_ARR = range(1, 9)
_IS_STRUCT = np.zeros(256, dtype=np.int64)
_IS_STRUCT[list(b"{}[]:,")] = 1


@njit(cache=True, nogil=True)
def _counts(b: np.ndarray, is_struct: np.ndarray) -> tuple[int, int]:  # pragma: no cover - compiled
    """Upper bounds: quotes, and structural characters (inside strings or not)."""
    nq = 0
    ns = 0
    for i in range(len(b)):
        c = b[i]
        nq += c == 34
        ns += is_struct[c]
    return nq, ns


@njit(cache=True, nogil=True)
def _scan(b: np.ndarray, off: np.ndarray, nq: int, ns: int):  # pragma: no cover - compiled
    qpos = np.empty(nq, dtype=np.int64)
    str_bs = np.zeros(nq // 2 + 1, dtype=np.bool_)
    spos = np.empty(ns, dtype=np.int64)
    scls = np.empty(ns, dtype=np.int8)
    level = np.empty(ns, dtype=np.int32)
    colons = np.empty(ns, dtype=np.int64)
    parent = np.empty(ns, dtype=np.int64)
    crec = np.empty(ns, dtype=np.int64)
    # per colon: its name's span and escape flag, its value's kind, span and escape flag
    nstart = np.empty(ns, dtype=np.int64)
    nend = np.empty(ns, dtype=np.int64)
    nbs = np.empty(ns, dtype=np.bool_)
    vkind = np.empty(ns, dtype=np.int8)
    vstart = np.empty(ns, dtype=np.int64)
    vend = np.empty(ns, dtype=np.int64)
    vbs = np.zeros(ns, dtype=np.bool_)
    pending = -1  # the colon whose value is the next string
    stack = np.empty(64, dtype=np.int64)  # the open containers' tokens, by depth
    q = 0
    s = 0
    nc = 0
    depth = 0
    rec = 0
    nrec = len(off) - 1
    i = 0
    n = len(b)
    while i < n:
        c = b[i]
        if c == 34:  # a string: to its closing quote, past escaped characters
            qpos[q] = i
            i += 1
            while i < n:
                c = b[i]
                if c == 34:
                    break
                if c == 92:
                    str_bs[q // 2] = True
                    i += 1
                i += 1
            if i >= n:  # not closed: not valid JSON (a caller's bug), the quote dropped
                break
            qpos[q + 1] = i
            if pending >= 0:
                vend[pending] = i
                vbs[pending] = str_bs[q // 2]
                pending = -1
            q += 2
        elif c == 123 or c == 91:  # { [
            depth += 1
            if depth >= len(stack):
                bigger = np.empty(2 * len(stack), dtype=np.int64)
                bigger[: len(stack)] = stack
                stack = bigger
            stack[depth] = s
            spos[s] = i
            scls[s] = _OPEN_OBJ if c == 123 else _OPEN_ARR
            level[s] = depth
            s += 1
        elif c == 125 or c == 93:  # } ]
            spos[s] = i
            scls[s] = _CLOSE_OBJ if c == 125 else _CLOSE_ARR
            level[s] = depth
            depth = max(depth - 1, 0)
            s += 1
        elif c == 58:  # :
            while rec + 1 < nrec and off[rec + 1] <= i:
                rec += 1
            spos[s] = i
            scls[s] = _COLON
            level[s] = depth
            colons[nc] = s
            parent[nc] = stack[depth] if depth > 0 else -1
            crec[nc] = rec
            if q >= 2:
                nstart[nc] = qpos[q - 2] + 1
                nend[nc] = qpos[q - 1]
                nbs[nc] = str_bs[(q - 1) // 2]
            else:
                nstart[nc] = nend[nc] = i
                nbs[nc] = False
            j = i + 1
            while j < n and (b[j] == 32 or b[j] == 10 or b[j] == 13 or b[j] == 9):
                j += 1
            v = b[j] if j < n else 0
            vstart[nc] = j
            vend[nc] = j
            if v == 34:
                vkind[nc] = _K_STR
                vstart[nc] = j + 1
                pending = nc
            elif v == 123:
                vkind[nc] = _K_OBJ
            elif v == 91:
                vkind[nc] = _K_ARR
            elif v == 116:  # t
                vkind[nc] = _K_TRUE
                vend[nc] = j + 4
            elif v == 102:  # f
                vkind[nc] = _K_FALSE
                vend[nc] = j + 5
            elif v == 110:  # n
                vkind[nc] = _K_NULL
            else:  # a number: to the next delimiter; a fraction if it has . e E
                kind = _K_INT
                k = j
                while k < n:
                    d = b[k]
                    if d == 44 or d == 125 or d == 93 or d == 32 or d == 10 or d == 13 or d == 9:
                        break
                    if d == 46 or d == 101 or d == 69:
                        kind = _K_FRAC
                    k += 1
                vkind[nc] = kind
                vend[nc] = k
            nc += 1
            s += 1
        elif c == 44:  # ,
            spos[s] = i
            scls[s] = _COMMA
            level[s] = depth
            s += 1
        i += 1
    return (
        qpos[:q],
        str_bs[: q // 2],
        spos[:s],
        scls[:s],
        level[:s],
        colons[:nc],
        parent[:nc],
        crec[:nc],
        nstart[:nc],
        nend[:nc],
        nbs[:nc],
        vkind[:nc],
        vstart[:nc],
        vend[:nc],
        vbs[:nc],
    )


def scan_tokens(b: np.ndarray, off: np.ndarray) -> tuple[np.ndarray, ...]:
    """``(qpos, str_bs, spos, scls, level, colons, parent, crec)`` of valid JSON texts
    ``b`` (uint8) cut at ``off`` (int64, the first 0, the last ``len(b)``)."""
    nq, ns = _counts(b, _IS_STRUCT)
    return _scan(b, off, nq, ns)
