"""A columnar Debezium JSON decoder giving the very result of ``decode_records``.

(Its building blocks, shared with the other columnar decoders, are in
:mod:`udfs.formats.columnar`: validation, tokens, values, the schema cache, Kafka keys,
the assembly of the results; the Kafka Connect value typing in
:mod:`udfs.formats.columnar_connect`.)

``decode_debezium_columnar(options_json, texts, kafka_keys)`` takes a batch of record
lines as an Arrow string array and returns the ``cdc_decode`` result (``DECODE_RESULT_DDL``
as Arrow) for the whole batch. ``cdc_decode`` runs it on the rows of every
``debezium_json`` feed (:func:`udfs.spark_udfs.decode_array`) unless the feed option
``columnar`` is false. It never builds a Python object per column value on its path:

1. **validation**: the batch is joined into one JSON array (Arrow/numpy) and parsed by
   msgspec into one ``Raw`` per record (one C call; a record's Raw must span exactly its
   line). A batch that fails is validated record by record. Invalid records fall back.
2. **tokens** (one compiled pass over the batch's bytes, :mod:`udfs.formats.compiled`):
   unescaped quotes, the structural characters outside strings, their depth and
   enclosing object; every
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

Kafka Connect logical types done column-wise (:mod:`udfs.formats.columnar_connect`):
``Decimal`` of scale 0..38 and ``VariableScaleDecimal`` (base64 decoded by numpy into
16-byte two's complement, the point put in as ``_scaled_text`` does), the epoch
timestamps (milli-, micro- and ``NanoTimestamp``: Arrow ``strftime``, years 1000..9999),
``Date`` s, times of day (``Time``, ``MicroTime``, ``NanoTime``: integer arithmetic) and
``ZonedTimestamp`` s; the base64 TOAST placeholder of a binary column. Kafka keys
(``parse_kafka_key``: with or without their schema, values decoded by the key's field
schema, else the images') are tokenized the same way as a second small batch;
tombstones (a null value or ``null``) are built directly.

Whatever the columnar path does not do exactly is detected and the record is handed to
``decode_records`` (results merged back in order): any record or key not a valid JSON
object for msgspec (a lone surrogate escape included), an integer literal that may pass
Python's 4,300 digits, a wrapper whose payload is not an object, an unwrapped
(flattened) row, ops other than c/r/u/d (truncate, message), a ``transaction`` block, an
escaped or non-ASCII field name, duplicate names, nested values in the fields read
(but a ``VariableScaleDecimal``), other logical types (a ``Decimal`` of a negative scale
or sent as a number), dates and times out of the years 1000..9999 or int64, a
``ZonedTimestamp`` spelled otherwise than ``_decode_zoned`` reads (or in other digits),
``bytes`` fields, a value of the wrong
JSON kind for its schema type, a non-canonical base64 placeholder, connectors other than
MySQL / PostgreSQL / none, positions that are not plain non-negative integers, an update
that changes the key (two rows), a missing key, a table name too long. ``LAST_STATS``
holds the counts of the last call.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from udfs.formats import connect_types
from udfs.formats.columnar import (
    DECODE_TYPE,
    K_ABSENT,
    K_ARR,
    K_INT,
    K_NULL,
    K_OBJ,
    K_STR,
    K_TRUE,
    SCHEMAS,
    Tokens,
    assemble,
    cat,
    clear_schema_cache,
    configured_key_counts,
    cut_known_schemas,
    decode_columnar,
    distinct_tables,
    event_key_positions,
    event_keys,
    field_values,
    gather,
    key_positions,
    key_sides,
    object_tokens,
    on_valid_only,
    op_texts,
    open_connect_batch,
    resolve_tables,
    row_entries,
    schema_cache_size,
    schema_id,
    schema_ids,
    slots,
    table_id_array,
    tick,
)
from udfs.formats.columnar_connect import F_NONE, field_kind, typed_values, unavailable
from udfs.formats.debezium_json import envelope_fields

# the schema cache lives in udfs.formats.columnar (shared with the other Connect envelopes)
__all__ = ["LAST_STATS", "clear_schema_cache", "decode_debezium_columnar", "schema_cache_size"]
_schema_id, _cut_known_schemas = schema_id, cut_known_schemas

LAST_STATS: dict[str, Any] = {}

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

# ----------------------------------------------------------------------------- main


def decode_debezium_columnar(options_json: str, texts: pa.Array, kafka_keys: pa.Array | None = None) -> pa.StructArray:
    """The ``cdc_decode`` result of a batch of Debezium JSON records (see module doc)."""
    return decode_columnar(
        options_json,
        texts,
        kafka_keys,
        fmt="debezium_json",
        fast=lambda *args: _fast(*args),  # looked up per call (a test replaces it)
        stats=_fast_stats,
        last_stats=LAST_STATS,
    )


_fast_stats: dict[str, Any] = {}


def _key_typer(schema_id: np.ndarray, schemas: list[Any]) -> Any:
    """Kafka key values decoded as ``parse_kafka_key`` does: by the key's own field
    schema, else the after image's, else the before image's (:func:`event_keys`' ``typed``)."""

    def typed(
        ktok: Tokens,
        recs: np.ndarray,
        erec: np.ndarray,
        key_schema_open: np.ndarray,
        raw: pa.Array,
        ev: dict[str, np.ndarray],
        text: pa.Array,
        esc: pa.Array,
        kfb: np.ndarray,
    ) -> tuple[pa.Array, pa.Array]:
        key_sid = np.zeros(len(recs), dtype=np.int64)
        has_schema = key_schema_open >= 0
        key_sid[has_schema] = schema_ids(ktok, key_schema_open[has_schema])
        rn = pc.dictionary_encode(raw)
        rcode = rn.indices.to_numpy().astype(np.int64)
        rnames = rn.dictionary.to_pylist()
        combos, inv = np.unique(np.stack((key_sid[erec], schema_id[recs][erec], rcode)), axis=1, return_inverse=True)
        inv = np.asarray(inv).ravel()
        fk_c = np.zeros(combos.shape[1], dtype=np.int8)
        sc_c = np.zeros(combos.shape[1], dtype=np.int32)
        for c_i, (k_s, e_s, r_c) in enumerate(combos.T.tolist()):
            env = envelope_fields(schemas[e_s]) if e_s else {}
            fields = {
                **connect_types.field_schemas(env.get("before")),
                **connect_types.field_schemas(env.get("after")),
                **(connect_types.field_schemas(schemas[k_s]) if k_s else {}),
            }
            k, _, sc = field_kind(fields.get(rnames[r_c]))
            fk_c[c_i], sc_c[c_i] = k, sc
        return typed_values(ktok, ev, text, esc, fk_c[inv], sc_c[inv], erec, np.ones(len(erec), dtype=bool), kfb)

    return typed


def _fast(
    texts: pa.StringArray, options: dict[str, Any], tables: dict[str, Any], keys: pa.Array | None = None
) -> tuple[np.ndarray, pa.Array]:
    """(which records the columnar path decoded, their results in order)."""
    n = len(texts)
    _fast_stats.clear()
    if n == 0:
        return np.zeros(0, dtype=bool), pa.array([], type=DECODE_TYPE)
    tick("cut")
    b, off, first, fb, cached_sid = open_connect_batch(texts)
    tick("tokens")
    _fast_stats["invalid_json"] = int(fb.sum())
    if fb.any():
        valid_keys = None if keys is None else keys.take(pa.array(np.flatnonzero(~fb)))
        return on_valid_only(texts, fb, lambda valid: _fast(valid, options, tables, valid_keys), _fast_stats)
    tok, top_open = object_tokens(b, off, first, fb)
    tick("toplevel")
    role = np.zeros(len(tok.spos), dtype=np.int8)
    role[top_open[~fb]] = R_TOP
    colons = tok.colons
    crec = tok.crec

    # --- top level: schema / payload
    m = role[tok.parent] == R_TOP
    tcol = colons[m]
    slot_top = slots(tok, tcol, crec[m], TOP_KEYS, n, fb)
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
    schemas = SCHEMAS
    if len(sch_rec):
        sv = tok.values(slot_top[0][sch_rec])
        fb[sch_rec[(sv["kind"] != K_OBJ) & (sv["kind"] != K_NULL)]] = True
        is_obj = sv["kind"] == K_OBJ
        so = sv["opener"][is_obj]
        schema_id[sch_rec[is_obj]] = schema_ids(tok, so)
        _fast_stats["schemas_parsed"] = len(np.unique(schema_id[sch_rec[is_obj]]))
    cut = (cached_sid >= 0) & wrapped
    schema_id[cut] = cached_sid[cut]
    _fast_stats["schemas_cut"] = int(cut.sum())

    tick("payload")
    # --- payload fields
    role[payload_open[~fb]] = R_PAYLOAD
    m = role[tok.parent] == R_PAYLOAD
    slot_p = slots(tok, colons[m], crec[m], PAYLOAD_KEYS, n, fb)
    pvals = field_values(tok, slot_p, PAYLOAD_KEYS, n)
    # op: a string among c r u d
    have, v, kind, _ = pvals["op"]
    fb |= kind != K_STR
    op_text = np.full(n, "", dtype=object)
    opt = gather(b, v["start"], v["end"], v["kind"] == K_STR)
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

    tick("source")
    # --- source fields
    m = role[tok.parent] == R_SOURCE
    slot_s = slots(tok, colons[m], crec[m], SOURCE_KEYS, n, fb)
    svals = field_values(tok, slot_s, SOURCE_KEYS, n)
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
    op_arr = op_texts(opc, ops.tolist())

    tick("seq")
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

    my_seq = cat(pad(file_no), ".", pad(pos_t), ".", pad(row_t.fill_null("0")))
    pg_seq = pad(lsn_t)
    seq = pc.if_else(pa.array(is_mysql), my_seq, pc.if_else(pa.array(is_pg), pg_seq, pa.nulls(n, pa.string())))

    tick("tables")

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
    triples, inv = distinct_tables(db, schema_t, table)
    tids, tid_keys, tid_bad = resolve_tables(tables, triples)
    fb |= tid_bad[inv]
    tid_nokey = np.array([not k for k in tid_keys], dtype=bool)
    table_id = table_id_array(tids, inv)

    tick("entries")
    # --- image entries
    pr = role[tok.parent]
    m = (pr == R_BEFORE) | (pr == R_AFTER)
    ecol = colons[m]
    erec = crec[m]
    side = (pr[m] == R_AFTER).astype(np.int64)
    raw_names, ev, etext, eesc = row_entries(tok, ecol, erec, fb, _fast_stats, objects_ok=True)
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
        fields = envelope_fields(schemas[s_i])
        for sd, nm in ((0, "before"), (1, "after")):
            fs = connect_types.field_schemas(fields.get(nm))
            for r_i, rn in enumerate(rnames):
                if rn in fs:
                    k, t, sc = field_kind(fs[rn])
                    fkind_tab[u_i, sd, r_i] = k
                    fscale_tab[u_i, sd, r_i] = sc
                    if t not in type_code:
                        type_code[t] = len(types)
                        types.append(t)
                    ftype_tab[u_i, sd, r_i] = type_code[t]
    esid = np.searchsorted(used, schema_id[erec])
    fk = fkind_tab[esid, side, rcode]
    # TOAST: the placeholder is "not provided" (its base64 too, in a binary column or one
    # without a schema; a plain value in a column whose schema is not binary)
    toast, _ = unavailable(etext, ev["kind"], fk, erec, fb)
    prov = ~toast
    etype = ftype_tab[esid, side, rcode]
    etext, eesc = typed_values(tok, ev, etext, eesc, fk, fscale_tab[esid, side, rcode], erec, prov, fb)
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

    tick("keys")
    # --- keys (from the configured key columns; the images are lower-cased)
    ekeypos = key_positions(tid_keys, ldict, inv[erec], lcode)
    # the Kafka key, when the record has one: its columns (sorted) are the key columns
    ek_ = event_keys(keys, n, fb, lenc.dictionary, _key_typer(schema_id, schemas))
    has_ek = ek_["has"]
    fb |= tid_nokey[inv] & ~has_ek
    nkeys_rec = np.where(has_ek, ek_["count"], configured_key_counts(tid_keys, inv))
    ekeypos = event_key_positions(ek_, erec, lcode, nl, ekeypos)
    key_side = key_sides(
        erec=erec,
        side=side,
        prov=prov,
        ekeypos=ekeypos,
        etext=etext,
        nkeys=nkeys_rec,
        present_before=present["before"],
        present_after=present["after"],
        is_ins=(opc == 0) | (opc == 1),
        is_upd=opc == 2,
        is_del=opc == 3,
        has_ek=has_ek,
        fb=fb,
    )

    _fast_stats["fallback_reasons_flagged"] = int(fb.sum())
    tick("maps")
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
        types=types,
        ekeypos=ekeypos,
        present_before=present["before"],
        present_after=present["after"],
        key_side=key_side,
        event_keys=ek_ if has_ek.any() else None,
        tids=tids,
        inv=inv,
        table_id=table_id,
        op_arr=op_arr,
        seq=seq,
        db=db,
        schema=schema_t,
        table=table,
        commit=commit,
        capture=capture,
        tx=pc.coalesce(src["txId"], src["gtid"]),
        extras=[(name, src[field], None) for name, field in EXTRA_FIELDS],  # when not null
    )
