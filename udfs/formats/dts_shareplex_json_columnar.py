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
from udfs.decode import MAX_PARTITION_NAME_BYTES, _table_id, partition_name_bytes
from udfs.formats.columnar import (
    DECODE_TYPE,
    K_ABSENT,
    K_ARR,
    K_FRAC,
    K_INT,
    K_NULL,
    K_OBJ,
    K_STR,
    Tokens,
    assemble,
    buffers,
    cat,
    decode_columnar,
    field_values,
    gather,
    key_sides,
    long_numbers,
    skip_ws,
    slots,
    validate,
)
from udfs.formats.dts_shareplex_json import _EXTRAS, OPS, DtsShareplexJsonDecoder, _parse_time_text

LAST_STATS: dict[str, Any] = {}
_stats: dict[str, Any] = {}

TOP_KEYS = ["meta", "data", "key"]
META_KEYS = ["time", "userid", "op", "scn", "rowid", "trans", "seq", "size", "table", "idx", "posttime"]
# object roles
R_NONE, R_TOP, R_META, R_DATA, R_KEY = range(5)
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


def _mask(arr: pa.Array) -> np.ndarray:
    return np.asarray(pc.fill_null(arr, False).to_numpy(zero_copy_only=False), dtype=bool)


def _per_record(field: tuple[Any, ...], n: int) -> pa.Array:
    """A field's canonical text for every record (null: absent or null)."""
    have, _, _, text = field
    if not len(have):
        return pa.nulls(n, pa.string())
    at = np.full(n, -1, dtype=np.int32)
    at[have] = np.arange(len(have), dtype=np.int32)
    return text.take(pa.array(at, mask=at < 0))


def _digits(text: pa.Array) -> np.ndarray:
    """Plain ASCII digits (what ``str.isdigit`` and ``int`` agree on, no sign, no space)."""
    return _mask(pc.match_substring_regex(text, r"^[0-9]+$"))


def _pad(text: pa.Array) -> pa.Array:
    """``str(int(text)).zfill(20)`` of ASCII digit texts (``seq_of``'s width)."""
    trimmed = pc.utf8_ltrim(text, "0")
    trimmed = pc.if_else(pc.equal(trimmed, ""), "0", trimmed)
    return pc.utf8_lpad(trimmed, 20, "0")


def _lookup(sorted_keys: np.ndarray, queries: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Whether each query is in ``sorted_keys``, and its index there (0 when not)."""
    if not len(sorted_keys):
        return np.zeros(len(queries), dtype=bool), np.zeros(len(queries), dtype=np.int64)
    j = np.clip(np.searchsorted(sorted_keys, queries), 0, len(sorted_keys) - 1)
    found = sorted_keys[j] == queries
    return found, np.where(found, j, 0)


def _fast(
    texts: pa.StringArray, options: dict[str, Any], tables: dict[str, Any], keys: pa.Array | None = None
) -> tuple[np.ndarray, pa.Array]:
    """(which records the columnar path decoded, their results in order)."""
    n = len(texts)
    _stats.clear()
    if n == 0:
        return np.zeros(0, dtype=bool), pa.array([], type=DECODE_TYPE)
    b, off = buffers(texts)
    first = skip_ws(b, off[:-1], off[1:])
    fb = ~validate(b, off, first)
    _stats["invalid_json"] = int(fb.sum())
    if fb.any():  # tokenize the valid records only (quotes pair up within a valid text)
        keep = np.flatnonzero(~fb)
        ok_sub, res = _fast(texts.take(pa.array(keep)), options, tables)
        ok = np.zeros(n, dtype=bool)
        ok[keep[ok_sub]] = True
        return ok, res
    fb |= b[first] != ord("{")
    tok = Tokens(b, off)
    fb[long_numbers(tok)] = True
    role = np.zeros(len(tok.spos), dtype=np.int8)
    top_open = np.minimum(np.searchsorted(tok.spos, first), len(tok.spos) - 1)
    role[top_open[~fb]] = R_TOP
    colons, crec = tok.colons, tok.crec

    # --- top level: meta (an object), data and key (objects, null or absent)
    m = role[tok.parent] == R_TOP
    top = field_values(tok, slots(tok, colons[m], crec[m], TOP_KEYS, n, fb), TOP_KEYS, n)
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
    texts_of = {name: _per_record(meta[name], n) for name in META_KEYS}
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
                values.append(_parse_time_text(text, name))
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
        fb[((kind == K_STR) | (kind == K_INT)) & ~_digits(text)] = True
        return text

    scn, op_seq = number("scn"), number("seq")
    number("size")
    kind = kinds["idx"]
    fb |= (kind != K_ABSENT) & (kind != K_NULL) & (kind != K_STR)
    idx_parts = pc.extract_regex(texts_of["idx"], r"^(?P<seq>[0-9]+)/(?P<size>[0-9]+)$")
    fb |= (kind == K_STR) & ~_mask(idx_parts.is_valid())
    op_seq = pc.coalesce(op_seq, pc.struct_field(idx_parts, [0]), pa.scalar("0"))
    kind, trans = kinds["trans"], texts_of["trans"]
    fb |= (kind != K_ABSENT) & (kind != K_NULL) & (kind != K_STR) & (kind != K_INT) & (kind != K_FRAC)
    t_parts = pc.extract_regex(trans, r"^(?P<a>[0-9]+)(?:\.(?P<b>[0-9]+))?(?:\.(?P<c>[0-9]+))?$")
    fb |= trans.is_valid().to_numpy(zero_copy_only=False) & ~_mask(t_parts.is_valid())
    t_pad = []
    for i in range(3):  # a missing part is 0; the regex gives "" for an unmatched group
        part = pc.struct_field(t_parts, [i])
        t_pad.append(_pad(pc.if_else(pc.equal(pc.fill_null(part, ""), ""), "0", part)))
    seq = cat(_pad(scn), ".", t_pad[0], ".", t_pad[1], ".", t_pad[2], ".", _pad(op_seq))
    seq = pc.if_else(scn.is_null(), pa.nulls(n, pa.string()), seq)

    # --- tables: id, configured key
    table_pairs = np.unique(tcode, return_inverse=True)
    uniq, inv = table_pairs
    tids: list[str] = []
    tid_keys: list[list[str]] = []
    tid_bad = np.zeros(len(uniq), dtype=bool)
    for j, u in enumerate(uniq.tolist()):
        table = names[u] or ""
        tid = _table_id(tables, None, owners[u], table) if table else ""
        cfg_keys = (tables.get(tid) or {}).get("key") or None
        if not table or partition_name_bytes(tid) > MAX_PARTITION_NAME_BYTES:
            tid_bad[j] = True
        if not cfg_keys or not isinstance(cfg_keys, list) or not all(isinstance(k, str) for k in cfg_keys):
            tid_bad[j] = True  # Shareplex names no key: without one configured, the decoder's reason
            cfg_keys = []
        tids.append(tid)
        tid_keys.append(list(cfg_keys))
    fb |= tid_bad[inv]
    table_id = pa.DictionaryArray.from_arrays(pa.array(inv.astype(np.int32)), pa.array(tids, pa.string())).cast(
        pa.string()
    )

    # --- image entries of data and key
    pr = role[tok.parent]
    m = (pr == R_DATA) | (pr == R_KEY)
    ecol, erec, is_data = colons[m], crec[m], pr[m] == R_DATA
    ns, ne = tok.key_spans(ecol)
    fb[erec[tok.key_has_bs(ns, ne)]] = True
    raw_names = gather(b, ns, ne)
    fb[erec[~_mask(pc.string_is_ascii(raw_names))]] = True
    ev = tok.values(ecol)
    fb[erec[(ev["kind"] == K_OBJ) | (ev["kind"] == K_ARR)]] = True
    etext, eesc, n_bs = tok.texts(ev, need_esc=True)
    _stats["escaped_values"] = n_bs
    _stats["values"] = len(ecol)
    renc = pc.dictionary_encode(raw_names)
    rcode = renc.indices.to_numpy(zero_copy_only=False).astype(np.int64)
    nr = max(len(renc.dictionary), 1)
    # a raw name twice in one object -> fallback
    obj_key = (erec * 2 + is_data) * nr + rcode
    srt = np.sort(obj_key)
    dups = srt[1:][srt[1:] == srt[:-1]]
    fb[np.unique(dups // nr // 2)] = True

    # images by op: insert after = data; delete before = data, else key; update before =
    # key, after = key overlaid with data (a key column data names takes data's value at
    # key's place; data's other columns follow in their order)
    is_ins, is_upd, is_del = op_code == 0, op_code == 1, op_code == 2
    has_data, has_key = present["data"], present["key"]
    fb |= (is_ins | is_upd) & ~has_data  # (a delete without either image has no key: key_sides)
    e_ins, e_upd, e_del = is_ins[erec], is_upd[erec], is_del[erec]
    data_at = np.flatnonzero(is_data)
    key_at = np.flatnonzero(~is_data)
    d_order = np.argsort(obj_key[data_at], kind="stable")
    # a key entry's data entry of the same name (the same record's data object)
    k_in_data, j = _lookup(obj_key[data_at][d_order], (erec[key_at] * 2 + 1) * nr + rcode[key_at])
    k_source = np.where(k_in_data, data_at[d_order][j], key_at) if len(data_at) else key_at
    # whether a data entry's name is in the same record's key object
    d_in_key, _ = _lookup(np.sort(obj_key[key_at]), (erec[data_at] * 2) * nr + rcode[data_at])
    # (source entry, record, side, group, place)
    parts = []
    sel = e_ins[data_at]
    parts.append((data_at[sel], erec[data_at[sel]], 1, 0, data_at[sel]))
    sel = e_del[data_at]
    parts.append((data_at[sel], erec[data_at[sel]], 0, 0, data_at[sel]))
    sel = e_del[key_at] & ~has_data[erec[key_at]]
    parts.append((key_at[sel], erec[key_at[sel]], 0, 0, key_at[sel]))
    sel = e_upd[key_at]
    parts.append((key_at[sel], erec[key_at[sel]], 0, 0, key_at[sel]))
    parts.append((k_source[sel], erec[key_at[sel]], 1, 0, key_at[sel]))
    sel = e_upd[data_at] & ~d_in_key
    parts.append((data_at[sel], erec[data_at[sel]], 1, 1, data_at[sel]))
    src = np.concatenate([p[0] for p in parts])
    p_rec = np.concatenate([p[1] for p in parts])
    p_side = np.concatenate([np.full(len(p[0]), p[2], dtype=np.int64) for p in parts])
    p_group = np.concatenate([np.full(len(p[0]), p[3], dtype=np.int64) for p in parts])
    p_place = np.concatenate([p[4] for p in parts])
    order = np.lexsort((p_place, p_group, p_side, p_rec))
    src, p_rec, p_side = src[order], p_rec[order], p_side[order]
    present_before = (is_del & (has_data | has_key)) | (is_upd & has_key)
    present_after = (is_ins | is_upd) & has_data

    lnames = pc.ascii_lower(raw_names.take(pa.array(src, type=pa.int64())))
    lenc = pc.dictionary_encode(lnames)
    lcode = lenc.indices.to_numpy(zero_copy_only=False).astype(np.int64)
    ldict = lenc.dictionary.to_pylist()
    nl = max(len(ldict), 1)
    # a name twice in one image after lower-casing -> fallback (the decoder's reason)
    img = (p_rec * 2 + p_side) * nl + lcode
    srt = np.sort(img)
    dups = srt[1:][srt[1:] == srt[:-1]]
    fb[np.unique(dups // nl // 2)] = True

    # --- keys: the configured key columns, read from the images
    keypos_tab = np.full((len(tids), nl), -1, dtype=np.int64)
    for t_i, cfg_keys in enumerate(tid_keys):
        pos_of = {k: i for i, k in enumerate(cfg_keys)}
        for l_i, name in enumerate(ldict):
            if name in pos_of:
                keypos_tab[t_i, l_i] = pos_of[name]
    ekeypos = keypos_tab[inv[p_rec], lcode] if len(p_rec) else np.zeros(0, dtype=np.int64)
    e_text = etext.take(pa.array(src, type=pa.int64()))
    e_esc = eesc.take(pa.array(src, type=pa.int64()))
    prov = np.ones(len(src), dtype=bool)
    key_side = key_sides(
        erec=p_rec,
        side=p_side,
        prov=prov,
        ekeypos=ekeypos,
        etext=e_text,
        nkeys=np.array([len(k) for k in tid_keys], dtype=np.int64)[inv],
        present_before=present_before,
        present_after=present_after,
        is_ins=is_ins,
        is_upd=is_upd,
        is_del=is_del,
        has_ek=np.zeros(n, dtype=bool),
        fb=fb,
    )
    _stats["fallback_reasons_flagged"] = int(fb.sum())

    op_arr = pa.DictionaryArray.from_arrays(pa.array(np.maximum(op_code, 0).astype(np.int32)), pa.array(_OP_NAMES))
    owner_arr = pa.DictionaryArray.from_arrays(pa.array(tcode.astype(np.int32)), pa.array(owners, pa.string()))
    table_arr = pa.DictionaryArray.from_arrays(pa.array(tcode.astype(np.int32)), pa.array(names, pa.string()))
    return assemble(
        fb=fb,
        erec=p_rec,
        side=p_side,
        prov=prov,
        lnames=lnames,
        lcode=lcode,
        ldict=ldict,
        etext=e_text,
        eesc=e_esc,
        etype=np.zeros(len(src), dtype=np.int32),
        types=[None],
        ekeypos=ekeypos,
        present_before=present_before,
        present_after=present_after,
        key_side=key_side,
        event_keys=None,
        tids=tids,
        inv=inv,
        table_id=table_id,
        op_arr=op_arr.cast(pa.string()),
        seq=seq,
        db=pa.nulls(n, pa.string()),
        schema=owner_arr.cast(pa.string()),
        table=table_arr.cast(pa.string()),
        commit=micros["time"],
        capture=micros["posttime"],
        tx=texts_of["trans"],
        extras=[(name, texts_of[name], kinds[name] != K_ABSENT) for name in _EXTRAS],
    )
