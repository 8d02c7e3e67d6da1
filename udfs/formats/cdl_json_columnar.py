"""A columnar Huawei CDL JSON decoder giving the very result of ``decode_records``.

``decode_cdl_columnar(options_json, texts, kafka_keys)`` takes a batch of ``cdl_json``
message values as an Arrow string array and returns the ``cdc_decode`` result for the
whole batch; ``cdc_decode`` runs it for every such feed unless its option ``columnar``
is false (:func:`udfs.spark_udfs.decode_array`). The building blocks are
:mod:`udfs.formats.columnar`'s (validation, tokens, values, the Kafka Connect schema
cache, ``assemble``) and the Connect value typing of
:mod:`udfs.formats.columnar_connect`; this module reads the two versions of
:mod:`udfs.formats.cdl_json`, mixed in one batch, wrapped (``{"schema", "payload"}``) or
not::

    1.0: {"DATA_STORE", "SEG_OWNER", "TABLE_NAME", "TIMESTAMP", "OPERATION", "LOB_COLUMNS",
          "transaction": {"properties": [{"name": "lsn", "value"}, {"name": "txId", ...}]},
          "unique", "data", "before", "message_version", "message_type", ...}
    2.0: {"before", "after", "source": {"connector", "db", "schema", "table", "ts_ms",
          "txId", "lsn", ...}, "op", "ts_ms", "message_version", "message_type",
          "LOB_COLUMNS", "unique", ...}

Done column-wise: the version (``message_version``, else told by ``OPERATION`` / ``op``),
the ops (1.0's in any ASCII case; 2.0's ``c``/``r``/``u``/``d``), the images (TOAST
placeholders left out), ``unique`` as the change's own key (with its Connect schema;
``{}`` or none: the configured key), values typed by the envelope schema (Kafka Connect
Decimal of scale 0..38, VariableScaleDecimal, the epoch timestamps, Date, the times of
day and ZonedTimestamp, as Debezium's; CDL's own
``com.xxx.cdc.data.*`` names are their plain type), ``col_types`` per schema, ``seq`` from
the LSN and transaction id (integers, decimal text, PostgreSQL ``X/Y`` text, ``0x`` or
bare hex text of at most 16 digits, option ``lsn_format``), both times, the table (option
``database`` as ``source_db``) and the five extras.

Handed to ``decode_records``: any record not a valid JSON object for msgspec, a null or
scalar payload, an unwrapped message with a top-level ``schema`` or ``payload`` field,
heartbeats (``message_type`` ``heartbeat``, a heartbeat table's rows, no operation and
no image), an unknown or absent version, ops other than those above (truncate, ``m``),
escaped or non-ASCII names, a name twice in an object read (or in an image or
``unique`` once lower-cased), nested values in the images, ``unique`` or the fields
read, a field of the wrong JSON kind (anything the decoder quarantines, and a few it
reads leniently: booleans as text, a scalar ``transaction``, ``properties`` as an
object, a property named twice),
LSN spellings other than above (blanks, signs, more than 16 hex digits), times of more
than 15 digits, other logical types (negative Decimal scales, ``bytes``; dates and
times out of range, a ZonedTimestamp in an odd spelling), a placeholder in ``unique``, a
schema whose types do not decode, an update that changes the key, a table without a
key, a table name too long. ``LAST_STATS`` holds the counts of the last call.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from udfs.formats import connect_types
from udfs.formats.cdl_json import CdlJsonDecoder
from udfs.formats.columnar import (
    DECODE_TYPE,
    K_ABSENT,
    K_ARR,
    K_FRAC,
    K_INT,
    K_NULL,
    K_OBJ,
    K_STR,
    MAP_TYPE,
    OPEN_OBJ,
    SCHEMAS,
    assemble,
    cat,
    configured_key_counts,
    decode_columnar,
    event_key_positions,
    field_values,
    flags,
    key_positions,
    key_sides,
    object_tokens,
    on_valid_only,
    op_texts,
    open_connect_batch,
    opener_per_record,
    patch,
    per_record,
    plain_digits,
    resolve_tables,
    row_entries,
    schema_ids,
    seq_part,
    slots,
    table_id_array,
    tick,
    top_level,
)
from udfs.formats.columnar_connect import F_NONE, F_UNSUPPORTED, field_kind, typed_values, unavailable

LAST_STATS: dict[str, Any] = {}
_stats: dict[str, Any] = {}

TOP_KEYS = ["schema", "payload"]
PAYLOAD_KEYS = [
    "message_version",
    "message_type",
    "LOB_COLUMNS",
    "unique",
    "before",
    # 1.0
    "OPERATION",
    "DATA_STORE",
    "SEG_OWNER",
    "TABLE_NAME",
    "TIMESTAMP",
    "transaction",
    "data",
    # 2.0
    "op",
    "after",
    "source",
    "ts_ms",
]
SOURCE_KEYS = ["connector", "db", "schema", "table", "ts_ms", "lsn", "txId"]
# object roles (0: other objects, 1: the top level)
R_PAYLOAD, R_BEFORE, R_AFTER, R_UNIQUE, R_SOURCE, R_TX, R_PROP = range(2, 9)
_V1_OPS = ["INSERT", "UPDATE", "DELETE"]
_V2_OPS = ["c", "r", "u", "d"]
_OP_NAMES = ["insert", "snapshot", "update", "delete"]
#: the logical type names ``connect_types.decode_value`` decodes by name; any other name
#: is decoded as its plain Connect type (CDL's ``com.xxx.cdc.data.Decimal``: a string)
_LOGICAL_NAMES = frozenset(
    {
        connect_types.DECIMAL,
        connect_types.VARIABLE_SCALE_DECIMAL,
        connect_types.ZONED_TIMESTAMP,
        *connect_types.DATES,
        *connect_types.TIMES,
        *connect_types.TIMESTAMPS,
    }
)
_HEX_VALUE = np.zeros(256, dtype=np.uint64)
for _i, _c in enumerate(b"0123456789abcdef"):
    _HEX_VALUE[_c] = _i
for _i, _c in enumerate(b"ABCDEF"):
    _HEX_VALUE[_c] = 10 + _i


def decode_cdl_columnar(options_json: str, texts: pa.Array, kafka_keys: pa.Array | None = None) -> pa.StructArray:
    """The ``cdc_decode`` result of a batch of Huawei CDL JSON messages (module doc)."""
    return decode_columnar(
        options_json,
        texts,
        kafka_keys,
        fmt=CdlJsonDecoder.identifier,
        fast=lambda *args: _fast(*args),  # looked up per call (a test replaces it)
        stats=_stats,
        last_stats=LAST_STATS,
    )


def _cdl_field_kind(f: Any) -> tuple[int, str | None, int]:
    """``field_kind`` of a field schema as ``decode_value`` reads it: a name it does not
    know is decoded as the plain type."""
    if isinstance(f, dict) and "name" in f and f["name"] is not None:
        if not isinstance(f["name"], str):
            return F_UNSUPPORTED, None, 0
        if f["name"] not in _LOGICAL_NAMES:
            f = {k: v for k, v in f.items() if k != "name"}
    if isinstance(f, dict) and not isinstance(f.get("type"), (str, type(None))):
        return F_UNSUPPORTED, None, 0
    return field_kind(f)


def _struct_fields(sid: int, v2: int) -> tuple[list[Any], list[str] | None, bool]:
    """The before, after (1.0 ``data``, 2.0 ``after``) and unique struct schemas of an
    envelope schema, its ``col_types`` as the decoder and the normalization make them
    (names lower-cased), and whether the decoder's types fail (the fallback)."""
    fields = connect_types.field_schemas(SCHEMAS[sid]) if sid else {}
    structs = [fields.get("before"), fields.get("after" if v2 else "data"), fields.get("unique")]
    try:
        _, before_types, _ = connect_types.decode_row(None, structs[0])
        _, after_types, _ = connect_types.decode_row(None, structs[1])
        connect_types.decode_row(None, structs[2])
    except Exception:  # noqa: BLE001 - the decoder quarantines it: the fallback says so
        return structs, None, True
    types = {**before_types, **after_types}
    return structs, list({k.lower(): v for k, v in types.items()}.items()), False


def _hex_digits(hexa: pa.Array) -> tuple[pa.Array, np.ndarray]:
    """Hex digit texts as decimal digit texts; and which have more than 16 digits
    (not done)."""
    trimmed = pc.utf8_ltrim(hexa, "0")
    long = flags(pc.greater(pc.utf8_length(trimmed), 16))
    trimmed = pc.if_else(pa.array(long), "", trimmed)
    padded = pc.utf8_lpad(trimmed, 16, "0")
    if padded.offset:
        padded = pa.concat_arrays([padded])
    m = len(padded)
    offs = np.frombuffer(padded.buffers()[1], dtype=np.int32)[: m + 1]
    data = (
        np.frombuffer(padded.buffers()[2], dtype=np.uint8)[offs[0] : offs[0] + 16 * m] if m else np.zeros(0, np.uint8)
    )
    nib = _HEX_VALUE[data].reshape(m, 16)
    shifts = (np.arange(15, -1, -1, dtype=np.uint64) * np.uint64(4))[None, :]
    value = np.bitwise_or.reduce(nib << shifts, axis=1) if m else np.zeros(0, dtype=np.uint64)
    return pa.array(value, type=pa.uint64()).cast(pa.string()), long


def _positions(kind: np.ndarray, text: pa.Array, hex_format: bool, fb: np.ndarray) -> pa.Array:
    """``parse_position`` of a field for every record, as decimal digit text (null: none);
    what it quarantines, and spellings not done here, flag the record in ``fb``."""
    n = len(kind)
    fb |= (kind != K_ABSENT) & (kind != K_NULL) & (kind != K_INT) & (kind != K_STR)
    is_int = kind == K_INT
    fb |= is_int & flags(pc.starts_with(text, "-"))  # negative
    is_str = kind == K_STR
    # text.strip() and str.isdigit() know more than ASCII: any other character falls back
    fb |= is_str & ~flags(pc.match_substring_regex(text, r"^[0-9A-Za-z/]+$"))
    pg = is_str & flags(pc.match_substring_regex(text, r"^[0-9A-Fa-f]{1,8}/[0-9A-Fa-f]{1,8}$"))
    digits = is_str & ~pg & plain_digits(text)
    decimal = is_int | (digits & (not hex_format))
    hexa = is_str & ~pg & ~decimal & flags(pc.match_substring_regex(text, r"^(0[xX])?[0-9A-Fa-f]+$"))
    fb |= is_str & ~pg & ~decimal & ~hexa
    out = pc.if_else(pa.array(decimal), text, pa.nulls(n, pa.string()))
    at = np.flatnonzero((pg | hexa) & ~fb)
    if len(at):
        t = text.take(pa.array(at))
        is_pg = pg[at]
        hi = pc.replace_substring_regex(t, r"/.*$", "")
        lo = pc.replace_substring_regex(t, r"^.*/", "")
        pg_hex = cat(hi, pc.utf8_lpad(lo, 8, "0"))
        bare = pc.replace_substring_regex(t, r"^0[xX]", "")
        hex_text = pc.if_else(pa.array(is_pg), pg_hex, bare)
        dec, long = _hex_digits(hex_text)
        fb[at[long]] = True
        out = patch(out, at, dec)
    return out


def _fast(
    texts: pa.StringArray, options: dict[str, Any], tables: dict[str, Any], keys: pa.Array | None = None
) -> tuple[np.ndarray, pa.Array]:
    """(which records the columnar path decoded, their results in order). CDL reads no
    Kafka key (``unique`` is the key): ``keys`` is not used."""
    n = len(texts)
    _stats.clear()
    if n == 0:
        return np.zeros(0, dtype=bool), pa.array([], type=DECODE_TYPE)
    decoder = CdlJsonDecoder(options)
    heartbeat_tables = decoder.heartbeat_tables
    hex_format = decoder.lsn_format == "hex"
    database = decoder.database
    tick("cut")
    b, off, first, fb, cached_sid = open_connect_batch(texts)
    tick("tokens")
    if fb.any():
        return on_valid_only(texts, fb, lambda valid: _fast(valid, options, tables), _stats)
    tok, top_open = object_tokens(b, off, first, fb)
    colons, crec = tok.colons, tok.crec

    tick("top")
    # --- top level: {"schema", "payload"} (wrapped), else the payload itself
    role, top = top_level(tok, top_open, fb, TOP_KEYS)
    n_top = np.bincount(crec[role[tok.parent] == 1], minlength=n)
    has_schema = top["schema"][2] != K_ABSENT
    has_payload = top["payload"][2] != K_ABSENT
    wrapped = has_payload & (n_top == has_schema + 1)
    fb |= (has_payload | has_schema) & ~wrapped  # a payload holding "schema" / "payload": rare
    fb |= wrapped & (top["payload"][2] != K_OBJ)  # null: a tombstone; a scalar: quarantined
    payload_open = np.where(wrapped, opener_per_record(top["payload"], n), top_open)
    # the envelope schema: an object (empty: none); anything else is no schema
    schema_id = np.zeros(n, dtype=np.int64)
    have, v, _, _ = top["schema"]
    fresh = (v["kind"] == K_OBJ) & (cached_sid[have] < 0) & ~fb[have]
    schema_id[have[fresh]] = schema_ids(tok, v["opener"][fresh])
    cut = cached_sid >= 0
    schema_id[cut] = cached_sid[cut]
    _stats["schemas_cut"] = int(cut.sum())

    tick("payload")
    # --- payload fields
    role[payload_open[~fb]] = R_PAYLOAD
    m = role[tok.parent] == R_PAYLOAD
    pv = field_values(tok, slots(tok, colons[m], crec[m], PAYLOAD_KEYS, n, fb), PAYLOAD_KEYS, n)

    def kind_of(name: str) -> np.ndarray:
        return pv[name][2]

    # version: message_version's text, else told by the op field
    mv_kind, mv_text = kind_of("message_version"), per_record(pv["message_version"], n)
    mv_scalar = (mv_kind == K_STR) | (mv_kind == K_INT) | (mv_kind == K_FRAC)
    mv_none = (mv_kind == K_ABSENT) | (mv_kind == K_NULL)
    is_v1 = mv_scalar & flags(pc.is_in(mv_text, value_set=pa.array(["1.0", "1"])))
    is_v1 |= mv_none & (kind_of("OPERATION") != K_ABSENT)
    is_v2 = mv_scalar & flags(pc.is_in(mv_text, value_set=pa.array(["2.0", "2"])))
    is_v2 |= mv_none & (kind_of("OPERATION") == K_ABSENT) & (kind_of("op") != K_ABSENT)
    fb |= ~is_v1 & ~is_v2
    v2 = is_v2.astype(np.int64)

    def text_field(kind: np.ndarray, text: pa.Array, use: np.ndarray) -> pa.Array:
        """``_text`` of a field: its canonical text (booleans and containers fall back)."""
        ok = (kind == K_ABSENT) | (kind == K_NULL) | (kind == K_STR) | (kind == K_INT) | (kind == K_FRAC)
        fb[use & ~ok] = True
        return text

    # message_type: heartbeat (any case) is skipped
    mt_kind, mt_text = kind_of("message_type"), per_record(pv["message_type"], n)
    message_type = text_field(mt_kind, mt_text, np.ones(n, dtype=bool))
    fb |= (mt_kind == K_STR) & ~flags(pc.string_is_ascii(mt_text))
    fb |= flags(pc.equal(pc.ascii_lower(mt_text), "heartbeat"))
    lob_columns = text_field(kind_of("LOB_COLUMNS"), per_record(pv["LOB_COLUMNS"], n), np.ones(n, dtype=bool))

    # op: 1.0's OPERATION in any (ASCII) case, 2.0's op code
    op_code = np.full(n, -1, dtype=np.int64)
    op1_kind, op1 = kind_of("OPERATION"), per_record(pv["OPERATION"], n)
    fb |= is_v1 & ((op1_kind != K_STR) | ~flags(pc.string_is_ascii(op1)))
    c1 = pc.index_in(pc.ascii_upper(op1), value_set=pa.array(_V1_OPS)).fill_null(-1).to_numpy()
    op_code[is_v1] = np.array([-1, 0, 2, 3])[c1[is_v1] + 1]
    op2_kind, op2 = kind_of("op"), per_record(pv["op"], n)
    fb |= is_v2 & (op2_kind != K_STR)
    c2 = pc.index_in(op2, value_set=pa.array(_V2_OPS)).fill_null(-1).to_numpy()
    op_code[is_v2] = c2[is_v2]
    fb |= op_code < 0

    # objects: before, after (1.0 data), unique, source (2.0), transaction (1.0)
    present: dict[str, np.ndarray] = {}
    for name, r, use in (
        ("before", R_BEFORE, np.ones(n, dtype=bool)),
        ("data", R_AFTER, is_v1),
        ("after", R_AFTER, is_v2),
        ("unique", R_UNIQUE, np.ones(n, dtype=bool)),
        ("source", R_SOURCE, is_v2),
        ("transaction", R_TX, is_v1),
    ):
        have, v, kind, _ = pv[name]
        allowed = (kind == K_OBJ) if name == "source" else (kind == K_ABSENT) | (kind == K_NULL) | (kind == K_OBJ)
        fb[use & ~allowed] = True
        sel = (v["kind"] == K_OBJ) & use[have] & ~fb[have]
        role[v["opener"][sel]] = r
        present[name] = (kind == K_OBJ) & use
    present_before = present["before"]
    present_after = present["data"] | present["after"]

    tick("source")
    # --- 2.0's source
    m = role[tok.parent] == R_SOURCE
    sv = field_values(tok, slots(tok, colons[m], crec[m], SOURCE_KEYS, n, fb), SOURCE_KEYS, n)
    src = {name: per_record(sv[name], n) for name in SOURCE_KEYS}
    skind = {name: sv[name][2] for name in SOURCE_KEYS}

    tick("props")
    # --- 1.0's transaction.properties: [{"name": "lsn", "value": ...}, ...]
    m = role[tok.parent] == R_TX
    tv = field_values(tok, slots(tok, colons[m], crec[m], ["properties"], n, fb), ["properties"], n)
    have, v, kind, _ = tv["properties"]
    fb |= (kind != K_ABSENT) & (kind != K_NULL) & (kind != K_ARR)  # an object, a scalar: rare
    arr_rec = have[(v["kind"] == K_ARR) & ~fb[have]]
    arr_open = opener_per_record(tv["properties"], n)[arr_rec]
    prop = {name: (np.full(n, K_ABSENT, dtype=np.int8), pa.nulls(n, pa.string())) for name in ("lsn", "txId")}
    if len(arr_rec):
        arr_close = tok.closing(arr_open)
        objs = np.flatnonzero(tok.scls == OPEN_OBJ)
        j = np.searchsorted(arr_open, objs) - 1
        jj = np.maximum(j, 0)
        inside = (j >= 0) & (objs < arr_close[jj]) & (tok.level[objs] == tok.level[arr_open[jj]] + 1)
        elems = objs[inside]
        elem_rec = arr_rec[j[inside]]
        role[elems] = R_PROP
        ne = len(elems)
        elem_of = np.full(len(tok.spos), -1, dtype=np.int64)
        elem_of[elems] = np.arange(ne)
        m = role[tok.parent] == R_PROP
        efb = np.zeros(ne, dtype=bool)
        ecol_ = colons[m]
        ev_ = field_values(
            tok, slots(tok, ecol_, elem_of[tok.parent[m]], ["name", "value"], ne, efb), ["name", "value"], ne
        )
        fb[elem_rec[efb]] = True
        ename = per_record(ev_["name"], ne)
        vkind, vtext = ev_["value"][2], per_record(ev_["value"], ne)
        for pname in ("lsn", "txId"):
            is_p = (ev_["name"][2] == K_STR) & flags(pc.equal(ename, pname))
            fb |= np.bincount(elem_rec[is_p], minlength=n) > 1  # named twice: the last wins; rare
            at = np.full(n, -1, dtype=np.int64)
            at[elem_rec[is_p]] = np.flatnonzero(is_p)
            kind_r = np.where(at >= 0, vkind[np.maximum(at, 0)] if ne else K_ABSENT, K_ABSENT).astype(np.int8)
            prop[pname] = (kind_r, vtext.take(pa.array(at, mask=at < 0)))

    tick("seq")
    # --- seq and tx_id: lsn (option lsn_format) and txId, from 1.0's properties or 2.0's source
    lsn_kind = np.where(is_v1, prop["lsn"][0], skind["lsn"])
    lsn_text = pc.if_else(pa.array(is_v1), prop["lsn"][1], src["lsn"])
    tx_kind = np.where(is_v1, prop["txId"][0], skind["txId"])
    tx_text = pc.if_else(pa.array(is_v1), prop["txId"][1], src["txId"])
    lsn = _positions(lsn_kind, lsn_text, hex_format, fb)
    txn = _positions(tx_kind, tx_text, False, fb)
    fb |= (tx_kind == K_FRAC) | (tx_kind == K_OBJ) | (tx_kind == K_ARR)
    seq = pc.if_else(
        lsn.is_null(),
        pa.nulls(n, pa.string()),
        pc.if_else(txn.is_null(), seq_part(lsn), cat(seq_part(lsn), ".", seq_part(txn))),
    )
    tx = pc.if_else(pa.array((tx_kind == K_STR) | (tx_kind == K_INT)), tx_text, pa.nulls(n, pa.string()))

    # --- times: epoch milliseconds (an integer or its digits as text)
    def ms_to_us(kind: np.ndarray, t: pa.Array, use: np.ndarray) -> pa.Array:
        fb[use & (kind != K_ABSENT) & (kind != K_NULL) & (kind != K_INT) & (kind != K_STR)] = True
        num = use & ((kind == K_INT) | (kind == K_STR))
        good = flags(pc.match_substring_regex(t, r"^-?[0-9]{1,15}$"))  # (ms * 1000 stays in int64)
        fb[num & ~good] = True
        t = pc.if_else(pa.array(num & good), t, pa.nulls(n, pa.string()))
        return pc.multiply(pc.cast(t, pa.int64()), 1000)

    commit = ms_to_us(
        np.where(is_v1, kind_of("TIMESTAMP"), skind["ts_ms"]),
        pc.if_else(pa.array(is_v1), per_record(pv["TIMESTAMP"], n), src["ts_ms"]),
        np.ones(n, dtype=bool),
    )
    capture = ms_to_us(kind_of("ts_ms"), per_record(pv["ts_ms"], n), is_v2)
    capture = pc.if_else(pa.array(is_v2), capture, pa.nulls(n, pa.int64()))

    # --- extras
    data_store = text_field(
        np.where(is_v1, kind_of("DATA_STORE"), skind["connector"]),
        pc.if_else(pa.array(is_v1), per_record(pv["DATA_STORE"], n), src["connector"]),
        np.ones(n, dtype=bool),
    )
    db_extra = text_field(skind["db"], src["db"], is_v2)
    db_extra = pc.if_else(pa.array(is_v2), db_extra, pa.nulls(n, pa.string()))
    version = pa.DictionaryArray.from_arrays(pa.array(v2.astype(np.int32)), pa.array(["1.0", "2.0"])).cast(pa.string())
    ones = np.ones(n, dtype=bool)
    extras = [
        ("message_version", version, ones),
        ("message_type", message_type, ones),
        ("lob_columns", lob_columns, ones),
        ("data_store", data_store, ones),
        ("database", db_extra, ones),
    ]

    tick("tables")
    # --- tables: schema and table as sent (text only), source_db the option database
    schema_kind = np.where(is_v1, kind_of("SEG_OWNER"), skind["schema"])
    schema_t = pc.if_else(pa.array(is_v1), per_record(pv["SEG_OWNER"], n), src["schema"])
    table_kind = np.where(is_v1, kind_of("TABLE_NAME"), skind["table"])
    table_t = pc.if_else(pa.array(is_v1), per_record(pv["TABLE_NAME"], n), src["table"])
    fb |= (schema_kind != K_ABSENT) & (schema_kind != K_NULL) & (schema_kind != K_STR)
    fb |= table_kind != K_STR  # (an empty name has no table: resolve_tables)
    codes, dicts = [], []
    for arr in (schema_t, table_t):
        e = pc.dictionary_encode(arr)
        codes.append(e.indices.fill_null(-1).to_numpy(zero_copy_only=False).astype(np.int64) + 1)
        dicts.append([None, *e.dictionary.to_pylist()])
    uniq, inv = np.unique(codes[0] * len(dicts[1]) + codes[1], return_inverse=True)
    inv = np.asarray(inv).ravel()
    pairs = [(dicts[0][u // len(dicts[1])], dicts[1][u % len(dicts[1])]) for u in uniq.tolist()]
    tids, tid_keys, tid_bad = resolve_tables(tables, [(database, s, t) for s, t in pairs])
    heartbeat = np.array([f"{s}.{t}".lower() in heartbeat_tables for s, t in pairs], dtype=bool)
    fb |= (tid_bad | heartbeat)[inv]
    table_id = table_id_array(tids, inv)
    db = pa.array([database] * n, type=pa.string())

    tick("entries")
    # --- entries of before, after and unique: names, values typed by the envelope schema
    pr = role[tok.parent]
    m = (pr == R_BEFORE) | (pr == R_AFTER) | (pr == R_UNIQUE)
    ecol, erec = colons[m], crec[m]
    side = np.where(pr[m] == R_BEFORE, 0, np.where(pr[m] == R_AFTER, 1, 2)).astype(np.int64)
    raw_names, ev, etext, eesc = row_entries(tok, ecol, erec, fb, _stats, objects_ok=True)
    tick("kinds")
    # field kinds per (schema, version, side, name); col_types per (schema, version)
    sv_code = schema_id * 2 + v2
    used, sv_inv = np.unique(sv_code, return_inverse=True)
    sv_inv = np.asarray(sv_inv).ravel()
    renc = pc.dictionary_encode(raw_names)
    rcode = renc.indices.to_numpy(zero_copy_only=False).astype(np.int64)
    rnames = renc.dictionary.to_pylist()
    fkind_tab = np.full((len(used), 3, max(len(rnames), 1)), F_NONE, dtype=np.int8)
    fscale_tab = np.zeros((len(used), 3, max(len(rnames), 1)), dtype=np.int32)
    ct_maps: list[Any] = []
    ct_bad = np.zeros(len(used), dtype=bool)
    for u_i, code in enumerate(used.tolist()):
        structs, ct, bad = _struct_fields(code // 2, code % 2)
        ct_maps.append(ct or [])
        ct_bad[u_i] = bad
        for sd, struct in enumerate(structs):
            fs = connect_types.field_schemas(struct)
            if not fs:
                continue
            for r_i, rn in enumerate(rnames):
                if rn in fs:
                    fkind_tab[u_i, sd, r_i], _, fscale_tab[u_i, sd, r_i] = _cdl_field_kind(fs[rn])
    fb |= ct_bad[sv_inv]
    col_types = pa.array(ct_maps, type=MAP_TYPE).take(pa.array(sv_inv))
    esv = sv_inv[erec]
    fk = fkind_tab[esv, side, rcode] if len(erec) else np.zeros(0, dtype=np.int8)
    scale = fscale_tab[esv, side, rcode] if len(erec) else np.zeros(0, dtype=np.int32)
    tick("typed")
    # TOAST: the placeholder is "not provided"; its base64 in a binary column or one
    # without a schema too; anything else like it falls back
    toast, b64 = unavailable(etext, ev["kind"], fk, erec, fb)
    is_unique = side == 2
    fb[erec[is_unique & (toast | b64)]] = True  # a placeholder in the key: rare
    prov = ~toast
    # a null is None whatever its type (the schema's types decoded: ``_struct_fields``)
    etext, eesc = typed_values(tok, ev, etext, eesc, fk, scale, erec, prov & (ev["kind"] != K_NULL), fb)

    # image entries: lower-cased names, a name twice in one image -> fallback
    im = np.flatnonzero(~is_unique)
    im_t = pa.array(im, type=pa.int64())
    i_rec, i_side, i_prov = erec[im], side[im], prov[im]
    lnames = pc.ascii_lower(raw_names.take(im_t))
    lenc = pc.dictionary_encode(lnames)
    lcode = lenc.indices.to_numpy(zero_copy_only=False).astype(np.int64)
    ldict = lenc.dictionary.to_pylist()
    nl = max(len(ldict), 1)
    srt = np.sort((i_rec * 2 + i_side) * nl + lcode)
    dups = srt[1:][srt[1:] == srt[:-1]]
    fb[np.unique(dups // nl // 2)] = True

    tick("keys")
    # --- keys: unique (when not empty), else the configured key
    ek = _unique_keys(np.flatnonzero(is_unique), erec, raw_names, etext, eesc, lenc.dictionary, n, fb)
    has_ek = ek["has"]
    fb |= np.array([not k for k in tid_keys], dtype=bool)[inv] & ~has_ek
    # an image is required: after for insert / update, before or unique for delete
    fb |= (op_code != 3) & ~present_after
    fb |= (op_code == 3) & ~present_before & ~has_ek
    ekeypos = key_positions(tid_keys, ldict, inv[i_rec], lcode)
    ekeypos = event_key_positions(ek, i_rec, lcode, nl, ekeypos)
    nkeys = np.where(has_ek, ek["count"], configured_key_counts(tid_keys, inv))
    i_text = etext.take(im_t)
    key_side = key_sides(
        erec=i_rec,
        side=i_side,
        prov=i_prov,
        ekeypos=ekeypos,
        etext=i_text,
        nkeys=nkeys,
        present_before=present_before,
        present_after=present_after,
        is_ins=op_code <= 1,
        is_upd=op_code == 2,
        is_del=op_code == 3,
        has_ek=has_ek,
        fb=fb,
    )
    _stats["fallback_reasons_flagged"] = int(fb.sum())
    tick("assemble")

    op_arr = op_texts(op_code, _OP_NAMES)
    return assemble(
        fb=fb,
        erec=i_rec,
        side=i_side,
        prov=i_prov,
        lnames=lnames,
        lcode=lcode,
        ldict=ldict,
        etext=i_text,
        eesc=eesc.take(im_t),
        etype=np.zeros(len(im), dtype=np.int32),
        types=[None],
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
        db=db,
        schema=schema_t,
        table=table_t,
        commit=commit,
        capture=capture,
        tx=tx,
        extras=extras,
        col_types=col_types,
    )


def _unique_keys(
    at: np.ndarray,
    erec: np.ndarray,
    raw_names: pa.Array,
    etext: pa.Array,
    eesc: pa.Array,
    image_names: pa.Array,
    n: int,
    fb: np.ndarray,
) -> dict[str, Any]:
    """The ``unique`` entries ``at`` as :func:`udfs.formats.columnar.event_keys` gives a
    record's own key (its entries in order, lower-cased names, their code among the
    image names, place, rank among the sorted names, values); a name twice once
    lower-cased falls back."""
    take = pa.array(at, type=pa.int64())
    rec = erec[at]
    lnames = pc.ascii_lower(raw_names.take(take))
    le = pc.dictionary_encode(lnames)
    lc = le.indices.to_numpy(zero_copy_only=False).astype(np.int64)
    nl = max(len(le.dictionary), 1)
    dk = np.sort(rec * nl + lc)
    dups = dk[1:][dk[1:] == dk[:-1]]
    fb[np.unique(dups // nl)] = True
    order = np.arange(len(at)) - np.searchsorted(rec, rec)
    rank_of = np.empty(nl, dtype=np.int64)
    rank_of[np.argsort(np.array(le.dictionary.to_pylist(), dtype=object), kind="stable")] = np.arange(
        len(le.dictionary)
    )
    by_name = np.lexsort((rank_of[lc] if len(lc) else lc, rec))
    rank = np.empty(len(at), dtype=np.int64)
    rank[by_name] = np.arange(len(at)) - np.searchsorted(rec[by_name], rec[by_name])
    count = np.bincount(rec, minlength=n)
    image_code = pc.index_in(lnames, value_set=image_names).fill_null(-1).to_numpy(zero_copy_only=False)
    return {
        "has": (count > 0) & ~fb,
        "count": count,
        "rec": rec,
        "lcode": image_code.astype(np.int64),
        "order": order,
        "rank": rank,
        "names": lnames,
        "text": etext.take(take),
        "esc": eesc.take(take),
    }
