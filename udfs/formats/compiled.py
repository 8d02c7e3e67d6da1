"""The compiled loops (numba) of the columnar decoders: one pass each over the bytes
of a batch, where numpy takes a dozen passes and a binary search per token, and Arrow a
``take`` per span.

* :func:`scan_tokens`: the JSON tokens of a batch of valid texts
  (:class:`udfs.formats.columnar.Tokens`): unescaped quotes, structural characters
  outside strings, their depth, each colon's enclosing object, record, name and value;
* :func:`string_texts`: scalar values as text, strings unescaped (and with
  :func:`string_texts_both`, in the same pass, written as ``json.dumps`` writes them);
* :func:`gather_spans`, :func:`json_array_of`, :func:`starts_with_at`: byte spans copied
  and compared;
* :func:`event_texts`: each change's event-id text (the canonical JSON of the change
  that is hashed), written in one pass instead of a dozen Arrow concatenations.

They live in one module because numba's cache (``cache=True``: compiled once, later
processes load the machine code from ``__pycache__``) is invalidated by a change of the
file that defines a function, not of the files of the functions it calls.

The input texts are *valid* JSON (msgspec validated them first: a quote opens and
closes a string within its text, brackets balance, no raw control character, every
``\\u`` escape has 4 hex digits and a surrogate comes in a pair); the loops do not
read past the batch on other input, but their result is then meaningless.
"""

from __future__ import annotations

import os
import tempfile
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
from numba import config as numba_config
from numba import njit

#: the loops compile in every process: no writable cache folder (see :func:`_compiled`)
UNCACHED: list[str] = []


def _compiled(**options: Any) -> Callable[[Callable], Any]:
    """``njit`` with its cache and without the GIL.

    numba refuses to decorate a function with ``cache=True`` when it finds no writable
    cache folder: not the package's ``__pycache__`` (a read-only install) and not the
    user's cache folder (a service user without a home, as on some cluster executors).
    The decoders must not fail to import there, so the cache moves to the temp folder,
    per user (numba's ``CACHE_DIR``, which then serves every numba cache of the
    process); where even that is read-only, the loops compile in every process, with
    one warning."""

    def decorate(fn: Callable) -> Any:
        for _ in range(2):
            try:
                return njit(cache=True, nogil=True, **options)(fn)
            except RuntimeError as exc:  # "cannot cache function ...: no locator available"
                if "no locator" not in str(exc):
                    raise
            if numba_config.CACHE_DIR:  # set by the user, or already the temp folder
                break
            numba_config.CACHE_DIR = os.path.join(tempfile.gettempdir(), f"cdc-numba-cache-{os.getuid()}")
        if not UNCACHED:
            warnings.warn(
                f"udfs.formats.compiled: no writable cache folder (numba's cache dir: "
                f"{numba_config.CACHE_DIR!r}); the decoders' loops compile in every process",
                RuntimeWarning,
                stacklevel=2,
            )
        UNCACHED.append(fn.__name__)
        return njit(nogil=True, **options)(fn)

    return decorate


# ----------------------------------------------------------------------------- byte spans


@_compiled(inline="always")
def _copy(b, s, e, out, o):  # pragma: no cover - compiled
    """``b[s:e]`` at ``out[o:]`` (a loop for a few bytes, a memcpy for more); the next ``o``."""
    size = e - s
    if size > 16:
        out[o : o + size] = b[s:e]
    else:
        for k in range(size):
            out[o + k] = b[s + k]
    return o + size


@_compiled()
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
        if not use_valid or valid[i]:
            _copy(b, starts[i], ends[i], out, offs[i])
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


@_compiled()
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


@_compiled()
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


# ----------------------------------------------------------------------------- JSON tokens

_OPEN_OBJ, _CLOSE_OBJ, _OPEN_ARR, _CLOSE_ARR, _COLON, _COMMA = range(1, 7)
_K_STR, _K_INT, _K_FRAC, _K_TRUE, _K_FALSE, _K_NULL, _K_OBJ, _K_ARR = range(1, 9)
_IS_STRUCT = np.zeros(256, dtype=np.int64)
_IS_STRUCT[list(b"{}[]:,")] = 1


@_compiled()
def _counts(b: np.ndarray, is_struct: np.ndarray) -> tuple[int, int]:  # pragma: no cover - compiled
    """Upper bounds: quotes, and structural characters (inside strings or not)."""
    nq = 0
    ns = 0
    for i in range(len(b)):
        c = b[i]
        nq += c == 34
        ns += is_struct[c]
    return nq, ns


@_compiled()
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


# ----------------------------------------------------------------------------- string values


@_compiled(inline="always")
def _hex4(b, i):  # pragma: no cover - compiled
    v = 0
    for k in range(4):
        c = b[i + k]
        if c <= 57:
            d = c - 48
        elif c <= 70:
            d = c - 55
        else:
            d = c - 87
        v = v * 16 + d
    return v


@_compiled()
def _emit_code_point(cp, out, o, canonical):  # pragma: no cover - compiled
    """``cp`` at ``out[o:]`` as UTF-8, or (``canonical``) as ``json.dumps(ensure_ascii=False)``
    writes it inside a string: ``\\"``, ``\\\\``, the two-character escapes, ``\\u00xx`` for
    the other control characters. Returns the next ``o``."""
    if canonical and (cp < 32 or cp == 34 or cp == 92):
        out[o] = 92
        if cp == 34 or cp == 92:
            out[o + 1] = cp
            return o + 2
        short = 98 if cp == 8 else 102 if cp == 12 else 110 if cp == 10 else 114 if cp == 13 else 116 if cp == 9 else 0
        if short:
            out[o + 1] = short
            return o + 2
        out[o + 1] = 117
        out[o + 2] = 48
        out[o + 3] = 48
        out[o + 4] = 48 + (cp >> 4)
        low = cp & 15
        out[o + 5] = 48 + low if low < 10 else 87 + low
        return o + 6
    if cp < 0x80:
        out[o] = cp
        return o + 1
    if cp < 0x800:
        out[o] = 0xC0 | (cp >> 6)
        out[o + 1] = 0x80 | (cp & 0x3F)
        return o + 2
    if cp < 0x10000:
        out[o] = 0xE0 | (cp >> 12)
        out[o + 1] = 0x80 | ((cp >> 6) & 0x3F)
        out[o + 2] = 0x80 | (cp & 0x3F)
        return o + 3
    out[o] = 0xF0 | (cp >> 18)
    out[o + 1] = 0x80 | ((cp >> 12) & 0x3F)
    out[o + 2] = 0x80 | ((cp >> 6) & 0x3F)
    out[o + 3] = 0x80 | (cp & 0x3F)
    return o + 4


@_compiled()
def _emit_string(b, s, e, out, o, cout, co, both):  # pragma: no cover - compiled
    """The escaped string body ``b[s:e]`` unescaped at ``out[o:]``, and with ``both``
    made canonical at ``cout[co:]`` too, in the same scan; the runs between backslashes
    copied as they are. Returns the next ``(o, co)``."""
    i = s
    while i < e:
        j = i
        while j < e and b[j] != 92:
            j += 1
        o = _copy(b, i, j, out, o)
        if both:
            co = _copy(b, i, j, cout, co)
        if j >= e:
            break
        d = b[j + 1]
        if d == 117:  # \uXXXX, a surrogate pair as one code point
            cp = _hex4(b, j + 2)
            i = j + 6
            if 0xD800 <= cp < 0xDC00 and i + 6 <= e and b[i] == 92 and b[i + 1] == 117:
                low = _hex4(b, i + 2)
                if 0xDC00 <= low < 0xE000:
                    cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00)
                    i += 6
            o = _emit_code_point(cp, out, o, False)
            if both:
                co = _emit_code_point(cp, cout, co, True)
            continue
        i = j + 2
        if d == 47:  # \/ is a plain slash
            out[o] = 47
            o += 1
            if both:
                cout[co] = 47
                co += 1
            continue
        # \" \\ \b \f \n \r \t: the character; canonical, as sent (json.dumps writes it so)
        out[o] = 8 if d == 98 else 12 if d == 102 else 10 if d == 110 else 13 if d == 114 else 9 if d == 116 else d
        o += 1
        if both:
            cout[co] = 92
            cout[co + 1] = d
            co += 2
    return o, co


@_compiled()
def _string_texts(b, starts, ends, valid, escaped, both):  # pragma: no cover - compiled
    n = len(starts)
    offs = np.empty(n + 1, dtype=np.int64)
    coffs = np.empty(n + 1 if both else 0, dtype=np.int64)
    bound = 0
    for i in range(n):
        if valid[i]:
            bound += ends[i] - starts[i]
    # neither unescaping nor the canonical form is longer than the escaped text (valid
    # JSON holds no raw control character: msgspec rejects them)
    out = np.empty(bound, dtype=np.uint8)
    cout = np.empty(bound if both else 0, dtype=np.uint8)
    o = 0
    co = 0
    for i in range(n):
        offs[i] = o
        if both:
            coffs[i] = co
        if not valid[i]:
            continue
        s, e = starts[i], ends[i]
        if escaped[i]:
            o, co = _emit_string(b, s, e, out, o, cout, co, both)
        else:
            o = _copy(b, s, e, out, o)
            if both:
                co = _copy(b, s, e, cout, co)
    offs[n] = o
    if both:
        coffs[n] = co
    return offs, out[:o], coffs, cout[:co]


def _spans(starts: np.ndarray, ends: np.ndarray, valid: np.ndarray, escaped: np.ndarray) -> tuple[np.ndarray, ...]:
    return (
        np.ascontiguousarray(starts, dtype=np.int64),
        np.ascontiguousarray(ends, dtype=np.int64),
        np.ascontiguousarray(valid, dtype=np.bool_),
        np.ascontiguousarray(escaped, dtype=np.bool_),
    )


def string_texts(
    b: np.ndarray, starts: np.ndarray, ends: np.ndarray, valid: np.ndarray, escaped: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """(offsets, UTF-8 data) of the values ``b[starts[i]:ends[i]]`` (empty where not
    ``valid``): copied as they are, but those ``escaped`` (a string's body holding a
    backslash) unescaped. The texts are valid JSON: msgspec validated them, so every
    ``\\u`` escape is 4 hex digits and a surrogate comes in a pair."""
    offs, data, _, _ = _string_texts(b, *_spans(starts, ends, valid, escaped), False)
    return offs, data


def string_texts_both(
    b: np.ndarray, starts: np.ndarray, ends: np.ndarray, valid: np.ndarray, escaped: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """:func:`string_texts`, and in the same pass (an escaped string's bytes scanned
    once) the canonical texts: each string as ``json.dumps(..., ensure_ascii=False)``
    writes it between its quotes (``\\/`` and ``\\uXXXX`` undone but for the characters
    it escapes). The two (offsets, data)."""
    return _string_texts(b, *_spans(starts, ends, valid, escaped), True)


# ----------------------------------------------------------------------------- event ids


_COMMA_SPACE = np.frombuffer(b", ", dtype=np.uint8)
_NULL = np.frombuffer(b"null", dtype=np.uint8)


@_compiled(inline="always")
def _put_quoted(out, o, src, s, e):  # pragma: no cover - compiled
    out[o] = 34
    o = _copy(src, s, e, out, o + 1)
    out[o] = 34
    return o + 1


@_compiled(inline="always")
def _put_quoted_or_null(out, o, valid, src, s, e):  # pragma: no cover - compiled
    if valid:
        return _put_quoted(out, o, src, s, e)
    return _copy(_NULL, 0, 4, out, o)


@_compiled(boundscheck=True)
def _event_texts(  # pragma: no cover - compiled
    tid_b, tid_o, tid_at, kt_b, kt_o, op_b, op_o, op_v, seq_b, seq_o, seq_v, nm_b, nm_o, es_b, es_o, es_v, so, img_off,
    pres,
):  # fmt: skip
    n = len(tid_at)
    comma = _COMMA_SPACE
    null = _NULL
    # a bound of the size: per change its strings (the key's twice, as escaped) and at
    # most 38 bytes of punctuation and nulls; per entry its name twice, its value and at
    # most 14 (`"": null, ` and `"", `); a wrong bound raises IndexError (boundscheck,
    # which costs nothing measurable here), it cannot write past the buffer
    bound = 64 * n + 2 * kt_o[n] + op_o[n] + seq_o[n] + 2 * nm_o[len(nm_o) - 1] + es_o[len(es_o) - 1]
    bound += 16 * (len(nm_o) - 1)
    for r in range(n):
        bound += tid_o[tid_at[r] + 1] - tid_o[tid_at[r]]
    out = np.empty(bound, dtype=np.uint8)
    offs = np.empty(n + 1, dtype=np.int64)
    o = 0
    for r in range(n):
        offs[r] = o
        if not op_v[r]:  # a null part makes the whole text null (Arrow's concatenation): empty
            continue
        out[o] = 91  # [
        o += 1
        t = tid_at[r]
        o = _copy(tid_b, tid_o[t], tid_o[t + 1], out, o)
        o = _copy(comma, 0, 2, out, o)
        out[o] = 34
        o += 1
        for i in range(kt_o[r], kt_o[r + 1]):  # the key's text as a JSON string: \\ and " escaped
            c = kt_b[i]
            if c == 92 or c == 34:
                out[o] = 92
                o += 1
            out[o] = c
            o += 1
        out[o] = 34
        o += 1
        o = _copy(comma, 0, 2, out, o)
        o = _put_quoted(out, o, op_b, op_o[r], op_o[r + 1])
        o = _copy(comma, 0, 2, out, o)
        o = _put_quoted_or_null(out, o, seq_v[r], seq_b, seq_o[r], seq_o[r + 1])
        for img in range(2 * r, 2 * r + 2):
            o = _copy(comma, 0, 2, out, o)
            if not pres[img]:
                o = _copy(null, 0, 4, out, o)
                o = _copy(comma, 0, 2, out, o)
                o = _copy(null, 0, 4, out, o)
                continue
            # the image as an object, its entries sorted by name (``so``)
            out[o] = 123  # {
            o += 1
            for k in range(img_off[img], img_off[img + 1]):
                if k > img_off[img]:
                    o = _copy(comma, 0, 2, out, o)
                e = so[k]
                o = _put_quoted(out, o, nm_b, nm_o[e], nm_o[e + 1])
                out[o] = 58  # :
                out[o + 1] = 32
                o = _put_quoted_or_null(out, o + 2, es_v[e], es_b, es_o[e], es_o[e + 1])
            out[o] = 125  # }
            o += 1
            o = _copy(comma, 0, 2, out, o)
            # its columns, in their order
            out[o] = 91
            o += 1
            for e in range(img_off[img], img_off[img + 1]):
                if e > img_off[img]:
                    o = _copy(comma, 0, 2, out, o)
                o = _put_quoted(out, o, nm_b, nm_o[e], nm_o[e + 1])
            out[o] = 93
            o += 1
        o = _copy(comma, 0, 2, out, o)
        o = _copy(null, 0, 4, out, o)
        out[o] = 93  # ]
        o += 1
    offs[n] = o
    return offs, out[:o]


def event_texts(
    tables: tuple[np.ndarray, np.ndarray],
    table_at: np.ndarray,
    key_text: tuple[np.ndarray, np.ndarray],
    op: tuple[np.ndarray, np.ndarray, np.ndarray],
    seq: tuple[np.ndarray, np.ndarray, np.ndarray],
    names: tuple[np.ndarray, np.ndarray],
    values: tuple[np.ndarray, np.ndarray, np.ndarray],
    sorted_entries: np.ndarray,
    image_offsets: np.ndarray,
    present: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """(offsets, UTF-8 data) of each change's event-id text, ``json.dumps([table_id,
    key_text, op, seq, before, before_cols, after, after_cols, None])`` as the columnar
    decoders write it, in one pass.

    Strings are (data, offsets) or (data, offsets, valid) with int64 offsets:
    ``tables`` the table ids already as JSON strings, indexed per change by
    ``table_at``; ``key_text`` the key's compact JSON (escaped here as a JSON string);
    ``op``; ``seq`` (null: ``null``); per image entry, ``names`` and ``values`` (the
    value's JSON-escaped text, null: ``null``). Image ``2r`` is change r's before,
    ``2r + 1`` its after, its entries ``image_offsets[i]:image_offsets[i+1]`` in column
    order, ``sorted_entries`` the same entries sorted by name within each image;
    ``present`` (2 per change): false writes ``null`` for the image and its columns. A
    change whose ``op`` is null gets an empty text."""

    def text(parts: tuple[np.ndarray, ...]) -> tuple[np.ndarray, ...]:
        # one compiled variant: the data read only (as Arrow's buffers are), offsets int64
        data = parts[0]
        if data.flags.writeable:
            data = data.view()
            data.flags.writeable = False
        rest = tuple(np.ascontiguousarray(p, dtype=np.bool_ if i else np.int64) for i, p in enumerate(parts[1:]))
        return (np.ascontiguousarray(data, dtype=np.uint8), *rest)

    return _event_texts(
        *text(tables),
        np.ascontiguousarray(table_at, dtype=np.int64),
        *text(key_text),
        *text(op),
        *text(seq),
        *text(names),
        *text(values),
        np.ascontiguousarray(sorted_entries, dtype=np.int64),
        np.ascontiguousarray(image_offsets, dtype=np.int64),
        np.ascontiguousarray(present, dtype=np.bool_),
    )


def warm_up() -> None:
    """Compile every loop for the array types the decoders pass (a batch's bytes read
    only, as Arrow holds them, or writable, as a cut batch is), so the cache is full
    before the first Spark task: ``scripts/setup.sh`` runs it (about 15 s once; a
    Python worker that finds the cache loads the loops in a fraction of a second)."""
    text = b'{"a": "x\\u00e9\\n", "b": [1, -2.5e3, true, null]}'
    writable = np.frombuffer(text, dtype=np.uint8).copy()
    read_only = np.frombuffer(text, dtype=np.uint8)
    off = np.array([0, len(text)], dtype=np.int64)
    for b in (read_only, writable):
        tokens = scan_tokens(b, off)
        starts, ends = tokens[-3], tokens[-2]
        every = np.ones(len(starts), dtype=np.bool_)
        string_texts(b, starts, ends, every, tokens[-1])
        string_texts_both(b, starts, ends, every, tokens[-1])
        gather_spans(b, starts, ends)
        gather_spans(b, starts, ends, every)
        json_array_of(b, off)
        starts_with_at(b, starts, b'"a"')
    one = np.array([0, 1], dtype=np.int64)
    event_texts(
        (read_only[:1], one),
        np.zeros(1, dtype=np.int64),
        (read_only[:1], one),
        (read_only[:1], one, np.ones(1, dtype=np.bool_)),
        (read_only[:1], one, np.ones(1, dtype=np.bool_)),
        (read_only[:1], one),
        (read_only[:1], one, np.ones(1, dtype=np.bool_)),
        np.zeros(1, dtype=np.int64),
        np.array([0, 1, 1], dtype=np.int64),
        np.ones(2, dtype=np.bool_),
    )
