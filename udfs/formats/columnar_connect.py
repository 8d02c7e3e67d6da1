"""Kafka Connect values done column-wise, for the columnar decoders of Connect envelopes
(Debezium JSON, Huawei CDL, Lindorm; :mod:`udfs.formats.connect_types` is what they match).

:func:`field_kind` classes a field schema (what the column-wise path can type, or not);
:func:`typed_values` checks the values against their field kinds (what ``decode_value``
would quarantine sends the record to the fallback) and decodes the logical types done
here:

* ``Decimal`` of scale 0..38: base64 decoded by numpy into 16-byte two's complement,
  its digits written by Arrow's decimal128 of scale 0, the point put in by string
  slicing as ``_scaled_text`` does; ``VariableScaleDecimal`` the same, its two members
  found among the batch's tokens;
* the epoch timestamps (millisecond ``Timestamp`` s, ``MicroTimestamp``,
  ``NanoTimestamp``): Arrow ``strftime``, years 1000..9999; ``Date`` (days, the same
  years);
* the times of day ``Time``, ``MicroTime`` and ``NanoTime``: numpy integer division,
  then Arrow's padding;
* ``ZonedTimestamp`` text: checked by a regular expression and an Arrow parse that must
  write back the same text, then moved to UTC by its offset.

Integer literals are read by Arrow's exact cast once a float parse shows them well
inside int64 (beyond 9e18 the fallback decides). :func:`unavailable` finds Debezium's
TOAST placeholder, as text or as base64 in a binary column. Every other logical type
(negative decimal scales, ``bytes``) is ``F_UNSUPPORTED``: its records fall back.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from udfs.contract import QuarantineError
from udfs.formats import connect_types
from udfs.formats.columnar import (
    K_FALSE,
    K_FRAC,
    K_INT,
    K_NULL,
    K_OBJ,
    K_STR,
    K_TRUE,
    Tokens,
    cat,
    flags,
    gather,
    lookup,
    patch,
)

UNAVAILABLE = "__debezium_unavailable_value"
#: base64 of the placeholder's bytes starts so (any string starting so falls back)
B64_PLACEHOLDER_PREFIX = "X19kZWJleml1bV91bmF2YWlsYWJsZV92YWx1Z"


# field kinds of a Kafka Connect field schema
(
    F_NONE,
    F_PLAIN,
    F_INT,
    F_FLOAT,
    F_BOOL,
    F_UNSUPPORTED,
    F_DECIMAL,
    F_TS_US,
    F_TS_MS,
    F_TS_NS,
    F_DATE,
    F_TIME,
    F_ZONED,
    F_VARIABLE_DECIMAL,
) = range(14)
#: the kinds whose value is an integer count of units (days, or units of a second)
_INT_UNITS = (F_TS_US, F_TS_MS, F_TS_NS, F_DATE, F_TIME)
#: canonical base64 of the TOAST placeholder's bytes (a binary column's placeholder)
B64_PLACEHOLDER = "X19kZWJleml1bV91bmF2YWlsYWJsZV92YWx1ZQ=="
_B64 = np.full(256, 255, dtype=np.uint8)
for _i, _c in enumerate(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"):
    _B64[_c] = _i
_B64[ord("=")] = 64
#: microseconds of 1000-01-01 and of 9999-12-31T23:59:59.999999 (outside: the fallback)
_TS_MIN, _TS_MAX = -30610224000000000, 253402300799999999
#: days of 1000-01-01 and of 9999-12-31 since 1970-01-01
_DATE_MIN, _DATE_MAX = -354285, 2932896
#: ZonedTimestamp text done column-wise: years 1000..9999, ASCII digits, the offsets
#: ``_decode_zoned`` reads (``Z``, ``+hh``, ``+hh:mm``, ``+hhmm``, ``+hh:mm:ss``...)
_ZONED = (
    r"^(?P<head>[1-9][0-9]{3}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2})(?:\.(?P<frac>[0-9]+))?"
    r"(?:Z|(?P<sign>[+-])(?P<hh>[0-9]{2})(?::?(?P<mm>[0-9]{2})(?::?(?P<ss>[0-9]{2}))?)?)$"
)
_ISO_SECONDS = "%Y-%m-%dT%H:%M:%S"
_NON_FINITE = ["NaN", "Infinity", "-Infinity", "+Infinity"]
#: the largest Decimal scale done column-wise (beyond, rare: the fallback)
_MAX_SCALE = 38


def field_kind(f: Any) -> tuple[int, str | None, int]:
    """(field kind, Spark type, decimal scale) of a Kafka Connect field schema (a name or
    type that is not a text, which the decoders cannot look up: unsupported)."""
    if not isinstance(f, dict):
        return F_NONE, None, 0
    if not all(isinstance(f.get(k), (str, type(None))) for k in ("name", "type")):
        return F_UNSUPPORTED, None, 0
    name = f.get("name")
    if name is not None:
        try:
            kind = connect_types.logical_type(f)
            if name == connect_types.DECIMAL:
                scale = connect_types._int_param(f, "scale", None)
                if scale is not None and 0 <= scale <= _MAX_SCALE:
                    return F_DECIMAL, kind, scale
            elif name == "io.debezium.time.MicroTimestamp":
                return F_TS_US, kind, 0
            elif name in ("io.debezium.time.Timestamp", "org.apache.kafka.connect.data.Timestamp"):
                return F_TS_MS, kind, 0
            elif name == "io.debezium.time.NanoTimestamp":
                return F_TS_NS, kind, 0
            elif name in connect_types.DATES:
                return F_DATE, kind, 0
            elif name in connect_types.TIMES:
                per_second, _ = connect_types.TIMES[name]
                return F_TIME, kind, len(str(per_second)) - 1  # the scale: 3, 6 or 9
            elif name == connect_types.ZONED_TIMESTAMP:
                return F_ZONED, kind, 0
            elif name == connect_types.VARIABLE_SCALE_DECIMAL:
                return F_VARIABLE_DECIMAL, kind, 0
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


def decimal_texts(b: np.ndarray, start: np.ndarray, end: np.ndarray, scales: np.ndarray) -> tuple[pa.Array, np.ndarray]:
    """Kafka Connect ``Decimal`` values (base64 of the big-endian two's-complement
    unscaled integer, at most 16 bytes) as ``_scaled_text`` writes them; and which could
    not be done (bad base64, too long: the fallback decides)."""
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
    # Arrow's decimal128 to string is ``_scaled_text`` up to scale 6 (beyond, it writes
    # an exponent for small values); there the point is put in by string slicing into the
    # digits of the unscaled integer (scale 0: no exponent, all 39 digits of 16 bytes)
    out = pa.nulls(n, pa.string())
    for sc in np.unique(scales).tolist():
        at = np.flatnonzero(scales == sc)
        dec = pa.Array.from_buffers(
            pa.decimal128(38, sc if sc <= 6 else 0), len(at), [None, pa.py_buffer(le[at].tobytes())]
        )
        text = pc.cast(dec, pa.string())
        if sc > 6:
            sign = pc.if_else(pa.array(neg[at]), "-", "")
            padded = pc.utf8_lpad(pc.utf8_ltrim(text, "-"), width=sc + 1, padding="0")
            text = cat(sign, pc.utf8_slice_codeunits(padded, 0, -sc), ".", pc.utf8_slice_codeunits(padded, -sc))
        out = patch(out, at, text)
    return out, bad


def _int64_units(lit: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """JSON integer literals as int64, and which do not fit (0 in their place): a float
    parse picks the ones well inside int64 that the exact cast then takes."""
    approx = pc.cast(lit, pa.float64()).to_numpy(zero_copy_only=False)
    bad = ~(np.abs(approx) < 9.0e18)
    return pc.cast(pc.if_else(pa.array(bad), "0", lit), pa.int64()).to_numpy(), bad


def _timestamp_texts(units: np.ndarray, fk: np.ndarray, _: np.ndarray) -> tuple[pa.Array, np.ndarray]:
    """Epoch timestamps (milli-, micro- or nanoseconds) as ``_decode_timestamp`` writes
    them, and which are outside the years 1000..9999 (the fallback)."""
    is_ns = fk == F_TS_NS
    is_ms = fk == F_TS_MS
    bad = is_ms & (np.abs(units) > 9_000_000_000_000_000)
    micros = np.where(is_ms & ~bad, units * 1000, units)
    bad |= ~is_ns & ((micros < _TS_MIN) | (micros > _TS_MAX))  # int64 nanoseconds: 1677..2262
    micros = np.where(is_ns, 0, np.clip(micros, _TS_MIN, _TS_MAX))
    text = cat(pc.strftime(pa.array(micros, type=pa.int64()).cast(pa.timestamp("us")), format=_ISO_SECONDS), "Z")
    ns_at = np.flatnonzero(is_ns)
    if len(ns_at):  # %S of a nanosecond timestamp writes 9 fractional digits
        stamp = pa.array(units[ns_at], type=pa.int64()).cast(pa.timestamp("ns"))
        text = patch(text, ns_at, cat(pc.strftime(stamp, format=_ISO_SECONDS), "Z"))
    return text, bad


def _date_texts(days: np.ndarray, _: np.ndarray, __: np.ndarray) -> tuple[pa.Array, np.ndarray]:
    """Days since 1970-01-01 as ``_decode_date`` writes them (``YYYY-MM-DD``), and which
    are outside the years 1000..9999 (the fallback)."""
    bad = (days < _DATE_MIN) | (days > _DATE_MAX)
    dates = pa.array(np.clip(days, _DATE_MIN, _DATE_MAX).astype(np.int32), type=pa.int32()).cast(pa.date32())
    return pc.strftime(dates, format="%Y-%m-%d"), bad


def _time_texts(units: np.ndarray, _: np.ndarray, scale: np.ndarray) -> tuple[pa.Array, np.ndarray]:
    """Times of day (units of 10**-scale s) as ``_decode_time`` writes them: a sign,
    hours of two digits or more, minutes, seconds and 6 fractional digits (9 for
    nanoseconds); integer arithmetic only."""
    per_second = 10 ** scale.astype(np.int64)
    width = np.where(scale == 9, 9, 6)
    seconds, rest = np.divmod(np.abs(units), per_second)
    minutes, second = np.divmod(seconds, 60)
    hour, minute = np.divmod(minutes, 60)
    fraction = rest * (10 ** width.astype(np.int64) // per_second)

    def two(x: np.ndarray) -> pa.Array:
        return pc.utf8_lpad(pc.cast(pa.array(x), pa.string()), width=2, padding="0")

    frac_text = pc.cast(pa.array(fraction), pa.string())
    frac_text = pc.if_else(
        pa.array(width == 9),
        pc.utf8_lpad(frac_text, width=9, padding="0"),
        pc.utf8_lpad(frac_text, width=6, padding="0"),
    )
    sign = pc.if_else(pa.array(units < 0), "-", "")
    text = cat(sign, two(hour), ":", two(minute), ":", two(second), ".", frac_text)
    return text, np.zeros(len(units), dtype=bool)


def _zoned_texts(lit: pa.Array) -> tuple[pa.Array, np.ndarray]:
    """``ZonedTimestamp`` texts as ``_decode_zoned`` writes them (moved to UTC by their
    offset, the fraction padded to 6 digits), and which this path leaves to the fallback:
    a spelling ``_ZONED`` does not take, a date or time that does not exist (what Arrow
    parses must write back the same), a moment outside the years 1000..9999."""
    parts = pc.extract_regex(lit, _ZONED)
    bad = ~flags(parts.is_valid())

    def part(name: str, default: str) -> pa.Array:
        value = pc.fill_null(pc.struct_field(parts, name), default)
        return pc.if_else(pc.equal(value, ""), default, value)

    head = part("head", "2000-01-01T00:00:00")
    parsed = pc.strptime(head, format=_ISO_SECONDS, unit="s", error_is_null=True)
    bad |= ~flags(pc.equal(pc.strftime(parsed, format=_ISO_SECONDS), head))
    seconds = pc.fill_null(parsed.cast(pa.int64()), 0).to_numpy(zero_copy_only=False)
    hh, mm, ss = (pc.cast(part(name, "0"), pa.int64()).to_numpy(zero_copy_only=False) for name in ("hh", "mm", "ss"))
    west = flags(pc.equal(part("sign", "+"), "-"))
    moment = seconds - np.where(west, -1, 1) * (hh * 3600 + mm * 60 + ss)
    bad |= (moment < _TS_MIN // 1_000_000) | (moment > _TS_MAX // 1_000_000)
    moment = np.where(bad, 0, moment)
    utc = pc.strftime(pa.array(moment, type=pa.int64()).cast(pa.timestamp("s")), format=_ISO_SECONDS)
    fraction = pc.fill_null(pc.struct_field(parts, "frac"), "")
    return cat(utc, ".", pc.utf8_rpad(fraction, width=6, padding="0"), "Z"), bad


def _variable_scale_texts(tok: Tokens, openers: np.ndarray) -> tuple[pa.Array, np.ndarray]:
    """``VariableScaleDecimal`` objects (their openers) as ``_decode_variable_scale``
    writes them, and which this path leaves to the fallback: other than exactly the
    members ``scale`` (an integer 0..38) and ``value`` (base64 text without escapes, of
    at most 16 bytes)."""
    n = len(openers)
    order = np.argsort(openers)
    members = np.flatnonzero(np.isin(tok.parent, openers))
    inner = tok.colons[members]  # the members' colons
    owner = order[lookup(openers[order], tok.parent[members])[1]]
    bad = np.bincount(owner, minlength=n) != 2  # with both names below: exactly the two
    starts, ends, escaped = tok.names(inner)
    bad[owner[escaped]] = True
    code = pc.index_in(gather(tok.b, starts, ends), value_set=pa.array(["scale", "value"]))
    code = code.fill_null(-1).to_numpy(zero_copy_only=False)
    iv = tok.values(inner)
    is_scale, is_value = code == 0, code == 1
    bad[owner[is_scale & (iv["kind"] != K_INT)]] = True
    bad[owner[is_value & ((iv["kind"] != K_STR) | iv["bs"])]] = True
    bad[owner[is_scale & (iv["end"] - iv["start"] > 2)]] = True  # a sign, or beyond 99
    scale = np.full(n, -1, dtype=np.int64)
    digits = gather(tok.b, iv["start"][is_scale], np.minimum(iv["end"], iv["start"] + 2)[is_scale])
    plain = pc.match_substring_regex(digits, "^[0-9]+$")
    scale[owner[is_scale]] = pc.cast(pc.if_else(plain, digits, "-1"), pa.int64()).to_numpy(zero_copy_only=False)
    value_start = np.zeros(n, dtype=np.int64)
    value_end = np.zeros(n, dtype=np.int64)
    value_start[owner[is_value]] = iv["start"][is_value]
    value_end[owner[is_value]] = iv["end"][is_value]
    has_value = np.zeros(n, dtype=bool)
    has_value[owner[is_value]] = True
    bad |= ~has_value | (scale < 0) | (scale > _MAX_SCALE)
    # (the TOAST placeholder's base64, which ``is_unavailable`` reads in here, is 28
    # bytes: more than ``decimal_texts`` takes, so such a value falls back)
    texts, dbad = decimal_texts(tok.b, value_start, value_end, np.where(bad, 0, scale))
    return texts, bad | dbad


def typed_values(
    tok: Tokens,
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
    ``prov`` selects; returns the texts and escaped texts with those replaced. An object
    value is read only as a ``VariableScaleDecimal`` (``{"scale": s, "value": base64}``,
    its members found among ``tok`` 's); any other flags its record."""
    b = tok.b
    ek = ev["kind"]
    is_str = ek == K_STR
    fb[erec[prov & (fk == F_UNSUPPORTED)]] = True
    fb[erec[prov & (fk == F_INT) & (ek != K_INT) & (ek != K_NULL)]] = True
    fb[erec[prov & (fk == F_BOOL) & (ek != K_TRUE) & (ek != K_FALSE) & (ek != K_NULL)]] = True
    nonfinite = is_str & np.asarray(
        pc.fill_null(pc.is_in(etext, value_set=pa.array(_NON_FINITE)), False).to_numpy(zero_copy_only=False), dtype=bool
    )
    fb[erec[prov & (fk == F_FLOAT) & ~((ek == K_INT) | (ek == K_FRAC) | (ek == K_NULL) | nonfinite)]] = True
    # logical types: the JSON kind each expects (else the fallback), then decoded column-wise
    fb[erec[prov & (fk == F_DECIMAL) & (ek != K_STR) & (ek != K_NULL)]] = True
    fb[erec[prov & np.isin(fk, _INT_UNITS) & (ek != K_INT) & (ek != K_NULL)]] = True
    fb[erec[prov & (fk == F_ZONED) & (ek != K_STR) & (ek != K_NULL)]] = True
    dec_at = np.flatnonzero(prov & (fk == F_DECIMAL) & (ek == K_STR))
    if len(dec_at):
        fb[erec[dec_at[ev["bs"][dec_at]]]] = True  # an escape in base64 text: the fallback
        dtext, dbad = decimal_texts(b, ev["start"][dec_at], ev["end"][dec_at], scale[dec_at])
        fb[erec[dec_at[dbad]]] = True
        etext = patch(etext, dec_at, dtext)
        eesc = patch(eesc, dec_at, dtext)
    for kinds, decode in (
        ((F_TS_US, F_TS_MS, F_TS_NS), _timestamp_texts),
        ((F_DATE,), _date_texts),
        ((F_TIME,), _time_texts),
    ):
        at = np.flatnonzero(prov & np.isin(fk, kinds) & (ek == K_INT))
        if len(at):
            units, bad = _int64_units(etext.take(pa.array(at)))
            text, out_of_range = decode(units, fk[at], scale[at])
            fb[erec[at[bad | out_of_range]]] = True
            etext = patch(etext, at, text)
            eesc = patch(eesc, at, text)
    fb[erec[(ek == K_OBJ) & (fk != F_VARIABLE_DECIMAL)]] = True
    fb[erec[prov & (fk == F_VARIABLE_DECIMAL) & (ek != K_OBJ) & (ek != K_NULL)]] = True
    at = np.flatnonzero(prov & (fk == F_VARIABLE_DECIMAL) & (ek == K_OBJ))
    if len(at):
        text, bad = _variable_scale_texts(tok, ev["opener"][at])
        fb[erec[at[bad]]] = True
        etext = patch(etext, at, text)
        eesc = patch(eesc, at, text)
    at = np.flatnonzero(prov & (fk == F_ZONED) & (ek == K_STR))
    if len(at):
        text, bad = _zoned_texts(etext.take(pa.array(at)))
        fb[erec[at[bad | ev["bs"][at]]]] = True
        etext = patch(etext, at, text)
        eesc = patch(eesc, at, text)
    return etext, eesc


def unavailable(
    etext: pa.Array, kind: np.ndarray, fk: np.ndarray, erec: np.ndarray, fb: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Debezium's TOAST placeholder among image values (their canonical texts, JSON kinds
    and field kinds): the values that are the placeholder (its text; its canonical base64
    in a binary column or one without a schema), and the texts that start like its
    base64. A base64 look-alike that is not exactly it, or the base64 in a column of
    another logical type, flags its record in ``fb`` (the decoder decides)."""
    is_str = kind == K_STR
    toast = is_str & flags(pc.equal(etext, UNAVAILABLE))
    b64 = is_str & flags(pc.starts_with(etext, B64_PLACEHOLDER_PREFIX))
    b64_exact = b64 & flags(pc.equal(etext, B64_PLACEHOLDER))
    fb[erec[b64 & ~b64_exact]] = True
    toast |= b64_exact & ((fk == F_NONE) | (fk == F_DECIMAL) | (fk == F_VARIABLE_DECIMAL))
    fb[erec[b64_exact & (fk == F_UNSUPPORTED)]] = True
    return toast, b64
