"""A columnar Arcion internal CSV decoder giving the very result of ``decode_records``.

``decode_arcion_csv_columnar(options_json, texts, kafka_keys, source_files, headers)``
takes a batch of ``arcion_internal_csv`` records (each the text of one CSV row, with its
landing file and the file's header row) as Arrow arrays and returns the ``cdc_decode``
result for the whole batch; ``cdc_decode`` runs it for every such feed unless its option
``columnar`` is false (:func:`udfs.spark_udfs.decode_array`). It reads the rows of
:mod:`udfs.formats.arcion_internal_csv` and builds the result with
:mod:`udfs.formats.columnar`'s ``assemble``.

How: the batch's rows are split into fields by numpy over their bytes (a comma is a
separator where the quotes before it in its row are even in number; a ``""`` escape
counts twice), the fields cut out by Arrow, quoted ones unescaped, an unquoted ``NULL``
SQL NULL. A row's column names come from its header row (each distinct header read once
by the decoder's own :func:`~udfs.formats.arcion_internal_csv.columns_from_header`) or
the configured columns of its table (the table named once per distinct file, by the
decoder's own ``_table``). Snapshot rows (X fields) and realtime rows (3X+3: NEW, OLD,
EXISTS per column, the op, the cursor, the operationcount) are decoded column-wise, the
cursor and operationcount texts by the Arcion JSON decoder's
:func:`~udfs.formats.arcion_internal_json_columnar.cursor_metadata`.

Handed to ``decode_records``: a null record and the text ``null``, an empty row, a row
that is not well-formed CSV (an unterminated quote, text after a closing quote, a quote
in an unquoted field, a line break outside quotes), a field count that is neither X nor
3X+3, a row whose fields could be its header row, an op other than ``I``/``U``/``D`` or
an ``exists`` code other than one digit ``0``..``3`` as written (spaces or other digits
go to the decoder), a cursor or operationcount it quarantines, no table name (no
``table``, a ``table_from_path`` that does not match) or no columns for it, non-ASCII or
repeated (case-insensitive) column names, a table without a configured key or with a
name too long, an update that changes the key. ``LAST_STATS`` holds the counts of the
last call.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from udfs.contract import QuarantineError, Record, seq_of
from udfs.formats.arcion_cursor import OPERATIONCOUNT_FIELDS
from udfs.formats.arcion_internal_csv import ArcionInternalCsvDecoder, columns_from_header
from udfs.formats.arcion_internal_json_columnar import cursor_metadata
from udfs.formats.columnar import (
    DECODE_TYPE,
    assemble,
    buffers,
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

LAST_STATS: dict[str, Any] = {}
_stats: dict[str, Any] = {}

_QUOTE, _COMMA, _CR, _LF = (ord(c) for c in '",\r\n')
_OPS = {"I": 0, "U": 1, "D": 2}
_OP_NAMES = ["insert", "update", "delete", "snapshot"]
#: the position a snapshot row takes: before every realtime change of its key
_SNAPSHOT_SEQ = seq_of(0, 0, 0)


def decode_arcion_csv_columnar(
    options_json: str,
    texts: pa.Array,
    kafka_keys: pa.Array | None = None,
    source_files: pa.Array | None = None,
    headers: pa.Array | None = None,
) -> pa.StructArray:
    """The ``cdc_decode`` result of a batch of Arcion internal CSV rows (module doc)."""
    n = len(texts)
    return decode_columnar(
        options_json,
        texts,
        kafka_keys,
        fmt=ArcionInternalCsvDecoder.identifier,
        fast=lambda *args, **kwargs: _fast(*args, **kwargs),  # looked up per call (a test replaces it)
        stats=_stats,
        last_stats=LAST_STATS,
        null_is_a_record=True,  # the decoder quarantines a null record; "null" is a row
        source_files=source_files if source_files is not None else pa.nulls(n, pa.string()),
        headers=headers if headers is not None else pa.nulls(n, pa.list_(pa.string())),
    )


# ----------------------------------------------------------------------------- fields


def split_fields(texts: pa.StringArray, fb: np.ndarray) -> dict[str, Any]:
    """Every row's fields: ``rec`` (its row), ``pos`` (its place in the row), ``text``
    (the value: unquoted, ``""`` undone, an unquoted ``NULL`` null), ``raw`` (the value as
    the decoder compares it with the header: quotes undone, ``NULL`` kept) and ``count``
    (fields per row). A row that is not well-formed CSV is flagged in ``fb``."""
    n = len(texts)
    b, off = buffers(texts)
    off = off.astype(np.int64)
    # only quotes, commas and line breaks matter: their positions, not a flag per byte
    quotes = np.flatnonzero(b == _QUOTE)
    commas = np.flatnonzero(b == _COMMA)
    breaks = np.flatnonzero((b == _CR) | (b == _LF))

    def row_and_inside(at: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Each position's row, and whether it is inside quotes (an odd number of quotes
        before it in its row; a "" escape counts twice)."""
        row = np.searchsorted(off, at, side="right") - 1
        before = np.searchsorted(quotes, at) - np.searchsorted(quotes, off[row])
        return row, before % 2 == 1

    per_row = np.searchsorted(quotes, off[1:]) - np.searchsorted(quotes, off[:-1])
    fb[per_row % 2 == 1] = True  # an unterminated quote
    # one line end may close a row (\r\n, \n or \r): the row ends before it
    last = b[np.maximum(off[1:] - 1, 0)] if len(b) else np.zeros(n, dtype=np.uint8)
    before_last = b[np.maximum(off[1:] - 2, 0)] if len(b) else np.zeros(n, dtype=np.uint8)
    size = off[1:] - off[:-1]
    trail = np.where((size >= 1) & ((last == _LF) | (last == _CR)), 1, 0)
    trail += (trail == 1) & (last == _LF) & (size >= 2) & (before_last == _CR)
    ends = off[1:] - trail
    brow, binside = row_and_inside(breaks)
    fb[brow[~binside & (breaks < ends[brow])]] = True  # a line break inside the row: more than one row
    fb |= ends == off[:-1]  # an empty row
    crow, cinside = row_and_inside(commas)
    comma, crow = commas[~cinside], crow[~cinside]
    count = np.bincount(crow, minlength=n) + 1
    first = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(count, out=first[1:])
    total = int(first[-1])
    rec = np.repeat(np.arange(n, dtype=np.int64), count)
    pos = np.arange(total, dtype=np.int64) - first[rec]
    # a field ends at the next comma of its row, or at the row's end
    is_last = np.zeros(total, dtype=bool)
    is_last[first[1:] - 1] = True
    start = np.empty(total, dtype=np.int64)
    end = np.empty(total, dtype=np.int64)
    start[first[:-1]] = off[:-1]
    end[first[1:] - 1] = ends
    inner = np.flatnonzero(~is_last)
    end[inner] = comma
    start[inner + 1] = comma + 1
    quoted = np.zeros(total, dtype=bool)
    nonempty = end > start
    quoted[nonempty] = b[start[nonempty]] == _QUOTE
    # a quoted field ends with its closing quote; any other field holds no quote
    closed = quoted & (end - start >= 2)
    closed[closed] = b[end[closed] - 1] == _QUOTE
    fb[rec[quoted & ~closed]] = True
    inner_start, inner_end = np.where(closed, start + 1, start), np.where(closed, end - 1, end)
    raw = gather(b, inner_start, inner_end)
    # quotes inside a field's value (counted from the quote positions): none in an
    # unquoted field; in a quoted one only "" escapes, in runs of even length
    quotes_in = np.searchsorted(quotes, inner_end) - np.searchsorted(quotes, inner_start)
    fb[rec[~quoted & (quotes_in > 0)]] = True
    escaped = np.flatnonzero(closed & (quotes_in > 0))
    if len(escaped):
        values = raw.take(pa.array(escaped))
        pairs = pc.count_substring(values, '""').to_numpy(zero_copy_only=False)
        fb[rec[escaped[quotes_in[escaped] != 2 * pairs]]] = True
        mask = np.zeros(total, dtype=bool)
        mask[escaped] = True
        raw = pc.replace_with_mask(raw, pa.array(mask), pc.replace_substring(values, '""', '"'))
    # an unquoted NULL is SQL NULL (four bytes: compared only where the field has four)
    four = np.flatnonzero(~quoted & (end - start == 4))
    null = np.zeros(total, dtype=bool)
    null[four] = flags(pc.equal(raw.take(pa.array(four)), "NULL"))
    text = pc.if_else(pa.array(null), pa.nulls(total, pa.string()), raw) if null.any() else raw
    return {"rec": rec, "pos": pos, "text": text, "raw": raw, "count": count, "first": first}


# ----------------------------------------------------------------------------- decode


def _fast(
    texts: pa.StringArray,
    options: dict[str, Any],
    tables: dict[str, Any],
    keys: pa.Array | None = None,
    source_files: pa.Array | None = None,
    headers: pa.Array | None = None,
) -> tuple[np.ndarray, pa.Array]:
    """(which records the columnar path decoded, their results in order)."""
    n = len(texts)
    _stats.clear()
    fb = np.zeros(n, dtype=bool)
    if n == 0:
        return fb, pa.array([], type=DECODE_TYPE)
    decoder = ArcionInternalCsvDecoder(options)
    files = source_files if source_files is not None else pa.nulls(n, pa.string())
    heads = headers if headers is not None else pa.nulls(n, pa.list_(pa.string()))

    # --- the table of each row: the feed's option, or its file's path (once per file)
    enc = pc.dictionary_encode(files.cast(pa.string()))
    fcode = enc.indices.fill_null(len(enc.dictionary)).to_numpy(zero_copy_only=False).astype(np.int64)
    table_of_file: list[str | None] = []
    for path in [*enc.dictionary.to_pylist(), None]:
        try:
            table_of_file.append(decoder._table(Record(text=None, source_file=path)))
        except QuarantineError:
            table_of_file.append(None)
    tnames = np.array(table_of_file, dtype=object)[fcode]
    fb |= tnames == None  # noqa: E711 - element-wise: no table name, quarantined

    # --- the columns of each row: its header row's (once per distinct header) or its table's
    layout_key = _header_keys(heads, tnames)
    lenc = pc.dictionary_encode(layout_key)
    lcode = lenc.indices.to_numpy(zero_copy_only=False).astype(np.int64)
    _, first_row = np.unique(lcode, return_index=True)  # each layout's first row
    layouts: list[list[str] | None] = []
    header_names: list[list[str] | None] = []
    for row in first_row.tolist():
        header = heads[row].as_py()
        try:
            if header:
                layouts.append(columns_from_header(header)[0])
            else:  # the table's configured columns (a row without a table is flagged already)
                layouts.append(decoder._columns(tnames[row]) if tnames[row] is not None else None)
        except QuarantineError:
            layouts.append(None)
        header_names.append(header or None)
    fb |= np.array([lay is None for lay in layouts], dtype=bool)[lcode]
    xcols = np.array([len(lay or []) for lay in layouts], dtype=np.int64)[lcode]

    # --- fields
    f = split_fields(texts, fb)
    rec, pos, count = f["rec"], f["pos"], f["count"]
    snapshot = count == xcols
    realtime = count == 3 * xcols + 3
    fb |= ~(snapshot | realtime) | (xcols == 0)
    # a row that could be its file's header row: the decoder skips the one that is
    hlen = np.array([len(h) if h else -1 for h in header_names], dtype=np.int64)[lcode]
    if (count == hlen).any():
        hfirst = pa.array([h[0] if h else None for h in header_names], pa.string()).take(pa.array(lcode))
        first_raw = f["raw"].take(pa.array(f["first"][:-1]))
        fb |= (count == hlen) & flags(pc.fill_null(pc.equal(first_raw, hfirst), False))

    # --- names: every layout's columns in one array; a row's column j is names[goff[layout] + j]
    goff = np.zeros(len(layouts) + 1, dtype=np.int64)
    np.cumsum([len(lay or []) for lay in layouts], out=goff[1:])
    all_names = pa.array([c for lay in layouts for c in (lay or [])], pa.string())
    not_ascii = ~flags(pc.string_is_ascii(all_names)) if len(all_names) else np.zeros(0, dtype=bool)
    lnames_all = pc.ascii_lower(all_names)
    name_enc = pc.dictionary_encode(lnames_all)
    ldict: list[str] = name_enc.dictionary.to_pylist()
    lcode_all = name_enc.indices.to_numpy(zero_copy_only=False).astype(np.int64)
    layout_of_name = np.repeat(np.arange(len(layouts), dtype=np.int64), np.diff(goff))
    bad_layout = np.zeros(len(layouts), dtype=bool)
    bad_layout[layout_of_name[not_ascii]] = True  # the decoder lower-cases beyond ASCII
    nl = max(len(ldict), 1)
    dup = np.sort(layout_of_name * nl + lcode_all)
    bad_layout[np.unique(dup[1:][dup[1:] == dup[:-1]] // nl)] = True  # a name twice
    fb |= bad_layout[lcode]

    # --- realtime rows: op, exists codes, cursor, operationcount
    fx = xcols[rec]
    frt = realtime[rec] & ~fb[rec]
    op_at = np.flatnonzero(frt & (pos == 3 * fx))
    op_code = np.full(n, 3, dtype=np.int64)  # snapshot
    op_text = f["raw"].take(pa.array(op_at))
    op_num = np.array([_OPS.get(t, -1) for t in op_text.to_pylist()], dtype=np.int64)
    op_code[rec[op_at]] = op_num
    fb[rec[op_at][op_num < 0]] = True  # another op (or one with spaces): the decoder decides
    in_triplet = frt & (pos < 3 * fx)
    ex_at = np.flatnonzero(in_triplet & (pos % 3 == 2))
    ex_raw = f["raw"].take(pa.array(ex_at))
    ex_ok = flags(pc.match_substring_regex(ex_raw, r"^[0-3]$")) & ~flags(f["text"].take(pa.array(ex_at)).is_null())
    fb[rec[ex_at][~ex_ok]] = True
    code = np.zeros(len(rec), dtype=np.int64)
    digits = pc.cast(pc.if_else(pa.array(ex_ok), ex_raw, "0"), pa.int64()).to_numpy(zero_copy_only=False)
    code[ex_at - 2] = digits  # the code, at the NEW field of its column
    code[ex_at - 1] = digits  # and at the OLD one
    cursor_t = _per_row(f, np.flatnonzero(frt & (pos == 3 * fx + 1)), n)
    count_t = _per_row(f, np.flatnonzero(frt & (pos == 3 * fx + 2)), n)

    # --- image entries: a snapshot row's every field (after); a realtime row's NEW where
    # the code is 1 or 3 (after), OLD where it is 2 or 3 (before)
    fsnap = snapshot[rec] & ~fb[rec]
    part = pos % 3
    new_at = np.flatnonzero(in_triplet & (part == 0) & ((code == 1) | (code == 3)))
    old_at = np.flatnonzero(in_triplet & (part == 1) & ((code == 2) | (code == 3)))
    snap_at = np.flatnonzero(fsnap)
    at = np.concatenate((snap_at, new_at, old_at))
    side = np.concatenate((np.ones(len(snap_at) + len(new_at), dtype=np.int64), np.zeros(len(old_at), dtype=np.int64)))
    column = np.concatenate((pos[snap_at], pos[new_at] // 3, pos[old_at] // 3))
    erec = rec[at]
    order = np.lexsort((column, side, erec))
    at, side, column, erec = at[order], side[order], column[order], erec[order]
    name_at = goff[lcode[erec]] + column
    etext = f["text"].take(pa.array(at, type=pa.int64()))
    is_ins, is_upd, is_del = (op_code == 0) | (op_code == 3), op_code == 1, op_code == 2
    present_after = np.bincount(erec[side == 1], minlength=n) > 0  # an image with no column is None
    present_before = np.bincount(erec[side == 0], minlength=n) > 0

    # --- tables: id, configured key
    table_arr = pa.array(tnames.tolist(), pa.string())
    tenc = pc.dictionary_encode(table_arr)
    tcode = tenc.indices.fill_null(0).to_numpy(zero_copy_only=False).astype(np.int64)
    tlist = tenc.dictionary.to_pylist() or [""]
    uniq, inv = np.unique(tcode, return_inverse=True)
    inv = np.asarray(inv).ravel()
    tids, tid_keys, tid_bad = resolve_tables(tables, [(None, None, tlist[u]) for u in uniq.tolist()])
    tid_bad |= np.array([not k for k in tid_keys], dtype=bool)  # the format names no key: one must be configured
    fb |= tid_bad[inv]
    table_id = table_id_array(tids, inv)

    lcode_e = lcode_all[name_at]
    ekeypos = key_positions(tid_keys, ldict, inv[erec], lcode_e)
    prov = np.ones(len(erec), dtype=bool)
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

    # --- seq, times and counts: the cursors' (a snapshot row has none)
    live = pa.array(~fb & realtime)
    meta = cursor_metadata(
        pc.if_else(live, cursor_t, pa.nulls(n, pa.string())), pc.if_else(live, count_t, pa.nulls(n, pa.string())), fb
    )
    seq = pc.if_else(pa.array(snapshot), pa.scalar(_SNAPSHOT_SEQ), meta["seq"])
    _stats["fallback_reasons_flagged"] = int(fb.sum())

    extras = [("cursor", cursor_t, realtime), ("operationcount", count_t, realtime)]
    extras += [(name, meta["counts"][name], realtime) for name in OPERATIONCOUNT_FIELDS]
    op_arr = op_texts(op_code, _OP_NAMES)
    return assemble(
        fb=fb,
        erec=erec,
        side=side,
        prov=prov,
        lnames=lnames_all.take(pa.array(name_at, type=pa.int64())),
        lcode=lcode_e,
        ldict=ldict,
        etext=etext,
        eesc=json_escaped(etext),
        etype=np.zeros(len(erec), dtype=np.int32),
        types=[None],
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
        schema=pa.nulls(n, pa.string()),
        table=table_arr,
        commit=pc.if_else(pa.array(snapshot), pa.nulls(n, pa.int64()), meta["commit"]),
        capture=pc.if_else(pa.array(snapshot), pa.nulls(n, pa.int64()), meta["capture"]),
        tx=pa.nulls(n, pa.string()),
        extras=extras,
    )


def _header_keys(headers: pa.Array, tables: np.ndarray) -> pa.Array:
    """One text per row that is the same for rows of the same column layout: its header
    row (the names joined, ``\\x00`` escaped so that no two headers join alike), or
    without one its table's name."""
    n = len(headers)
    # an empty header row names no column: the table's configured ones, as no header
    has = flags(pc.fill_null(pc.greater(pc.list_value_length(headers), 0), False))
    names = pc.replace_substring(pc.replace_substring(pc.list_flatten(headers), "\\", "\\\\"), "\x00", "\\0")
    offsets = headers.offsets.to_numpy(zero_copy_only=False)
    joined = pc.binary_join(pa.ListArray.from_arrays(pa.array(offsets - offsets[0]), names), "\x00")
    table_key = pa.array([None if t is None else f"t\x00{t}" for t in tables.tolist()], pa.string())
    return pc.if_else(pa.array(has), pc.binary_join_element_wise("h\x00", joined, ""), table_key).fill_null("-")[:n]


def _per_row(f: dict[str, Any], at: np.ndarray, n: int) -> pa.Array:
    """The field texts ``at`` (one per row at most) as one text per row, null elsewhere."""
    where = np.full(n, -1, dtype=np.int64)
    where[f["rec"][at]] = at
    return f["text"].take(pa.array(where, mask=where < 0))
