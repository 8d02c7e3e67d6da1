"""A columnar DTS Avro decoder giving the very result of ``decode_records``.

``decode_dts_avro_columnar(options_json, texts, kafka_keys)`` takes a batch of
``dts_avro`` records (each Kafka value as base64 text, as the framings hand them over)
as an Arrow string array and returns the ``cdc_decode`` result for the whole batch;
``cdc_decode`` runs it for every such feed unless its option ``columnar`` is false
(:func:`udfs.spark_udfs.decode_array`). It reads the records of
:mod:`udfs.formats.dts_avro` (the writer schema ``schemas/dts_record.avsc``) and builds
the result with :mod:`udfs.formats.columnar`'s ``assemble``.

How: the values are decoded from base64 (one C call each) into one buffer, and the Avro
binary is read *in lockstep*: every record of the batch is at the same field of the
schema at once, its position one element of a numpy array (:class:`_Cursor`). A varint
is read for all records by one gather of 9 bytes each; a union's branch for the records
that take it; an array's item ``k`` of every record that has one, together, until the
longest array ends. Strings are byte spans of the buffer, checked as UTF-8 all at once
(fastavro's strict decoding) and cut out by Arrow.

Done column-wise: the four row operations (``INSERT``, ``UPDATE``, ``DELETE``, ``INIT``),
the table of ``objectName`` (each distinct name split once), ``fields`` and both images
(every value kind: ``Integer``, ``Decimal``, ``Character`` in UTF-8, ``TextObject``,
``TextGeometry`` as their text; ``EmptyObject`` ``NULL`` and a null item as SQL NULL,
``NONE`` as not provided), the column types, ``seq`` of ``id``, ``commit_ts`` of
``sourceTimestamp``, ``tx_id``, the configured key, the extras. Values that need a
format of their own (``Float``, ``Timestamp``, ``DateTime``,
``TimestampWithTimeZone``, binary kinds as base64, ``Character`` of another charset)
are written by the decoder's own :func:`udfs.formats.dts_avro.value_text`, one call per
such value, so their texts are exactly its texts.

Handed to ``decode_records``: a null record and the text ``null``, a text that is not
base64 (as ``b64decode(validate=True)`` takes it), any record whose bytes this reader
does not take exactly (a varint of 10 bytes or more, a read past the record's end, an
enum or union index out of range, a string that is not UTF-8, a ``Character`` value
its charset cannot decode), operations other than the four (``DDL``, ``BEGIN``,
``HEARTBEAT``, ...: skipped or logged there), no ``objectName`` or no ``fields`` array,
images that are not arrays or not as long as ``fields``, a before image on an insert or
an after image on a delete, a negative ``id``, a ``sourceTimestamp`` past a bigint of
microseconds, non-ASCII or repeated (case-insensitive) field names, a table without a
configured key or with a name too long, an update that changes the key. ``LAST_STATS``
holds the counts of the last call.
"""

from __future__ import annotations

import base64
import binascii
import json
from functools import lru_cache
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from udfs.contract import QuarantineError
from udfs.formats.columnar import (
    DECODE_TYPE,
    assemble,
    configured_key_counts,
    decode_columnar,
    flags,
    gather,
    json_escaped,
    key_positions,
    key_sides,
    op_texts,
    resolve_tables,
    table_id_array,
)
from udfs.formats.dts_avro import _CHARSETS, OPS, SCHEMA_PATH, DtsAvroDecoder, value_text

LAST_STATS: dict[str, Any] = {}
_stats: dict[str, Any] = {}

_NINE = np.arange(9, dtype=np.int64)
_SHIFTS = (7 * _NINE).astype(np.uint64)
#: bytes after the buffer's end, so a 9-byte window or a double at any position is in it
_PAD = 16
_OP_NAMES = ["insert", "update", "delete", "snapshot"]
_INT64_MAX = 2**63 - 1
#: value kinds whose texts the decoder's own ``value_text`` writes, one call per value
_FORMATTED = ("Float", "Timestamp", "DateTime", "TimestampWithTimeZone", "BinaryGeometry", "BinaryObject")


@lru_cache(maxsize=1)
def _schema() -> dict[str, Any]:
    """The writer schema's facts this reader needs: enum symbols, the image item union's
    branches (name and fields), checked against the field order it reads."""
    schema = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    fields = {f["name"]: f["type"] for f in schema["fields"]}
    expected = [
        "version", "id", "sourceTimestamp", "sourcePosition", "safeSourcePosition", "sourceTxid", "source",
        "operation", "objectName", "processTimestamps", "tags", "fields", "beforeImages", "afterImages",
        "bornTimestamp",
    ]  # fmt: skip
    assert [f["name"] for f in schema["fields"]] == expected, "dts_record.avsc changed: update _fast"
    source_type = {f["name"]: f["type"] for f in fields["source"]["fields"]}["sourceType"]
    items = fields["beforeImages"][2]["items"]
    named: dict[str, Any] = {}
    branches: list[tuple[str, list[tuple[str, Any]]]] = []
    for item in items:
        if item == "null":
            branches.append(("null", []))
        elif isinstance(item, str):  # a name defined earlier in the union
            branches.append((item, named[item]))
        elif item["type"] == "enum":
            branches.append((item["name"], [("symbol", ("enum", item["symbols"]))]))
        else:
            parts = [(f["name"], named.get(f["type"], f["type"]) if isinstance(f["type"], str) else f["type"])
                     for f in item["fields"]]  # fmt: skip
            named[item["name"]] = parts
            branches.append((item["name"], parts))
    return {
        "source_types": source_type["symbols"],
        "operations": fields["operation"]["symbols"],
        "branches": branches,
    }


def decode_dts_avro_columnar(options_json: str, texts: pa.Array, kafka_keys: pa.Array | None = None) -> pa.StructArray:
    """The ``cdc_decode`` result of a batch of DTS Avro records (module doc)."""
    return decode_columnar(
        options_json,
        texts,
        kafka_keys,
        fmt=DtsAvroDecoder.identifier,
        fast=lambda *args: _fast(*args),  # looked up per call (a test replaces it)
        stats=_stats,
        last_stats=LAST_STATS,
        null_is_a_record=True,  # the decoder quarantines a null record and the text "null"
    )


# ----------------------------------------------------------------------------- the reader


class _Cursor:
    """A batch's Avro records in one buffer, read in lockstep: every read takes the
    records ``rec`` (indices) and their positions ``p``, and returns the values and the
    positions after them. Whatever this reader cannot take exactly flags the record in
    ``fb``; a flagged record's later values are garbage, never read back."""

    def __init__(self, buf: bytes, starts: np.ndarray, ends: np.ndarray, fb: np.ndarray) -> None:
        self.size = len(buf)
        self.b = np.frombuffer(buf + bytes(_PAD), dtype=np.uint8)
        self.start, self.end = starts, ends
        self.fb = fb
        #: every string span read: (record, start, end), checked as UTF-8 at the end
        self.strings: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []

    def _at(self, p: np.ndarray) -> np.ndarray:
        return np.clip(p, 0, self.size)

    def long(self, rec: np.ndarray, p: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Zigzag varints (Avro ``int`` and ``long``). A varint of 10 bytes or more (a
        value past 2^62) and one running past its record flag the record."""
        first = self.b[self._at(p)].astype(np.int64)
        value = (first >> 1) ^ -(first & 1)  # one byte: most lengths, counts and indices
        after = p + 1
        multi = np.flatnonzero(first >= 0x80)
        if len(multi):
            window = self.b[self._at(p[multi])[:, None] + _NINE]
            more = window >= 0x80
            stop = np.argmin(more, axis=1)  # the first byte without a continuation bit
            self.fb[rec[multi[more.all(axis=1)]]] = True
            bits = (window & 0x7F).astype(np.uint64) << _SHIFTS
            u = (bits * (_NINE[None, :] <= stop[:, None]).astype(np.uint64)).sum(axis=1, dtype=np.uint64)
            value[multi] = (u >> np.uint64(1)).astype(np.int64) ^ -(u & np.uint64(1)).astype(np.int64)
            after[multi] += stop
        self.fb[rec[after > self.end[rec]]] = True
        return value, after

    def index(self, rec: np.ndarray, p: np.ndarray, count: int) -> tuple[np.ndarray, np.ndarray]:
        """An enum symbol's or a union branch's index, in ``0..count-1``."""
        value, p = self.long(rec, p)
        bad = (value < 0) | (value >= count)
        self.fb[rec[bad]] = True
        return np.where(bad, 0, value), p

    def span(self, rec: np.ndarray, p: np.ndarray, text: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``bytes`` or ``string`` (``text``): (start, end, position after)."""
        size, p = self.long(rec, p)
        end = p + np.maximum(size, 0)
        self.fb[rec[(size < 0) | (end > self.end[rec])]] = True
        if text:
            self.strings.append((rec, p, end))
        return p, end, end

    def double(self, rec: np.ndarray, p: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        raw = self.b[self._at(p)[:, None] + np.arange(8)]
        self.fb[rec[p + 8 > self.end[rec]]] = True
        return np.ascontiguousarray(raw).view("<f8").ravel(), p + 8

    def block_count(self, rec: np.ndarray, p: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The item count of an array's or map's next block (0: the end). A negative
        count is followed by the block's byte size. A count larger than the bytes left
        in the record (every item here takes one at least) flags the record."""
        count, p = self.long(rec, p)
        neg = count < 0
        if neg.any():
            count[neg] = -count[neg]
            _, p[neg] = self.long(rec[neg], p[neg])
        too_many = count > self.end[rec] - p
        self.fb[rec[too_many]] = True
        count[too_many | self.fb[rec]] = 0
        return count, p

    def items(self, rec: np.ndarray, p: np.ndarray, read_item: Any) -> tuple[np.ndarray, list[Any]]:
        """An array (or a map) at ``p`` of records ``rec``, item ``k`` of every record
        that has one read together by ``read_item(rec, p) -> (p, values)``. Returns the
        positions after and ``[(rec, k, values), ...]`` in the order read."""
        p = p.copy()
        out: list[Any] = []
        count, p = self.block_count(rec, p)
        k = np.zeros(len(rec), dtype=np.int64)
        while True:
            live = np.flatnonzero(count > 0)
            if not len(live):
                return p, out
            r = rec[live]
            p[live], values = read_item(r, p[live])
            out.append((r, k[live].copy(), values))
            k[live] += 1
            count[live] -= 1
            ended = live[count[live] == 0]
            if len(ended):
                count[ended], p[ended] = self.block_count(rec[ended], p[ended])
            count[self.fb[rec]] = 0

    def binary(self, rec: np.ndarray, start: np.ndarray, end: np.ndarray) -> pa.BinaryArray:
        """Byte spans of records ``rec`` (empty for a flagged record: its spans may be
        anywhere)."""
        return self.text(rec, start, end).view(pa.binary())

    def text(self, rec: np.ndarray, start: np.ndarray, end: np.ndarray) -> pa.StringArray:
        """String spans of records ``rec``, cut by Arrow (``columnar.gather``) without a
        second UTF-8 check: :meth:`check_strings` checked every string span once, and
        a record holding one that is not UTF-8 is flagged (its spans are empty)."""
        ok = ~self.fb[rec]
        here = self.start[rec]  # an empty span where the record begins: spans stay in order
        start = np.clip(np.where(ok, start, here), 0, self.size)
        return gather(self.b, start, np.clip(np.where(ok, end, here), start, self.size))

    def check_strings(self) -> None:
        """Flag the records holding a string that is not UTF-8 (fastavro decodes every
        ``string`` strictly: such a record is quarantined by the decoder)."""
        if not self.strings:
            return
        rec = np.concatenate([s[0] for s in self.strings])
        start = np.concatenate([s[1] for s in self.strings])
        end = np.concatenate([s[2] for s in self.strings])
        ok = ~self.fb[rec]
        rec, start, end = rec[ok], start[ok], end[ok]
        try:
            self.binary(rec, start, end).cast(pa.string())
        except pa.ArrowInvalid:
            raw = self.binary(rec, start, end).to_pylist()
            for i, value in enumerate(raw):
                try:
                    value.decode("utf-8")
                except UnicodeDecodeError:
                    self.fb[rec[i]] = True


def _read_record(cur: _Cursor, parts: list[tuple[str, Any]], rec: np.ndarray, p: np.ndarray) -> tuple[Any, ...]:
    """The fields of an image value's record (or the enum of ``EmptyObject``):
    ``(p, {field: value})``; a ``[null, int]`` field is ``(present, value)``, a nested
    record a dict, a string or bytes ``(start, end)``."""
    values: dict[str, Any] = {}
    for name, kind in parts:
        if kind in ("int", "long"):
            values[name], p = cur.long(rec, p)
        elif kind in ("string", "bytes"):
            start, end, p = cur.span(rec, p, kind == "string")
            values[name] = (start, end)
        elif kind == "double":
            values[name], p = cur.double(rec, p)
        elif isinstance(kind, tuple) and kind[0] == "enum":
            values[name], p = cur.index(rec, p, len(kind[1]))
        elif kind == ["null", "int"]:
            branch, p = cur.index(rec, p, 2)
            value = np.zeros(len(rec), dtype=np.int64)
            has = np.flatnonzero(branch == 1)
            value[has], p[has] = cur.long(rec[has], p[has])
            values[name] = (branch == 1, value)
        elif isinstance(kind, list):  # a nested record (TimestampWithTimeZone.value)
            p, values[name] = _read_record(cur, kind, rec, p)
        else:  # pragma: no cover - the schema check of _schema() rules it out
            raise TypeError(f"unexpected Avro type {kind!r}")
    return p, values


def _image_item(cur: _Cursor, rec: np.ndarray, p: np.ndarray) -> tuple[np.ndarray, Any]:
    """One image value (the union of every value kind): its branch and the values of
    each branch taken, for the records ``rec``."""
    branches = _schema()["branches"]
    branch, p = cur.index(rec, p, len(branches))
    p = p.copy()
    taken = {}
    for b in np.unique(branch).tolist():
        at = np.flatnonzero(branch == b)
        p[at], values = _read_record(cur, branches[b][1], rec[at], p[at])
        taken[b] = (at, values)
    return p, (branch, taken)


def _skip_long(cur: _Cursor, rec: np.ndarray, p: np.ndarray) -> tuple[np.ndarray, Any]:
    _, p = cur.long(rec, p)
    return p, None


def _skip_entry(cur: _Cursor, rec: np.ndarray, p: np.ndarray) -> tuple[np.ndarray, Any]:
    _, _, p = cur.span(rec, p, True)
    _, _, p = cur.span(rec, p, True)
    return p, None


def _string(cur: _Cursor, rec: np.ndarray, p: np.ndarray) -> tuple[np.ndarray, Any]:
    start, end, p = cur.span(rec, p, True)
    return p, (start, end)


def _field(cur: _Cursor, rec: np.ndarray, p: np.ndarray) -> tuple[np.ndarray, Any]:
    start, end, p = cur.span(rec, p, True)
    _, p = cur.long(rec, p)  # dataTypeNumber
    return p, (start, end)


def _optional(cur: _Cursor, rec: np.ndarray, p: np.ndarray, branches: int, read: Any) -> tuple[np.ndarray, ...]:
    """A union ``[null, X]`` (or ``[null, string, X]``): (branch, positions after, what
    ``read`` gave for the records of the last branch); a string branch is read as text."""
    branch, p = cur.index(rec, p, branches)
    p = p.copy()
    if branches == 3:
        text = np.flatnonzero(branch == 1)
        _, _, p[text] = cur.span(rec[text], p[text], True)
    last = np.flatnonzero(branch == branches - 1)
    p[last], got = read(rec[last], p[last])
    return branch, p, got


# ----------------------------------------------------------------------------- decode


def _fast(
    texts: pa.StringArray, options: dict[str, Any], tables: dict[str, Any], keys: pa.Array | None = None
) -> tuple[np.ndarray, pa.Array]:
    """(which records the columnar path decoded, their results in order)."""
    n = len(texts)
    _stats.clear()
    fb = np.zeros(n, dtype=bool)
    if n == 0:
        return fb, pa.array([], type=DECODE_TYPE)
    schema = _schema()
    raws: list[bytes] = []
    for i, text in enumerate(texts.to_pylist()):
        try:
            raws.append(base64.b64decode(text, validate=True))
        except (binascii.Error, ValueError):
            raws.append(b"")
            fb[i] = True
    lengths = np.fromiter(map(len, raws), dtype=np.int64, count=n)
    ends = np.cumsum(lengths)
    starts = ends - lengths
    cur = _Cursor(b"".join(raws), starts, ends, fb)
    rec = np.arange(n, dtype=np.int64)
    p = starts.copy()

    # --- the record's fields, in the schema's order
    _, p = cur.long(rec, p)  # version
    rid, p = cur.long(rec, p)
    source_ts, p = cur.long(rec, p)
    position_at = cur.span(rec, p, True)
    _, _, p = cur.span(rec, position_at[2], True)  # safeSourcePosition
    txid_at = cur.span(rec, p, True)
    source_type, p = cur.index(rec, txid_at[2], len(schema["source_types"]))
    version_at = cur.span(rec, p, True)
    operation, p = cur.index(rec, version_at[2], len(schema["operations"]))
    obj_branch, p, obj_at = _optional(cur, rec, p, 2, lambda r, q: _string(cur, r, q))
    _, p, _ = _optional(cur, rec, p, 2, lambda r, q: cur.items(r, q, lambda r2, q2: _skip_long(cur, r2, q2)))
    p, _ = cur.items(rec, p, lambda r, q: _skip_entry(cur, r, q))  # tags
    fields_branch, p, fields = _optional(
        cur, rec, p, 3, lambda r, q: cur.items(r, q, lambda r2, q2: _field(cur, r2, q2))
    )
    images = {}
    for side in ("before", "after"):
        branch, p, items = _optional(
            cur, rec, p, 3, lambda r, q: cur.items(r, q, lambda r2, q2: _image_item(cur, r2, q2))
        )
        images[side] = (branch, items)
    _, p = cur.long(rec, p)  # bornTimestamp
    cur.check_strings()

    # --- operation: the four row operations (others: skipped or logged by the decoder)
    op_names = [OPS.get(s) for s in schema["operations"]]
    op_code = np.array([_OP_NAMES.index(o) if o else -1 for o in op_names], dtype=np.int64)[operation]
    fb |= op_code < 0
    is_ins = (op_code == 0) | (op_code == 3)
    is_upd, is_del = op_code == 1, op_code == 2

    # --- table: objectName split once per distinct name
    obj_start, obj_end = np.zeros(n, dtype=np.int64), np.zeros(n, dtype=np.int64)
    has_obj = np.flatnonzero(obj_branch == 1)
    obj_start[has_obj], obj_end[has_obj] = obj_at[0], obj_at[1]
    fb |= (obj_branch != 1) | (obj_end <= obj_start)  # no table name: quarantined
    obj_text = cur.text(rec, obj_start, obj_end)
    enc = pc.dictionary_encode(obj_text)
    tcode = enc.indices.to_numpy(zero_copy_only=False).astype(np.int64)
    names = [DtsAvroDecoder._names(name) for name in enc.dictionary.to_pylist()]
    uniq, inv = np.unique(tcode, return_inverse=True)
    inv = np.asarray(inv).ravel()
    tids, tid_keys, tid_bad = resolve_tables(tables, [names[u] for u in uniq.tolist()])
    tid_bad |= np.array([not k for k in tid_keys], dtype=bool)  # no key in the record: one must be configured
    fb |= tid_bad[inv]
    table_id = table_id_array(tids, inv)

    # --- positions and times
    fb |= rid < 0  # seq_of quarantines a negative position
    fb |= np.abs(source_ts) > _INT64_MAX // 1_000_000
    seq = pc.utf8_lpad(pa.array(np.maximum(rid, 0)).cast(pa.string()), 20, "0")
    commit = pa.array(np.where(fb, 0, source_ts) * 1_000_000, type=pa.int64())
    tx = cur.text(rec, txid_at[0], txid_at[1])
    tx = pc.if_else(pc.equal(tx, ""), pa.nulls(n, pa.string()), tx)  # sourceTxid or None

    # --- fields: each record's column names, in order
    f_rec, f_k, f_start, f_end = _flatten_items(fields)
    fb |= fields_branch != 2
    ncols = np.bincount(f_rec, minlength=n)
    name_text = cur.text(f_rec, f_start, f_end)
    fb[f_rec[~flags(pc.string_is_ascii(name_text))]] = True  # normalize lower-cases in Unicode
    lname_all = pc.ascii_lower(name_text)
    enc = pc.dictionary_encode(lname_all)
    ldict: list[str] = enc.dictionary.to_pylist()
    lcode_f = enc.indices.to_numpy(zero_copy_only=False).astype(np.int64)
    nl = max(len(ldict), 1)
    dup_key = np.sort(f_rec * nl + lcode_f)
    fb[np.unique(dup_key[1:][dup_key[1:] == dup_key[:-1]] // nl)] = True  # a name twice in fields
    f_first = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(ncols, out=f_first[1:])

    # --- images: which a record has, by its op
    present = {}
    for side, (branch, _) in images.items():
        fb |= branch == 1  # a text (a DDL statement's) where a row's image belongs: quarantined
        present[side] = branch == 2
    fb |= is_ins & (images["before"][0] != 0)  # its types would count: the decoder's col_types
    fb |= is_del & (images["after"][0] != 0)
    fb |= (is_ins | is_upd) & ~present["after"]
    fb |= is_del & ~present["before"]
    present_before = (is_upd | is_del) & present["before"]
    present_after = (is_ins | is_upd) & present["after"]

    parts = []
    for side_i, side in enumerate(("before", "after")):
        _, items = images[side]
        e_rec, e_k, values = _image_values(cur, items, schema, fb)
        nvalues = np.bincount(e_rec, minlength=n)
        fb |= present[side] & (nvalues != ncols)  # as many values as fields
        parts.append((e_rec, e_k, np.full(len(e_rec), side_i, dtype=np.int64), values))
    erec = np.concatenate([q[0] for q in parts])
    ek = np.concatenate([q[1] for q in parts])
    side = np.concatenate([q[2] for q in parts])
    prov = np.concatenate([q[3]["provided"] for q in parts])
    etext = pa.concat_arrays([q[3]["text"] for q in parts])
    type_names = [None, *sorted({t for q in parts for t in q[3]["types"] if t is not None})]
    type_id = {t: i for i, t in enumerate(type_names)}
    etype = np.concatenate(
        [np.array([type_id[t] for t in q[3]["types"]], dtype=np.int32)[q[3]["type"]] for q in parts]
    ).astype(np.int32)
    # only entries of the images a record keeps, for records that stay on this path
    keep = ~fb[erec] & np.where(side == 0, present_before[erec], present_after[erec])
    keep &= ek < ncols[erec]
    at = np.flatnonzero(keep)
    order = at[np.lexsort((ek[at], side[at], erec[at]))]
    erec, ek, side, prov, etype = erec[order], ek[order], side[order], prov[order], etype[order]
    etext = etext.take(pa.array(order, type=pa.int64()))
    name_at = f_first[erec] + ek
    lcode = lcode_f[name_at]
    lnames = lname_all.take(pa.array(name_at, type=pa.int64()))
    # col_types: the first type a column gets (before's first), as the decoder's setdefault
    typed = np.flatnonzero(etype > 0)
    _, first = np.unique(erec[typed] * nl + lcode[typed], return_index=True)
    only_first = np.zeros(len(erec), dtype=bool)
    only_first[typed[first]] = True
    etype = np.where(only_first, etype, 0).astype(np.int32)
    eesc = json_escaped(etext)

    # --- keys: the configured key columns, read from the images
    ekeypos = key_positions(tid_keys, ldict, inv[erec], lcode)
    key_side = key_sides(
        erec=erec,
        side=side,
        prov=prov,
        ekeypos=ekeypos,
        etext=etext,
        nkeys=configured_key_counts(tid_keys, inv),
        present_before=present_before,
        present_after=present_after,
        is_ins=is_ins,
        is_upd=is_upd,
        is_del=is_del,
        fb=fb,
    )
    _stats["fallback_reasons_flagged"] = int(fb.sum())

    op_arr = op_texts(op_code, _OP_NAMES)
    tcode32 = pa.array(np.maximum(tcode, 0).astype(np.int32))
    db, sch, tbl = ([t[i] for t in names] for i in range(3))
    source_types = pa.array(schema["source_types"], pa.string()).take(pa.array(source_type))
    extras = [
        ("source_position", cur.text(rec, position_at[0], position_at[1]), None),
        ("source_type", source_types, None),
        ("source_version", cur.text(rec, version_at[0], version_at[1]), None),
    ]
    return assemble(
        fb=fb,
        erec=erec,
        side=side,
        prov=prov,
        lnames=lnames,
        lcode=lcode,
        ldict=ldict,
        etext=etext,
        eesc=eesc,
        etype=etype,
        types=type_names,
        ekeypos=ekeypos,
        present_before=present_before,
        present_after=present_after,
        key_side=key_side,
        event_keys=None,
        tids=tids,
        inv=inv,
        table_id=table_id,
        op_arr=op_arr,
        seq=seq,
        db=pa.DictionaryArray.from_arrays(tcode32, pa.array(db, pa.string())).cast(pa.string()),
        schema=pa.DictionaryArray.from_arrays(tcode32, pa.array(sch, pa.string())).cast(pa.string()),
        table=pa.DictionaryArray.from_arrays(tcode32, pa.array(tbl, pa.string())).cast(pa.string()),
        commit=commit,
        capture=pa.nulls(n, pa.int64()),
        tx=tx,
        extras=extras,
    )


def _flatten_items(items: list[Any]) -> tuple[np.ndarray, ...]:
    """The fields arrays' items read in lockstep, as flat (record, k, start, end)."""
    if not items:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty, empty, empty
    rec = np.concatenate([r for r, _, _ in items])
    k = np.concatenate([k for _, k, _ in items])
    start = np.concatenate([v[0] for _, _, v in items])
    end = np.concatenate([v[1] for _, _, v in items])
    order = np.lexsort((k, rec))
    return rec[order], k[order], start[order], end[order]


def _image_values(cur: _Cursor, items: list[Any], schema: dict[str, Any], fb: np.ndarray) -> tuple[Any, ...]:
    """An image's values (items of every record, read in lockstep): (record, k,
    {"text": canonical texts, "provided", "type": an index into "types"})."""
    branches = schema["branches"]
    kinds = [name for name, _ in branches]
    recs, ks, texts, provided, type_idx = [], [], [], [], []
    types: list[str | None] = [None]
    type_of: dict[str | None, int] = {None: 0}

    def type_index(names: list[str | None], codes: np.ndarray) -> np.ndarray:
        """Type codes into ``names`` as codes into ``types``."""
        for name in names:
            if name not in type_of:
                type_of[name] = len(types)
                types.append(name)
        return np.array([type_of[name] for name in names], dtype=np.int64)[codes]

    for rec, k, (_branch, taken) in items:
        for br, (at, values) in taken.items():
            kind = kinds[br]
            r = rec[at]
            m = len(at)
            text: pa.Array = pa.nulls(m, pa.string())
            prov = np.ones(m, dtype=bool)
            spark: tuple[list[str | None], np.ndarray] = ([None], np.zeros(m, dtype=np.int64))
            if kind == "EmptyObject":
                prov = values["symbol"] == 0  # NULL: SQL NULL; NONE: not provided
            elif kind in ("Integer", "Decimal", "TextObject", "TextGeometry"):
                text = cur.text(r, *values["value"])
                if kind == "Integer":
                    spark = _distinct_types(_int_type, values["precision"])
                elif kind == "Decimal":
                    spark = _distinct_types(_decimal_type, values["precision"], values["scale"])
                else:
                    spark = (["string"], np.zeros(m, dtype=np.int64))
            elif kind == "Character":
                text, spark = _characters(cur, r, values)
            elif kind in _FORMATTED:
                text, per_value = _formatted(kind, cur, r, values)
                names = list(dict.fromkeys(per_value))
                place = {name: i for i, name in enumerate(names)}
                spark = (names, np.fromiter((place[t] for t in per_value), dtype=np.int64, count=m))
            # null: SQL NULL, provided
            recs.append(r)
            ks.append(k[at])
            texts.append(text)
            provided.append(prov)
            type_idx.append(type_index(*spark))
    if not recs:
        empty = np.zeros(0, dtype=np.int64)
        return (
            empty,
            empty,
            {"text": pa.array([], pa.string()), "provided": np.zeros(0, bool), "type": empty, "types": types},
        )
    return (
        np.concatenate(recs),
        np.concatenate(ks),
        {
            "text": pa.concat_arrays(texts),
            "provided": np.concatenate(provided),
            "type": np.concatenate(type_idx),
            "types": types,
        },
    )


def _int_type(precision: int) -> str:
    return "bigint" if precision <= 18 else f"decimal({min(precision, 38)},0)"


def _decimal_type(precision: int, scale: int) -> str:
    return f"decimal({precision},{scale})" if 0 < precision <= 38 and 0 <= scale <= precision else "string"


def _distinct_types(type_of: Any, *columns: np.ndarray) -> tuple[list[str | None], np.ndarray]:
    """``type_of(*values)`` of each distinct row of ``columns``, and each value's index
    among them (one call per distinct precision, scale, ...)."""
    if not len(columns[0]):
        return [None], np.zeros(0, dtype=np.int64)
    if all(((c >= -(2**31)) & (c < 2**31)).all() for c in columns) and len(columns) <= 2:
        # one int64 per row (np.unique of rows, axis=0, is many times slower)
        key = columns[0] if len(columns) == 1 else (columns[0] << 32) | (columns[1] & 0xFFFFFFFF)
        uniq, first, codes = np.unique(key, return_index=True, return_inverse=True)
        rows = np.stack(columns, axis=1)[first]
    else:
        rows, codes = np.unique(np.stack(columns, axis=1), axis=0, return_inverse=True)
    return [type_of(*row) for row in rows.tolist()], np.asarray(codes).ravel()


def _characters(cur: _Cursor, rec: np.ndarray, values: dict[str, Any]) -> tuple[pa.Array, tuple[list, np.ndarray]]:
    """``Character`` values: UTF-8 ones checked and cut out by Arrow; another charset's
    (or an unknown one's, as base64) by the decoder's ``value_text``, one at a time."""
    m, fb = len(rec), cur.fb
    ok = ~fb[rec]
    charsets = cur.text(rec, *values["charset"])
    enc = pc.dictionary_encode(charsets)
    python = np.array([_CHARSETS.get(c.lower()) for c in enc.dictionary.to_pylist()], dtype=object)
    charset = python[enc.indices.to_numpy(zero_copy_only=False)] if len(python) else np.zeros(0, dtype=object)
    raw = cur.binary(rec, *values["value"])
    utf8 = np.flatnonzero(charset == "utf-8")
    text = pa.nulls(m, pa.string())
    spark = np.zeros(m, dtype=np.int64)  # "string", or 1: "binary" (base64 of an unknown charset)
    if len(utf8):
        part = raw.take(pa.array(utf8))
        try:
            decoded = part.cast(pa.string())
        except pa.ArrowInvalid:  # not UTF-8: the decoder quarantines those records
            good = []
            for i, value in zip(utf8.tolist(), part.to_pylist(), strict=True):
                try:
                    value.decode("utf-8")
                    good.append(True)
                except UnicodeDecodeError:
                    good.append(False)
                    fb[rec[i]] = True
            decoded = pc.if_else(pa.array(good), part, pa.nulls(len(part), pa.binary())).cast(pa.string())
        text = pc.replace_with_mask(text, pa.array(charset == "utf-8"), decoded)
    other = np.flatnonzero((charset != "utf-8") & ok)
    if len(other):
        texts = text.to_pylist()
        raws = raw.take(pa.array(other)).to_pylist()
        names = charsets.take(pa.array(other)).to_pylist()
        for i, value, name in zip(other.tolist(), raws, names, strict=True):
            try:
                texts[i], kind = value_text("Character", {"charset": name, "value": value})
                spark[i] = kind == "binary"
            except QuarantineError:
                fb[rec[i]] = True
        text = pa.array(texts, pa.string())
    return text, (["string", "binary"], spark)


def _formatted(kind: str, cur: _Cursor, rec: np.ndarray, values: dict[str, Any]) -> tuple[pa.Array, list]:
    """Values whose text the decoder's own ``value_text`` writes, one call each, from
    the values read here (as fastavro would have given them)."""
    m, fb = len(rec), cur.fb
    ok = ~fb[rec]

    def column(name: str, of: dict[str, Any] = values) -> list[Any]:
        value = of[name]
        if isinstance(value, tuple) and len(value) == 2 and value[0].dtype == bool:  # [null, int]
            return [int(v) if h else None for h, v in zip(value[0].tolist(), value[1].tolist(), strict=True)]
        if isinstance(value, tuple):  # (start, end) of a string or bytes
            raw = cur.binary(rec, *value).to_pylist()
            return [r.decode("utf-8") if isinstance(r, bytes) and name in ("timezone", "type") else r for r in raw]
        return value.tolist()

    def datetime_dicts(of: dict[str, Any]) -> list[dict[str, Any]]:
        cols = {name: column(name, of) for name in ("year", "month", "day", "hour", "minute", "second", "millis")}
        return [dict(zip(cols, row, strict=True)) for row in zip(*cols.values(), strict=True)]

    if kind == "Float":
        records = [{"value": v} for v in column("value")]
    elif kind == "Timestamp":
        records = [{"timestamp": t, "millis": s} for t, s in zip(column("timestamp"), column("millis"), strict=True)]
    elif kind == "DateTime":
        records = datetime_dicts(values)
    elif kind == "TimestampWithTimeZone":
        dts = datetime_dicts(values["value"])
        records = [{"value": d, "timezone": z} for d, z in zip(dts, column("timezone"), strict=True)]
    else:  # BinaryGeometry, BinaryObject
        records = [{"value": v} for v in column("value")]
    texts: list[str | None] = [None] * m
    spark: list[str | None] = [None] * m
    for i, record in enumerate(records):
        if not ok[i]:
            continue
        try:
            texts[i], spark[i] = value_text(kind, record)
        except (QuarantineError, ValueError, OverflowError, TypeError):  # the decoder's record fails too
            fb[rec[i]] = True
    return pa.array(texts, pa.string()), spark
