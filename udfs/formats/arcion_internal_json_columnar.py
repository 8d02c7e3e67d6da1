"""A columnar Arcion internal CDC JSON decoder giving the very result of ``decode_records``.

``decode_arcion_internal_columnar(options_json, texts, kafka_keys)`` takes a batch of
``arcion_internal_json`` records as an Arrow string array and returns the ``cdc_decode``
result for the whole batch; ``cdc_decode`` runs it for every such feed unless its option
``columnar`` is false (:func:`udfs.spark_udfs.decode_array`). The building blocks are
:mod:`udfs.formats.columnar`'s (validation, tokens, values, ``Images``, ``assemble``);
this module reads the record of :mod:`udfs.formats.arcion_internal_json`::

    {"tableName": {"namespace": {"catalog", "schema", "hash"}, "name", "hash"},
     "opType": "I" | "U" | "D", "cursor": "<JSON text>", "operationcount": "<JSON text>",
     "before": {col: "text"}, "after": {col: "text"}, "exists": {col: "0".."3"}}

Done column-wise: the three ops, the table (catalog, schema and name as canonical text),
the images as ``exists`` composes them (code 1: after, 2: before, 3: both, 0: neither;
each image in the ``exists`` order, its values from ``after`` / ``before``, the text
``"null"`` and a JSON ``null`` as SQL NULL), the configured key, and the six extras.
The ``cursor`` and ``operationcount`` texts (unescaped for the whole batch in one
msgspec call) are tokenized as a second batch of their own, keys matched as
:mod:`udfs.formats.arcion_cursor` matches them (:func:`cursor_metadata`, shared with the
CSV flavour); a text this cannot read exactly (escaped, repeated or non-ASCII keys, a
value of another kind or spelling) is decoded by that module's own functions, once per
distinct text: ``seq``, the commit and capture times and the four counts are exactly
theirs.

Handed to ``decode_records``: any record not a valid JSON object for msgspec (a null
record and the text ``null`` too: the decoder quarantines them, it never skips), a
record without an ``exists`` object (the images then come from the op), an ``exists``
code other than ``0``..``3`` as plain text or integer, a column ``exists`` names that
its image lacks, an op other than ``I``/``U``/``D``, a ``tableName`` that is not an
object or names no table as text, a namespace that is not an object, an inline
(object) ``cursor`` or ``operationcount`` and any other field of the wrong JSON kind, a
cursor or operationcount the decoder quarantines (or times past a bigint), nested values
in the images or the namespace, escaped or non-ASCII column names, a name twice in an
object (or in an image once lower-cased), a table without a configured key, an update
that changes the key, a table name too long. ``LAST_STATS`` holds the counts of the
last call.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from udfs.contract import QuarantineError
from udfs.formats.arcion_cursor import (
    COUNT_LOOKUP,
    CURSOR_KEYS,
    CURSOR_LOOKUP,
    OPERATIONCOUNT_FIELDS,
    cursor_seq,
    decode_cursor,
    decode_operationcount,
    norm_key,
)
from udfs.formats.arcion_internal_json import ArcionInternalJsonDecoder
from udfs.formats.columnar import (
    DECODE_TYPE,
    K_ABSENT,
    K_ARR,
    K_INT,
    K_NULL,
    K_OBJ,
    K_STR,
    Images,
    assemble,
    cat,
    configured_key_counts,
    decode_columnar,
    distinct_tables,
    field_values,
    flags,
    gather,
    key_positions,
    key_sides,
    lookup,
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

LAST_STATS: dict[str, Any] = {}
_stats: dict[str, Any] = {}

TOP_KEYS = ["tableName", "opType", "cursor", "operationcount", "before", "after", "exists"]
TABLE_KEYS = ["namespace", "name"]
NAMESPACE_KEYS = ["catalog", "schema"]
# object roles
R_TABLE, R_NAMESPACE, R_BEFORE, R_AFTER, R_EXISTS = range(2, 7)  # (0: other objects, 1: the top level)
# image objects of a record (Images' ``obj``)
O_BEFORE, O_AFTER, O_EXISTS = range(3)
_OPS = ["I", "U", "D"]
_OP_NAMES = ["insert", "update", "delete"]
_CODES = ["0", "1", "2", "3"]
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1
EXTRA_NAMES = ("cursor", "operationcount", *OPERATIONCOUNT_FIELDS)


def decode_arcion_internal_columnar(
    options_json: str, texts: pa.Array, kafka_keys: pa.Array | None = None
) -> pa.StructArray:
    """The ``cdc_decode`` result of a batch of Arcion internal JSON records (module doc)."""
    return decode_columnar(
        options_json,
        texts,
        kafka_keys,
        fmt=ArcionInternalJsonDecoder.identifier,
        fast=lambda *args: _fast(*args),  # looked up per call (a test replaces it)
        stats=_stats,
        last_stats=LAST_STATS,
        null_is_a_record=True,  # the decoder quarantines a null record and the text "null"
    )


def _fits(value: int | None) -> bool:
    return value is None or _INT64_MIN <= value <= _INT64_MAX


def _py_metadata(cursor: pa.Array, operationcount: pa.Array, fb: np.ndarray) -> dict[str, Any]:
    """``seq``, the times and the counts of every record, from its cursor and
    operationcount texts, each distinct text decoded once by the decoder's own
    functions (one it quarantines flags its records)."""
    n = len(cursor)
    enc = pc.dictionary_encode(cursor)
    code = enc.indices.fill_null(-1).to_numpy(zero_copy_only=False).astype(np.int64)
    seqs: list[str | None] = []
    commits: list[int | None] = []
    captures: list[int | None] = []
    bad: list[bool] = []
    for text in enc.dictionary.to_pylist():
        try:
            cur = decode_cursor(text)
            seq = cursor_seq(cur)
        except QuarantineError:
            seqs.append(None)
            commits.append(None)
            captures.append(None)
            bad.append(True)
            continue
        assert cur is not None
        commit, capture = cur["timestamp_us"], cur["extraction_timestamp_us"]
        seqs.append(seq)
        ok = _fits(commit) and _fits(capture)
        commits.append(commit if ok else None)
        captures.append(capture if ok else None)
        bad.append(not ok)
    has = code >= 0
    at = pa.array(np.maximum(code, 0).astype(np.int32), mask=~has)
    if len(bad):
        fb |= has & np.array(bad, dtype=bool)[np.maximum(code, 0)]
        seq_arr = pa.array(seqs, pa.string()).take(at)
        commit_arr = pa.array(commits, pa.int64()).take(at)
        capture_arr = pa.array(captures, pa.int64()).take(at)
    else:
        seq_arr = pa.nulls(n, pa.string())
        commit_arr = capture_arr = pa.nulls(n, pa.int64())

    enc = pc.dictionary_encode(operationcount)
    code = enc.indices.fill_null(-1).to_numpy(zero_copy_only=False).astype(np.int64)
    has = code >= 0
    at = pa.array(np.maximum(code, 0).astype(np.int32), mask=~has)
    counts: dict[str, list[str | None]] = {name: [] for name in OPERATIONCOUNT_FIELDS}
    bad = []
    for text in enc.dictionary.to_pylist():
        try:
            decoded = decode_operationcount(text)
        except QuarantineError:
            decoded = None
        bad.append(decoded is None)
        for name in OPERATIONCOUNT_FIELDS:
            value = None if decoded is None else decoded[name]
            counts[name].append(None if value is None else str(value))
    if len(bad):
        fb |= has & np.array(bad, dtype=bool)[np.maximum(code, 0)]
    count_arrs = {
        name: pa.array(values, pa.string()).take(at) if len(bad) else pa.nulls(n, pa.string())
        for name, values in counts.items()
    }
    return {"seq": seq_arr, "commit": commit_arr, "capture": capture_arr, "counts": count_arrs}


def _inner_fields(
    texts: pa.Array, lookup: dict[str, int], nf: int, skip_null: bool
) -> tuple[np.ndarray, np.ndarray, list[pa.Array]]:
    """The fields of a batch of JSON object texts (a cursor or an operationcount each),
    keys matched as ``arcion_cursor`` matches them (``lookup``: normalized key -> field):
    (which texts the columnar path cannot read exactly, kind per field and text, the
    canonical text per field). A field's first key wins; with ``skip_null`` the first
    whose value is not null (``decode_operationcount``)."""
    m = len(texts)
    kind = np.zeros((nf, m), dtype=np.int8)
    b, off, first, py = open_batch(texts)
    if py.any():  # quotes pair up within valid texts only
        keep = np.flatnonzero(~py)
        sub_py, sub_kind, sub_text = _inner_fields(texts.take(pa.array(keep)), lookup, nf, skip_null)
        py[keep[sub_py]] = True
        kind[:, keep] = sub_kind
        at = np.full(m, -1, dtype=np.int32)
        at[keep] = np.arange(len(keep), dtype=np.int32)
        idx = pa.array(at, mask=at < 0)
        return py, kind, [t.take(idx) for t in sub_text]
    if not m or not len(b):
        return py | True, kind, [pa.nulls(m, pa.string())] * nf
    tok, top_open = object_tokens(b, off, first, py)
    role = np.zeros(len(tok.spos), dtype=np.int8)
    role[top_open[~py]] = 1
    sel = role[tok.parent] == 1
    cols, recs = tok.colons[sel], tok.crec[sel]
    ks, ke, escaped = tok.names(cols)
    py[recs[escaped]] = True
    raw = gather(b, ks, ke)
    py[recs[~flags(pc.string_is_ascii(raw))]] = True
    enc = pc.dictionary_encode(raw)
    rcode = enc.indices.to_numpy(zero_copy_only=False).astype(np.int64)
    nr = max(len(enc.dictionary), 1)
    srt = np.sort(recs * nr + rcode)
    py[np.unique(srt[1:][srt[1:] == srt[:-1]] // nr)] = True  # a key twice: the last value at the first place
    fcode = np.array([lookup.get(norm_key(k), -1) for k in enc.dictionary.to_pylist()] or [-1], dtype=np.int64)
    fc = fcode[rcode] if len(rcode) else np.zeros(0, dtype=np.int64)
    v = tok.values(cols)
    t, _, _ = tok.texts(v)
    use = np.flatnonzero(fc >= 0) if not skip_null else np.flatnonzero((fc >= 0) & (v["kind"] != K_NULL))
    _, firsts = np.unique(recs[use] * nf + fc[use], return_index=True)
    pick = use[firsts]
    at = np.full((nf, m), -1, dtype=np.int64)
    at[fc[pick], recs[pick]] = pick
    kind[fc[pick], recs[pick]] = v["kind"][pick]
    out = []
    for f in range(nf):
        a = at[f]
        out.append(t.take(pa.array(a, mask=a < 0)))
    return py, kind, out


_CURSOR_FIELD_LIST = list(CURSOR_KEYS)
_CURSOR_CODES = {k: _CURSOR_FIELD_LIST.index(f) for k, f in CURSOR_LOOKUP.items()}
_COUNT_CODES = {k: list(OPERATIONCOUNT_FIELDS).index(f) for k, f in COUNT_LOOKUP.items()}


def cursor_metadata(cursor: pa.Array, operationcount: pa.Array, fb: np.ndarray) -> dict[str, Any]:
    """:func:`_py_metadata`'s result column-wise: the cursor and operationcount texts
    tokenized as a batch of their own; the texts this cannot read exactly (not JSON,
    escaped, non-ASCII or repeated keys, a value of another kind or spelling than plain
    ASCII digits, a log name with a line break, ...) go to :func:`_py_metadata`."""
    n = len(cursor)
    # --- cursor
    crecs = np.flatnonzero(flags(cursor.is_valid()))
    py = np.zeros(n, dtype=bool)
    cf = {f: pa.nulls(n, pa.string()) for f in _CURSOR_FIELD_LIST}
    if len(crecs):
        cpy, ckind, ctext = _inner_fields(cursor.take(pa.array(crecs)), _CURSOR_CODES, len(_CURSOR_FIELD_LIST), False)
        at = np.full(n, -1, dtype=np.int32)
        at[crecs] = np.arange(len(crecs), dtype=np.int32)
        idx = pa.array(at, mask=at < 0)
        for i, f in enumerate(_CURSOR_FIELD_LIST):
            k, t = ckind[i], ctext[i]
            if f == "node_id":
                continue
            absent = (k == K_ABSENT) | (k == K_NULL)
            if f == "log":
                ok = absent | ((k == K_STR) & flags(pc.string_is_ascii(t)) & ~flags(pc.match_substring(t, "\n")))
            else:
                width = 15 if f.startswith(("timestamp", "extraction")) else 20
                digits = plain_digits(t) & flags(pc.less_equal(pc.utf8_length(t), width))
                ok = absent | (((k == K_INT) | (k == K_STR)) & digits)
            cpy |= ~ok
            cf[f] = pc.if_else(pa.array(ok), t, pa.nulls(len(t), pa.string())).take(idx)
        py[crecs[cpy]] = True
    file_no = pc.struct_field(pc.extract_regex(cf["log"], r"(?P<d>[0-9]+)$"), [0])
    mysql = flags(pc.and_(file_no.is_valid(), cf["position"].is_valid()))
    other = ~mysql & flags(pc.and_(cf["dsc_id"].is_valid(), cf["mut_id"].is_valid()))
    seq_mysql = cat(
        seq_part(file_no), ".", seq_part(cf["position"]), ".", seq_part(pc.coalesce(cf["log_seq_num"], "0"))
    )
    seq_other = cat(seq_part(cf["dsc_id"]), ".", seq_part(cf["mut_id"]))
    seq = pc.if_else(pa.array(mysql), seq_mysql, pc.if_else(pa.array(other), seq_other, pa.nulls(n, pa.string())))
    commit = pc.multiply(pc.cast(cf["timestamp_ms"], pa.int64()), 1000)
    capture = pc.multiply(pc.cast(cf["extraction_timestamp_ms"], pa.int64()), 1000)

    # --- operationcount
    orecs = np.flatnonzero(flags(operationcount.is_valid()))
    counts = {f: pa.nulls(n, pa.string()) for f in OPERATIONCOUNT_FIELDS}
    if len(orecs):
        opy, okind, otext = _inner_fields(
            operationcount.take(pa.array(orecs)), _COUNT_CODES, len(OPERATIONCOUNT_FIELDS), True
        )
        at = np.full(n, -1, dtype=np.int32)
        at[orecs] = np.arange(len(orecs), dtype=np.int32)
        idx = pa.array(at, mask=at < 0)
        for i, f in enumerate(OPERATIONCOUNT_FIELDS):
            k, t = okind[i], otext[i]
            ok = (k == K_ABSENT) | (((k == K_INT) | (k == K_STR)) & plain_digits(t))
            opy |= ~ok
            trimmed = pc.utf8_ltrim(t, "0")
            counts[f] = pc.if_else(pc.equal(trimmed, ""), "0", trimmed).take(idx)
        py[orecs[opy]] = True
    _stats["metadata_python"] = int(py.sum())
    if py.any():
        mask = pa.array(py)
        slow = _py_metadata(
            pc.if_else(mask, cursor, pa.nulls(n, pa.string())),
            pc.if_else(mask, operationcount, pa.nulls(n, pa.string())),
            fb,
        )
        seq = pc.if_else(mask, slow["seq"], seq)
        commit = pc.if_else(mask, slow["commit"], commit)
        capture = pc.if_else(mask, slow["capture"], capture)
        counts = {f: pc.if_else(mask, slow["counts"][f], counts[f]) for f in OPERATIONCOUNT_FIELDS}
    return {"seq": seq, "commit": commit, "capture": capture, "counts": counts}


def _take_named(images: Images, base_at: np.ndarray, over_at: np.ndarray, over_obj: int, side: int) -> None:
    """Image ``side`` = the entries ``base_at`` (in their order), each with the value of
    the entry of the same name among ``over_at`` (object ``over_obj`` of its record); a
    name ``over_at`` lacks flags its record (the decoder's "lacks it")."""
    if not len(base_at):
        return
    over_sorted = np.argsort(images.key[over_at], kind="stable")
    query = (images.rec[base_at] * images.nobj + over_obj) * images.nr + images.rcode[base_at]
    found, j = lookup(images.key[over_at][over_sorted], query)
    images.fb[images.rec[base_at][~found]] = True
    source = np.where(found, over_at[over_sorted][j], base_at) if len(over_at) else base_at
    images._parts.append((source, images.rec[base_at], side, 0, base_at))


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
    kinds = {name: top[name][2] for name in TOP_KEYS}

    # --- top level: tableName (an object), images (objects, null or absent), exists (an object)
    fb |= kinds["tableName"] != K_OBJ
    fb |= kinds["exists"] != K_OBJ  # absent or null: images by op (the decoder's)
    for name in ("before", "after"):
        fb |= (kinds[name] != K_ABSENT) & (kinds[name] != K_NULL) & (kinds[name] != K_OBJ)
    for name in ("cursor", "operationcount"):  # text, null or absent (an inline object: the decoder)
        fb |= (kinds[name] != K_ABSENT) & (kinds[name] != K_NULL) & (kinds[name] != K_STR)
    for name, r in (("tableName", R_TABLE), ("before", R_BEFORE), ("after", R_AFTER), ("exists", R_EXISTS)):
        have, v, _, _ = top[name]
        is_obj = v["kind"] == K_OBJ
        role[v["opener"][is_obj & ~fb[have]]] = r

    # op
    fb |= kinds["opType"] != K_STR
    op_code = pc.index_in(per_record(top["opType"], n), value_set=pa.array(_OPS)).fill_null(-1).to_numpy()
    op_code = np.asarray(op_code, dtype=np.int64)
    fb |= op_code < 0

    # --- tableName: name (text), namespace (an object, null or absent)
    m = role[tok.parent] == R_TABLE
    tv = field_values(tok, slots(tok, colons[m], crec[m], TABLE_KEYS, n, fb), TABLE_KEYS, n)
    fb |= tv["name"][2] != K_STR
    ns_kind = tv["namespace"][2]
    fb |= (ns_kind != K_ABSENT) & (ns_kind != K_NULL) & (ns_kind != K_OBJ)
    have, v, _, _ = tv["namespace"]
    is_obj = v["kind"] == K_OBJ
    role[v["opener"][is_obj & ~fb[have]]] = R_NAMESPACE
    m = role[tok.parent] == R_NAMESPACE
    nv = field_values(tok, slots(tok, colons[m], crec[m], NAMESPACE_KEYS, n, fb), NAMESPACE_KEYS, n)
    for name in NAMESPACE_KEYS:  # a nested value: canonical_text's compact JSON
        fb |= (nv[name][2] == K_OBJ) | (nv[name][2] == K_ARR)
    db, schema, table = per_record(nv["catalog"], n), per_record(nv["schema"], n), per_record(tv["name"], n)

    # --- tables: id, configured key
    triples, inv = distinct_tables(db, schema, table)
    tids, tid_keys, tid_bad = resolve_tables(tables, triples)
    tid_bad |= np.array([not k for k in tid_keys], dtype=bool)  # the format names no key
    fb |= tid_bad[inv]
    table_id = table_id_array(tids, inv)

    # --- entries of before, after and exists
    pr = role[tok.parent]
    m = (pr == R_BEFORE) | (pr == R_AFTER) | (pr == R_EXISTS)
    ecol, erec = colons[m], crec[m]
    obj = np.where(pr[m] == R_BEFORE, O_BEFORE, np.where(pr[m] == R_AFTER, O_AFTER, O_EXISTS)).astype(np.int64)
    raw_names, ev, etext, eesc = row_entries(tok, ecol, erec, fb, _stats)
    # exists codes: "0".."3" as text or integer
    is_ex = obj == O_EXISTS
    ex_at = np.flatnonzero(is_ex)
    ex_kind = ev["kind"][ex_at]
    ex_code = np.asarray(
        pc.index_in(etext.take(pa.array(ex_at)), value_set=pa.array(_CODES)).fill_null(-1).to_numpy(), dtype=np.int64
    )
    ex_code[(ex_kind != K_STR) & (ex_kind != K_INT)] = -1
    fb[erec[ex_at[ex_code < 0]]] = True
    # the text "null" (and a JSON null) is SQL NULL
    null_text = flags(pc.equal(etext, "null"))
    if null_text.any():
        nulls = pa.array(~null_text)
        etext = pc.if_else(nulls, etext, pa.nulls(len(etext), pa.string()))
        eesc = pc.if_else(nulls, eesc, pa.nulls(len(eesc), pa.string()))

    images = Images(erec, obj, 3, raw_names, fb)
    to_after = ex_at[(ex_code == 1) | (ex_code == 3)]
    to_before = ex_at[(ex_code == 2) | (ex_code == 3)]
    _take_named(images, to_before, np.flatnonzero(obj == O_BEFORE), O_BEFORE, 0)
    _take_named(images, to_after, np.flatnonzero(obj == O_AFTER), O_AFTER, 1)
    entries = images.build(etext, eesc)
    p_rec, p_side = entries["erec"], entries["side"]
    counts = np.bincount(p_rec * 2 + p_side, minlength=2 * n).reshape(n, 2)
    present_before = counts[:, 0] > 0
    present_after = counts[:, 1] > 0

    # --- keys: the configured key columns, read from the images
    is_ins, is_upd, is_del = op_code == 0, op_code == 1, op_code == 2
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

    # --- cursor and operationcount: seq, times, counts (the decoder's functions)
    cursor_t = per_record(top["cursor"], n)
    count_t = per_record(top["operationcount"], n)
    live = pa.array(~fb)
    meta = cursor_metadata(
        pc.if_else(live, cursor_t, pa.nulls(n, pa.string())), pc.if_else(live, count_t, pa.nulls(n, pa.string())), fb
    )
    _stats["fallback_reasons_flagged"] = int(fb.sum())

    present = np.ones(n, dtype=bool)
    extras = [("cursor", cursor_t, present), ("operationcount", count_t, present)]
    extras += [(name, meta["counts"][name], present) for name in OPERATIONCOUNT_FIELDS]
    op_arr = op_texts(op_code, _OP_NAMES)
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
        seq=meta["seq"],
        db=db,
        schema=schema,
        table=table,
        commit=meta["commit"],
        capture=meta["capture"],
        tx=pa.nulls(n, pa.string()),
        extras=extras,
    )
