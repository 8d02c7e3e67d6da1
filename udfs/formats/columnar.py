"""Building blocks of the columnar decoders, which give the very result of ``decode_records``.

A columnar decoder (``udfs/formats/<format>_columnar.py``, one per JSON format) decodes a
batch of records with numpy / pyarrow over the batch's bytes, never building a Python
object per column value, and hands every record it cannot do exactly to
``decode_records`` (:func:`decode_columnar` merges both back in order). What they share:

* :func:`validate` (msgspec checks the batch in one call), :func:`buffers`,
  :func:`open_batch`; for Kafka Connect envelopes :func:`open_connect_batch` and the
  schema cache (a schema text seen before cut out of its record, each parsed once);
* :class:`Tokens`: quotes, escapes and structural characters of the batch, each
  colon's enclosing object, name and value span (one compiled pass over the bytes:
  :mod:`udfs.formats.compiled`); ``values`` / ``texts``: a value's kind, span and canonical
  text (``canonical_text``: ``-0`` as ``0``, a fraction's literal, escapes undone);
* :func:`slots` / :func:`field_values`: the fields of the objects a format reads;
  :func:`row_entries`: the entries of its row objects; :class:`Images`: the before and
  after images composed from them; :func:`event_keys`: a record's own (Kafka) key;
* :func:`distinct_tables`, :func:`resolve_tables`, :func:`key_positions`,
  :func:`key_sides`: table ids, configured keys and where each record's key is read;
* :func:`assemble`: from image entries and per-record fields to the ``cdc_decode``
  result: the maps, column lists, key and ``key_text``, ``col_types``, extras and the
  event id (its JSON text assembled column-wise, SHA-256 per change), as
  ``udfs.decode.normalize`` and ``_event_id`` build them.

Kafka Connect value typing is in :mod:`udfs.formats.columnar_connect`.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Callable
from typing import Any

import msgspec
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from udfs.contract import loads_exact
from udfs.decode import (
    DECODE_RESULT_DDL,
    MAX_PARTITION_NAME_BYTES,
    arrow_type_of_ddl,
    decode_records,
    decoder_from_options,
    partition_name_bytes,
    table_id_for,
)
from udfs.formats.compiled import (
    event_texts,
    gather_spans,
    json_array_of,
    scan_tokens,
    starts_with_at,
    string_texts,
    string_texts_both,
)

_LOG = logging.getLogger(__name__)
#: formats whose columnar decoder failed in this worker (warned once each)
_WARNED: set[str] = set()

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

IS_WS = np.zeros(256, dtype=bool)
for _c in b" \t\n\r":
    IS_WS[_c] = True
STRUCT_CLASS = np.zeros(256, dtype=np.int8)
for _c, _k in zip(b"{}[]:,", range(1, 7), strict=True):
    STRUCT_CLASS[_c] = _k
OPEN_OBJ, CLOSE_OBJ, OPEN_ARR, CLOSE_ARR, COLON, COMMA = range(1, 7)

# value kinds
K_ABSENT, K_STR, K_INT, K_FRAC, K_TRUE, K_FALSE, K_NULL, K_OBJ, K_ARR = range(9)

RAW_LIST = msgspec.json.Decoder(list[msgspec.Raw])
RAW_ONE = msgspec.json.Decoder(msgspec.Raw)
encode_json_str = json.encoder.encode_basestring  # what JSONEncoder(ensure_ascii=False) writes for a str

# ----------------------------------------------------------------------------- helpers


def gather(b: np.ndarray, starts: np.ndarray, ends: np.ndarray, valid: np.ndarray | None = None) -> pa.StringArray:
    """Byte spans ``b[starts[i]:ends[i]]`` as one string array (null where ``valid`` is
    false), copied by one compiled loop (:func:`udfs.formats.compiled.gather_spans`)."""
    return string_array(*gather_spans(b, starts, ends, valid), valid)


def string_array(offs: np.ndarray, data: np.ndarray, valid: np.ndarray | None = None) -> pa.StringArray:
    """A string array of int64 offsets and UTF-8 data (null where ``valid`` is false)."""
    n = len(offs) - 1
    validity = None
    null_count = 0
    if valid is not None and not valid.all():
        validity = pa.array(valid, type=pa.bool_()).buffers()[1]
        null_count = int(n - valid.sum())
    if offs[-1] < 2**31 - 1:
        return pa.StringArray.from_buffers(
            n, pa.py_buffer(offs.astype(np.int32)), pa.py_buffer(data), validity, null_count
        )
    return pa.LargeStringArray.from_buffers(n, pa.py_buffer(offs), pa.py_buffer(data), validity, null_count).cast(
        pa.string()
    )


def skip_ws(b: np.ndarray, p: np.ndarray, limit: np.ndarray | None = None) -> np.ndarray:
    """First non-whitespace position at or after ``p`` (at most ``limit``)."""
    p = p.copy()
    if limit is None:
        limit = np.full(len(p), len(b))
    last = max(len(b) - 1, 0)
    while len(p) and len(b):
        m = (p < limit) & IS_WS[b[np.minimum(p, last)]]
        if not m.any():
            break
        p[m] += 1
    return p


def join_lists(offsets: np.ndarray, values: pa.Array, sep: str) -> pa.Array:
    lists = pa.ListArray.from_arrays(pa.array(offsets, type=pa.int32()), values)
    return pc.binary_join(lists, sep)


def cat(*parts: Any) -> pa.Array:
    return pc.binary_join_element_wise(*parts, "")


class Tokens:
    """Stage 1 over the bytes of a batch of valid JSON texts."""

    def __init__(self, b: np.ndarray, off: np.ndarray) -> None:
        self.b = b
        self.off = off
        # quotes (a string is the pair 2k, 2k+1) and whether each string holds a
        # backslash; the structural characters outside strings, their class and level
        # (the depth of the container a token is in; openers: the one they open); every
        # colon, its enclosing object's opener and its record; per colon, its name's and
        # its value's span (see udfs.formats.compiled)
        (
            self.qpos,
            self.str_bs,
            self.spos,
            self.scls,
            self.level,
            self.colons,
            self.parent,
            self.crec,
            *per_colon,
        ) = scan_tokens(b, off)
        self._name_start, self._name_end, self._name_bs = per_colon[:3]
        self._kind, self._start, self._end, self._bs = per_colon[3:]
        self._ordinal = np.full(len(self.spos), -1, dtype=np.int64)  # token -> its place among the colons
        self._ordinal[self.colons] = np.arange(len(self.colons))

    def _colon_ordinals(self, colons: np.ndarray) -> np.ndarray:
        at = self._ordinal[colons]
        if len(at) and at.min() < 0:
            raise ValueError("Tokens: a name or value asked of a token that is not a colon")
        return at

    def closing(self, openers: np.ndarray) -> np.ndarray:
        """The token closing each opener (``{`` or ``[``): the first closer of its level after it."""
        closers = np.flatnonzero((self.scls == CLOSE_OBJ) | (self.scls == CLOSE_ARR))
        clev = self.level[closers]
        lev = self.level[openers]
        out = np.empty(len(openers), dtype=np.int64)
        for lv in np.unique(lev):
            c = closers[clev == lv]
            m = lev == lv
            out[m] = c[np.searchsorted(c, openers[m])]
        return out

    def value_texts(self, openers: np.ndarray) -> pa.StringArray:
        """The JSON text of the object or array each opener opens (as it is in the batch)."""
        return gather(self.b, self.spos[openers], self.spos[self.closing(openers)] + 1)

    def key_spans(self, colons: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The byte span of the name before each colon, without its quotes."""
        starts, ends, _ = self.names(colons)
        return starts, ends

    def names(self, colons: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The byte span of the name before each colon, and whether it holds an escape."""
        at = self._colon_ordinals(colons)
        return self._name_start[at], self._name_end[at], self._name_bs[at]

    def values(self, colons: np.ndarray) -> dict[str, np.ndarray]:
        """Kind, byte span, escape flag and opener token of the value of each colon (a
        string's span without its quotes; a null's or a container's is empty)."""
        at = self._colon_ordinals(colons)
        kind = self._kind[at]
        opener = np.where((kind == K_OBJ) | (kind == K_ARR), colons + 1, -1)
        return {"kind": kind, "start": self._start[at], "end": self._end[at], "bs": self._bs[at], "opener": opener}

    def texts(self, v: dict[str, np.ndarray], need_esc: bool = False) -> tuple[pa.Array, pa.Array | None, int]:
        """Canonical text of scalar values (null for null/absent/containers) and, with
        ``need_esc``, its JSON-escaped inner text (as ``json.dumps`` writes it); and how
        many needed unescaping. Both by one compiled pass
        (:func:`udfs.formats.compiled.string_texts_both`; ``string_texts`` when no
        string holds a backslash, or without ``need_esc``)."""
        kind, bs = v["kind"], v["bs"]
        scalar = (kind == K_STR) | (kind == K_INT) | (kind == K_FRAC) | (kind == K_TRUE) | (kind == K_FALSE)
        n_bs = int(bs.sum())
        esc = None
        if need_esc and n_bs:  # both texts from one scan of the escaped strings
            offs, data, eoffs, edata = string_texts_both(self.b, v["start"], v["end"], scalar, bs)
            text, esc = string_array(offs, data, scalar), string_array(eoffs, edata, scalar)
        else:
            text = string_array(*string_texts(self.b, v["start"], v["end"], scalar, bs), scalar)
            if need_esc:  # no string holds a backslash: the source text is already it
                esc = text
        is_int = kind == K_INT
        if is_int.any():
            minus0 = is_int & np.asarray(
                pc.fill_null(pc.equal(text, "-0"), False).to_numpy(zero_copy_only=False), dtype=bool
            )
            if minus0.any():
                zeros = pa.array(["0"] * int(minus0.sum()))
                text = pc.replace_with_mask(text, pa.array(minus0), zeros)
                esc = None if esc is None else pc.replace_with_mask(esc, pa.array(minus0), zeros)
        return text, esc, n_bs


def patch(base: pa.Array, at: np.ndarray, values: pa.Array) -> pa.Array:
    """``base`` with the elements at indices ``at`` replaced by ``values``."""
    if not len(at):
        return base
    idx = np.arange(len(base), dtype=np.int64)
    idx[at] = len(base) + np.arange(len(at))
    return pa.concat_arrays([base, values.cast(base.type)]).take(pa.array(idx))


def validate(b: np.ndarray, off: np.ndarray, first: np.ndarray) -> np.ndarray:
    """Which texts are one valid JSON value each (msgspec, one call for the batch).

    ``first``: each text's first non-whitespace byte. A text whose msgspec ``Raw`` has
    exactly its trimmed length is the one value msgspec parsed at its place.
    """
    n = len(off) - 1
    if not len(b):
        return np.zeros(n, dtype=bool)
    last = off[1:] - 1
    while True:  # last non-whitespace byte (before ``first``: an empty text)
        m = (last >= first) & IS_WS[b[np.clip(last, 0, len(b) - 1)]]
        if not m.any():
            break
        last[m] -= 1
    trimmed = np.maximum(last + 1 - first, 0)
    try:
        raws = RAW_LIST.decode(json_array_of(b, off))
        if len(raws) == n:
            lens = np.fromiter(map(len, raws), dtype=np.int64, count=n)
            if np.array_equal(lens, trimmed):
                return np.ones(n, dtype=bool)
    except msgspec.DecodeError:
        pass
    out = np.zeros(n, dtype=bool)
    for i in range(n):
        try:
            RAW_ONE.decode(b[off[i] : off[i + 1]].tobytes())
            out[i] = True
        except msgspec.DecodeError:
            pass
    return out


def valid_of(arr: pa.Array) -> np.ndarray:
    """Which values of ``arr`` are not null, as numpy."""
    return np.asarray(arr.is_valid().to_numpy(zero_copy_only=False), dtype=bool)


def buffers(texts: pa.StringArray) -> tuple[np.ndarray, np.ndarray]:
    _, obuf, dbuf = texts.buffers()
    off = np.frombuffer(obuf, dtype=np.int32)[texts.offset : texts.offset + len(texts) + 1].astype(np.int64)
    b = np.frombuffer(dbuf, dtype=np.uint8) if dbuf is not None else np.zeros(0, dtype=np.uint8)
    b = b[off[0] : off[-1]]
    return b, off - off[0]


def slots(tok: Tokens, colons: np.ndarray, recs: np.ndarray, names: list[str], n: int, fb: np.ndarray) -> np.ndarray:
    """``slot[code, rec]``: the colon of key ``names[code]`` in each record's object, -1 when
    absent; a name twice in one object sends the record to the fallback."""
    starts, ends, escaped = tok.names(colons)
    fb[recs[escaped]] = True
    code = pc.index_in(gather(tok.b, starts, ends), value_set=pa.array(names)).fill_null(-1).to_numpy()
    slot = np.full((len(names), n), -1, dtype=np.int64)
    m = code >= 0
    counts = np.bincount(code[m] * n + recs[m], minlength=len(names) * n)
    fb[np.flatnonzero(counts.reshape(len(names), n).max(axis=0) > 1)] = True
    slot[code[m], recs[m]] = colons[m]
    return slot


def row_entries(
    tok: Tokens,
    ecol: np.ndarray,
    owner: np.ndarray,
    fb: np.ndarray,
    stats: dict[str, Any],
    objects_ok: bool = False,
) -> tuple[pa.Array, dict[str, np.ndarray], pa.Array, pa.Array]:
    """The entries of the row objects a format reads (their colons ``ecol``): the names
    as sent, the values, their canonical and JSON-escaped texts. An escaped or non-ASCII
    name, or a nested value, flags the entry's ``owner`` (its record, or unit) in ``fb``;
    with ``objects_ok`` an object value does not (the caller decides: ``typed_values``
    reads a ``VariableScaleDecimal`` and flags any other)."""
    starts, ends, escaped = tok.names(ecol)
    fb[owner[escaped]] = True
    raw_names = gather(tok.b, starts, ends)
    fb[owner[~flags(pc.string_is_ascii(raw_names))]] = True
    ev = tok.values(ecol)
    fb[owner[(ev["kind"] == K_ARR) | ((ev["kind"] == K_OBJ) & (not objects_ok))]] = True
    etext, eesc, n_bs = tok.texts(ev, need_esc=True)
    stats["escaped_values"] = n_bs
    stats["values"] = len(ecol)
    return raw_names, ev, etext, eesc


def long_numbers(tok: Tokens) -> np.ndarray:
    """Records holding a number literal that may pass Python's 4,300-digit limit for an
    integer (``decode_records``' parse fails on it): such a number sits between two
    structural tokens more than 4,000 bytes apart."""
    b, off = tok.b, tok.off
    gaps = np.flatnonzero(np.diff(tok.spos) > 4000)
    if not len(gaps):
        return np.zeros(0, dtype=np.int64)
    c = b[skip_ws(b, tok.spos[gaps] + 1)]
    numeric = (c == ord("-")) | ((c >= ord("0")) & (c <= ord("9")))
    return np.searchsorted(off, tok.spos[gaps][numeric], side="right") - 1


def field_values(
    tok: Tokens, slot: np.ndarray, names: list[str], n: int
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


def tombstones(k: int) -> pa.StructArray:
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


def tick(label: str) -> None:
    if not PROFILE_STAGES:
        return
    import time

    now = time.perf_counter()
    if _last_tick[1]:
        STAGE_SECONDS[_last_tick[1]] = STAGE_SECONDS.get(_last_tick[1], 0.0) + now - _last_tick[0]
    _last_tick[0], _last_tick[1] = now, label


# ----------------------------------------------------------------------------- a format's batch


def flags(arr: pa.Array) -> np.ndarray:
    """A boolean Arrow array as numpy, null as false."""
    return np.asarray(pc.fill_null(arr, False).to_numpy(zero_copy_only=False), dtype=bool)


def per_record(field: tuple[Any, ...], n: int) -> pa.Array:
    """A field's canonical text for every record (null: absent, null or a container),
    from its :func:`field_values` entry."""
    have, _, _, text = field
    if not len(have):
        return pa.nulls(n, pa.string())
    at = np.full(n, -1, dtype=np.int32)
    at[have] = np.arange(len(have), dtype=np.int32)
    return text.take(pa.array(at, mask=at < 0))


def opener_per_record(field: tuple[Any, ...], n: int) -> np.ndarray:
    """The token opening a field's object or array value, per record (-1: none)."""
    have, v, _, _ = field
    out = np.full(n, -1, dtype=np.int64)
    out[have] = v["opener"]
    return out


def plain_digits(text: pa.Array) -> np.ndarray:
    """Texts of plain ASCII digits (what ``str.isdigit`` and ``int`` agree on: no sign, no
    space, no other script's digits)."""
    return flags(pc.match_substring_regex(text, r"^[0-9]+$"))


def seq_part(digits: pa.Array) -> pa.Array:
    """``str(int(text)).zfill(20)`` of plain digit texts: one part of ``seq_of``."""
    trimmed = pc.utf8_ltrim(digits, "0")
    trimmed = pc.if_else(pc.equal(trimmed, ""), "0", trimmed)
    return pc.utf8_lpad(trimmed, 20, "0")


def open_batch(texts: pa.StringArray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The batch's bytes, offsets, each text's first non-blank byte, and which texts
    are not one valid JSON value (msgspec, one call)."""
    b, off = buffers(texts)
    first = skip_ws(b, off[:-1], off[1:])
    return b, off, first, ~validate(b, off, first)


def on_valid_only(
    texts: pa.StringArray,
    invalid: np.ndarray,
    fast: Callable[[pa.StringArray], tuple[np.ndarray, pa.Array]],
    stats: dict[str, Any],
) -> tuple[np.ndarray, pa.Array]:
    """``fast`` over the valid texts alone (quotes pair up within a valid text only):
    which records it decoded among all, their results; the invalid ones are counted."""
    keep = np.flatnonzero(~invalid)
    ok_sub, res = fast(texts.take(pa.array(keep)))
    ok = np.zeros(len(texts), dtype=bool)
    ok[keep[ok_sub]] = True
    stats["invalid_json"] = int(invalid.sum())  # (the call on the valid ones counted none)
    return ok, res


def object_tokens(b: np.ndarray, off: np.ndarray, first: np.ndarray, fb: np.ndarray) -> tuple[Tokens, np.ndarray]:
    """The tokens of a batch of valid texts, and each record's top-level opener; a text
    that is not an object, or holds a number past Python's integer limit, is flagged."""
    fb |= b[first] != ord("{")
    tok = Tokens(b, off)
    fb[long_numbers(tok)] = True
    return tok, np.minimum(np.searchsorted(tok.spos, first), len(tok.spos) - 1)


def top_level(
    tok: Tokens, top_open: np.ndarray, fb: np.ndarray, names: list[str]
) -> tuple[np.ndarray, dict[str, tuple[Any, ...]]]:
    """Roles of the batch's objects (1: a record's top-level object, 0 others; a format
    marks the objects it reads with roles of its own) and the :func:`field_values` of
    the top-level fields ``names``."""
    n = len(top_open)
    role = np.zeros(len(tok.spos), dtype=np.int8)
    role[top_open[~fb]] = 1
    m = role[tok.parent] == 1
    return role, field_values(tok, slots(tok, tok.colons[m], tok.crec[m], names, n, fb), names, n)


# ----------------------------------------------------------------------------- batch


def decode_columnar(
    options_json: str,
    texts: pa.Array,
    kafka_keys: pa.Array | None,
    *,
    fmt: str,
    fast: Callable[[pa.StringArray, dict[str, Any], dict[str, Any], pa.Array | None], tuple[np.ndarray, pa.Array]],
    stats: dict[str, Any],
    last_stats: dict[str, Any],
    null_is_a_record: bool = False,
    source_files: pa.Array | None = None,
    headers: pa.Array | None = None,
) -> pa.StructArray:
    """The ``cdc_decode`` result of a batch of ``fmt`` records: ``fast`` (a format's
    columnar decoder: which records it decoded, their results) over every record but
    tombstones, ``decode_records`` over the records it leaves, merged back in order.

    A tombstone (a null text or the text ``null``) is skipped as ``decode_records``
    skips it; for a format whose decoder quarantines them instead (``null_is_a_record``:
    Arcion internal JSON, and DTS Avro, for which ``null`` is base64) they go to
    ``decode_records``, never to ``fast``. A format that reads each record's file or
    header row (Arcion internal CSV) passes ``source_files`` and ``headers``: ``fast``
    gets them as keywords, and ``decode_records`` too. ``stats`` is what ``fast`` counted;
    ``last_stats`` gets the counts of this call. Should ``fast`` raise, the whole batch
    goes to ``decode_records`` (the results stay right, only slower) and a warning is
    logged once per worker.
    """
    texts = texts.cast(pa.string())
    if texts.offset:
        texts = pa.concat_arrays([texts])
    n = len(texts)
    try:
        decoder, opts = decoder_from_options(options_json)
    except (ValueError, KeyError):  # bad options: decode_records quarantines every record
        keys = kafka_keys.to_pylist() if kafka_keys is not None else None
        return pa.array(decode_records(options_json, texts.to_pylist(), keys), type=DECODE_TYPE)
    options = decoder.options
    tables = opts.get("tables") or {}
    null_like = np.asarray(pc.fill_null(pc.equal(texts, "null"), True).to_numpy(zero_copy_only=False), dtype=bool) & (
        opts.get("format") == fmt
    )
    tomb = np.zeros(n, dtype=bool) if null_is_a_record else null_like
    idx = np.flatnonzero(~null_like)
    sub = texts.take(pa.array(idx, type=pa.int64())) if len(idx) < n else texts
    sub_keys = None
    if kafka_keys is not None:
        kk = kafka_keys.cast(pa.string())
        sub_keys = kk.take(pa.array(idx, type=pa.int64())) if len(idx) < n else kk
    record_columns = {name: c for name, c in (("source_files", source_files), ("headers", headers)) if c is not None}
    sub_columns = {
        name: c.take(pa.array(idx, type=pa.int64())) if len(idx) < n else c for name, c in record_columns.items()
    }
    if opts.get("format") != fmt:
        ok, decoded = np.zeros(len(idx), dtype=bool), pa.array([], type=DECODE_TYPE)
    else:
        try:
            ok, decoded = fast(sub, options, tables, sub_keys, **sub_columns)
        except Exception as exc:  # noqa: BLE001 - a bug here must not lose a batch: decode_records takes them all
            stats.clear()
            stats["columnar_error"] = f"{type(exc).__name__}: {exc}"
            if fmt not in _WARNED:
                _WARNED.add(fmt)
                _LOG.warning("columnar %s decoder failed; batch decoded record by record", fmt, exc_info=True)
            ok, decoded = np.zeros(len(idx), dtype=bool), pa.array([], type=DECODE_TYPE)
    fast_idx = idx[ok]
    tomb_idx = np.flatnonzero(tomb)
    fb_mask = np.ones(n, dtype=bool)
    fb_mask[fast_idx] = False
    fb_mask[tomb_idx] = False
    fb_idx = np.flatnonzero(fb_mask)
    parts = [decoded]
    if len(tomb_idx):
        fast_idx = np.concatenate((fast_idx, tomb_idx))
        parts.append(tombstones(len(tomb_idx)))
        if len(parts[0]) == 0:
            parts = parts[1:]
        else:
            parts = [pa.concat_arrays(parts)]
    if len(fb_idx):
        fb_texts = texts.take(pa.array(fb_idx)).to_pylist()
        fb_keys = kafka_keys.take(pa.array(fb_idx)).to_pylist() if kafka_keys is not None else None
        fb_more = {name: c.take(pa.array(fb_idx)).to_pylist() for name, c in record_columns.items()}
        parts.append(pa.array(decode_records(options_json, fb_texts, fb_keys, **fb_more), type=DECODE_TYPE))
    last_stats.clear()
    last_stats.update(records=n, fast=len(fast_idx), fallback=len(fb_idx), tombstones=len(tomb_idx), **stats)
    if null_is_a_record:
        last_stats["null_records"] = int(null_like.sum())
    if not len(fb_idx) and not len(tomb_idx):
        return decoded
    if not len(fast_idx):
        return parts[-1]
    order = np.concatenate((fast_idx, fb_idx))
    inverse = np.empty(n, dtype=np.int64)
    inverse[order] = np.arange(n)
    return pa.concat_arrays(parts).take(pa.array(inverse))


def lookup(sorted_keys: np.ndarray, queries: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Whether each query is in ``sorted_keys``, and its index there (0 when not)."""
    if not len(sorted_keys):
        return np.zeros(len(queries), dtype=bool), np.zeros(len(queries), dtype=np.int64)
    j = np.clip(np.searchsorted(sorted_keys, queries), 0, len(sorted_keys) - 1)
    found = sorted_keys[j] == queries
    return found, np.where(found, j, 0)


class Images:
    """The before and after images of a batch's records, composed from the entries of
    the row objects a format reads (``rec``: each entry's record, ``obj``: which of the
    ``nobj`` objects of its record, ``raw_names``: its name as sent).

    :meth:`add` puts entries into an image as they are; :meth:`overlay` composes
    ``{**base, **over}`` as Python does: a base column the overlay names takes the
    overlay's value at the base's place, the overlay's other columns follow in their
    order. A name twice in one object flags its record in ``fb`` (a JSON object's
    duplicate keys), as does a name twice in one image once lower-cased (the shared
    normalization's "appears twice").
    """

    def __init__(self, rec: np.ndarray, obj: np.ndarray, nobj: int, raw_names: pa.Array, fb: np.ndarray) -> None:
        self.rec, self.fb = rec, fb
        enc = pc.dictionary_encode(raw_names)
        self.raw_names = raw_names
        #: the distinct raw names (``rcode`` indexes them)
        self.distinct_names: list[str] = enc.dictionary.to_pylist()
        rcode = enc.indices.to_numpy(zero_copy_only=False).astype(np.int64)
        self.nr = max(len(enc.dictionary), 1)
        self.nobj = nobj
        self.key = (rec * self.nobj + obj) * self.nr + rcode
        self.rcode = rcode
        srt = np.sort(self.key)
        dups = srt[1:][srt[1:] == srt[:-1]]
        fb[np.unique(dups // self.nr // self.nobj)] = True
        self._parts: list[tuple[np.ndarray, np.ndarray, int, int, np.ndarray]] = []

    def add(self, at: np.ndarray, side: int) -> None:
        """Entries ``at`` (indices, in their order) into image ``side`` (0 before, 1 after)."""
        self._parts.append((at, self.rec[at], side, 0, at))

    def overlay(self, base_at: np.ndarray, over_at: np.ndarray, over_obj: int, base_obj: int, side: int) -> None:
        """Image ``side`` = the base object's entries ``base_at`` overlaid with the
        overlay object's ``over_at`` (objects ``base_obj`` / ``over_obj`` of each record)."""
        over_sorted = np.argsort(self.key[over_at], kind="stable")
        query = (self.rec[base_at] * self.nobj + over_obj) * self.nr + self.rcode[base_at]
        found, j = lookup(self.key[over_at][over_sorted], query)
        source = np.where(found, over_at[over_sorted][j], base_at) if len(over_at) else base_at
        self._parts.append((source, self.rec[base_at], side, 0, base_at))
        query = (self.rec[over_at] * self.nobj + base_obj) * self.nr + self.rcode[over_at]
        in_base, _ = lookup(np.sort(self.key[base_at]), query)
        own = over_at[~in_base]
        self._parts.append((own, self.rec[own], side, 1, own))

    def build(self, etext: pa.Array, eesc: pa.Array) -> dict[str, Any]:
        """The images' entries in image order, as :func:`assemble` takes them (``erec``,
        ``side``, ``lnames``, ``lcode``, ``ldict``, ``etext``, ``eesc`` taken from the
        entries' canonical and escaped texts, every value provided, no types)."""
        parts = self._parts or [(np.zeros(0, dtype=np.int64),) * 2 + (0, 0, np.zeros(0, dtype=np.int64))]
        src = np.concatenate([p[0] for p in parts]).astype(np.int64)
        rec = np.concatenate([p[1] for p in parts]).astype(np.int64)
        side = np.concatenate([np.full(len(p[0]), p[2], dtype=np.int64) for p in parts])
        group = np.concatenate([np.full(len(p[0]), p[3], dtype=np.int64) for p in parts])
        place = np.concatenate([p[4] for p in parts]).astype(np.int64)
        order = np.lexsort((place, group, side, rec))
        src, rec, side = src[order], rec[order], side[order]
        lnames = pc.ascii_lower(self.raw_names.take(pa.array(src, type=pa.int64())))
        lenc = pc.dictionary_encode(lnames)
        lcode = lenc.indices.to_numpy(zero_copy_only=False).astype(np.int64)
        ldict = lenc.dictionary.to_pylist()
        nl = max(len(ldict), 1)
        img = (rec * 2 + side) * nl + lcode
        srt = np.sort(img)
        dups = srt[1:][srt[1:] == srt[:-1]]
        self.fb[np.unique(dups // nl // 2)] = True
        take = pa.array(src, type=pa.int64())
        return {
            "erec": rec,
            "side": side,
            "prov": np.ones(len(src), dtype=bool),
            "lnames": lnames,
            "lcode": lcode,
            "ldict": ldict,
            "etext": etext.take(take),
            "eesc": eesc.take(take),
            "etype": np.zeros(len(src), dtype=np.int32),
            "types": [None],
        }


def key_positions(key_lists: list[list[str]], ldict: list[str], which: np.ndarray, lcode: np.ndarray) -> np.ndarray:
    """Each image entry's place among its record's key columns (-1: not one):
    ``key_lists[which[entry]]`` names them (lower-cased image names)."""
    nl = max(len(ldict), 1)
    table = np.full((max(len(key_lists), 1), nl), -1, dtype=np.int64)
    for t_i, cols in enumerate(key_lists):
        pos_of = {k: i for i, k in enumerate(cols)}
        for l_i, name in enumerate(ldict):
            if name in pos_of:
                table[t_i, l_i] = pos_of[name]
    return table[which, lcode] if len(lcode) else np.zeros(0, dtype=np.int64)


def resolve_tables(
    tables: dict[str, Any], names: list[tuple[str | None, str | None, str | None]]
) -> tuple[list[str], list[list[str]], np.ndarray]:
    """For each distinct (db, schema, table) of a batch: its table id (as
    ``udfs.decode.normalize`` gives it), its configured key columns (``[]`` when none is
    configured) and whether its records must fall back (no table name, or one too long
    for a partition directory)."""
    tids: list[str] = []
    keys: list[list[str]] = []
    bad = np.zeros(len(names), dtype=bool)
    for j, (db, schema, table) in enumerate(names):
        if not table:
            tids.append("")
            keys.append([])
            bad[j] = True
            continue
        tid = table_id_for(tables, db, schema, table)
        cfg_keys = (tables.get(tid) or {}).get("key") or None
        if partition_name_bytes(tid) > MAX_PARTITION_NAME_BYTES:
            bad[j] = True
        if not cfg_keys or not isinstance(cfg_keys, list) or not all(isinstance(k, str) for k in cfg_keys):
            cfg_keys = []
        tids.append(tid)
        keys.append(list(cfg_keys))
    return tids, keys, bad


def distinct_tables(
    db: pa.Array, schema: pa.Array, table: pa.Array
) -> tuple[list[tuple[str | None, str | None, str | None]], np.ndarray]:
    """The distinct (db, schema, table) of a batch (for :func:`resolve_tables`) and each
    record's index among them."""
    codes, dicts = [], []
    for arr in (db, schema, table):
        enc = pc.dictionary_encode(arr)
        codes.append(enc.indices.fill_null(-1).to_numpy(zero_copy_only=False).astype(np.int64) + 1)
        dicts.append([None, *enc.dictionary.to_pylist()])
    n1, n2 = len(dicts[1]), len(dicts[2])
    uniq, inv = np.unique((codes[0] * n1 + codes[1]) * n2 + codes[2], return_inverse=True)
    triples = [(dicts[0][u // (n1 * n2)], dicts[1][u // n2 % n1], dicts[2][u % n2]) for u in uniq.tolist()]
    return triples, np.asarray(inv).ravel()


def texts_at(names: list[str], codes: np.ndarray) -> pa.Array:
    """``names[codes[i]]`` for every ``i``, as text (a dictionary array, decoded)."""
    return pa.DictionaryArray.from_arrays(pa.array(codes.astype(np.int32)), pa.array(names, pa.string())).cast(
        pa.string()
    )


def op_texts(op_code: np.ndarray, names: list[str]) -> pa.Array:
    """Each record's op as text, ``names[op_code]``. A negative code (a record the
    decoder could not classify, flagged to fall back) reads as ``names[0]``: its row is
    replaced by ``decode_records``' result anyway."""
    return texts_at(names, np.maximum(op_code, 0))


def table_id_array(tids: list[str], inv: np.ndarray) -> pa.Array:
    """Each record's table id (``tids[inv[record]]``) as text."""
    return texts_at(tids, inv)


def configured_key_counts(key_lists: list[list[str]], which: np.ndarray) -> np.ndarray:
    """Each record's number of configured key columns: ``len(key_lists[which[record]])``
    (0 when none is configured)."""
    return np.array([len(k) for k in key_lists], dtype=np.int64)[which]


def key_sides(
    *,
    erec: np.ndarray,
    side: np.ndarray,
    prov: np.ndarray,
    ekeypos: np.ndarray,
    etext: pa.Array,
    nkeys: np.ndarray,
    present_before: np.ndarray,
    present_after: np.ndarray,
    is_ins: np.ndarray,
    is_upd: np.ndarray,
    is_del: np.ndarray,
    fb: np.ndarray,
    has_ek: np.ndarray | None = None,
) -> np.ndarray:
    """Where each record's key is read, as ``udfs.decode.normalize`` chooses: 0 the
    before image, 1 the after image, 2 the event's own key (``has_ek``); -1 none (the
    record is flagged in ``fb``). An image holds the key when it provides all ``nkeys``
    key columns (image entries as for :func:`assemble`). An update whose before and
    after keys differ (a delete and an insert) is flagged in ``fb`` too. ``has_ek``
    left out: no record carries a key of its own (formats without a message key).
    """
    n = len(nkeys)
    if has_ek is None:
        has_ek = np.zeros(n, dtype=bool)
    image_id = erec * 2 + side
    is_key = prov & (ekeypos >= 0)
    kcount = np.bincount(image_id[is_key], minlength=2 * n).reshape(n, 2)
    full_key = (kcount == nkeys[:, None]) & (nkeys[:, None] > 0)
    full_key[:, 0] &= present_before
    full_key[:, 1] &= present_after
    old_key, new_key = full_key[:, 0], full_key[:, 1]
    key_side = np.full(n, -1, dtype=np.int64)
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
    return key_side


def _extras_map(extras: list[tuple[str, pa.Array, np.ndarray | None]], kidx: np.ndarray) -> pa.MapArray:
    """The extras map of the records ``kidx``: record by record, the fields in their
    order (field-major arrays; see :func:`assemble`)."""
    nk = len(kidx)
    ex_cols = [values.take(pa.array(kidx)) for _, values, _ in extras]
    ex_vals = pa.concat_arrays(ex_cols)
    ex_names = pa.array([name for name, _, _ in extras], type=pa.string())
    nf = len(extras)
    ex_order = (np.arange(nf)[None, :] * nk + np.arange(nk)[:, None]).ravel()
    ex_present = np.concatenate(
        [
            ~np.asarray(col.is_null().to_numpy(zero_copy_only=False), dtype=bool) if present is None else present[kidx]
            for col, (_, _, present) in zip(ex_cols, extras, strict=True)
        ]
    )
    ex_valid = ex_present[ex_order]
    ex_sel = ex_order[ex_valid]
    ex_rec = ex_sel % nk
    ex_field = ex_sel // nk
    ex_off = np.zeros(nk + 1, dtype=np.int32)
    np.cumsum(np.bincount(ex_rec, minlength=nk), out=ex_off[1:])
    return pa.MapArray.from_arrays(
        pa.array(ex_off), ex_names.take(pa.array(ex_field)), ex_vals.take(pa.array(ex_sel)), type=MAP_TYPE
    )


def assemble(
    *,
    fb: np.ndarray,
    erec: np.ndarray,
    side: np.ndarray,
    prov: np.ndarray,
    lnames: pa.Array,
    lcode: np.ndarray,
    ldict: list[str],
    etext: pa.Array,
    eesc: pa.Array,
    etype: np.ndarray,
    types: list[str | None],
    ekeypos: np.ndarray,
    present_before: np.ndarray,
    present_after: np.ndarray,
    key_side: np.ndarray,
    event_keys: dict[str, Any] | None,
    tids: list[str],
    inv: np.ndarray,
    table_id: pa.Array,
    op_arr: pa.Array,
    seq: pa.Array,
    db: pa.Array,
    schema: pa.Array,
    table: pa.Array,
    commit: pa.Array,
    capture: pa.Array,
    tx: pa.Array,
    extras: list[tuple[str, pa.Array, np.ndarray | None]] | pa.MapArray,
    col_types: pa.Array | None = None,
    row_index: np.ndarray | None = None,
) -> tuple[np.ndarray, pa.StructArray]:
    """The ``cdc_decode`` results (one change each) of a batch's records that ``fb`` does
    not send to the fallback, from what a columnar decoder found in them.

    Per record (``n`` of them): ``present_before`` / ``present_after`` (an image, even
    empty), ``key_side`` (where the key is read: 0 before, 1 after, 2 the event key),
    ``inv`` (index into ``tids``, the table ids; ``table_id`` the same as text), ``op_arr``,
    ``seq``, ``db`` / ``schema`` / ``table``, ``commit`` / ``capture`` (microseconds), ``tx``,
    and ``extras`` as (name, values, present) in the map's order: an entry where
    ``present`` is true (its value may be null), or with ``present`` None, where the
    value is not null; or the extras map of each record.

    Per image entry, in each image's column order (``erec`` record, ``side`` 0 before /
    1 after): ``lnames`` the lower-cased name, ``lcode`` its index in ``ldict``, ``etext``
    the canonical text, ``eesc`` the same JSON-escaped (for the event id), ``etype`` an
    index into ``types`` (0: no type), ``prov`` false for a value not provided (left
    out), ``ekeypos`` its place among the key columns (-1: not one). ``event_keys``: the
    key entries of records whose key is their own (``_event_keys``), or None.
    ``col_types``: a map per record, when the format declares its columns' types (else
    they come from the entries' ``etype``: provided columns with a type, before's first).
    ``row_index``: each change's place among its record's (0 when None; a format whose
    record holds several rows assembles them as records of their own, then regroups).

    Returns (which records were decoded, their results in order).
    """
    nl = max(len(ldict), 1)
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
    pres_b = present_before[kidx]
    pres_a = present_after[kidx]

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

    lc_k = lcode[sel]
    if col_types is not None:  # the format's own, per record
        col_types = col_types.take(pa.array(kidx))
    else:
        # col_types: provided columns with a type, before's first, a name once (first place, last type)
        et_k = etype[sel]
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
    if event_keys is not None and event_keys["has"].any():
        ek_ = event_keys
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

    # the key's compact JSON: every value quoted and escaped, or null
    k_vj = pc.coalesce(cat('"', k_esc, '"'), "null")
    kent = cat('"', k_names.take(ksort), '":', k_vj.take(ksort))
    key_text = cat("{", join_lists(k_off, kent, ","), "}")

    tick("event_id")
    # --- event id: json.dumps([table_id, key_text, op, seq, before, before_cols, after, after_cols, None])
    # written by one compiled loop; both images at once: entries sorted by name within
    # each image (sort_keys), the column lists in their order; image 2r is record r's
    # before, 2r+1 its after
    so = np.lexsort((rk, img_k))
    seq_k = seq.take(pa.array(kidx))
    op_k = op_arr.take(pa.array(kidx))
    tids_json = pa.array([encode_json_str(t) for t in tids], type=pa.string())
    ioff, idata = event_texts(
        buffers(tids_json),
        inv[kidx],
        buffers(key_text),
        (*buffers(op_k), valid_of(op_k)),
        (*buffers(seq_k), valid_of(seq_k)),
        buffers(names_k),
        (*buffers(esc_k), valid_of(esc_k)),
        so,
        img_off,
        np.stack((pres_b, pres_a), axis=1).ravel(),
    )
    o = ioff.tolist()
    mv = memoryview(idata)
    sha = hashlib.sha256
    event_id = pa.array([sha(mv[o[i] : o[i + 1]]).hexdigest()[:32] for i in range(nk)], type=pa.string())

    tick("extras")
    if isinstance(extras, pa.MapArray):  # the format's own, per record
        extras_map = extras.take(pa.array(kidx))
    else:
        extras_map = _extras_map(extras, kidx)

    kt = pa.array(kidx)
    cols = {
        "row_index": pa.array(np.zeros(nk, dtype=np.int32) if row_index is None else row_index[kidx].astype(np.int32)),
        "source_db": db.take(kt),
        "source_schema": schema.take(kt),
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
        "tx_id": tx.take(kt),
        "event_id": event_id,
        "extras": extras_map,
    }
    tick("final")
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
    tick("")
    return keep, result


#: the escapes ``json.dumps(..., ensure_ascii=False)`` writes as two characters (the
#: backslash first, so no escape is escaped again); other control characters it writes
#: as ``\\u00XX``, done one value at a time here
TWO_CHARACTER_ESCAPES = [
    ("\\", "\\\\"),
    ('"', '\\"'),
    ("\n", "\\n"),
    ("\r", "\\r"),
    ("\t", "\\t"),
    ("\b", "\\b"),
    ("\f", "\\f"),
]


def json_escaped(text: pa.Array) -> pa.Array:
    """Each text JSON-escaped as ``json.dumps(..., ensure_ascii=False)`` writes it,
    without the quotes (for the event id): the common escapes column-wise, a value with
    another control character by ``encode_basestring``."""
    needs = flags(pc.fill_null(pc.match_substring_regex(text, r'["\\\x00-\x1f]'), False))
    if not needs.any():
        return text
    at = pa.array(np.flatnonzero(needs))
    fixed = text.take(at)
    for plain, escaped in TWO_CHARACTER_ESCAPES:
        fixed = pc.replace_substring(fixed, plain, escaped)
    other = flags(pc.fill_null(pc.match_substring_regex(fixed, r"[\x00-\x1f]"), False))
    if other.any():
        odd = np.flatnonzero(other)
        redone = [encode_json_str(v)[1:-1] for v in text.take(at).take(pa.array(odd)).to_pylist()]
        fixed = pc.replace_with_mask(fixed, pa.array(other), pa.array(redone, pa.string()))
    return pc.replace_with_mask(text, pa.array(needs), fixed)


# ----------------------------------------------------------------------------- schemas

#: Kafka Connect schemas seen (id 0: no schema): parsed value, and their text -> id;
#: shared by the formats whose envelope is ``{"schema", "payload"}``
SCHEMAS: list[Any] = [None]
_SCHEMA_IDS: dict[bytes, int] = {}
#: the cache is emptied between batches past either bound: a wide table's schema text
#: runs to hundreds of kB (and its parsed value to several times that), so a count
#: alone would let a feed of many wide tables hold gigabytes in each Python worker
_MAX_SCHEMAS = 512
_MAX_SCHEMA_BYTES = 16 * 2**20
_schema_bytes = 0
_SCHEMA_PREFIX = np.frombuffer(b'{"schema":', dtype=np.uint8)


def schema_id(text: str) -> int:
    """The id of a schema text (parsed with ``loads_exact`` the first time it is seen)."""
    global _schema_bytes
    raw = text.encode("utf-8")
    sid = _SCHEMA_IDS.get(raw)
    if sid is None:
        RAW_ONE.decode(raw)  # a valid JSON value (it comes from a validated record)
        sid = _SCHEMA_IDS[raw] = len(SCHEMAS)
        SCHEMAS.append(loads_exact(text))
        _schema_bytes += len(raw)
    return sid


def clear_schema_cache() -> None:
    """Forget every cached schema (between batches only: a batch uses the ids)."""
    global _schema_bytes
    del SCHEMAS[1:]
    _SCHEMA_IDS.clear()
    _schema_bytes = 0


def schema_cache_size() -> tuple[int, int]:
    """(schemas cached, bytes of their text)."""
    return len(SCHEMAS) - 1, _schema_bytes


def trim_schema_cache() -> None:
    """Empty the schema cache if it passed its bounds (call at the start of a batch)."""
    if len(SCHEMAS) > _MAX_SCHEMAS or _schema_bytes > _MAX_SCHEMA_BYTES:
        clear_schema_cache()


def schema_ids(tok: Tokens, openers: np.ndarray) -> np.ndarray:
    """The schema id of each schema object (its opener), each distinct text parsed once."""
    if not len(openers):
        return np.zeros(0, dtype=np.int64)
    enc = tok.value_texts(openers).dictionary_encode()
    ids = np.array([schema_id(t) for t in enc.dictionary.to_pylist()], dtype=np.int64)
    return ids[enc.indices.to_numpy()]


def cut_known_schemas(
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
    p0 = skip_ws(b, first[cand] + k)
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
        m = m[starts_with_at(b, p0[m], text)]
        left[m] = False
        r = cand[m]
        sid[r] = i
        length[r] = size
        start_of[r] = p0[m]
    hit = sid >= 0
    if not hit.any():
        return b, off, first, sid
    # two spans a record: [record start, schema start + 1) and [schema end - 1, record end)
    rs, re = off[:-1], off[1:]
    a_end = np.where(hit, start_of + 1, re)
    b_start = np.where(hit, start_of + length - 1, re)
    offs, nb = gather_spans(b, np.stack((rs, b_start), axis=1).ravel(), np.stack((a_end, re), axis=1).ravel())
    noff = offs[::2].copy()
    nfirst = first - off[:-1] + noff[:-1]
    return nb, noff, nfirst, sid


def open_connect_batch(texts: pa.StringArray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """:func:`open_batch` for a format of Kafka Connect envelopes: a schema text seen
    before is cut out of its record (replaced by ``{}``, its parse reused: it is not
    tokenized nor validated again). The batch's bytes, offsets, first bytes, which texts
    are not valid JSON, and each record's cached schema id (-1: none cut)."""
    trim_schema_cache()
    b, off = buffers(texts)
    first = skip_ws(b, off[:-1], off[1:])
    b, off, first, cached_sid = cut_known_schemas(b, off, first)
    return b, off, first, ~validate(b, off, first), cached_sid


# ----------------------------------------------------------------------------- Kafka keys

#: ``typed(ktok, recs, erec, key_schema_open, raw, ev, text, esc, kfb) -> (text, esc)``:
#: a format's decoding of key values (``recs``: the batch records with a key,
#: ``key_schema_open``: the opener of each key's own schema, -1 none)
KeyTyper = Callable[..., tuple[pa.Array, pa.Array]]


def event_keys(
    keys: pa.Array | None, n: int, fb: np.ndarray, image_names: pa.Array, typed: KeyTyper | None = None
) -> dict[str, Any]:
    """The Kafka key of each record: entries (record, lower-cased name, its code among
    ``image_names``, place in the key, rank among the record's sorted names, text,
    escaped text) and whether a record has a non-empty key.

    A key is a JSON object, or ``{"schema", "payload"}`` with an object payload; a null
    key, ``null`` or a null payload is no key. Anything else (not JSON, a scalar, a
    nested value, an escaped or non-ASCII name, a name twice once lower-cased) flags
    the record in ``fb``. Values are their canonical text, or what ``typed`` makes of
    them."""
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
    kb, koff = buffers(keys.take(pa.array(recs)))
    kfirst = skip_ws(kb, koff[:-1], koff[1:])
    ok = validate(kb, koff, kfirst)
    if len(kb):
        ok &= kb[np.minimum(kfirst, len(kb) - 1)] == ord("{")
    fb[recs[~ok]] = True  # not JSON (quarantined), or not an object: the fallback
    if not ok.all():
        recs = recs[ok]
        if not len(recs):
            return out
        kb, koff = buffers(keys.take(pa.array(recs)))
        kfirst = skip_ws(kb, koff[:-1], koff[1:])
    m = len(recs)
    kfb = np.zeros(m, dtype=bool)
    ktok = Tokens(kb, koff)
    top = np.searchsorted(ktok.spos, kfirst)
    role = np.zeros(len(ktok.spos), dtype=np.int8)
    role[top] = 1
    cm = role[ktok.parent] == 1
    slot = slots(ktok, ktok.colons[cm], ktok.crec[cm], ["schema", "payload"], m, kfb)
    n_top = np.bincount(ktok.crec[cm], minlength=m)
    wrapped = (slot[1] >= 0) & (n_top == (slot[0] >= 0) + 1)
    key_open = top.copy()
    key_schema_open = np.full(m, -1, dtype=np.int64)
    w = np.flatnonzero(wrapped)
    if len(w):
        pv = ktok.values(slot[1][w])
        kfb[w[(pv["kind"] != K_OBJ) & (pv["kind"] != K_NULL)]] = True  # a scalar payload names no column
        key_open[w] = np.where(pv["kind"] == K_OBJ, pv["opener"], -1)  # a null payload: no key
        ws = np.flatnonzero(wrapped & (slot[0] >= 0))
        if len(ws):
            sv = ktok.values(slot[0][ws])
            is_obj = sv["kind"] == K_OBJ
            key_schema_open[ws[is_obj]] = sv["opener"][is_obj]
    role[:] = 0
    role[key_open[key_open >= 0]] = 2
    em = role[ktok.parent] == 2
    ecol = ktok.colons[em]
    erec = ktok.crec[em]
    ns, ne, escaped = ktok.names(ecol)
    kfb[erec[escaped]] = True
    raw = gather(kb, ns, ne)
    kfb[erec[~flags(pc.string_is_ascii(raw))]] = True
    ev = ktok.values(ecol)
    kfb[erec[(ev["kind"] == K_OBJ) | (ev["kind"] == K_ARR)]] = True
    text, esc, _ = ktok.texts(ev, need_esc=True)
    if len(ecol) and typed is not None:
        text, esc = typed(ktok, recs, erec, key_schema_open, raw, ev, text, esc, kfb)
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


def event_key_positions(
    ek: dict[str, Any], erec: np.ndarray, lcode: np.ndarray, nl: int, ekeypos: np.ndarray
) -> np.ndarray:
    """``ekeypos`` with, for records that have their own key (:func:`event_keys`), each
    image entry's rank among the key's sorted columns (-1: not one of them)."""
    has_ek = ek["has"]
    if not has_ek.any():
        return ekeypos
    known = ek["lcode"] >= 0
    combo = (ek["rec"] * nl + ek["lcode"])[known]
    krank = ek["rank"][known]
    srt = np.argsort(combo, kind="stable")
    combo, krank = combo[srt], krank[srt]
    mine = erec * nl + lcode
    ev_pos = np.full(len(mine), -1, dtype=np.int64)
    if len(combo):
        j = np.clip(np.searchsorted(combo, mine), 0, len(combo) - 1)
        hit = combo[j] == mine
        ev_pos[hit] = krank[j[hit]]
    return np.where(has_ek[erec], ev_pos, ekeypos)
