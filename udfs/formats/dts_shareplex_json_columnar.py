"""A columnar DTS Shareplex JSON decoder giving the very result of ``decode_records``.

``decode_shareplex_columnar(options_json, texts, kafka_keys)`` takes a batch of
``dts_shareplex_json`` records as an Arrow string array and returns the ``cdc_decode``
result for the whole batch; ``cdc_decode`` runs it for every such feed unless its option
``columnar`` is false (:func:`udfs.spark_udfs.decode_array`). The building blocks are
:mod:`udfs.formats.columnar`'s (validation, tokens, values, ``assemble``); this module
reads the envelope of :mod:`udfs.formats.dts_shareplex_json`::

    {"meta": {"time", "userid", "op", "scn", "rowid", "trans", "seq", "size",
              "table", "idx", "posttime"}, "data": {COL: value}, "key": {COL: value}}

Done column-wise: ``ins`` / ``upd`` / ``del`` (any spelling the decoder takes), the images
(``upd``: before = ``key``, after = ``key`` overlaid with ``data``; ``del``: ``data``, else
``key``), the configured key, ``seq`` from ``scn``, ``trans`` and ``seq`` / ``idx``, the two
times (each distinct text parsed once), the extras. Handed to ``decode_records``: any
record not a valid JSON object for msgspec, ``TRUNCATE``, ``UPDATE BEFORE``, DDL and
unknown ops, a missing or malformed field (anything the decoder quarantines), numbers
or positions in any other spelling than plain ASCII digits, nested values, escaped or
non-ASCII column names, a name twice in an image (before or after lower-casing), a table
without a configured key, an update that changes the key, a table name too long.
``LAST_STATS`` holds the counts of the last call.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from udfs.contract import QuarantineError
from udfs.formats.columnar import (
    DECODE_TYPE,
    K_ABSENT,
    K_ARR,
    K_FRAC,
    K_INT,
    K_NULL,
    K_OBJ,
    K_STR,
    Images,
    assemble,
    cat,
    configured_key_counts,
    decode_columnar,
    field_values,
    flags,
    key_positions,
    key_sides,
    object_tokens,
    on_valid_only,
    op_texts,
    open_batch,
    per_record,
    plain_digits,
    resolve_tables,
    row_entries,
    seq_part,
    slots,
    table_id_array,
    top_level,
)
from udfs.formats.dts_shareplex_json import EXTRAS, OPS, DtsShareplexJsonDecoder, parse_time_text

LAST_STATS: dict[str, Any] = {}
_stats: dict[str, Any] = {}

TOP_KEYS = ["meta", "data", "key"]
META_KEYS = ["time", "userid", "op", "scn", "rowid", "trans", "seq", "size", "table", "idx", "posttime"]
# object roles
R_META, R_DATA, R_KEY = range(2, 5)  # (0: other objects, 1: the top level)
_OP_CODES = {"insert": 0, "update": 1, "delete": 2}
_OP_NAMES = ["insert", "update", "delete"]


def decode_shareplex_columnar(options_json: str, texts: pa.Array, kafka_keys: pa.Array | None = None) -> pa.StructArray:
    """The ``cdc_decode`` result of a batch of DTS Shareplex JSON records (module doc)."""
    return decode_columnar(
        options_json,
        texts,
        kafka_keys,
        fmt=DtsShareplexJsonDecoder.identifier,
        fast=lambda *args: _fast(*args),  # looked up per call (a test replaces it)
        stats=_stats,
        last_stats=LAST_STATS,
    )


def _fast(
    texts: pa.StringArray, options: dict[str, Any], tables: dict[str, Any], keys: pa.Array | None = None
) -> tuple[np.ndarray, pa.Array]:
    """(which records the columnar path decoded, their results in order)."""
    n = len(texts)
    _stats.clear()
    if n == 0:
        return np.zeros(0, dtype=bool), pa.array([], type=DECODE_TYPE)
    b, off, first, fb = open_batch(texts)
    if fb.any():
        return on_valid_only(texts, fb, lambda valid: _fast(valid, options, tables), _stats)
    tok, top_open = object_tokens(b, off, first, fb)
    role, top = top_level(tok, top_open, fb, TOP_KEYS)
    colons, crec = tok.colons, tok.crec

    # --- top level: meta (an object), data and key (objects, null or absent)
    fb |= top["meta"][2] != K_OBJ
    present = {}
    for name, r in (("meta", R_META), ("data", R_DATA), ("key", R_KEY)):
        have, v, kind, _ = top[name]
        if name != "meta":
            fb |= (kind != K_ABSENT) & (kind != K_NULL) & (kind != K_OBJ)
        is_obj = v["kind"] == K_OBJ
        role[v["opener"][is_obj & ~fb[have]]] = r
        present[name] = kind == K_OBJ

    # --- meta fields
    m = role[tok.parent] == R_META
    meta = field_values(tok, slots(tok, colons[m], crec[m], META_KEYS, n, fb), META_KEYS, n)
    kinds = {name: meta[name][2] for name in META_KEYS}
    texts_of = {name: per_record(meta[name], n) for name in META_KEYS}
    for name in META_KEYS:  # a nested value in meta: its text would be compact JSON
        fb |= (kinds[name] == K_OBJ) | (kinds[name] == K_ARR)

    # op: a text naming insert, update or delete
    fb |= kinds["op"] != K_STR
    op_code = np.full(n, -1, dtype=np.int64)
    enc = pc.dictionary_encode(texts_of["op"])
    codes = []
    for raw in enc.dictionary.to_pylist():
        op = OPS.get(" ".join(raw.replace("_", " ").upper().split()))
        codes.append(_OP_CODES.get(op, -1) if op else -1)
    idx = enc.indices.fill_null(-1).to_numpy(zero_copy_only=False)
    if codes:
        op_code = np.where(idx >= 0, np.array(codes, dtype=np.int64)[np.maximum(idx, 0)], -1)
    fb |= op_code < 0

    # table: OWNER.TABLE (a text; without a dot, the table alone)
    fb |= kinds["table"] != K_STR
    enc = pc.dictionary_encode(texts_of["table"])
    owners: list[str | None] = []
    names: list[str | None] = []
    name_ok: list[bool] = []
    for value in enc.dictionary.to_pylist():
        owner, dot, table = value.partition(".")
        if not dot:
            owner, table = None, value
        owners.append(owner)
        names.append(table)
        name_ok.append(bool(table) and (not dot or bool(owner)))
    tcode = enc.indices.fill_null(-1).to_numpy(zero_copy_only=False).astype(np.int64)
    fb |= tcode < 0
    if name_ok:
        fb |= ~np.array(name_ok, dtype=bool)[np.maximum(tcode, 0)]
    else:
        fb[:] = True
        return ~fb, pa.array([], type=DECODE_TYPE)
    tcode = np.maximum(tcode, 0)

    # times: each distinct text parsed once (as the decoder's cache does)
    micros = {}
    for name in ("time", "posttime"):
        kind = kinds[name]
        fb |= (kind != K_ABSENT) & (kind != K_NULL) & (kind != K_STR)
        enc = pc.dictionary_encode(texts_of[name])
        values, good = [], []
        for text in enc.dictionary.to_pylist():
            try:
                values.append(parse_time_text(text, name))
                good.append(True)
            except QuarantineError:
                values.append(0)
                good.append(False)
        code = enc.indices.fill_null(-1).to_numpy(zero_copy_only=False).astype(np.int64)
        if values:
            fb |= (code >= 0) & ~np.array(good, dtype=bool)[np.maximum(code, 0)]
            out = np.array(values, dtype=np.int64)[np.maximum(code, 0)]
        else:
            out = np.zeros(n, dtype=np.int64)
        micros[name] = pa.array(out, type=pa.int64(), mask=code < 0)

    # positions: scn, seq, size (plain digits as a text or a number), idx (seq/size),
    # trans (usn[.slot[.sqn]]); each validated as the decoder does, absent or null allowed
    def number(name: str) -> pa.Array:
        kind, text = kinds[name], texts_of[name]
        fb[(kind != K_ABSENT) & (kind != K_NULL) & (kind != K_STR) & (kind != K_INT)] = True
        fb[((kind == K_STR) | (kind == K_INT)) & ~plain_digits(text)] = True
        return text

    scn, op_seq = number("scn"), number("seq")
    number("size")
    kind = kinds["idx"]
    fb |= (kind != K_ABSENT) & (kind != K_NULL) & (kind != K_STR)
    idx_parts = pc.extract_regex(texts_of["idx"], r"^(?P<seq>[0-9]+)/(?P<size>[0-9]+)$")
    fb |= (kind == K_STR) & ~flags(idx_parts.is_valid())
    op_seq = pc.coalesce(op_seq, pc.struct_field(idx_parts, [0]), pa.scalar("0"))
    kind, trans = kinds["trans"], texts_of["trans"]
    fb |= (kind != K_ABSENT) & (kind != K_NULL) & (kind != K_STR) & (kind != K_INT) & (kind != K_FRAC)
    t_parts = pc.extract_regex(trans, r"^(?P<a>[0-9]+)(?:\.(?P<b>[0-9]+))?(?:\.(?P<c>[0-9]+))?$")
    fb |= trans.is_valid().to_numpy(zero_copy_only=False) & ~flags(t_parts.is_valid())
    t_pad = []
    for i in range(3):  # a missing part is 0; the regex gives "" for an unmatched group
        part = pc.struct_field(t_parts, [i])
        t_pad.append(seq_part(pc.if_else(pc.equal(pc.fill_null(part, ""), ""), "0", part)))
    seq = cat(seq_part(scn), ".", t_pad[0], ".", t_pad[1], ".", t_pad[2], ".", seq_part(op_seq))
    seq = pc.if_else(scn.is_null(), pa.nulls(n, pa.string()), seq)

    # --- tables: id, configured key
    table_pairs = np.unique(tcode, return_inverse=True)
    uniq, inv = table_pairs
    tids, tid_keys, tid_bad = resolve_tables(tables, [(None, owners[u], names[u]) for u in uniq.tolist()])
    # Shareplex names no key: without one configured, the decoder's reason
    tid_bad |= np.array([not k for k in tid_keys], dtype=bool)
    fb |= tid_bad[inv]
    table_id = table_id_array(tids, inv)

    # --- image entries of data and key
    pr = role[tok.parent]
    m = (pr == R_DATA) | (pr == R_KEY)
    ecol, erec, is_data = colons[m], crec[m], pr[m] == R_DATA
    raw_names, ev, etext, eesc = row_entries(tok, ecol, erec, fb, _stats)
    images = Images(erec, is_data.astype(np.int64), 2, raw_names, fb)  # objects: 0 key, 1 data

    # images by op: insert after = data; delete before = data, else key; update before =
    # key, after = key overlaid with data (a key column data names takes data's value at
    # key's place; data's other columns follow in their order)
    is_ins, is_upd, is_del = op_code == 0, op_code == 1, op_code == 2
    has_data, has_key = present["data"], present["key"]
    fb |= (is_ins | is_upd) & ~has_data  # (a delete without either image has no key: key_sides)
    data_at = np.flatnonzero(is_data)
    key_at = np.flatnonzero(~is_data)
    images.add(data_at[is_ins[erec[data_at]]], 1)
    images.add(data_at[is_del[erec[data_at]]], 0)
    images.add(key_at[is_del[erec[key_at]] & ~has_data[erec[key_at]]], 0)
    images.add(key_at[is_upd[erec[key_at]]], 0)
    images.overlay(key_at[is_upd[erec[key_at]]], data_at[is_upd[erec[data_at]]], over_obj=1, base_obj=0, side=1)
    entries = images.build(etext, eesc)
    p_rec, p_side = entries["erec"], entries["side"]
    present_before = (is_del & (has_data | has_key)) | (is_upd & has_key)
    present_after = (is_ins | is_upd) & has_data

    # --- keys: the configured key columns, read from the images
    ekeypos = key_positions(tid_keys, entries["ldict"], inv[p_rec], entries["lcode"])
    key_side = key_sides(
        erec=p_rec,
        side=p_side,
        prov=entries["prov"],
        ekeypos=ekeypos,
        etext=entries["etext"],
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
    owner_arr = pa.DictionaryArray.from_arrays(pa.array(tcode.astype(np.int32)), pa.array(owners, pa.string()))
    table_arr = pa.DictionaryArray.from_arrays(pa.array(tcode.astype(np.int32)), pa.array(names, pa.string()))
    return assemble(
        **entries,
        fb=fb,
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
        db=pa.nulls(n, pa.string()),
        schema=owner_arr.cast(pa.string()),
        table=table_arr.cast(pa.string()),
        commit=micros["time"],
        capture=micros["posttime"],
        tx=texts_of["trans"],
        extras=[(name, texts_of[name], kinds[name] != K_ABSENT) for name in EXTRAS],
    )
