"""A columnar Arcion JSON CDC (Kafka) decoder giving the very result of ``decode_records``.

``decode_arcion_kafka_columnar(options_json, texts, kafka_keys)`` takes a batch of
``arcion_kafka_json`` message values (and their Kafka keys) as Arrow string arrays and
returns the ``cdc_decode`` result for the whole batch; ``cdc_decode`` runs it for every
such feed unless its option ``columnar`` is false (:func:`udfs.spark_udfs.decode_array`).
The building blocks are :mod:`udfs.formats.columnar`'s (validation, tokens, values, the
Kafka Connect schema cache, Kafka keys, ``Images``, ``assemble``); this module reads the
envelope of :mod:`udfs.formats.arcion_kafka_json`::

    {"schema": {...}, "payload": {"before", "after", "op", "ts_ms",
                                  "source": {"db", "schema", "table", "ts_ms", "gtid",
                                             "file", "pos", "row", ...}}}

or the payload alone. Done column-wise: the four ops, the images (``{}`` is no image),
the Kafka key (with or without its schema; else the configured key), ``col_types`` from
the envelope schema (each distinct schema text parsed once, a schema seen before cut out
of the text unread), ``seq`` from ``file`` / ``pos`` / ``row`` (a snapshot row without
positions: the lowest), both times, ``gtid``, and the extras: every other ``source``
field in its order.

Handed to ``decode_records``: any record or key not a valid JSON object for msgspec, a
null payload, a scalar Kafka key payload, an op other than ``c``/``u``/``d``/``r``, a
``source`` that is not an object or names no table, a field of the wrong JSON kind
(anything the decoder quarantines), positions or times in another spelling than plain
ASCII digits (a time of more than 15 digits), a ``file`` name with a line break or
non-ASCII text, nested values in the images, the key or ``source``, escaped or non-ASCII
names, a name twice in an object (or in an image once lower-cased), a table without a
key, an update that changes the key, a table name too long. ``LAST_STATS`` holds the
counts of the last call.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from udfs.formats.arcion_kafka_json import ArcionKafkaJsonDecoder, col_types_of
from udfs.formats.columnar import (
    DECODE_TYPE,
    K_ABSENT,
    K_ARR,
    K_INT,
    K_NULL,
    K_OBJ,
    K_STR,
    MAP_TYPE,
    SCHEMAS,
    Images,
    assemble,
    cat,
    configured_key_counts,
    decode_columnar,
    distinct_tables,
    event_key_positions,
    event_keys,
    field_values,
    flags,
    gather,
    key_positions,
    key_sides,
    object_tokens,
    on_valid_only,
    op_texts,
    open_connect_batch,
    per_record,
    plain_digits,
    resolve_tables,
    row_entries,
    schema_ids,
    seq_part,
    slots,
    table_id_array,
)

LAST_STATS: dict[str, Any] = {}
_stats: dict[str, Any] = {}

TOP_KEYS = ["schema", "payload"]
PAYLOAD_KEYS = ["op", "before", "after", "source", "ts_ms"]
#: the source fields read; the first five are not extras
SOURCE_KEYS = ["db", "schema", "table", "ts_ms", "gtid", "file", "pos", "row"]
_MAPPED = SOURCE_KEYS[:5]
# object roles
R_PAYLOAD, R_BEFORE, R_AFTER, R_SOURCE = range(2, 6)  # (0: other objects, 1: the top level)
_OPS = ["c", "u", "d", "r"]
_OP_NAMES = ["insert", "update", "delete", "snapshot"]
#: seq of a snapshot row without positions: seq_of(0, 0, 0)
_LOWEST_SEQ = ".".join(["0" * 20] * 3)


def decode_arcion_kafka_columnar(
    options_json: str, texts: pa.Array, kafka_keys: pa.Array | None = None
) -> pa.StructArray:
    """The ``cdc_decode`` result of a batch of Arcion Kafka JSON messages (module doc)."""
    return decode_columnar(
        options_json,
        texts,
        kafka_keys,
        fmt=ArcionKafkaJsonDecoder.identifier,
        fast=lambda *args: _fast(*args),  # looked up per call (a test replaces it)
        stats=_stats,
        last_stats=LAST_STATS,
    )


def _col_types_maps(sids: np.ndarray) -> pa.Array:
    """``col_types`` per record from its envelope schema id (0: none), as the decoder
    and then the shared normalization (lower-cased names) make them."""
    used, inv = np.unique(sids, return_inverse=True)
    maps = []
    for sid in used.tolist():
        types = col_types_of({"schema": SCHEMAS[sid]}) if sid else {}
        maps.append(list({k.lower(): v for k, v in types.items()}.items()))
    return pa.array(maps, type=MAP_TYPE).take(pa.array(np.asarray(inv).ravel()))


def _fast(
    texts: pa.StringArray, options: dict[str, Any], tables: dict[str, Any], keys: pa.Array | None = None
) -> tuple[np.ndarray, pa.Array]:
    """(which records the columnar path decoded, their results in order)."""
    n = len(texts)
    _stats.clear()
    if n == 0:
        return np.zeros(0, dtype=bool), pa.array([], type=DECODE_TYPE)
    b, off, first, fb, cached_sid = open_connect_batch(texts)
    if fb.any():
        valid_keys = None if keys is None else keys.take(pa.array(np.flatnonzero(~fb)))
        return on_valid_only(texts, fb, lambda valid: _fast(valid, options, tables, valid_keys), _stats)
    tok, top_open = object_tokens(b, off, first, fb)
    colons, crec = tok.colons, tok.crec
    role = np.zeros(len(tok.spos), dtype=np.int8)
    role[top_open[~fb]] = 1

    # --- top level: {"schema", "payload"} (wrapped), else the payload itself
    m = role[tok.parent] == 1
    top = field_values(tok, slots(tok, colons[m], crec[m], TOP_KEYS, n, fb), TOP_KEYS, n)
    n_top = np.bincount(crec[m], minlength=n)
    has_schema = top["schema"][2] != K_ABSENT
    wrapped = (top["payload"][2] != K_ABSENT) & (n_top == has_schema + 1)
    fb |= wrapped & (top["payload"][2] != K_OBJ)  # null: a tombstone; a scalar: quarantined
    payload_open = top_open.copy()
    have, v, _, _ = top["payload"]
    is_obj = v["kind"] == K_OBJ
    use = wrapped[have] & is_obj
    payload_open[have[use]] = v["opener"][use]
    # col_types come from the document's "schema" (wrapped or not)
    schema_id = np.zeros(n, dtype=np.int64)
    have, v, _, _ = top["schema"]
    fresh = (v["kind"] == K_OBJ) & (cached_sid[have] < 0)
    schema_id[have[fresh]] = schema_ids(tok, v["opener"][fresh])
    cut = cached_sid >= 0
    schema_id[cut] = cached_sid[cut]
    _stats["schemas_cut"] = int(cut.sum())

    # --- payload fields
    role[payload_open[~fb]] = R_PAYLOAD
    m = role[tok.parent] == R_PAYLOAD
    pvals = field_values(tok, slots(tok, colons[m], crec[m], PAYLOAD_KEYS, n, fb), PAYLOAD_KEYS, n)
    have, v, kind, text = pvals["op"]
    fb |= kind != K_STR
    op_code = np.full(n, -1, dtype=np.int64)
    op_code[have] = pc.index_in(text, value_set=pa.array(_OPS)).fill_null(-1).to_numpy()
    fb |= op_code < 0
    objects = {}
    for name, r in (("before", R_BEFORE), ("after", R_AFTER), ("source", R_SOURCE)):
        have, v, kind, _ = pvals[name]
        allowed = (kind == K_OBJ) if name == "source" else (kind == K_ABSENT) | (kind == K_NULL) | (kind == K_OBJ)
        fb |= ~allowed
        is_obj = v["kind"] == K_OBJ
        role[v["opener"][is_obj & ~fb[have]]] = r
        objects[name] = kind == K_OBJ

    def ms_to_us(field: tuple[Any, ...]) -> pa.Array:
        """Milliseconds (an integer, absent or null) as microseconds."""
        kind, t = field[2], per_record(field, n)
        fb[(kind != K_ABSENT) & (kind != K_NULL) & (kind != K_INT)] = True
        long = flags(pc.greater(pc.utf8_length(t), 15))  # (ms * 1000 stays in int64)
        fb[long] = True
        t = pc.if_else(pa.array((kind == K_INT) & ~long), t, pa.nulls(n, pa.string()))
        return pc.multiply(pc.cast(t, pa.int64()), 1000)

    capture = ms_to_us(pvals["ts_ms"])

    # --- source: the fields read, and every other one as an extra
    m = role[tok.parent] == R_SOURCE
    scol, srec = colons[m], crec[m]
    svals = field_values(tok, slots(tok, scol, srec, SOURCE_KEYS, n, fb), SOURCE_KEYS, n)
    ns, ne = tok.key_spans(scol)
    snames = gather(b, ns, ne)
    sv = tok.values(scol)
    fb[srec[(sv["kind"] == K_OBJ) | (sv["kind"] == K_ARR)]] = True  # canonical_text would sort a nested value
    fb[srec[~flags(pc.string_is_ascii(snames))]] = True
    senc = pc.dictionary_encode(snames)
    scode = senc.indices.to_numpy(zero_copy_only=False).astype(np.int64)
    dk = np.sort(srec * max(len(senc.dictionary), 1) + scode)
    fb[np.unique(dk[1:][dk[1:] == dk[:-1]] // max(len(senc.dictionary), 1))] = True
    extra = ~flags(pc.is_in(snames, value_set=pa.array(_MAPPED)))
    stext, _, _ = tok.texts(sv)
    ex_rec = srec[extra]
    ex_off = np.zeros(n + 1, dtype=np.int32)
    np.cumsum(np.bincount(ex_rec, minlength=n), out=ex_off[1:])
    extras = pa.MapArray.from_arrays(
        pa.array(ex_off), snames.filter(pa.array(extra)), stext.filter(pa.array(extra)), type=MAP_TYPE
    )
    src = {name: per_record(svals[name], n) for name in SOURCE_KEYS}
    kinds = {name: svals[name][2] for name in SOURCE_KEYS}
    commit = ms_to_us(svals["ts_ms"])
    fb |= kinds["table"] != K_STR  # (an empty name has no table: resolve_tables)

    # seq: the number at the end of the file name, pos, row (each a plain integer, or
    # text of plain digits); all three or none (a snapshot row: the lowest)
    file_t = src["file"]
    is_file = kinds["file"] == K_STR
    fb |= is_file & ~flags(pc.string_is_ascii(file_t))
    fb |= is_file & flags(pc.match_substring(file_t, "\n"))
    digits = pc.struct_field(pc.extract_regex(file_t, r"(?P<d>[0-9]+)$"), [0])
    file_no = pc.if_else(pa.array(is_file), digits, pa.nulls(n, pa.string()))
    parts = [file_no]
    for name in ("pos", "row"):
        kind, t = kinds[name], src[name]
        fb |= (kind != K_ABSENT) & (kind != K_NULL) & (kind != K_STR) & (kind != K_INT)
        fb |= ((kind == K_STR) | (kind == K_INT)) & ~plain_digits(t)  # (a negative position too)
        parts.append(t)
    known = flags(pc.and_(pc.and_(parts[0].is_valid(), parts[1].is_valid()), parts[2].is_valid()))
    seq = pc.if_else(
        pa.array(known),
        cat(seq_part(parts[0]), ".", seq_part(parts[1]), ".", seq_part(parts[2])),
        pc.if_else(pa.array(op_code == 3), pa.scalar(_LOWEST_SEQ), pa.nulls(n, pa.string())),
    )

    # --- tables: id, configured key (db and schema as canonical text)
    triples, inv = distinct_tables(src["db"], src["schema"], src["table"])
    tids, tid_keys, tid_bad = resolve_tables(tables, triples)
    fb |= tid_bad[inv]
    table_id = table_id_array(tids, inv)

    # --- image entries of before and after ({} is no image)
    pr = role[tok.parent]
    m = (pr == R_BEFORE) | (pr == R_AFTER)
    ecol, erec, side = colons[m], crec[m], (pr[m] == R_AFTER).astype(np.int64)
    raw_names, ev, etext, eesc = row_entries(tok, ecol, erec, fb, _stats)
    images = Images(erec, side, 2, raw_names, fb)
    images.add(np.flatnonzero(side == 0), 0)
    images.add(np.flatnonzero(side == 1), 1)
    entries = images.build(etext, eesc)
    p_rec, p_side = entries["erec"], entries["side"]
    counts = np.bincount(erec * 2 + side, minlength=2 * n).reshape(n, 2)
    present_before = objects["before"] & (counts[:, 0] > 0)
    present_after = objects["after"] & (counts[:, 1] > 0)

    # --- keys: the Kafka key's columns (sorted), else the configured key
    ldict = entries["ldict"]
    nl = max(len(ldict), 1)
    ekeypos = key_positions(tid_keys, ldict, inv[p_rec], entries["lcode"])
    ek = event_keys(keys, n, fb, pa.array(ldict, pa.string()))
    has_ek = ek["has"]
    fb |= np.array([not k for k in tid_keys], dtype=bool)[inv] & ~has_ek
    ekeypos = event_key_positions(ek, p_rec, entries["lcode"], nl, ekeypos)
    nkeys = np.where(has_ek, ek["count"], configured_key_counts(tid_keys, inv))
    key_side = key_sides(
        erec=p_rec,
        side=p_side,
        prov=entries["prov"],
        ekeypos=ekeypos,
        etext=entries["etext"],
        nkeys=nkeys,
        present_before=present_before,
        present_after=present_after,
        is_ins=(op_code == 0) | (op_code == 3),
        is_upd=op_code == 1,
        is_del=op_code == 2,
        has_ek=has_ek,
        fb=fb,
    )
    _stats["fallback_reasons_flagged"] = int(fb.sum())

    op_arr = op_texts(op_code, _OP_NAMES)
    return assemble(
        **entries,
        fb=fb,
        ekeypos=ekeypos,
        present_before=present_before,
        present_after=present_after,
        key_side=key_side,
        event_keys=ek if has_ek.any() else None,
        tids=tids,
        inv=inv,
        table_id=table_id,
        op_arr=op_arr,
        seq=seq,
        db=src["db"],
        schema=src["schema"],
        table=src["table"],
        commit=commit,
        capture=capture,
        tx=src["gtid"],
        extras=extras,
        col_types=_col_types_maps(schema_id),
    )
