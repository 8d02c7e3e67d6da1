"""A columnar Debezium JSON decoder giving the very result of ``decode_records``.

``decode_debezium_columnar(options_json, texts, kafka_keys)`` takes a batch of record
lines as an Arrow string array and returns the ``cdc_decode`` result (``DECODE_RESULT_DDL``
as Arrow) for the whole batch. ``cdc_decode`` runs it on the rows of every
``debezium_json`` feed (:func:`udfs.spark_udfs.decode_array`) unless the feed option
``columnar`` is false. It never builds a Python object per column value on its path:

1. **validation**: the batch is joined into one JSON array (Arrow/numpy) and parsed by
   msgspec into one ``Raw`` per record (one C call; a record's Raw must span exactly its
   line). A batch that fails is validated record by record. Invalid records fall back.
2. **tokens** (numpy over the batch's bytes): unescaped quotes (backslash runs), the
   structural characters outside strings, their depth and enclosing object; every
   ``"key":`` of the objects the decoder reads (top, payload, source, before, after),
   the kind and byte span of its value.
3. **values**: strings without a backslash are their bytes (gathered in one numpy
   take); numbers are their literal (``-0`` -> ``0``, as ``str(int)``); only strings with
   an escape are unescaped by one msgspec call over all of them and re-escaped (for the
   event id) with ``json.encoder.encode_basestring`` (a Python object per *escaped*
   value only).
4. **the Kafka Connect schema** of a ``schema``/``payload`` envelope is cut out as text
   and parsed once per distinct text (``loads_exact``), giving each column's kind.
5. **normalization, key, key_text, seq, extras, col_types, event_id** are pyarrow
   compute / numpy over the whole batch; the event id text is assembled column-wise
   and hashed per change (``hashlib.sha256``: the one Python call per record).

Kafka Connect logical types done column-wise: ``Decimal`` with a scale of 0..6 (base64
decoded by numpy into 16-byte two's complement, written by Arrow's decimal128 to string,
which equals ``_scaled_text`` up to scale 6 and writes exponents beyond), ``MicroTimestamp``
and the millisecond ``Timestamp`` s (Arrow ``strftime`` of microseconds, years 1000..9999);
the base64 TOAST placeholder of a binary column. Kafka keys (``parse_kafka_key``: with or
without their schema, values decoded by the key's field schema, else the images') are
tokenized the same way as a second small batch; tombstones (a null value or ``null``)
are built directly.

Whatever the columnar path does not do exactly is detected and the record is handed to
``decode_records`` (results merged back in order): any record or key not a valid JSON
object for msgspec (a lone surrogate escape included), an integer literal that may pass
Python's 4,300 digits, a wrapper whose payload is not an object, an unwrapped
(flattened) row, ops other than c/r/u/d (truncate, message), a ``transaction`` block, an
escaped or non-ASCII field name, duplicate names, nested values in the fields read,
other logical types (Date, Time*, ZonedTimestamp, NanoTimestamp, VariableScaleDecimal,
Decimal of another scale or sent as a number), ``bytes`` fields, a value of the wrong
JSON kind for its schema type, a non-canonical base64 placeholder, connectors other than
MySQL / PostgreSQL / none, positions that are not plain non-negative integers, an update
that changes the key (two rows), a missing key, a table name too long. ``LAST_STATS``
holds the counts of the last call.
"""

from __future__ import annotations

import hashlib
import json
import logging
from typing import Any

import msgspec
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from udfs.contract import QuarantineError, loads_exact
from udfs.decode import (
    DECODE_RESULT_DDL,
    MAX_PARTITION_NAME_BYTES,
    _decoder,
    _table_id,
    arrow_type_of_ddl,
    decode_records,
    partition_name_bytes,
)
from udfs.formats import connect_types
from udfs.formats.debezium_json import _envelope_fields

LAST_STATS: dict[str, Any] = {}
_LOG = logging.getLogger(__name__)
_WARNED: list[bool] = []

UNAVAILABLE = "__debezium_unavailable_value"
#: base64 of the placeholder's bytes starts so (any string starting so falls back)
_B64_PLACEHOLDER_PREFIX = "X19kZWJleml1bV91bmF2YWlsYWJsZV92YWx1Z"

# ----------------------------------------------------------------------------- Arrow type


def decode_arrow_type() -> pa.DataType:
    """The Arrow type Spark exchanges ``DECODE_RESULT_DDL`` as (no JVM: pyspark's own
    ``to_arrow_type`` over the types parsed here)."""
    return arrow_type_of_ddl(DECODE_RESULT_DDL)


DECODE_TYPE = decode_arrow_type()
CHANGE_TYPE: pa.StructType = DECODE_TYPE.field("changes").type.value_type
MAP_TYPE = CHANGE_TYPE.field("before").type
LIST_TYPE = CHANGE_TYPE.field("before_cols").type

# ----------------------------------------------------------------------------- byte classes

_WS = np.zeros(256, dtype=bool)
for _c in b" \t\n\r":
    _WS[_c] = True
_STRUCT = np.zeros(256, dtype=np.int8)
for _c, _k in zip(b"{}[]:,", range(1, 7), strict=True):
    _STRUCT[_c] = _k
OPEN_OBJ, CLOSE_OBJ, OPEN_ARR, CLOSE_ARR, COLON, COMMA = range(1, 7)

# value kinds
K_ABSENT, K_STR, K_INT, K_FRAC, K_TRUE, K_FALSE, K_NULL, K_OBJ, K_ARR = range(9)

# object roles
R_NONE, R_TOP, R_PAYLOAD, R_BEFORE, R_AFTER, R_SOURCE = range(6)

TOP_KEYS = ["schema", "payload"]
PAYLOAD_KEYS = ["op", "before", "after", "source", "ts_ms", "ts_us", "ts_ns", "transaction"]
SOURCE_KEYS = [
    "connector",
    "snapshot",
    "name",
    "version",
    "gtid",
    "server_id",
    "file",
    "pos",
    "row",
    "lsn",
    "txId",
    "scn",
    "change_lsn",
    "db",
    "schema",
    "table",
    "collection",
    "ts_us",
    "ts_ns",
    "ts_ms",
    "commit_lsn",
    "event_serial_no",
]
_SK = {k: i for i, k in enumerate(SOURCE_KEYS)}
_PK = {k: i for i, k in enumerate(PAYLOAD_KEYS)}
EXTRA_FIELDS = [
    ("connector", "connector"),
    ("snapshot", "snapshot"),
    ("server", "name"),
    ("version", "version"),
    *((n, n) for n in ("gtid", "server_id", "file", "pos", "row", "lsn", "txId", "scn", "change_lsn")),
]

# field kinds of a Kafka Connect field schema
F_NONE, F_PLAIN, F_INT, F_FLOAT, F_BOOL, F_UNSUPPORTED, F_DECIMAL, F_TS_US, F_TS_MS = range(9)
#: canonical base64 of the TOAST placeholder's bytes (a binary column's placeholder)
_B64_PLACEHOLDER = "X19kZWJleml1bV91bmF2YWlsYWJsZV92YWx1ZQ=="
_B64 = np.full(256, 255, dtype=np.uint8)
for _i, _c in enumerate(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"):
    _B64[_c] = _i
_B64[ord("=")] = 64
#: microseconds of 1000-01-01 and of 9999-12-31T23:59:59.999999 (outside: the fallback)
_TS_MIN, _TS_MAX = -30610224000000000, 253402300799999999
_NON_FINITE = ["NaN", "Infinity", "-Infinity", "+Infinity"]

_RAW_LIST = msgspec.json.Decoder(list[msgspec.Raw])
_RAW_ONE = msgspec.json.Decoder(msgspec.Raw)
_STR_LIST = msgspec.json.Decoder(list[str])
_ENCODE = json.encoder.encode_basestring  # what JSONEncoder(ensure_ascii=False) writes for a str


# ----------------------------------------------------------------------------- helpers


def _gather(b: np.ndarray, starts: np.ndarray, ends: np.ndarray, valid: np.ndarray | None = None) -> pa.StringArray:
    """Byte spans ``b[starts[i]:ends[i]]`` as one string array.

    Spans in increasing order that do not overlap (the common case: tokens in text
    order) are cut by Arrow: the whole buffer viewed as alternating gap/span strings,
    then every second one taken (a memcpy per span). Others take a numpy gather.
    """
    n = len(starts)
    if n and len(b) < 2**31 - 1:
        bounds = np.empty(2 * n + 2, dtype=np.int64)
        bounds[0] = 0
        bounds[1:-1:2] = starts
        bounds[2:-1:2] = ends
        bounds[-1] = len(b)
        if (np.diff(bounds) >= 0).all():
            view = pa.StringArray.from_buffers(2 * n + 1, pa.py_buffer(bounds.astype(np.int32)), pa.py_buffer(b))
            out = view.take(pa.array(np.arange(1, 2 * n, 2, dtype=np.int32)))
            if valid is not None and not valid.all():
                out = pc.if_else(pa.array(valid), out, pa.nulls(n, pa.string()))
            return out
    lens = (ends - starts).astype(np.int64)
    if valid is not None:
        lens = np.where(valid, lens, 0)
    offs = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(lens, out=offs[1:])
    total = int(offs[-1])
    if total:
        idx = np.repeat(starts.astype(np.int64) - offs[:-1], lens) + np.arange(total, dtype=np.int64)
        data = b[idx]
    else:
        data = np.zeros(0, dtype=np.uint8)
    validity = None
    null_count = 0
    if valid is not None and not valid.all():
        validity = pa.array(valid, type=pa.bool_()).buffers()[1]
        null_count = int(n - valid.sum())
    if total < 2**31 - 1:
        return pa.StringArray.from_buffers(
            n, pa.py_buffer(offs.astype(np.int32)), pa.py_buffer(data), validity, null_count
        )
    return pa.LargeStringArray.from_buffers(n, pa.py_buffer(offs), pa.py_buffer(data), validity, null_count).cast(
        pa.string()
    )


def _skip_ws(b: np.ndarray, p: np.ndarray, limit: np.ndarray | None = None) -> np.ndarray:
    """First non-whitespace position at or after ``p`` (at most ``limit``)."""
    p = p.copy()
    if limit is None:
        limit = np.full(len(p), len(b))
    last = max(len(b) - 1, 0)
    while len(p) and len(b):
        m = (p < limit) & _WS[b[np.minimum(p, last)]]
        if not m.any():
            break
        p[m] += 1
    return p


def _join_lists(offsets: np.ndarray, values: pa.Array, sep: str) -> pa.Array:
    lists = pa.ListArray.from_arrays(pa.array(offsets, type=pa.int32()), values)
    return pc.binary_join(lists, sep)


def _cat(*parts: Any) -> pa.Array:
    return pc.binary_join_element_wise(*parts, "")


class _Tokens:
    """Stage 1 over the bytes of a batch of valid JSON texts."""

    def __init__(self, b: np.ndarray, off: np.ndarray) -> None:
        self.b = b
        self.off = off
        qpos = np.flatnonzero(b == 34)
        bpos = np.flatnonzero(b == 92)
        if len(bpos):
            cand = qpos[(qpos > 0) & (b[np.maximum(qpos - 1, 0)] == 92)]
            if len(cand):
                brk = np.flatnonzero(np.diff(bpos) != 1) + 1
                run_start = np.zeros(len(bpos), dtype=np.int64)
                run_start[brk] = brk
                np.maximum.accumulate(run_start, out=run_start)
                i = np.searchsorted(bpos, cand - 1)
                runlen = i - run_start[i] + 1
                escaped = cand[runlen % 2 == 1]
                if len(escaped):
                    qpos = np.delete(qpos, np.searchsorted(qpos, escaped))
        self.qpos = qpos
        self.bpos = bpos
        # { } [ ] : , -- clearing bit 5 maps { } onto [ ]
        folded = b & np.uint8(0xDF)
        mask = (folded == 0x5B) | (folded == 0x5D) | (b == 0x3A) | (b == 0x2C)
        spos = np.flatnonzero(mask)
        inside = np.searchsorted(qpos, spos) % 2 == 1
        spos = spos[~inside]
        scls = _STRUCT[b[spos]]
        delta = np.zeros(len(spos), dtype=np.int32)
        delta[(scls == OPEN_OBJ) | (scls == OPEN_ARR)] = 1
        delta[(scls == CLOSE_OBJ) | (scls == CLOSE_ARR)] = -1
        after = np.cumsum(delta, dtype=np.int32)
        self.spos, self.scls = spos, scls
        # level: the depth of the container a token is in (openers: the one they open)
        self.level = np.where(delta == 1, after, after - delta)
        self.rec = None
        # parent opener of every colon (per level, the last opener of that level before it)
        self.colons = np.flatnonzero(scls == COLON)
        self.crec = np.searchsorted(off, spos[self.colons], side="right") - 1
        self.parent = np.full(len(self.colons), -1, dtype=np.int64)
        openers = np.flatnonzero(scls == OPEN_OBJ)
        clev = self.level[self.colons]
        olev = self.level[openers]
        for lev in np.unique(clev):
            o = openers[olev == lev]
            m = clev == lev
            j = np.searchsorted(spos[o], spos[self.colons[m]]) - 1
            self.parent[m] = o[j]

    def key_spans(self, colons: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        qi = np.searchsorted(self.qpos, self.spos[colons]) - 1
        return self.qpos[qi - 1] + 1, self.qpos[qi]

    def key_has_bs(self, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
        return np.searchsorted(self.bpos, ends) > np.searchsorted(self.bpos, starts)

    def values(self, colons: np.ndarray) -> dict[str, np.ndarray]:
        """Kind, byte span, escape flag and opener token of the value of each colon."""
        b = self.b
        p = _skip_ws(b, self.spos[colons] + 1)
        c = b[p]
        kind = np.full(len(colons), K_INT, dtype=np.int8)
        start = p.copy()
        end = p.copy()
        is_str = c == 34
        kind[is_str] = K_STR
        kind[c == ord("{")] = K_OBJ
        kind[c == ord("[")] = K_ARR
        kind[c == ord("t")] = K_TRUE
        kind[c == ord("f")] = K_FALSE
        kind[c == ord("n")] = K_NULL
        if is_str.any():
            qi = np.searchsorted(self.qpos, p[is_str])
            start[is_str] = p[is_str] + 1
            end[is_str] = self.qpos[qi + 1]
        end[kind == K_TRUE] += 4
        end[kind == K_FALSE] += 5
        num = kind == K_INT
        if num.any():
            e = self.spos[colons[num] + 1]
            while True:
                m = _WS[b[e - 1]]
                if not m.any():
                    break
                e[m] -= 1
            end[num] = e
            lit = _gather(b, start[num], e)
            frac = pc.match_substring_regex(lit, "[.eE]").to_numpy(zero_copy_only=False)
            k = kind[num]
            k[frac] = K_FRAC
            kind[num] = k
        has_bs = np.zeros(len(colons), dtype=bool)
        if is_str.any() and len(self.bpos):
            has_bs[is_str] = self.key_has_bs(start[is_str], end[is_str])
        opener = np.where((kind == K_OBJ) | (kind == K_ARR), colons + 1, -1)
        return {"kind": kind, "start": start, "end": end, "bs": has_bs, "opener": opener}

    def texts(self, v: dict[str, np.ndarray], need_esc: bool = False) -> tuple[pa.Array, pa.Array | None, int]:
        """Canonical text of scalar values (null for null/absent/containers) and, with
        ``need_esc``, its JSON-escaped inner text; and how many needed unescaping."""
        kind, bs = v["kind"], v["bs"]
        scalar = (kind == K_STR) | (kind == K_INT) | (kind == K_FRAC) | (kind == K_TRUE) | (kind == K_FALSE)
        plain = scalar & ~bs
        text = _gather(self.b, v["start"], v["end"], plain | (scalar & bs))
        is_int = kind == K_INT
        if is_int.any():
            minus0 = is_int & np.asarray(
                pc.fill_null(pc.equal(text, "-0"), False).to_numpy(zero_copy_only=False), dtype=bool
            )
            if minus0.any():
                text = pc.replace_with_mask(text, pa.array(minus0), pa.array(["0"] * int(minus0.sum())))
        esc = text if need_esc else None
        n_bs = int(bs.sum())
        if n_bs:
            quoted = _gather(self.b, v["start"][bs] - 1, v["end"][bs] + 1)
            joined = _join_lists(np.array([0, n_bs]), quoted, ",")[0].as_buffer()
            unescaped = _STR_LIST.decode(b"[" + joined.to_pybytes() + b"]")
            if need_esc:
                # JSON's two-character escapes are the ones json.dumps writes, so the
                # source text is already the canonical escaped text, unless it holds a
                # \uXXXX or a \/ (then the Python encoder writes it)
                raw = _gather(self.b, v["start"][bs], v["end"][bs])
                odd = np.asarray(pc.match_substring_regex(raw, r"\\[u/]").to_numpy(zero_copy_only=False), dtype=bool)
                if odd.any():
                    fixed = [_ENCODE(unescaped[i])[1:-1] for i in np.flatnonzero(odd).tolist()]
                    raw = pc.replace_with_mask(raw, pa.array(odd), pa.array(fixed, type=pa.string()))
                esc = pc.replace_with_mask(esc, pa.array(bs), raw)
            text = pc.replace_with_mask(text, pa.array(bs), pa.array(unescaped, type=pa.string()))
        return text, esc, n_bs


# ----------------------------------------------------------------------------- schemas


def _field_kind(f: Any) -> tuple[int, str | None, int]:
    """(field kind, Spark type, decimal scale) of a Kafka Connect field schema."""
    if not isinstance(f, dict):
        return F_NONE, None, 0
    name = f.get("name")
    if name is not None:
        try:
            kind = connect_types.logical_type(f)
            if name == connect_types.DECIMAL:
                scale = connect_types._int_param(f, "scale", None)
                if scale is not None and 0 <= scale <= 6:  # Arrow writes no exponent up to 6
                    return F_DECIMAL, kind, scale
            elif name == "io.debezium.time.MicroTimestamp":
                return F_TS_US, kind, 0
            elif name in ("io.debezium.time.Timestamp", "org.apache.kafka.connect.data.Timestamp"):
                return F_TS_MS, kind, 0
        except QuarantineError:
            pass
        return F_UNSUPPORTED, None, 0
    t = f.get("type")
    kind = connect_types._PRIMITIVE_TYPES.get(t) if isinstance(t, str) else None
    if t in connect_types._INT_TYPES:
        return F_INT, kind, 0
    if t in connect_types._FLOAT_TYPES:
        return F_FLOAT, kind, 0
    if t == "boolean":
        return F_BOOL, kind, 0
    if t == "bytes":
        return F_UNSUPPORTED, kind, 0
    return F_PLAIN, kind, 0


def _patch(base: pa.Array, at: np.ndarray, values: pa.Array) -> pa.Array:
    """``base`` with the elements at indices ``at`` replaced by ``values``."""
    if not len(at):
        return base
    idx = np.arange(len(base), dtype=np.int64)
    idx[at] = len(base) + np.arange(len(at))
    return pa.concat_arrays([base, values.cast(base.type)]).take(pa.array(idx))


def _decimal_texts(
    b: np.ndarray, start: np.ndarray, end: np.ndarray, scales: np.ndarray
) -> tuple[pa.Array, np.ndarray]:
    """Kafka Connect ``Decimal`` values (base64 of the big-endian two's-complement
    unscaled integer, at most 16 bytes) as decimal text; and which could not be done
    (bad base64, too long: the fallback decides). Arrow's decimal128 to string is
    ``_scaled_text`` for scales 0..6."""
    n = len(start)
    width = 24
    length = end - start
    j = np.arange(width)
    inside = j[None, :] < length[:, None]
    ch = b[np.where(inside, start[:, None] + j, 0)]
    sext = np.where(inside, _B64[ch], 0)
    is_pad = (sext == 64) & inside
    npad = is_pad.sum(axis=1)
    pad_at_end = (is_pad == (inside & (j[None, :] >= (length - npad)[:, None]))).all(axis=1)
    bad = (length % 4 != 0) | (length > width) | (sext == 255).any(axis=1) | (npad > 2) | ~pad_at_end
    sext = np.where(is_pad, 0, sext).astype(np.uint32).reshape(n, width // 4, 4)
    triple = (sext[:, :, 0] << 18) | (sext[:, :, 1] << 12) | (sext[:, :, 2] << 6) | sext[:, :, 3]
    raw = np.stack(((triple >> 16) & 255, (triple >> 8) & 255, triple & 255), axis=2).reshape(n, -1).astype(np.uint8)
    nbytes = length // 4 * 3 - npad
    bad |= nbytes > 16
    nbytes = np.where(bad, 0, nbytes)
    neg = (nbytes > 0) & (raw[:, 0] >= 128)
    k = np.arange(16)
    src = nbytes[:, None] - 1 - k[None, :]
    le = np.where(src >= 0, raw[np.arange(n)[:, None], np.clip(src, 0, None)], np.where(neg, 255, 0)[:, None])
    le = np.ascontiguousarray(le.astype(np.uint8))
    out = pa.nulls(n, pa.string())
    for sc in np.unique(scales).tolist():
        at = np.flatnonzero(scales == sc)
        dec = pa.Array.from_buffers(pa.decimal128(38, sc), len(at), [None, pa.py_buffer(le[at].tobytes())])
        out = _patch(out, at, pc.cast(dec, pa.string()))
    return out, bad


# ----------------------------------------------------------------------------- main


def decode_debezium_columnar(options_json: str, texts: pa.Array, kafka_keys: pa.Array | None = None) -> pa.StructArray:
    """The ``cdc_decode`` result of a batch of Debezium JSON records (see module doc)."""
    texts = texts.cast(pa.string())
    if texts.offset:
        texts = pa.concat_arrays([texts])
    n = len(texts)
    try:
        decoder, opts = _decoder(options_json)
    except (ValueError, KeyError):  # bad options: decode_records quarantines every record
        keys = kafka_keys.to_pylist() if kafka_keys is not None else None
        return pa.array(decode_records(options_json, texts.to_pylist(), keys), type=DECODE_TYPE)
    options = decoder.options
    tables = opts.get("tables") or {}
    # a Kafka tombstone (null value, or the text null): skipped, built here
    tomb = np.asarray(pc.fill_null(pc.equal(texts, "null"), True).to_numpy(zero_copy_only=False), dtype=bool) & (
        opts.get("format") == "debezium_json"
    )
    eligible = ~tomb
    idx = np.flatnonzero(eligible)
    sub = texts.take(pa.array(idx, type=pa.int64())) if len(idx) < n else texts
    sub_keys = None
    if kafka_keys is not None:
        kk = kafka_keys.cast(pa.string())
        sub_keys = kk.take(pa.array(idx, type=pa.int64())) if len(idx) < n else kk
    if opts.get("format") != "debezium_json":
        ok, fast = np.zeros(len(idx), dtype=bool), pa.array([], type=DECODE_TYPE)
    else:
        try:
            ok, fast = _fast(sub, options, tables, sub_keys)
        except Exception as exc:  # noqa: BLE001 - a bug here must not lose a batch: decode_records takes them all
            _fast_stats.clear()
            _fast_stats["columnar_error"] = f"{type(exc).__name__}: {exc}"
            # the results stay right (decode_records), only slower: say so once per worker
            if not _WARNED:
                _WARNED.append(True)
                _LOG.warning("columnar Debezium decoder failed; batch decoded record by record", exc_info=True)
            ok, fast = np.zeros(len(idx), dtype=bool), pa.array([], type=DECODE_TYPE)
    fast_idx = idx[ok]
    tomb_idx = np.flatnonzero(tomb)
    fb_mask = np.ones(n, dtype=bool)
    fb_mask[fast_idx] = False
    fb_mask[tomb_idx] = False
    fb_idx = np.flatnonzero(fb_mask)
    parts = [fast]
    if len(tomb_idx):
        fast_idx = np.concatenate((fast_idx, tomb_idx))
        parts.append(_tombstones(len(tomb_idx)))
        if len(parts[0]) == 0:
            parts = parts[1:]
        else:
            parts = [pa.concat_arrays(parts)]
    if len(fb_idx):
        fb_texts = texts.take(pa.array(fb_idx)).to_pylist()
        fb_keys = kafka_keys.take(pa.array(fb_idx)).to_pylist() if kafka_keys is not None else None
        parts.append(pa.array(decode_records(options_json, fb_texts, fb_keys), type=DECODE_TYPE))
    LAST_STATS.clear()
    LAST_STATS.update(records=n, fast=len(fast_idx), fallback=len(fb_idx), tombstones=len(tomb_idx), **_fast_stats)
    if not len(fb_idx) and not len(tomb_idx):
        return fast
    if not len(fast_idx):
        return parts[-1]
    order = np.concatenate((fast_idx, fb_idx))
    inverse = np.empty(n, dtype=np.int64)
    inverse[order] = np.arange(n)
    return pa.concat_arrays(parts).take(pa.array(inverse))


_fast_stats: dict[str, Any] = {}


def _tombstones(k: int) -> pa.StructArray:
    """``k`` results ``skipped`` / ``tombstone`` with no change (as ``decode_records``)."""
    changes_type = DECODE_TYPE.field("changes").type
    return pa.StructArray.from_arrays(
        [
            pa.array(["skipped"] * k, pa.string()),
            pa.array(["tombstone"] * k, pa.string()),
            pa.ListArray.from_arrays(
                pa.array(np.zeros(k + 1, dtype=np.int32)), pa.array([], CHANGE_TYPE), type=changes_type
            ),
            pa.nulls(k, DECODE_TYPE.field("ddl").type),
        ],
        fields=list(DECODE_TYPE),
    )


#: seconds per stage, accumulated over calls (PROFILE_STAGES switches it on)
PROFILE_STAGES = False
STAGE_SECONDS: dict[str, float] = {}
_last_tick = [0.0, ""]


def _tick(label: str) -> None:
    if not PROFILE_STAGES:
        return
    import time

    now = time.perf_counter()
    if _last_tick[1]:
        STAGE_SECONDS[_last_tick[1]] = STAGE_SECONDS.get(_last_tick[1], 0.0) + now - _last_tick[0]
    _last_tick[0], _last_tick[1] = now, label


def _validate(b: np.ndarray, off: np.ndarray, first: np.ndarray) -> np.ndarray:
    """Which texts are one valid JSON value each (msgspec, one call for the batch).

    ``first``: each text's first non-whitespace byte. A text whose msgspec ``Raw`` has
    exactly its trimmed length is the one value msgspec parsed at its place.
    """
    n = len(off) - 1
    if not len(b):
        return np.zeros(n, dtype=bool)
    body = np.insert(b, off[1:-1], np.uint8(44)) if n > 1 else b
    last = off[1:] - 1
    while True:  # last non-whitespace byte (before ``first``: an empty text)
        m = (last >= first) & _WS[b[np.clip(last, 0, len(b) - 1)]]
        if not m.any():
            break
        last[m] -= 1
    trimmed = np.maximum(last + 1 - first, 0)
    try:
        raws = _RAW_LIST.decode(b"[" + body.tobytes() + b"]")
        if len(raws) == n:
            lens = np.fromiter(map(len, raws), dtype=np.int64, count=n)
            if np.array_equal(lens, trimmed):
                return np.ones(n, dtype=bool)
    except msgspec.DecodeError:
        pass
    out = np.zeros(n, dtype=bool)
    for i in range(n):
        try:
            _RAW_ONE.decode(b[off[i] : off[i + 1]].tobytes())
            out[i] = True
        except msgspec.DecodeError:
            pass
    return out


def _buffers(texts: pa.StringArray) -> tuple[np.ndarray, np.ndarray]:
    _, obuf, dbuf = texts.buffers()
    off = np.frombuffer(obuf, dtype=np.int32)[texts.offset : texts.offset + len(texts) + 1].astype(np.int64)
    b = np.frombuffer(dbuf, dtype=np.uint8) if dbuf is not None else np.zeros(0, dtype=np.uint8)
    b = b[off[0] : off[-1]]
    return b, off - off[0]


def _slots(tok: _Tokens, colons: np.ndarray, recs: np.ndarray, names: list[str], n: int, fb: np.ndarray) -> np.ndarray:
    """``slot[code, rec]``: the colon of key ``names[code]`` in each record's object, -1 when
    absent; a name twice in one object sends the record to the fallback."""
    starts, ends = tok.key_spans(colons)
    fb[recs[tok.key_has_bs(starts, ends)]] = True
    code = pc.index_in(_gather(tok.b, starts, ends), value_set=pa.array(names)).fill_null(-1).to_numpy()
    slot = np.full((len(names), n), -1, dtype=np.int64)
    m = code >= 0
    counts = np.bincount(code[m] * n + recs[m], minlength=len(names) * n)
    fb[np.flatnonzero(counts.reshape(len(names), n).max(axis=0) > 1)] = True
    slot[code[m], recs[m]] = colons[m]
    return slot


#: Kafka Connect schemas seen (id 0: no schema): parsed value, and their text -> id
_SCHEMAS: list[Any] = [None]
_SCHEMA_IDS: dict[bytes, int] = {}
#: the cache is emptied between batches past either bound: a wide table's schema text
#: runs to hundreds of kB (and its parsed value to several times that), so a count
#: alone would let a feed of many wide tables hold gigabytes in each Python worker
_MAX_SCHEMAS = 512
_MAX_SCHEMA_BYTES = 16 * 2**20
_schema_bytes = 0
_SCHEMA_PREFIX = np.frombuffer(b'{"schema":', dtype=np.uint8)


def _schema_id(text: str) -> int:
    global _schema_bytes
    raw = text.encode("utf-8")
    sid = _SCHEMA_IDS.get(raw)
    if sid is None:
        _RAW_ONE.decode(raw)  # a valid JSON value (it comes from a validated record)
        sid = _SCHEMA_IDS[raw] = len(_SCHEMAS)
        _SCHEMAS.append(loads_exact(text))
        _schema_bytes += len(raw)
    return sid


def clear_schema_cache() -> None:
    """Forget every cached schema (between batches only: a batch uses the ids)."""
    global _schema_bytes
    del _SCHEMAS[1:]
    _SCHEMA_IDS.clear()
    _schema_bytes = 0


def schema_cache_size() -> tuple[int, int]:
    """(schemas cached, bytes of their text)."""
    return len(_SCHEMAS) - 1, _schema_bytes


def _cut_known_schemas(
    b: np.ndarray, off: np.ndarray, first: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Records ``{"schema": S, ...`` whose S is a schema text seen before get S replaced
    by ``{}`` (its first and last byte); returns the new bytes, offsets, first bytes and
    the schema id per record (-1: not cut). S is a whole JSON value, so a record that
    starts with it at the value's place holds exactly it (one memcmp per record)."""
    n = len(off) - 1
    sid = np.full(n, -1, dtype=np.int64)
    if not _SCHEMA_IDS:
        return b, off, first, sid
    k = len(_SCHEMA_PREFIX)
    cand = np.flatnonzero(first + k + 2 < off[1:])
    for j in range(k):
        cand = cand[b[first[cand] + j] == _SCHEMA_PREFIX[j]]
    if not len(cand):
        return b, off, first, sid
    p0 = _skip_ws(b, first[cand] + k)
    data = b.tobytes()
    ends = off[1:][cand]
    left = np.ones(len(cand), dtype=bool)
    length = np.zeros(n, dtype=np.int64)
    start_of = np.zeros(n, dtype=np.int64)
    for text, i in list(_SCHEMA_IDS.items()):
        size = len(text)
        m = np.flatnonzero(left & (p0 + size < ends))
        if not len(m):
            continue
        m = m[b[p0[m]] == text[0]]
        m = m[b[p0[m] + size - 1] == text[-1]]
        m = m[b[p0[m] + size // 2] == text[size // 2]]
        for c in m.tolist():
            if data.startswith(text, int(p0[c])):
                left[c] = False
                r = cand[c]
                sid[r] = i
                length[r] = size
                start_of[r] = p0[c]
    hit = sid >= 0
    if not hit.any():
        return b, off, first, sid
    # spans: [record start, schema start + 1) and [schema end - 1, record end)
    rs, re = off[:-1], off[1:]
    a_end = np.where(hit, start_of + 1, re)
    b_start = np.where(hit, start_of + length - 1, re)
    lens1 = a_end - rs
    lens2 = re - b_start
    lens = np.stack((lens1, lens2), axis=1).ravel()
    offs = np.zeros(2 * n + 1, dtype=np.int64)
    np.cumsum(lens, out=offs[1:])
    mv = memoryview(data)
    pieces = []
    for a0, a1, b0, b1 in zip(rs.tolist(), a_end.tolist(), b_start.tolist(), re.tolist(), strict=True):
        pieces.append(mv[a0:a1])
        pieces.append(mv[b0:b1])
    nb = np.frombuffer(b"".join(pieces), dtype=np.uint8)
    noff = offs[::2].copy()
    nfirst = first - off[:-1] + noff[:-1]
    return nb, noff, nfirst, sid


def _typed(
    b: np.ndarray,
    ev: dict[str, np.ndarray],
    etext: pa.Array,
    eesc: pa.Array,
    fk: np.ndarray,
    scale: np.ndarray,
    erec: np.ndarray,
    prov: np.ndarray,
    fb: np.ndarray,
) -> tuple[pa.Array, pa.Array]:
    """Values checked against their field kind (what ``decode_value`` would quarantine
    sends the record to the fallback) and the logical types decoded, for the values
    ``prov`` selects; returns the texts and escaped texts with those replaced."""
    ek = ev["kind"]
    is_str = ek == K_STR
    fb[erec[prov & (fk == F_UNSUPPORTED)]] = True
    fb[erec[prov & (fk == F_INT) & (ek != K_INT) & (ek != K_NULL)]] = True
    fb[erec[prov & (fk == F_BOOL) & (ek != K_TRUE) & (ek != K_FALSE) & (ek != K_NULL)]] = True
    nonfinite = is_str & np.asarray(
        pc.fill_null(pc.is_in(etext, value_set=pa.array(_NON_FINITE)), False).to_numpy(zero_copy_only=False), dtype=bool
    )
    fb[erec[prov & (fk == F_FLOAT) & ~((ek == K_INT) | (ek == K_FRAC) | (ek == K_NULL) | nonfinite)]] = True
    # logical types: Decimal (base64 bytes) and epoch timestamps, column-wise
    fb[erec[prov & (fk == F_DECIMAL) & (ek != K_STR) & (ek != K_NULL)]] = True
    fb[erec[prov & ((fk == F_TS_US) | (fk == F_TS_MS)) & (ek != K_INT) & (ek != K_NULL)]] = True
    dec_at = np.flatnonzero(prov & (fk == F_DECIMAL) & (ek == K_STR))
    if len(dec_at):
        fb[erec[dec_at[ev["bs"][dec_at]]]] = True  # an escape in base64 text: the fallback
        dtext, dbad = _decimal_texts(b, ev["start"][dec_at], ev["end"][dec_at], scale[dec_at])
        fb[erec[dec_at[dbad]]] = True
        etext = _patch(etext, dec_at, dtext)
        eesc = _patch(eesc, dec_at, dtext)
    ts_at = np.flatnonzero(prov & ((fk == F_TS_US) | (fk == F_TS_MS)) & (ek == K_INT))
    if len(ts_at):
        long = (ev["end"][ts_at] - ev["start"][ts_at]) > 18
        fb[erec[ts_at[long]]] = True
        lit = etext.take(pa.array(ts_at))
        units = pc.cast(pc.if_else(pa.array(long), "0", lit), pa.int64()).to_numpy()
        is_ms = fk[ts_at] == F_TS_MS
        fb[erec[ts_at[is_ms & (np.abs(units) > 9_000_000_000_000_000)]]] = True
        micros = np.where(is_ms & (np.abs(units) <= 9_000_000_000_000_000), units * 1000, units)
        fb[erec[ts_at[(micros < _TS_MIN) | (micros > _TS_MAX)]]] = True
        micros = np.clip(micros, _TS_MIN, _TS_MAX)
        stamp = pa.array(micros, type=pa.int64()).cast(pa.timestamp("us"))
        ttext = _cat(pc.strftime(stamp, format="%Y-%m-%dT%H:%M:%S"), "Z")
        etext = _patch(etext, ts_at, ttext)
        eesc = _patch(eesc, ts_at, ttext)
    return etext, eesc


def _event_keys(
    keys: pa.Array | None,
    n: int,
    tok: _Tokens,
    schema_id: np.ndarray,
    schemas: list[Any],
    image_names: pa.Array,
    fb: np.ndarray,
) -> dict[str, Any]:
    """The Kafka key of each record (``parse_kafka_key``): entries (record, lower-cased
    name, its code among the image names, place in the key, rank among the record's
    sorted names, text, escaped text) and whether a record has a non-empty key. Values
    are decoded by the key's schema, else the after image's field, else the before's."""
    empty = np.zeros(0, dtype=np.int64)
    out: dict[str, Any] = {"has": np.zeros(n, dtype=bool), "count": np.zeros(n, dtype=np.int64)}
    out.update(rec=empty, lcode=empty, order=empty, rank=empty)
    out.update(names=pa.array([], pa.string()), text=pa.array([], pa.string()), esc=pa.array([], pa.string()))
    if keys is None:
        return out
    valid = ~np.asarray(keys.is_null().to_numpy(zero_copy_only=False), dtype=bool)
    valid &= ~np.asarray(pc.fill_null(pc.equal(keys, "null"), True).to_numpy(zero_copy_only=False), dtype=bool)
    valid &= ~fb
    recs = np.flatnonzero(valid)
    if not len(recs):
        return out
    kb, koff = _buffers(keys.take(pa.array(recs)))
    kfirst = _skip_ws(kb, koff[:-1], koff[1:])
    ok = _validate(kb, koff, kfirst)
    if len(kb):
        ok &= kb[np.minimum(kfirst, len(kb) - 1)] == ord("{")
    fb[recs[~ok]] = True  # not JSON (quarantined), or not an object: the fallback
    if not ok.all():
        recs = recs[ok]
        if not len(recs):
            return out
        kb, koff = _buffers(keys.take(pa.array(recs)))
        kfirst = _skip_ws(kb, koff[:-1], koff[1:])
    m = len(recs)
    kfb = np.zeros(m, dtype=bool)
    ktok = _Tokens(kb, koff)
    top = np.searchsorted(ktok.spos, kfirst)
    role = np.zeros(len(ktok.spos), dtype=np.int8)
    role[top] = R_TOP
    cm = role[ktok.parent] == R_TOP
    slot = _slots(ktok, ktok.colons[cm], ktok.crec[cm], TOP_KEYS, m, kfb)
    n_top = np.bincount(ktok.crec[cm], minlength=m)
    wrapped = (slot[1] >= 0) & (n_top == (slot[0] >= 0) + 1)
    key_open = top.copy()
    key_sid = np.zeros(m, dtype=np.int64)
    w = np.flatnonzero(wrapped)
    if len(w):
        pv = ktok.values(slot[1][w])
        key_open[w] = np.where(pv["kind"] == K_OBJ, pv["opener"], -1)  # payload not an object: no key
        ws = np.flatnonzero(wrapped & (slot[0] >= 0))
        if len(ws):
            sv = ktok.values(slot[0][ws])
            is_obj = sv["kind"] == K_OBJ
            so = sv["opener"][is_obj]
            closers = np.flatnonzero(ktok.scls == CLOSE_OBJ)
            clev = ktok.level[closers]
            close_at = np.empty(len(so), dtype=np.int64)
            for lv in np.unique(ktok.level[so]):
                c = closers[clev == lv]
                mm = ktok.level[so] == lv
                close_at[mm] = c[np.searchsorted(c, so[mm])]
            stext = _gather(kb, ktok.spos[so], ktok.spos[close_at] + 1)
            key_sid[ws[is_obj]] = [_schema_id(t) for t in stext.to_pylist()]
    role[:] = R_NONE
    role[key_open[key_open >= 0]] = R_PAYLOAD
    em = role[ktok.parent] == R_PAYLOAD
    ecol = ktok.colons[em]
    erec = ktok.crec[em]
    ns, ne = ktok.key_spans(ecol)
    kfb[erec[ktok.key_has_bs(ns, ne)]] = True
    raw = _gather(kb, ns, ne)
    kfb[erec[~np.asarray(pc.string_is_ascii(raw).to_numpy(zero_copy_only=False), dtype=bool)]] = True
    ev = ktok.values(ecol)
    kfb[erec[(ev["kind"] == K_OBJ) | (ev["kind"] == K_ARR)]] = True
    text, esc, _ = ktok.texts(ev, need_esc=True)
    if len(ecol):
        # field schema: the key's own, else the after image's, else the before image's
        rn = pc.dictionary_encode(raw)
        rcode = rn.indices.to_numpy().astype(np.int64)
        rnames = rn.dictionary.to_pylist()
        combos, inv = np.unique(np.stack((key_sid[erec], schema_id[recs][erec], rcode)), axis=1, return_inverse=True)
        inv = np.asarray(inv).ravel()
        fk_c = np.zeros(combos.shape[1], dtype=np.int8)
        sc_c = np.zeros(combos.shape[1], dtype=np.int32)
        for c_i, (k_s, e_s, r_c) in enumerate(combos.T.tolist()):
            env = _envelope_fields(schemas[e_s]) if e_s else {}
            fields = {
                **connect_types.field_schemas(env.get("before")),
                **connect_types.field_schemas(env.get("after")),
                **(connect_types.field_schemas(schemas[k_s]) if k_s else {}),
            }
            k, _, sc = _field_kind(fields.get(rnames[r_c]))
            fk_c[c_i], sc_c[c_i] = k, sc
        text, esc = _typed(kb, ev, text, esc, fk_c[inv], sc_c[inv], erec, np.ones(len(ecol), dtype=bool), kfb)
    lnames = pc.ascii_lower(raw)
    le = pc.dictionary_encode(lnames)
    lc = le.indices.to_numpy().astype(np.int64)
    nl = max(len(le.dictionary), 1)
    dk = np.sort(erec * nl + lc)
    dups = dk[1:][dk[1:] == dk[:-1]]
    if len(dups):  # a name twice once lower-cased: the fallback
        kfb[np.unique(dups // nl)] = True
    fb[recs[kfb]] = True
    # place in the key (its order) and rank among the record's names (sorted)
    order = np.arange(len(ecol)) - np.searchsorted(erec, erec)
    rank_of = np.empty(nl, dtype=np.int64)
    rank_of[np.argsort(np.array(le.dictionary.to_pylist(), dtype=object), kind="stable")] = np.arange(
        len(le.dictionary)
    )
    by_name = np.lexsort((rank_of[lc], erec))
    rank = np.empty(len(ecol), dtype=np.int64)
    rank[by_name] = np.arange(len(ecol)) - np.searchsorted(erec[by_name], erec[by_name])
    count = np.bincount(erec, minlength=m)
    out["has"][recs[(count > 0) & ~kfb]] = True
    out["count"][recs] = count
    image_code = pc.index_in(lnames, value_set=image_names).fill_null(-1).to_numpy().astype(np.int64)
    out.update(rec=recs[erec], lcode=image_code, order=order, rank=rank, names=lnames, text=text, esc=esc)
    return out


def _field_values(
    tok: _Tokens, slot: np.ndarray, names: list[str], n: int
) -> dict[str, tuple[np.ndarray, dict[str, np.ndarray], np.ndarray, pa.Array]]:
    """Per field name: (records having it, its values, kind per record, text per value),
    with one ``values``/``texts`` call for all the fields together (field-major)."""
    have_all = [np.flatnonzero(slot[i] >= 0) for i in range(len(names))]
    allc = np.concatenate([slot[i][h] for i, h in enumerate(have_all)])
    v = tok.values(allc)
    t, _, _ = tok.texts(v)
    out = {}
    a = 0
    for i, name in enumerate(names):
        h = have_all[i]
        k = len(h)
        vi = {key: arr[a : a + k] for key, arr in v.items()}
        kind = np.zeros(n, dtype=np.int8)
        kind[h] = vi["kind"]
        out[name] = (h, vi, kind, t.slice(a, k))
        a += k
    return out


def _fast(
    texts: pa.StringArray, options: dict[str, Any], tables: dict[str, Any], keys: pa.Array | None = None
) -> tuple[np.ndarray, pa.Array]:
    """(which records the columnar path decoded, their results in order)."""
    n = len(texts)
    _fast_stats.clear()
    if n == 0:
        return np.zeros(0, dtype=bool), pa.array([], type=DECODE_TYPE)
    _tick("cut")
    if len(_SCHEMAS) > _MAX_SCHEMAS or _schema_bytes > _MAX_SCHEMA_BYTES:
        clear_schema_cache()
    b, off = _buffers(texts)
    first = _skip_ws(b, off[:-1], off[1:])
    # a Kafka Connect schema seen before is not tokenized (nor validated again): its
    # text is cut out (replaced by ``{}``: a valid value for a valid value), its parse reused
    b, off, first, cached_sid = _cut_known_schemas(b, off, first)
    _tick("validate")
    fb = ~_validate(b, off, first)
    _tick("tokens")
    _fast_stats["invalid_json"] = int(fb.sum())
    if fb.any():  # tokenize the valid records only (quotes pair up within a valid text)
        keep = np.flatnonzero(~fb)
        ok_sub, res = _fast(
            texts.take(pa.array(keep)), options, tables, None if keys is None else keys.take(pa.array(keep))
        )
        ok = np.zeros(n, dtype=bool)
        ok[keep[ok_sub]] = True
        return ok, res
    # every record an object
    fb |= b[first] != ord("{")
    tok = _Tokens(b, off)
    # an integer literal past Python's 4,300 digits fails decode_records' parse: a number
    # that long sits between two structural tokens more than 4,000 bytes apart
    gaps = np.flatnonzero(np.diff(tok.spos) > 4000)
    if len(gaps):
        at = _skip_ws(b, tok.spos[gaps] + 1)
        c = b[at]
        numeric = (c == ord("-")) | ((c >= ord("0")) & (c <= ord("9")))
        fb[np.searchsorted(off, tok.spos[gaps][numeric], side="right") - 1] = True
    _tick("toplevel")
    role = np.zeros(len(tok.spos), dtype=np.int8)
    top_open = np.searchsorted(tok.spos, first)
    top_open = np.minimum(top_open, len(tok.spos) - 1)
    role[top_open[~fb]] = R_TOP
    colons = tok.colons
    crec = tok.crec

    # --- top level: schema / payload
    m = role[tok.parent] == R_TOP
    tcol = colons[m]
    slot_top = _slots(tok, tcol, crec[m], TOP_KEYS, n, fb)
    n_top = np.bincount(crec[m], minlength=n)
    wrapped = (slot_top[1] >= 0) & (n_top == (slot_top[0] >= 0) + 1)
    # wrapped: payload must be an object (null: a tombstone, to the fallback)
    pay = slot_top[1][wrapped]
    pv = tok.values(pay)
    fb[np.flatnonzero(wrapped)[pv["kind"] != K_OBJ]] = True
    payload_open = top_open.copy()
    w = np.flatnonzero(wrapped)
    good = pv["kind"] == K_OBJ
    payload_open[w[good]] = pv["opener"][good]
    # schema: an object (cut out as text), null or absent; anything else to the fallback
    schema_id = np.zeros(n, dtype=np.int64)
    sch_rec = np.flatnonzero(wrapped & (slot_top[0] >= 0) & (cached_sid < 0))
    schemas = _SCHEMAS
    if len(sch_rec):
        sv = tok.values(slot_top[0][sch_rec])
        fb[sch_rec[(sv["kind"] != K_OBJ) & (sv["kind"] != K_NULL)]] = True
        is_obj = sv["kind"] == K_OBJ
        so = sv["opener"][is_obj]
        # the matching close: the first '}' of the same level after the opener
        closers = np.flatnonzero(tok.scls == CLOSE_OBJ)
        close_at = np.empty(len(so), dtype=np.int64)
        lev = tok.level[so]
        clev = tok.level[closers]
        for lv in np.unique(lev):
            c = closers[clev == lv]
            mm = lev == lv
            close_at[mm] = c[np.searchsorted(c, so[mm])]
        stext = _gather(b, tok.spos[so], tok.spos[close_at] + 1)
        enc = stext.dictionary_encode()
        ids = np.array([_schema_id(t) for t in enc.dictionary.to_pylist()], dtype=np.int64)
        schema_id[sch_rec[is_obj]] = ids[enc.indices.to_numpy()]
        _fast_stats["schemas_parsed"] = len(ids)
    cut = (cached_sid >= 0) & wrapped
    schema_id[cut] = cached_sid[cut]
    _fast_stats["schemas_cut"] = int(cut.sum())

    _tick("payload")
    # --- payload fields
    role[payload_open[~fb]] = R_PAYLOAD
    m = role[tok.parent] == R_PAYLOAD
    slot_p = _slots(tok, colons[m], crec[m], PAYLOAD_KEYS, n, fb)
    pvals = _field_values(tok, slot_p, PAYLOAD_KEYS, n)
    # op: a string among c r u d
    have, v, kind, _ = pvals["op"]
    fb |= kind != K_STR
    op_text = np.full(n, "", dtype=object)
    opt = _gather(b, v["start"], v["end"], v["kind"] == K_STR)
    op_code = np.full(n, -1, dtype=np.int8)
    op_code[have] = pc.index_in(opt, value_set=pa.array(["c", "r", "u", "d"])).fill_null(-1).to_numpy()
    fb |= op_code < 0
    fb[have[v["bs"]]] = True
    del op_text
    # images
    present = {}
    for name, r in (("before", R_BEFORE), ("after", R_AFTER)):
        have, v, kind, _ = pvals[name]
        fb |= (kind != K_ABSENT) & (kind != K_NULL) & (kind != K_OBJ)
        is_obj = v["kind"] == K_OBJ
        role[v["opener"][is_obj & ~fb[have]]] = r
        present[name] = kind == K_OBJ
    have, v, kind, _ = pvals["source"]
    fb |= (kind != K_ABSENT) & (kind != K_NULL) & (kind != K_OBJ)
    role[v["opener"][(v["kind"] == K_OBJ) & ~fb[have]]] = R_SOURCE
    _, _, kind, _ = pvals["transaction"]
    fb |= (kind != K_ABSENT) & (kind != K_NULL)

    def int_field(field: tuple[Any, ...], allow_neg: bool) -> pa.Array:
        """Text of an integer field (null when absent/null; other kinds -> fallback)."""
        have, v, k, t = field
        bad = (k != K_ABSENT) & (k != K_NULL) & (k != K_INT)
        fb[bad] = True
        full = pa.nulls(n, pa.string())
        if len(have):
            is_int = v["kind"] == K_INT
            if not allow_neg:
                neg = is_int & (b[v["start"]] == ord("-"))
                fb[have[neg]] = True
            mask = np.zeros(n, dtype=bool)
            mask[have[is_int]] = True
            full = pc.replace_with_mask(full, pa.array(mask), t.filter(pa.array(is_int)))
        return full

    def ts_us(vals: dict[str, tuple[Any, ...]]) -> pa.Array:
        out = np.zeros(n, dtype=np.int64)
        done = np.zeros(n, dtype=bool)
        for name, mul, div in (("ts_us", 1, 1), ("ts_ns", 1, 1000), ("ts_ms", 1000, 1)):
            have, v, kind, t = vals[name]
            # _as_int: None for null / bool / a fraction; a string or container -> fallback
            fb[(kind == K_STR) | (kind == K_OBJ) | (kind == K_ARR)] = True
            is_int = v["kind"] == K_INT
            lens = v["end"] - v["start"]
            long = is_int & (lens > 18)
            fb[have[long]] = True
            use = is_int & ~long & ~done[have]
            if use.any():
                vals_i = pc.cast(t.filter(pa.array(use)), pa.int64()).to_numpy()
                r = have[use]
                if mul != 1:
                    fb[r[np.abs(vals_i) > (2**63 - 1) // mul]] = True
                    vals_i = vals_i * mul
                if div != 1:
                    vals_i = vals_i // div
                out[r] = vals_i
                done[r] = True
        return pa.array(out, type=pa.int64(), mask=~done)

    capture = ts_us(pvals)

    _tick("source")
    # --- source fields
    m = role[tok.parent] == R_SOURCE
    slot_s = _slots(tok, colons[m], crec[m], SOURCE_KEYS, n, fb)
    svals = _field_values(tok, slot_s, SOURCE_KEYS, n)
    commit = ts_us(svals)

    def canon(name: str) -> pa.Array:
        """canonical_text of a source field for every record (null: absent or null)."""
        have, v, kind, t = svals[name]
        fb[(kind == K_OBJ) | (kind == K_ARR)] = True
        if not len(have):
            return pa.nulls(n, pa.string())
        at = np.full(n, -1, dtype=np.int32)
        at[have] = np.arange(len(have), dtype=np.int32)
        return t.take(pa.array(at, mask=at < 0))

    src = {name: canon(name) for name in SOURCE_KEYS if name not in ("ts_us", "ts_ns", "ts_ms")}
    # snapshot flag: str(value).lower() in (...)
    snap = src["snapshot"]
    snap_kind = svals["snapshot"][2]
    fb |= (snap_kind == K_STR) & ~np.asarray(
        pc.string_is_ascii(snap.fill_null("")).to_numpy(zero_copy_only=False), dtype=bool
    )
    snap_lower = pc.ascii_lower(snap)
    is_snap = pc.is_in(
        snap_lower, value_set=pa.array(["true", "last", "first", "first_in_data_collection", "last_in_data_collection"])
    )
    is_snap = np.asarray(
        pc.fill_null(pc.and_(is_snap, pa.array(snap_kind == K_STR)), False).to_numpy(zero_copy_only=False), dtype=bool
    ) | (snap_kind == K_TRUE)
    ops = np.array(["insert", "snapshot", "update", "delete"], dtype=object)
    opc = np.where(op_code < 0, 0, op_code)
    opc = np.where((opc == 0) & is_snap, 1, opc)
    op_dict = pa.DictionaryArray.from_arrays(pa.array(opc.astype(np.int32)), pa.array(ops.tolist()))
    op_arr = op_dict.cast(pa.string())

    _tick("seq")
    # --- seq
    conn_kind = svals["connector"][2]
    fb |= (conn_kind != K_ABSENT) & (conn_kind != K_NULL) & (conn_kind != K_STR)
    conn = pc.ascii_lower(src["connector"].fill_null(""))
    fb |= ~np.asarray(pc.string_is_ascii(src["connector"].fill_null("")).to_numpy(zero_copy_only=False), dtype=bool)
    conn_np = conn.to_numpy(zero_copy_only=False)
    has = {k: slot_s[_SK[k]] >= 0 for k in SOURCE_KEYS}
    is_mysql = (conn_np == "mysql") | (has["file"] & has["pos"])
    is_pg = ~is_mysql & ((conn_np == "postgresql") | has["lsn"])
    other = ~is_mysql & ~is_pg & ((conn_np == "sqlserver") | has["change_lsn"] | (conn_np == "oracle") | has["scn"])
    fb |= other
    pos_t = int_field(svals["pos"], allow_neg=False)
    row_t = int_field(svals["row"], allow_neg=False)
    lsn_t = int_field(svals["lsn"], allow_neg=False)
    file_t = src["file"]
    file_kind = svals["file"][2]
    file_ok = file_kind == K_STR
    fb |= (
        file_ok
        & is_mysql
        & ~np.asarray(pc.string_is_ascii(file_t.fill_null("")).to_numpy(zero_copy_only=False), dtype=bool)
    )
    fb |= (
        file_ok
        & is_mysql
        & np.asarray(pc.match_substring(file_t.fill_null(""), "\n").to_numpy(zero_copy_only=False), dtype=bool)
    )
    digits = pc.struct_field(
        pc.extract_regex(pc.if_else(pa.array(file_ok), file_t, pa.nulls(n, pa.string())), r"(?P<d>[0-9]+)$"), [0]
    )
    file_no = pc.utf8_ltrim(digits, "0")
    file_no = pc.if_else(pc.equal(file_no, ""), "0", file_no)

    def pad(t: pa.Array) -> pa.Array:
        return pc.utf8_lpad(t, 20, "0")

    my_seq = _cat(pad(file_no), ".", pad(pos_t), ".", pad(row_t.fill_null("0")))
    pg_seq = pad(lsn_t)
    seq = pc.if_else(pa.array(is_mysql), my_seq, pc.if_else(pa.array(is_pg), pg_seq, pa.nulls(n, pa.string())))

    _tick("tables")

    # --- table names
    def name_field(name: str) -> tuple[pa.Array, np.ndarray]:
        kind = svals[name][2]
        fb[(kind != K_ABSENT) & (kind != K_NULL) & (kind != K_STR)] = True
        return src[name], kind

    db, _ = name_field("db")
    schema_t, _ = name_field("schema")
    table, tkind = name_field("table")
    coll, ckind = name_field("collection")
    tbl_ok = np.asarray(
        pc.fill_null(pc.greater(pc.binary_length(table), 0), False).to_numpy(zero_copy_only=False), dtype=bool
    )
    col_ok = np.asarray(
        pc.fill_null(pc.greater(pc.binary_length(coll), 0), False).to_numpy(zero_copy_only=False), dtype=bool
    )
    table = pc.if_else(
        pa.array(tbl_ok), table, pc.if_else(pa.array(col_ok), coll, pa.scalar(options.get("table"), pa.string()))
    )
    fb |= ~np.asarray(
        pc.fill_null(pc.greater(pc.binary_length(table), 0), False).to_numpy(zero_copy_only=False), dtype=bool
    )
    # table_id per distinct (db, schema, table)
    codes = []
    dicts = []
    for arr in (db, schema_t, table):
        e = pc.dictionary_encode(arr)
        codes.append(e.indices.fill_null(-1).to_numpy() + 1)
        dicts.append([None, *e.dictionary.to_pylist()])
    combo = (codes[0] * (len(dicts[1])) + codes[1]) * len(dicts[2]) + codes[2]
    uniq, inv = np.unique(combo, return_inverse=True)
    tids: list[str] = []
    tid_keys: list[list[str]] = []
    tid_bad = np.zeros(len(uniq), dtype=bool)
    for j, u in enumerate(uniq.tolist()):
        c2 = u % len(dicts[2])
        c1 = (u // len(dicts[2])) % len(dicts[1])
        c0 = u // (len(dicts[2]) * len(dicts[1]))
        tb = dicts[2][c2]
        if not tb:
            tids.append("")
            tid_keys.append([])
            tid_bad[j] = True
            continue
        tid = _table_id(tables, dicts[0][c0], dicts[1][c1], tb)
        cfg_keys = (tables.get(tid) or {}).get("key") or None
        if partition_name_bytes(tid) > MAX_PARTITION_NAME_BYTES:
            tid_bad[j] = True
        if not cfg_keys or not isinstance(cfg_keys, list) or not all(isinstance(k, str) for k in cfg_keys):
            cfg_keys = []  # no configured key: the event's own key, else the fallback
        tids.append(tid)
        tid_keys.append(list(cfg_keys))
    fb |= tid_bad[inv]
    tid_nokey = np.array([not k for k in tid_keys], dtype=bool)
    table_id = pa.DictionaryArray.from_arrays(pa.array(inv.astype(np.int32)), pa.array(tids, pa.string())).cast(
        pa.string()
    )

    _tick("entries")
    # --- image entries
    pr = role[tok.parent]
    m = (pr == R_BEFORE) | (pr == R_AFTER)
    ecol = colons[m]
    erec = crec[m]
    side = (pr[m] == R_AFTER).astype(np.int64)
    ns, ne = tok.key_spans(ecol)
    fb[erec[tok.key_has_bs(ns, ne)]] = True
    raw_names = _gather(b, ns, ne)
    fb[erec[~np.asarray(pc.string_is_ascii(raw_names).to_numpy(zero_copy_only=False), dtype=bool)]] = True
    ev = tok.values(ecol)
    fb[erec[(ev["kind"] == K_OBJ) | (ev["kind"] == K_ARR)]] = True
    etext, eesc, n_bs = tok.texts(ev, need_esc=True)
    _fast_stats["escaped_values"] = n_bs
    _fast_stats["values"] = len(ecol)
    # TOAST: the placeholder text is "not provided"; a possible base64 placeholder -> fallback
    is_str = ev["kind"] == K_STR
    toast = is_str & np.asarray(
        pc.fill_null(pc.equal(etext, UNAVAILABLE), False).to_numpy(zero_copy_only=False), dtype=bool
    )
    b64 = is_str & np.asarray(
        pc.fill_null(pc.starts_with(etext, _B64_PLACEHOLDER_PREFIX), False).to_numpy(zero_copy_only=False), dtype=bool
    )
    b64_exact = b64 & np.asarray(
        pc.fill_null(pc.equal(etext, _B64_PLACEHOLDER), False).to_numpy(zero_copy_only=False), dtype=bool
    )
    fb[erec[b64 & ~b64_exact]] = True
    # schema kinds: per (schema, side, raw name)
    renc = pc.dictionary_encode(raw_names)
    rcode = renc.indices.to_numpy()
    rnames = renc.dictionary.to_pylist()
    used = np.unique(schema_id[erec]) if len(erec) else np.zeros(0, dtype=np.int64)
    fkind_tab = np.full((len(used), 2, len(rnames)), F_NONE, dtype=np.int8)
    fscale_tab = np.zeros((len(used), 2, len(rnames)), dtype=np.int32)
    types: list[str | None] = [None]
    type_code = {None: 0}
    ftype_tab = np.zeros((len(used), 2, len(rnames)), dtype=np.int32)
    for u_i, s_i in enumerate(used.tolist()):
        if s_i == 0:
            continue
        fields = _envelope_fields(schemas[s_i])
        for sd, nm in ((0, "before"), (1, "after")):
            fs = connect_types.field_schemas(fields.get(nm))
            for r_i, rn in enumerate(rnames):
                if rn in fs:
                    k, t, sc = _field_kind(fs[rn])
                    fkind_tab[u_i, sd, r_i] = k
                    fscale_tab[u_i, sd, r_i] = sc
                    if t not in type_code:
                        type_code[t] = len(types)
                        types.append(t)
                    ftype_tab[u_i, sd, r_i] = type_code[t]
    esid = np.searchsorted(used, schema_id[erec])
    fk = fkind_tab[esid, side, rcode]
    # the base64 placeholder: not provided in a binary (Decimal) column or one without a
    # schema; a plain value in a column whose schema is not binary
    toast |= b64_exact & ((fk == F_NONE) | (fk == F_DECIMAL))
    fb[erec[b64_exact & (fk == F_UNSUPPORTED)]] = True
    prov = ~toast
    etype = ftype_tab[esid, side, rcode]
    etext, eesc = _typed(b, ev, etext, eesc, fk, fscale_tab[esid, side, rcode], erec, prov, fb)
    # lower-cased names; a name twice in one image (before or after lowering) -> fallback
    lnames = pc.ascii_lower(raw_names)
    lenc = pc.dictionary_encode(lnames)
    lcode = lenc.indices.to_numpy().astype(np.int64)
    ldict = lenc.dictionary.to_pylist()
    nl = max(len(ldict), 1)
    image_id = erec * 2 + side
    dup_key = image_id * nl + lcode
    srt = np.sort(dup_key)
    dups = srt[1:][srt[1:] == srt[:-1]]
    if len(dups):
        fb[np.unique(dups // nl // 2)] = True

    _tick("keys")
    # --- keys (from the configured key columns; the images are lower-cased)
    keypos_tab = np.full((len(tids), nl), -1, dtype=np.int64)
    nkeys = np.array([len(k) for k in tid_keys], dtype=np.int64)
    for t_i, cfg_keys in enumerate(tid_keys):
        pos_of = {k: i for i, k in enumerate(cfg_keys)}
        for l_i, name in enumerate(ldict):
            if name in pos_of:
                keypos_tab[t_i, l_i] = pos_of[name]
    etid = inv[erec]
    ekeypos = keypos_tab[etid, lcode]
    # the Kafka key, when the record has one: its columns (sorted) are the key columns
    ek_ = _event_keys(keys, n, tok, schema_id, schemas, lenc.dictionary, fb)
    has_ek = ek_["has"]
    fb |= tid_nokey[inv] & ~has_ek
    nkeys_rec = np.where(has_ek, ek_["count"], nkeys[inv])
    if has_ek.any():
        # an image column's place among its record's sorted key columns (-1: not one)
        known = ek_["lcode"] >= 0
        combo = (ek_["rec"] * nl + ek_["lcode"])[known]
        krank = ek_["rank"][known]
        srt = np.argsort(combo, kind="stable")
        combo, krank = combo[srt], krank[srt]
        mine = erec * nl + lcode
        ev_pos = np.full(len(mine), -1, dtype=np.int64)
        if len(combo):
            j = np.clip(np.searchsorted(combo, mine), 0, len(combo) - 1)
            hit = combo[j] == mine
            ev_pos[hit] = krank[j[hit]]
        ekeypos = np.where(has_ek[erec], ev_pos, ekeypos)
    is_key = prov & (ekeypos >= 0)
    kcount = np.bincount(image_id[is_key], minlength=2 * n).reshape(n, 2)
    full_key = (kcount == nkeys_rec[:, None]) & (nkeys_rec[:, None] > 0)
    full_key[:, 0] &= present["before"]
    full_key[:, 1] &= present["after"]
    old_key, new_key = full_key[:, 0], full_key[:, 1]
    key_side = np.full(n, -1, dtype=np.int64)
    is_del = opc == 3
    is_upd = opc == 2
    is_ins = (opc == 0) | (opc == 1)
    # delete: event key, old, new; update: new, event key, old; insert: new, event key
    key_side[is_del & old_key] = 0
    key_side[is_del & ~old_key & new_key] = 1
    key_side[is_del & has_ek] = 2
    key_side[is_upd & ~new_key & old_key] = 0
    key_side[is_upd & ~new_key & has_ek] = 2
    key_side[is_upd & new_key] = 1
    key_side[is_ins & ~new_key & has_ek] = 2
    key_side[is_ins & new_key] = 1
    fb |= key_side < 0
    # an update changing the key (two rows) -> fallback
    both = is_upd & old_key & new_key
    if both.any():
        kb = np.flatnonzero(is_key & both[erec])
        order = np.lexsort((ekeypos[kb], side[kb], erec[kb]))
        kb = kb[order]
        bsel = kb[side[kb] == 0]
        asel = kb[side[kb] == 1]
        tb_ = etext.take(pa.array(bsel))
        ta_ = etext.take(pa.array(asel))
        same = pc.fill_null(pc.equal(tb_, ta_), False).to_numpy(zero_copy_only=False)
        both_null = np.asarray(pc.and_(tb_.is_null(), ta_.is_null()).to_numpy(zero_copy_only=False), dtype=bool)
        differ = ~(np.asarray(same, dtype=bool) | both_null)
        fb[erec[bsel][differ]] = True

    _fast_stats["fallback_reasons_flagged"] = int(fb.sum())
    _tick("maps")
    # ------------------------------------------------------------------ compaction
    keep = ~fb
    kidx = np.flatnonzero(keep)
    nk = len(kidx)
    if nk == 0:
        return keep, pa.array([], type=DECODE_TYPE)
    newrec = np.cumsum(keep) - 1
    em = keep[erec] & prov
    sel = np.flatnonzero(em)
    erec_k = newrec[erec[sel]]
    side_k = side[sel]
    img_k = erec_k * 2 + side_k
    order = np.argsort(img_k, kind="stable")
    sel = sel[order]
    img_k = img_k[order]
    erec_k = erec_k[order]
    side_k = side_k[order]
    take_sel = pa.array(sel)
    names_k = lnames.take(take_sel)
    text_k = etext.take(take_sel)
    esc_k = eesc.take(take_sel)
    counts = np.bincount(img_k, minlength=2 * nk)
    img_off = np.zeros(2 * nk + 1, dtype=np.int64)
    np.cumsum(counts, out=img_off[1:])
    pres_b = present["before"][kidx]
    pres_a = present["after"][kidx]

    def image_cols(sd: int, pres: np.ndarray) -> tuple[pa.Array, pa.Array, np.ndarray]:
        starts = img_off[sd : 2 * nk : 2]
        ends = img_off[sd + 1 : 2 * nk + 1 : 2]
        # entries of this side are contiguous per record, but the two sides interleave
        rng = np.flatnonzero(side_k == sd)
        lens = ends - starts
        offs = np.zeros(nk + 1, dtype=np.int32)
        np.cumsum(lens, out=offs[1:])
        mask = pa.array(~pres)
        keys = names_k.take(pa.array(rng))
        items = text_k.take(pa.array(rng))
        mp = pa.MapArray.from_arrays(pa.array(offs), keys, items, type=MAP_TYPE, mask=mask)
        cols = pa.ListArray.from_arrays(pa.array(offs), keys, type=LIST_TYPE, mask=mask)
        return mp, cols, rng

    before_map, before_cols, rng_b = image_cols(0, pres_b)
    after_map, after_cols, rng_a = image_cols(1, pres_a)

    # col_types: provided columns with a type, before's first, a name once (first place, last type)
    et_k = etype[sel]
    lc_k = lcode[sel]
    typed = np.flatnonzero(et_k > 0)
    ct_key = erec_k[typed] * nl + lc_k[typed]
    # first place of each (record, name); the last type given to it
    _, first_i = np.unique(ct_key, return_index=True)
    rev = typed[::-1]
    _, last_i_rev = np.unique((erec_k[rev] * nl + lc_k[rev]), return_index=True)
    last_type = et_k[rev[last_i_rev]]
    firsts = typed[first_i]
    o = np.argsort(firsts, kind="stable")
    firsts = firsts[o]
    last_type = last_type[o]
    ct_rec = erec_k[firsts]
    ct_counts = np.bincount(ct_rec, minlength=nk)
    ct_off = np.zeros(nk + 1, dtype=np.int32)
    np.cumsum(ct_counts, out=ct_off[1:])
    type_names = pa.array(types, type=pa.string())
    col_types = pa.MapArray.from_arrays(
        pa.array(ct_off), names_k.take(pa.array(firsts)), type_names.take(pa.array(last_type)), type=MAP_TYPE
    )

    # key map (configured order) and key_text (sorted, compact JSON)
    ks = key_side[kidx]
    ekp = ekeypos[sel]
    kmask = (ekp >= 0) & (side_k == ks[erec_k])
    ksel = np.flatnonzero(kmask)
    # name rank by code point (sort_keys)
    rank = np.empty(nl, dtype=np.int64)
    rank[np.argsort(np.array(ldict, dtype=object), kind="stable")] = np.arange(len(ldict))
    rk = rank[lc_k]
    # key entries: from an image (the key columns' order) or the Kafka key (its own order)
    k_rec = erec_k[ksel]
    k_pos = ekp[ksel]
    k_names = names_k.take(pa.array(ksel))
    k_text = text_k.take(pa.array(ksel))
    k_esc = esc_k.take(pa.array(ksel))
    if has_ek.any():
        e_at = np.flatnonzero(keep[ek_["rec"]] & (key_side[ek_["rec"]] == 2))
        k_rec = np.concatenate((k_rec, newrec[ek_["rec"][e_at]]))
        k_pos = np.concatenate((k_pos, ek_["order"][e_at]))
        k_names = pa.concat_arrays([k_names, ek_["names"].take(pa.array(e_at, type=pa.int64()))])
        k_text = pa.concat_arrays([k_text, ek_["text"].take(pa.array(e_at, type=pa.int64()))])
        k_esc = pa.concat_arrays([k_esc, ek_["esc"].take(pa.array(e_at, type=pa.int64()))])
    korder = np.lexsort((k_pos, k_rec))
    k_counts = np.bincount(k_rec, minlength=nk)
    k_off = np.zeros(nk + 1, dtype=np.int32)
    np.cumsum(k_counts, out=k_off[1:])
    key_map = pa.MapArray.from_arrays(
        pa.array(k_off), k_names.take(pa.array(korder)), k_text.take(pa.array(korder)), type=MAP_TYPE
    )
    ksort = pc.sort_indices(
        pa.table({"r": pa.array(k_rec, type=pa.int64()), "n": k_names}),
        sort_keys=[("r", "ascending"), ("n", "ascending")],
    )

    # every provided value as JSON (the text quoted and escaped, or null)
    vj = pc.coalesce(_cat('"', esc_k, '"'), "null")
    k_vj = pc.coalesce(_cat('"', k_esc, '"'), "null")
    kent = _cat('"', k_names.take(ksort), '":', k_vj.take(ksort))
    key_text = _cat("{", _join_lists(k_off, kent, ","), "}")

    _tick("event_id")
    # --- event id: json.dumps([table_id, key_text, op, seq, before, before_cols, after, after_cols, None])
    # both images at once: entries sorted by name within each image (sort_keys), the
    # column lists in their order; image 2r is record r's before, 2r+1 its after
    so = np.lexsort((rk, img_k))
    ent = _cat('"', names_k, '": ', vj).take(pa.array(so))
    objs = _cat("{", _join_lists(img_off, ent, ", "), "}")
    cls_ = _cat("[", _join_lists(img_off, _cat('"', names_k, '"'), ", "), "]")
    pres_all = pa.array(np.stack((pres_b, pres_a), axis=1).ravel())
    objs = pc.if_else(pres_all, objs, "null")
    cls_ = pc.if_else(pres_all, cls_, "null")
    even = pa.array(np.arange(0, 2 * nk, 2, dtype=np.int32))
    odd = pa.array(np.arange(1, 2 * nk, 2, dtype=np.int32))
    bj, aj = objs.take(even), objs.take(odd)
    bcj, acj = cls_.take(even), cls_.take(odd)
    tids_json = pa.array([_ENCODE(t) for t in tids], type=pa.string())
    tid_j = pa.DictionaryArray.from_arrays(pa.array(inv[kidx].astype(np.int32)), tids_json).cast(pa.string())
    kt_j = pc.replace_substring(pc.replace_substring(key_text, "\\", "\\\\"), '"', '\\"')
    seq_k = seq.take(pa.array(kidx))
    seq_j = pc.if_else(seq_k.is_null(), "null", _cat('"', seq_k.fill_null(""), '"'))
    op_k = op_arr.take(pa.array(kidx))
    ident = _cat(
        "[", tid_j, ', "', kt_j, '", "', op_k, '", ', seq_j, ", ", bj, ", ", bcj, ", ", aj, ", ", acj, ", null]"
    )
    if ident.offset:
        ident = pa.concat_arrays([ident])
    ioff = np.frombuffer(ident.buffers()[1], dtype=np.int32)[: nk + 1].tolist()
    mv = memoryview(ident.buffers()[2])
    sha = hashlib.sha256
    event_id = pa.array([sha(mv[ioff[i] : ioff[i + 1]]).hexdigest()[:32] for i in range(nk)], type=pa.string())

    _tick("extras")
    # --- extras: connector, snapshot, server, version, then the positions, when not null
    ex_cols = [src[f].take(pa.array(kidx)) for _, f in EXTRA_FIELDS]
    ex_vals = pa.concat_arrays(ex_cols)
    ex_names = pa.array([name for name, _ in EXTRA_FIELDS], type=pa.string())
    nf = len(EXTRA_FIELDS)
    ex_order = (np.arange(nf)[None, :] * nk + np.arange(nk)[:, None]).ravel()
    ex_valid = ~np.asarray(ex_vals.is_null().to_numpy(zero_copy_only=False), dtype=bool)[ex_order]
    ex_sel = ex_order[ex_valid]
    ex_rec = ex_sel % nk
    ex_field = ex_sel // nk
    ex_off = np.zeros(nk + 1, dtype=np.int32)
    np.cumsum(np.bincount(ex_rec, minlength=nk), out=ex_off[1:])
    extras = pa.MapArray.from_arrays(
        pa.array(ex_off), ex_names.take(pa.array(ex_field)), ex_vals.take(pa.array(ex_sel)), type=MAP_TYPE
    )
    tx = pc.coalesce(src["txId"], src["gtid"]).take(pa.array(kidx))

    kt = pa.array(kidx)
    cols = {
        "row_index": pa.array(np.zeros(nk, dtype=np.int32)),
        "source_db": db.take(kt),
        "source_schema": schema_t.take(kt),
        "source_table": table.take(kt),
        "table_id": table_id.take(kt),
        "op": op_k,
        "key": key_map,
        "key_text": key_text,
        "before": before_map,
        "after": after_map,
        "before_cols": before_cols,
        "after_cols": after_cols,
        "col_types": col_types,
        "seq": seq_k,
        "commit_ts_us": commit.take(kt),
        "capture_ts_us": capture.take(kt),
        "tx_id": tx,
        "event_id": event_id,
        "extras": extras,
    }
    _tick("final")
    change = pa.StructArray.from_arrays([cols[f.name] for f in CHANGE_TYPE], fields=list(CHANGE_TYPE))
    changes = pa.ListArray.from_arrays(
        pa.array(np.arange(nk + 1, dtype=np.int32)), change, type=DECODE_TYPE.field("changes").type
    )
    ddl_type = DECODE_TYPE.field("ddl").type
    result = pa.StructArray.from_arrays(
        [
            pa.DictionaryArray.from_arrays(pa.array(np.zeros(nk, dtype=np.int32)), pa.array(["ok"])).cast(pa.string()),
            pa.nulls(nk, pa.string()),
            changes,
            pa.nulls(nk, ddl_type),
        ],
        fields=list(DECODE_TYPE),
    )
    _tick("")
    return keep, result
