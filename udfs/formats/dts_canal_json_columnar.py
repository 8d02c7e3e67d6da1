"""A columnar Canal JSON decoder (``dts_canal_json``, ``canal_json``) giving the very
result of ``decode_records``.

``decode_canal_columnar(options_json, texts, kafka_keys)`` takes a batch of Canal flat
messages as an Arrow string array and returns the ``cdc_decode`` result for the whole
batch; ``cdc_decode`` runs it for every such feed unless its option ``columnar`` is
false (:func:`udfs.spark_udfs.decode_array`). The building blocks are
:mod:`udfs.formats.columnar`'s; this module reads the envelope of
:mod:`udfs.formats.dts_canal_json`::

    {"data": [{col: value}, ...], "old": [{col: value}, ...] | null, "database", "table",
     "pkNames": [...], "isDdl", "sql", "mysqlType": {...}, "sqlType": {...},
     "type", "id", "es", "ts"}

Each row of ``data`` is a change of its own (``row_index``): the rows of a batch are
decoded as units and regrouped by message. Done column-wise: ``INSERT``, ``INIT``,
``UPDATE`` (before = the row overlaid with ``old``), ``DELETE`` with the row in ``data``;
``pkNames`` or the configured key; the ``mysqlType`` / ``sqlType`` of each distinct pair
of texts mapped once (``col_types``); binary columns as base64 (one Python call per
binary value); ``seq`` in either ``order``; the ``table`` and include options.
Handed to ``decode_records``: any record not a valid JSON object for msgspec, DDL and
``TRUNCATE``, messages filtered out, the pre-2022 DTS delete layout (``data`` null),
members a declaring message does not declare (``undeclared_columns``), positions in any
other spelling than plain ASCII digits, nested values, escaped or non-ASCII column
names, a name twice in an image, a missing key, an update that changes the key, and
anything the decoder quarantines. ``LAST_STATS`` holds the counts of the last call.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from udfs.contract import QuarantineError, loads_exact
from udfs.decode import decoder_from_options
from udfs.formats.columnar import (
    COMMA,
    DECODE_TYPE,
    K_ABSENT,
    K_ARR,
    K_FALSE,
    K_INT,
    K_NULL,
    K_OBJ,
    K_STR,
    MAP_TYPE,
    OPEN_OBJ,
    Images,
    Tokens,
    assemble,
    cat,
    configured_key_counts,
    decode_columnar,
    flags,
    key_positions,
    key_sides,
    object_tokens,
    on_valid_only,
    op_texts,
    open_batch,
    opener_per_record,
    per_record,
    plain_digits,
    resolve_tables,
    row_entries,
    seq_part,
    skip_ws,
    top_level,
)
from udfs.formats.dts_canal_json import MAX_MS, OPS, DtsCanalJsonDecoder, binary_text

LAST_STATS: dict[str, Any] = {}
_stats: dict[str, Any] = {}

TOP_KEYS = ["data", "old", "database", "table", "pkNames", "isDdl", "type", "es", "ts", "id", "mysqlType", "sqlType"]
_OP_NAMES = ["insert", "snapshot", "update", "delete"]


def decode_canal_columnar(options_json: str, texts: pa.Array, kafka_keys: pa.Array | None = None) -> pa.StructArray:
    """The ``cdc_decode`` result of a batch of Canal JSON records (module doc)."""
    try:
        fmt = decoder_from_options(options_json)[0].identifier
    except (ValueError, KeyError, TypeError):
        fmt = DtsCanalJsonDecoder.identifier  # bad options: decode_columnar quarantines them
    return decode_columnar(
        options_json,
        texts,
        kafka_keys,
        fmt=fmt,
        fast=lambda t, o, tables, k: _fast(t, decoder_from_options(options_json)[0], tables),  # looked up per call
        stats=_stats,
        last_stats=LAST_STATS,
    )


def _int_text(kind: np.ndarray, text: pa.Array, fb: np.ndarray, required: bool, limit: int | None) -> pa.Array:
    """A position field as the decoder's ``_int`` reads it (plain ASCII digits as a text or
    a non-negative number), as the text of ``int(value)``; anything else flags ``fb``."""
    fb |= (kind != K_ABSENT) & (kind != K_NULL) & (kind != K_STR) & (kind != K_INT)
    if required:
        fb |= (kind == K_ABSENT) | (kind == K_NULL)
    digits = plain_digits(text)
    fb |= ((kind == K_STR) | (kind == K_INT)) & ~digits
    trimmed = pc.utf8_ltrim(text, "0")
    trimmed = pc.if_else(pc.equal(trimmed, ""), "0", trimmed)
    if limit is not None:
        length = pc.fill_null(pc.binary_length(trimmed), 0).to_numpy(zero_copy_only=False)
        fb |= length > 18
        ok = digits & (length <= 18)
        if ok.any():
            small = pc.if_else(pa.array(ok), trimmed, "0").cast(pa.int64()).to_numpy(zero_copy_only=False)
            fb |= ok & (small > limit)
    return pc.if_else(pa.array(digits), trimmed, pa.nulls(len(text), pa.string()))


def _types_of_pair(sql_text: str | None, mysql_text: str | None) -> tuple[dict[str, str], bool]:
    """The decoder's ``col_types`` of a message with these ``sqlType`` / ``mysqlType``
    texts (JSON objects or None), and whether they are valid."""
    msg = {"sqlType": None if sql_text is None else loads_exact(sql_text)}
    msg["mysqlType"] = None if mysql_text is None else loads_exact(mysql_text)
    try:
        return DtsCanalJsonDecoder.col_types_of(msg), True
    except QuarantineError:
        return {}, False


def _fast(texts: pa.StringArray, decoder: DtsCanalJsonDecoder, tables: dict[str, Any]) -> tuple[np.ndarray, pa.Array]:
    """(which records the columnar path decoded, their results in order)."""
    n = len(texts)
    _stats.clear()
    if n == 0:
        return np.zeros(0, dtype=bool), pa.array([], type=DECODE_TYPE)
    b, off, first, fb = open_batch(texts)
    if fb.any():
        return on_valid_only(texts, fb, lambda valid: _fast(valid, decoder, tables), _stats)
    tok, top_open = object_tokens(b, off, first, fb)
    _, top = top_level(tok, top_open, fb, TOP_KEYS)
    colons = tok.colons
    kinds = {name: top[name][2] for name in TOP_KEYS}
    texts_of = {name: per_record(top[name], n) for name in ("database", "table", "type", "es", "ts", "id")}

    # names: text or absent; the include filters and DDL go to the decoder (a skip)
    for name in ("database", "table"):
        fb |= (kinds[name] != K_ABSENT) & (kinds[name] != K_NULL) & (kinds[name] != K_STR)
    fb |= (kinds["isDdl"] != K_ABSENT) & (kinds["isDdl"] != K_NULL) & (kinds["isDdl"] != K_FALSE)
    for option, name in (("database_include", "database"), ("table_include", "table")):
        pattern = decoder._include[option]
        if pattern is not None:
            enc = pc.dictionary_encode(texts_of[name])
            passed = np.array([pattern.fullmatch(v) is not None for v in enc.dictionary.to_pylist()] + [False])
            code = enc.indices.fill_null(-1).to_numpy(zero_copy_only=False)
            fb |= ~passed[code]  # -1: a null name never passes
    # op
    fb |= kinds["type"] != K_STR
    enc = pc.dictionary_encode(texts_of["type"])
    op_of = [
        _OP_NAMES.index(OPS[v.upper()]) if OPS.get(v.upper()) in _OP_NAMES else -1 for v in enc.dictionary.to_pylist()
    ]
    code = enc.indices.fill_null(-1).to_numpy(zero_copy_only=False)
    op_code = np.array([*op_of, -1], dtype=np.int64)[code]
    fb |= op_code < 0
    fb |= ~flags(pc.greater(pc.binary_length(texts_of["table"]), 0))
    # positions and times
    es = _int_text(kinds["es"], texts_of["es"], fb, required=True, limit=MAX_MS)
    canal_id = _int_text(kinds["id"], texts_of["id"], fb, required=True, limit=None)
    ts = _int_text(kinds["ts"], texts_of["ts"], fb, required=False, limit=MAX_MS)

    def micros(text: pa.Array) -> pa.Array:
        ms = pc.if_else(pa.array(fb), pa.nulls(n, pa.string()), text).cast(pa.int64())
        return pc.multiply(ms, 1000)

    # --- column types: each distinct (sqlType, mysqlType) pair of texts mapped once
    pair_texts = []
    for name in ("sqlType", "mysqlType"):
        kind = kinds[name]
        fb |= (kind != K_ABSENT) & (kind != K_NULL) & (kind != K_OBJ)
        opener = opener_per_record(top[name], n)
        at = np.flatnonzero((opener >= 0) & (kind == K_OBJ))
        full = np.full(n, -1, dtype=np.int32)
        full[at] = np.arange(len(at), dtype=np.int32)
        value = tok.value_texts(opener[at]) if len(at) else pa.array([], pa.string())
        pair_texts.append(value.take(pa.array(full, mask=full < 0)))
    # (an object's text starts with "{" and holds no NUL: the joined text tells pairs apart)
    pair_enc = pc.dictionary_encode(
        pc.binary_join_element_wise(pc.fill_null(pair_texts[0], ""), pc.fill_null(pair_texts[1], ""), "\x00")
    )
    pair_id = pair_enc.indices.to_numpy(zero_copy_only=False).astype(np.int64)
    first_of_pair = np.unique(pair_id, return_index=True)[1]
    pair_types: list[dict[str, str]] = []
    pair_ok = np.zeros(len(first_of_pair), dtype=bool)
    for p, r in enumerate(first_of_pair.tolist()):
        types, ok = _types_of_pair(pair_texts[0][r].as_py(), pair_texts[1][r].as_py())
        pair_types.append(types)
        pair_ok[p] = ok
    fb |= ~pair_ok[pair_id]

    # --- pkNames: each distinct array text read once (a list of names, else quarantined)
    kind = kinds["pkNames"]
    fb |= (kind != K_ABSENT) & (kind != K_NULL) & (kind != K_ARR)
    opener = opener_per_record(top["pkNames"], n)
    at = np.flatnonzero((opener >= 0) & (kind == K_ARR))
    pk_lists: list[list[str]] = []
    pk_id = np.full(n, -1, dtype=np.int64)
    if len(at):
        enc = pc.dictionary_encode(tok.value_texts(opener[at]))
        good = []
        for text in enc.dictionary.to_pylist():
            names = loads_exact(text)
            ok = all(isinstance(p, str) and p for p in names)
            good.append(ok)
            pk_lists.append([p.lower() for p in names] if ok else [])
        code = enc.indices.to_numpy(zero_copy_only=False).astype(np.int64)
        fb[at[~np.array(good, dtype=bool)[code]]] = True
        pk_id[at] = code

    # --- rows: data (an array of objects) and old (absent, null or the same); a delete
    # without data has its row in old (DTS instances created before 2022-03-20)
    arrays = {}
    for name in ("data", "old"):
        kind = kinds[name]
        fb |= (kind != K_ABSENT) & (kind != K_NULL) & (kind != K_ARR)
        arrays[name] = opener_per_record(top[name], n)
        arrays[name][kind != K_ARR] = -1
    is_upd = op_code == 2
    moved = (op_code == 3) & (arrays["data"] < 0)
    arrays["data"] = np.where(moved, arrays["old"], arrays["data"])
    arrays["old"] = np.where(moved, -1, arrays["old"])
    old_given = arrays["old"] >= 0
    d_rec, d_row, d_open = _elements(tok, arrays["data"], fb)
    o_rec, o_row, o_open = _elements(tok, arrays["old"], fb)
    d_count = np.bincount(d_rec, minlength=n)
    o_count = np.bincount(o_rec, minlength=n)
    fb |= d_count == 0  # no rows: the decoder's reason
    fb |= is_upd & old_given & (o_count != d_count)
    # units: the data rows; an old row pairs with the data row of its place
    nu = len(d_rec)
    unit_of_open = np.full(len(tok.spos), -1, dtype=np.int64)
    unit_of_open[d_open] = np.arange(nu)
    starts = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(d_count, out=starts[1:])
    o_unit = starts[o_rec] + o_row
    o_unit = np.where(o_row < d_count[o_rec], o_unit, -1)
    pm = o_unit >= 0
    unit_of_open[o_open[pm]] = o_unit[pm]
    obj_of_open = np.zeros(len(tok.spos), dtype=np.int64)
    obj_of_open[o_open] = 1

    # --- image entries
    owner = unit_of_open[tok.parent]
    m = owner >= 0
    ecol, eunit, eobj = colons[m], owner[m], obj_of_open[tok.parent[m]]
    urec = d_rec  # unit -> record
    ufb = fb[urec].copy()
    raw_names, ev, etext, eesc = row_entries(tok, ecol, eunit, ufb, _stats)
    images = Images(eunit, eobj, 2, raw_names, ufb)
    # declared columns: a member a declaring message does not declare -> the decoder drops it
    rnames, rcode, nr = images.distinct_names, images.rcode, images.nr
    declared = np.zeros((len(pair_types), nr), dtype=bool)
    binary = np.zeros((len(pair_types), nr), dtype=bool)
    declares = np.array([bool(t) for t in pair_types], dtype=bool)
    for p, types in enumerate(pair_types):
        for r_i, name in enumerate(rnames):
            if name in types:
                declared[p, r_i] = True
                binary[p, r_i] = types[name] == "binary"
    epair = pair_id[urec[eunit]] if len(eunit) else np.zeros(0, dtype=np.int64)
    ufb[eunit[declares[epair] & ~declared[epair, rcode]]] = True
    # binary columns: Canal's one character per byte, as base64
    is_bin = binary[epair, rcode] & ~flags(etext.is_null())
    if is_bin.any():
        where = np.flatnonzero(is_bin)
        b64 = pa.array([binary_text(v) for v in etext.take(pa.array(where)).to_pylist()], pa.string())
        etext = pc.replace_with_mask(etext, pa.array(is_bin), b64)
        eesc = pc.replace_with_mask(eesc, pa.array(is_bin), b64)

    uop = op_code[urec]
    u_ins, u_upd, u_del = (uop == 0) | (uop == 1), uop == 2, uop == 3
    has_old = np.zeros(nu, dtype=bool)
    has_old[o_unit[pm]] = True
    d_at = np.flatnonzero(eobj == 0)
    o_at = np.flatnonzero(eobj == 1)
    images.add(d_at[(u_ins | u_upd)[eunit[d_at]]], 1)
    images.add(d_at[u_del[eunit[d_at]]], 0)
    images.overlay(d_at[u_upd[eunit[d_at]]], o_at[u_upd[eunit[o_at]]], over_obj=1, base_obj=0, side=0)
    entries = images.build(etext, eesc)
    p_unit, p_side = entries["erec"], entries["side"]
    present_before = u_del | (u_upd & has_old)
    present_after = u_ins | u_upd

    # --- tables and keys: pkNames (lower-cased), else the configured key
    # option table: every message to that table (truthy, as the decoder tests it)
    source_table = pa.array([str(decoder._table)] * n, pa.string()) if decoder._table else texts_of["table"]
    # (database null and "" differ: a third part says which)
    tenc = pc.dictionary_encode(
        pc.binary_join_element_wise(
            pc.fill_null(texts_of["database"], ""),
            pc.fill_null(source_table, ""),
            pc.if_else(texts_of["database"].is_null(), "0", "1"),
            "\x00",
        )
    )
    tcode = tenc.indices.to_numpy(zero_copy_only=False).astype(np.int64)
    uniq, first_of = np.unique(tcode, return_index=True)
    triples = [(texts_of["database"][r].as_py(), None, source_table[r].as_py()) for r in first_of.tolist()]
    tids, tid_keys, tid_bad = resolve_tables(tables, triples)
    inv = np.searchsorted(uniq, tcode)
    fb |= tid_bad[inv]
    key_lists = tid_keys + pk_lists
    which = np.where(pk_id >= 0, len(tid_keys) + pk_id, inv)
    which = np.where((pk_id >= 0) & np.array([len(k) > 0 for k in key_lists] or [False])[which], which, inv)
    nkeys = configured_key_counts(key_lists, which)
    fb |= nkeys == 0
    ufb |= fb[urec]
    ekeypos = key_positions(key_lists, entries["ldict"], which[urec[p_unit]], entries["lcode"])
    key_side = key_sides(
        erec=p_unit,
        side=p_side,
        prov=entries["prov"],
        ekeypos=ekeypos,
        etext=entries["etext"],
        nkeys=nkeys[urec],
        present_before=present_before,
        present_after=present_after,
        is_ins=u_ins,
        is_upd=u_upd,
        is_del=u_del,
        fb=ufb,
    )
    # a record decodes column-wise only when all its rows do
    fb[urec[ufb]] = True
    ufb = fb[urec]
    _stats["fallback_reasons_flagged"] = int(fb.sum())

    row = pa.array(d_row.astype(np.int64)).cast(pa.string())
    uid, ues = canal_id.take(pa.array(urec)), es.take(pa.array(urec))
    if decoder._order == "id":
        seq = cat(seq_part(uid), ".", seq_part(ues), ".", seq_part(row))
    else:
        seq = cat(seq_part(ues), ".", seq_part(uid), ".", seq_part(row))
    # col_types: the message's types, names lower-cased (the last type of a name wins, at its first place)
    ct_keys, ct_vals, ct_off = [], [], [0]
    for types in pair_types:
        lowered: dict[str, str] = {}
        for k, v in types.items():
            lowered[k.lower()] = v
        ct_keys += list(lowered)
        ct_vals += list(lowered.values())
        ct_off.append(len(ct_keys))
    pair_maps = pa.MapArray.from_arrays(
        pa.array(ct_off, pa.int32()), pa.array(ct_keys, pa.string()), pa.array(ct_vals, pa.string()), type=MAP_TYPE
    )
    op_arr = op_texts(uop, _OP_NAMES)
    table_id = pa.DictionaryArray.from_arrays(pa.array(inv.astype(np.int32)), pa.array(tids, pa.string()))
    extras = [("canal_id", uid, None)]
    if decoder._table:
        extras.append(("event_table", texts_of["table"].take(pa.array(urec)), None))
    keep, result = assemble(
        **entries,
        fb=ufb,
        ekeypos=ekeypos,
        present_before=present_before,
        present_after=present_after,
        key_side=key_side,
        event_keys=None,
        tids=tids,
        inv=inv[urec],
        table_id=table_id.cast(pa.string()).take(pa.array(urec)),
        op_arr=op_arr,
        seq=seq,
        db=texts_of["database"].take(pa.array(urec)),
        schema=pa.nulls(nu, pa.string()),
        table=source_table.take(pa.array(urec)),
        commit=micros(es).take(pa.array(urec)),
        capture=micros(ts).take(pa.array(urec)),
        tx=pa.nulls(nu, pa.string()),
        extras=extras,
        col_types=pair_maps.take(pa.array(pair_id[urec])),
        row_index=d_row,
    )
    # regroup the rows by record
    krec = ~fb
    changes = result.field("changes").flatten()
    counts = d_count[krec]
    offsets = np.zeros(int(krec.sum()) + 1, dtype=np.int32)
    np.cumsum(counts, out=offsets[1:])
    nk = len(offsets) - 1
    grouped = pa.StructArray.from_arrays(
        [
            pa.DictionaryArray.from_arrays(pa.array(np.zeros(nk, dtype=np.int32)), pa.array(["ok"])).cast(pa.string()),
            pa.nulls(nk, pa.string()),
            pa.ListArray.from_arrays(pa.array(offsets), changes, type=DECODE_TYPE.field("changes").type),
            pa.nulls(nk, DECODE_TYPE.field("ddl").type),
        ],
        fields=list(DECODE_TYPE),
    )
    return krec, grouped


def _elements(tok: Tokens, arrays: np.ndarray, fb: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The object elements of each record's array (``arrays``: its opener, -1 none):
    (record, place in the array, opener) of each, in order. A record whose array holds
    anything but objects is flagged in ``fb`` (the decoder quarantines it)."""
    recs = np.flatnonzero(arrays >= 0)
    empty = np.zeros(0, dtype=np.int64)
    if not len(recs):
        return empty, empty, empty
    opens = arrays[recs]
    closes = tok.closing(opens)
    inner = tok.level[opens]  # the level of the array's own tokens (commas)
    order = np.argsort(opens)
    opens_sorted, closes_sorted, recs_sorted = opens[order], closes[order], recs[order]
    # the array (if any) each structural token lies in, by position among the sorted spans
    idx = np.arange(len(tok.spos))
    j = np.searchsorted(opens_sorted, idx, side="right") - 1
    inside = (j >= 0) & (idx < closes_sorted[np.maximum(j, 0)]) & (idx > opens_sorted[np.maximum(j, 0)])
    lev_of = inner[order][np.maximum(j, 0)]
    elem = inside & (tok.scls == OPEN_OBJ) & (tok.level == lev_of + 1)
    comma = inside & (tok.scls == COMMA) & (tok.level == lev_of)
    n_elem = np.bincount(j[elem], minlength=len(opens))
    n_comma = np.bincount(j[comma], minlength=len(opens))
    # every element an object: one more object than commas (an empty array has none)
    nonempty = closes_sorted > opens_sorted + 1
    bad = (n_elem != n_comma + 1) & (nonempty | (n_elem > 0))
    # an array with no structural token inside can still hold scalars ("[5]"): not empty
    scalar_only = (n_elem == 0) & ~nonempty
    bad |= scalar_only & (tok.spos[closes_sorted] > skip_ws(tok.b, tok.spos[opens_sorted] + 1))
    fb[recs_sorted[bad]] = True
    e = np.flatnonzero(elem)
    e_arr = j[e]
    first = np.zeros(len(opens) + 1, dtype=np.int64)
    np.cumsum(n_elem, out=first[1:])
    place = np.arange(len(e)) - first[e_arr]
    out_rec = recs_sorted[e_arr]
    o = np.lexsort((place, out_rec))
    return out_rec[o], place[o], e[o]
