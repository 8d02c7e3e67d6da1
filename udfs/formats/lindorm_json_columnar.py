"""A columnar Lindorm JSON decoder giving the very result of ``decode_records``.

``decode_lindorm_columnar(options_json, texts, kafka_keys)`` takes a batch of
``lindorm_json`` records (Debezium format V2.0) as an Arrow string array and returns the
``cdc_decode`` result for the whole batch; ``cdc_decode`` runs it for every such feed
unless its option ``columnar`` is false (:func:`udfs.spark_udfs.decode_array`). The
building blocks are :mod:`udfs.formats.columnar`'s (validation, tokens, values,
``Images``, ``assemble``); this module reads the envelope of
:mod:`udfs.formats.lindorm_json`::

    {"schema": {...} | {}, "payload": {"op", "ts_ms", "before", "after",
                                       "source": {"version", "db", "namespace", "table", "ts_ms"}}}

(or the payload alone). The Kafka Connect schema is cut out as text and parsed once per
distinct text (the schema cache of :mod:`udfs.formats.columnar`); values are typed by
``field_kind`` and ``typed_values`` of :mod:`udfs.formats.columnar_connect`. Lindorm is
not Debezium-based: its "unavailable value" placeholder is plain data, none is looked for.

Done column-wise: ops ``c`` / ``r`` / ``u`` / ``d``; SQL tables (typed values of the
primitive Connect types, ``Decimal`` of scale 0..38, dates and times as the
Debezium decoder does them; ``col_types`` from each distinct schema; an update's
``after`` completed with NULL for the columns ``before`` or the configured
``tables.<t>.column_order`` / ``columns`` name and ``after`` lacks); HBase tables (a put
``c`` / ``u`` as an update of the given cells, a delete; base64 checked by a regular
expression equal to ``base64.b64decode(validate=True)``; key ``ROW``); option
``table_kind`` ``sql`` / ``hbase`` / ``auto`` (``auto``: a ``ROW`` column and every value a
valid base64 text, as ``looks_like_hbase``); ``seq`` from ``source.ts_ms``; both times; the
extras. Handed to ``decode_records``: any record not a valid JSON object for msgspec,
a payload that is not an object (a tombstone), an unknown op, a missing or empty image
or table, a field of the wrong JSON kind (a time that is not a plain non-negative
integer of at most 15 digits, a name or version that is not a text), nested values,
escaped or non-ASCII column names, a name twice in an image, a value its Connect type
rejects or a logical type not done here (``bytes``, negative decimal scales, dates and times out
of the years 1000..9999...),
a schema whose types the decoder cannot read, HBase cells that are not base64 or
without ``ROW`` (or a cell spelled ``row`` otherwise), an HBase delete with an ``after``
image, configured column names that are not ASCII (for the updates they complete), a
missing key, an update that changes the key, a table name too long. ``LAST_STATS``
holds the counts of the last call.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from udfs.formats.columnar import (
    DECODE_TYPE,
    K_ABSENT,
    K_INT,
    K_NULL,
    K_OBJ,
    K_STR,
    MAP_TYPE,
    SCHEMAS,
    Images,
    assemble,
    clear_schema_cache,
    configured_key_counts,
    decode_columnar,
    distinct_tables,
    field_values,
    flags,
    key_positions,
    key_sides,
    lookup,
    object_tokens,
    on_valid_only,
    op_texts,
    open_connect_batch,
    opener_per_record,
    per_record,
    resolve_tables,
    row_entries,
    schema_ids,
    seq_part,
    slots,
    table_id_array,
    top_level,
)
from udfs.formats.columnar_connect import F_NONE, field_kind, typed_values
from udfs.formats.connect_types import decode_row, field_schemas
from udfs.formats.lindorm_json import ROW, LindormJsonDecoder

LAST_STATS: dict[str, Any] = {}
_stats: dict[str, Any] = {}

TOP_KEYS = ["schema", "payload"]
PAYLOAD_KEYS = ["op", "ts_ms", "before", "after", "source"]
SOURCE_KEYS = ["version", "db", "namespace", "table", "ts_ms"]
# object roles (0: other objects, 1: the top level)
R_PAYLOAD, R_BEFORE, R_AFTER, R_SOURCE = range(2, 6)
_OP_LETTERS = ["c", "r", "u", "d"]
_OP_NAMES = ["insert", "snapshot", "update", "delete"]
#: what ``base64.b64decode(value, validate=True)`` accepts (strict mode: quads, then
#: ``==`` after two or ``=`` after three characters; after whole quads any ``=`` run)
B64_RE = r"^(?:(?:[A-Za-z0-9+/]{4})+=*|(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=))?$"
#: a time field's digits at most (its microseconds fit an int64)
_MAX_MS_DIGITS = 15

__all__ = ["LAST_STATS", "clear_schema_cache", "decode_lindorm_columnar"]


def decode_lindorm_columnar(options_json: str, texts: pa.Array, kafka_keys: pa.Array | None = None) -> pa.StructArray:
    """The ``cdc_decode`` result of a batch of Lindorm JSON records (module doc)."""
    return decode_columnar(
        options_json,
        texts,
        kafka_keys,
        fmt=LindormJsonDecoder.identifier,
        fast=lambda *args: _fast(*args),  # looked up per call (a test replaces it)
        stats=_stats,
        last_stats=LAST_STATS,
    )


def _schema_info(sid: int) -> tuple[bool, list[tuple[str, str]], dict[str, Any], dict[str, Any]]:
    """(the decoder cannot read its types, ``col_types`` as normalized, before's and
    after's field schemas by name) of a cached schema (0: none)."""
    schema = SCHEMAS[sid] if sid else None
    if not isinstance(schema, dict) or not schema:  # split_envelope: {} or not an object is no schema
        return False, [], {}, {}
    fields = field_schemas(schema)
    try:
        _, before_types, _ = decode_row(None, fields.get("before"), placeholders=False)
        _, after_types, _ = decode_row(None, fields.get("after"), placeholders=False)
        types = {k.lower(): v for k, v in {**before_types, **after_types}.items()}
    except Exception:  # noqa: BLE001 - whatever the decoder makes of it, it is its to say
        return True, [], {}, {}
    return False, list(types.items()), field_schemas(fields.get("before")), field_schemas(fields.get("after"))


def _fast(
    texts: pa.StringArray, options: dict[str, Any], tables: dict[str, Any], keys: pa.Array | None = None
) -> tuple[np.ndarray, pa.Array]:
    """(which records the columnar path decoded, their results in order)."""
    n = len(texts)
    _stats.clear()
    if n == 0:
        return np.zeros(0, dtype=bool), pa.array([], type=DECODE_TYPE)
    decoder = LindormJsonDecoder(options)
    b, off, first, fb, cached_sid = open_connect_batch(texts)
    _stats["invalid_json"] = int(fb.sum())
    if fb.any():
        return on_valid_only(texts, fb, lambda valid: _fast(valid, options, tables), _stats)
    tok, top_open = object_tokens(b, off, first, fb)
    role, top = top_level(tok, top_open, fb, TOP_KEYS)
    colons, crec = tok.colons, tok.crec

    # --- envelope (split_envelope): {"payload"} or {"schema", "payload"}, else the payload alone
    n_top = np.bincount(crec[role[tok.parent] == 1], minlength=n)
    skind, pkind = top["schema"][2], top["payload"][2]
    wrapped = (pkind != K_ABSENT) & (n_top == (skind != K_ABSENT) + 1)
    fb |= wrapped & (pkind != K_OBJ)  # null: a tombstone; else not an object
    payload_open = top_open.copy()
    popen = opener_per_record(top["payload"], n)
    use = wrapped & (pkind == K_OBJ)
    payload_open[use] = popen[use]
    role[payload_open[~fb]] = R_PAYLOAD
    schema_id = np.zeros(n, dtype=np.int64)
    sopen = opener_per_record(top["schema"], n)
    sch_rec = np.flatnonzero(wrapped & (skind == K_OBJ) & (cached_sid < 0) & ~fb)
    schema_id[sch_rec] = schema_ids(tok, sopen[sch_rec])
    cut = wrapped & (cached_sid >= 0)
    schema_id[cut] = cached_sid[cut]

    # --- payload: op, images, source, ts_ms
    m = role[tok.parent] == R_PAYLOAD
    pv = field_values(tok, slots(tok, colons[m], crec[m], PAYLOAD_KEYS, n, fb), PAYLOAD_KEYS, n)
    fb |= pv["op"][2] != K_STR
    op_code = pc.index_in(per_record(pv["op"], n), value_set=pa.array(_OP_LETTERS)).fill_null(-1)
    op_code = op_code.to_numpy(zero_copy_only=False).astype(np.int64)
    fb |= op_code < 0
    present = {}
    for name, r in (("before", R_BEFORE), ("after", R_AFTER)):
        have, v, kind, _ = pv[name]
        fb |= (kind != K_ABSENT) & (kind != K_NULL) & (kind != K_OBJ)
        is_obj = v["kind"] == K_OBJ
        role[v["opener"][is_obj & ~fb[have]]] = r
        present[name] = kind == K_OBJ
    have, v, kind, _ = pv["source"]
    fb |= kind != K_OBJ
    role[v["opener"][(v["kind"] == K_OBJ) & ~fb[have]]] = R_SOURCE
    m = role[tok.parent] == R_SOURCE
    sv = field_values(tok, slots(tok, colons[m], crec[m], SOURCE_KEYS, n, fb), SOURCE_KEYS, n)
    src = {}
    for name in ("version", "db", "namespace", "table"):
        kind = sv[name][2]
        fb |= (kind != K_ABSENT) & (kind != K_NULL) & (kind != K_STR)
        src[name] = per_record(sv[name], n)
    fb |= ~flags(pc.greater(pc.binary_length(src["table"]), 0))  # source.table must be truthy

    def millis(field: tuple[Any, ...]) -> tuple[pa.Array, pa.Array]:
        """(digits text or null, microseconds or null) of an epoch-ms field (_ms)."""
        kind = field[2]
        fb[(kind != K_ABSENT) & (kind != K_NULL) & (kind != K_INT)] = True
        text = per_record(field, n)  # canonical: -0 is 0
        is_int = kind == K_INT
        bad = is_int & (flags(pc.starts_with(text, "-")) | flags(pc.greater(pc.binary_length(text), _MAX_MS_DIGITS)))
        fb[bad] = True
        ok = is_int & ~bad
        ms = pc.cast(pc.if_else(pa.array(ok), text, "0"), pa.int64()).to_numpy(zero_copy_only=False)
        return text, pa.array(ms * 1000, type=pa.int64(), mask=~ok)

    commit_text, commit = millis(sv["ts_ms"])
    _, capture = millis(pv["ts_ms"])
    seq = seq_part(commit_text)

    # --- tables: id, configured key and columns per distinct (db, namespace, table)
    triples, inv = distinct_tables(src["db"], src["namespace"], src["table"])
    tids, tid_keys, tid_bad = resolve_tables(tables, triples)
    fb |= tid_bad[inv]
    table_id = table_id_array(tids, inv)
    configured: list[list[str]] = []
    for db, ns, table in triples:
        cols = decoder.configured_columns({"db": db, "namespace": ns, "table": table}) if table else []
        configured.append(cols)
    cfg_any = np.array([bool(c) for c in configured], dtype=bool)
    cfg_bad = np.array([not all(c.isascii() for c in cols) for cols in configured], dtype=bool)

    # --- image entries of before (object 0) and after (object 1)
    pr = role[tok.parent]
    m = (pr == R_BEFORE) | (pr == R_AFTER)
    ecol, erec, eobj = colons[m], crec[m], (pr[m] == R_AFTER).astype(np.int64)
    ne_ = len(ecol)
    raw_names, ev, etext, eesc = row_entries(tok, ecol, erec, fb, _stats)
    ek = ev["kind"]

    # a delete needs a before image, any other op an after image (neither empty)
    is_del = op_code == 3
    img_obj = np.where(is_del, 0, 1)
    counts = np.bincount(erec * 2 + eobj, minlength=2 * n).reshape(n, 2)
    fb |= ~np.where(is_del, present["before"], present["after"]) | (counts[np.arange(n), img_obj] == 0)

    # --- SQL or HBase: table_kind, or (auto) a ROW column and every value base64
    is_row = flags(pc.equal(raw_names, ROW))
    is_b64 = (ek == K_STR) & flags(pc.match_substring_regex(etext, B64_RE))
    in_img = eobj == img_obj[erec]
    row_in_img = np.bincount(erec[in_img & is_row], minlength=n) > 0
    if decoder.table_kind == "hbase":
        hb = np.ones(n, dtype=bool)
    elif decoder.table_kind == "sql":
        hb = np.zeros(n, dtype=bool)
    else:
        hb = row_in_img & (np.bincount(erec[in_img & ~is_b64], minlength=n) == 0)
    fb |= hb & ((np.bincount(erec[~is_b64], minlength=n) > 0) | ~row_in_img)
    fb |= hb & is_del & present["after"]  # (its after cells would be in col_types)
    lraw = pc.ascii_lower(raw_names)
    fb[erec[hb[erec] & flags(pc.equal(lraw, "row")) & ~is_row]] = True

    # --- SQL values by their Connect schema (before's and after's fields)
    used = np.unique(schema_id)
    infos = [_schema_info(s) for s in used.tolist()]
    sid_at = np.searchsorted(used, schema_id)
    fb |= np.array([info[0] for info in infos], dtype=bool)[sid_at]
    renc = pc.dictionary_encode(raw_names)
    rcode = renc.indices.to_numpy(zero_copy_only=False).astype(np.int64)
    rnames = renc.dictionary.to_pylist()
    fk_tab = np.full((len(used), 2, max(len(rnames), 1)), F_NONE, dtype=np.int8)
    sc_tab = np.zeros((len(used), 2, max(len(rnames), 1)), dtype=np.int32)
    for u_i, (_, _, fs_before, fs_after) in enumerate(infos):
        for sd, fs in ((0, fs_before), (1, fs_after)):
            for r_i, name in enumerate(rnames):
                if name in fs:
                    fk_tab[u_i, sd, r_i], _, sc_tab[u_i, sd, r_i] = field_kind(fs[name])
    if ne_:
        sql_e = ~hb[erec]
        at = (sid_at[erec], eobj, rcode)
        etext, eesc = typed_values(tok, ev, etext, eesc, fk_tab[at], sc_tab[at], erec, sql_e, fb)

    # --- an SQL update's after: NULL for the columns before or the configuration
    # names and after lacks (before's, then the configured ones, by lower-cased name)
    is_upd = op_code == 2
    fill = ~hb & is_upd & present["after"] & (present["before"] | cfg_any[inv])
    fb |= fill & cfg_bad[inv]
    lenc = pc.dictionary_encode(lraw)
    ldict = lenc.dictionary.to_pylist()
    code_of = {name: i for i, name in enumerate(ldict)}
    lcode = lenc.indices.to_numpy(zero_copy_only=False).astype(np.int64)
    cfg_raw: list[str] = []
    cfg_code: list[int] = []
    cfg_len = np.zeros(len(configured), dtype=np.int64)
    for t_i, cols in enumerate(configured):
        seen: set[str] = set()
        for c in cols:
            lc = c.lower()
            if lc not in seen:
                seen.add(lc)
                cfg_raw.append(c)
                cfg_code.append(code_of.setdefault(lc, len(code_of)))
                cfg_len[t_i] += 1
    nl = max(len(code_of), 1)
    ekey = erec * nl + lcode
    after_keys = np.sort(ekey[eobj == 1])
    b_at = np.flatnonzero((eobj == 0) & fill[erec])
    b_fill = b_at[~lookup(after_keys, ekey[b_at])[0]]
    fr = np.flatnonzero(fill)
    lens = cfg_len[inv[fr]]
    rep = np.repeat(fr, lens)
    cfg_off = np.zeros(len(configured) + 1, dtype=np.int64)
    np.cumsum(cfg_len, out=cfg_off[1:])
    pos = np.arange(len(rep)) - np.repeat(np.cumsum(lens) - lens, lens)
    flat = cfg_off[inv[rep]] + pos
    known = np.sort(ekey)
    cfg_code_arr = np.array(cfg_code, dtype=np.int64)
    hit = lookup(known, rep * nl + cfg_code_arr[flat])[0] if len(rep) else np.zeros(0, dtype=bool)
    c_rec, c_flat = rep[~hit], flat[~hit]
    n_fill = len(b_fill) + len(c_rec)
    _stats["null_filled"] = n_fill
    names_x = pa.concat_arrays(
        [
            raw_names,
            raw_names.take(pa.array(b_fill, type=pa.int64())),
            pa.array(cfg_raw, pa.string()).take(pa.array(c_flat, type=pa.int64())),
        ]
    )
    text_x = pa.concat_arrays([etext, pa.nulls(n_fill, pa.string())])
    esc_x = pa.concat_arrays([eesc, pa.nulls(n_fill, pa.string())])
    rec_x = np.concatenate((erec, erec[b_fill], c_rec)).astype(np.int64)
    obj_x = np.concatenate((eobj, np.full(n_fill, 2, dtype=np.int64)))
    images = Images(rec_x, obj_x, 3, names_x, fb)  # objects: 0 before, 1 after, 2 the NULLs added
    images.add(np.flatnonzero(eobj == 0), 0)
    images.add(np.flatnonzero(eobj == 1), 1)
    images.add(np.arange(ne_, ne_ + n_fill), 1)
    entries = images.build(text_x, esc_x)
    p_rec, p_side = entries["erec"], entries["side"]

    # --- ops (an HBase put is an update of its cells) and keys: the configured key of
    # an SQL table, ROW (the event's key) of an HBase one
    op_final = np.where(hb & (op_code == 0), 2, np.maximum(op_code, 0))
    key_lists = [*tid_keys, [ROW.lower()]]
    which = np.where(hb, len(tids), inv)
    ekeypos = key_positions(key_lists, entries["ldict"], which[p_rec], entries["lcode"])
    key_side = key_sides(
        erec=p_rec,
        side=p_side,
        prov=entries["prov"],
        ekeypos=ekeypos,
        etext=entries["etext"],
        nkeys=configured_key_counts(key_lists, which),
        present_before=present["before"],
        present_after=present["after"],
        is_ins=op_final <= 1,
        is_upd=op_final == 2,
        is_del=op_final == 3,
        fb=fb,
    )

    # --- col_types: an SQL record's from its schema; an HBase record's cells (ROW
    # aside) binary, before's first, a name once
    ct_rec, ct_names, ct_types = [], [], []
    sql_rec = np.flatnonzero(~hb & ~fb)
    if len(sql_rec):
        ct_len = np.array([len(info[1]) for info in infos], dtype=np.int64)
        ct_off = np.zeros(len(infos) + 1, dtype=np.int64)
        np.cumsum(ct_len, out=ct_off[1:])
        lens = ct_len[sid_at[sql_rec]]
        rep = np.repeat(sql_rec, lens)
        pos = np.arange(len(rep)) - np.repeat(np.cumsum(lens) - lens, lens)
        flat = ct_off[sid_at[rep]] + pos
        pairs = [p for info in infos for p in info[1]]
        ct_rec.append(rep)
        ct_names.append(pa.array([p[0] for p in pairs], pa.string()).take(flat))
        ct_types.append(pa.array([p[1] for p in pairs], pa.string()).take(flat))
    hsel = np.flatnonzero(hb[p_rec] & ~fb[p_rec] & ~flags(pc.equal(entries["lnames"], ROW.lower())))
    if len(hsel):
        _, first_at = np.unique(p_rec[hsel] * max(len(entries["ldict"]), 1) + entries["lcode"][hsel], return_index=True)
        hsel = hsel[np.sort(first_at)]
        ct_rec.append(p_rec[hsel])
        ct_names.append(entries["lnames"].take(pa.array(hsel)))
        ct_types.append(pa.array(["binary"] * len(hsel), pa.string()))
    all_rec = np.concatenate(ct_rec) if ct_rec else np.zeros(0, dtype=np.int64)
    order = pa.array(np.argsort(all_rec, kind="stable"))
    ct_off = np.zeros(n + 1, dtype=np.int32)
    np.cumsum(np.bincount(all_rec, minlength=n), out=ct_off[1:])
    col_types = pa.MapArray.from_arrays(
        pa.array(ct_off),
        (pa.concat_arrays(ct_names) if ct_names else pa.array([], pa.string())).take(order),
        (pa.concat_arrays(ct_types) if ct_types else pa.array([], pa.string())).take(order),
        type=MAP_TYPE,
    )
    _stats["fallback_reasons_flagged"] = int(fb.sum())

    ones = np.ones(n, dtype=bool)
    kind_arr = pa.DictionaryArray.from_arrays(pa.array(hb.astype(np.int32)), pa.array(["sql", "hbase"]))
    op_arr = op_texts(op_final, _OP_NAMES)
    return assemble(
        **entries,
        fb=fb,
        ekeypos=ekeypos,
        present_before=present["before"],
        present_after=present["after"],
        key_side=key_side,
        event_keys=None,
        tids=tids,
        inv=inv,
        table_id=table_id,
        op_arr=op_arr,
        seq=seq,
        db=src["db"],
        schema=src["namespace"],
        table=src["table"],
        commit=commit,
        capture=capture,
        tx=pa.nulls(n, pa.string()),
        extras=[
            ("namespace", src["namespace"], ones),
            ("table_kind", kind_arr.cast(pa.string()), ones),
            ("lindorm_version", src["version"], ones),
        ],
        col_types=col_types,
    )
