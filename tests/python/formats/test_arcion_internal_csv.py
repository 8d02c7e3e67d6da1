"""Tests of the Arcion internal CDC CSV decoder, on the documentation samples."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest
from change_checks import check, fold

from udfs.contract import Change, QuarantineError, Record, SkipRecord, seq_of
from udfs.formats.arcion_internal_csv import (
    ArcionInternalCsvDecoder,
    columns_from_header,
    split_csv_row,
    split_csv_row_exact,
)
from udfs.framing import split_csv

ARCION = Path(__file__).resolve().parents[3].parent / "shared" / "corpora" / "arcion"
# The table's column order, as the realtime samples' values show it.
REGION = {
    "key": ["r_regionkey"],
    "columns": {"r_comment": "string", "r_name": "string", "r_regionkey": "int"},
}
OPTIONS = {"table": "region", "tables": {"region": REGION}}


def read(name: str) -> str:
    """A corpus file; a missing corpus is a failure, never a skip."""
    path = ARCION / "internal-csv" / name
    assert path.is_file(), f"missing shared corpus file {path}"
    return path.read_text(encoding="utf-8")


def joined(name: str) -> str:
    """The logical CSV row: the doc wraps lines with a trailing "/" (typesetting artifact)."""
    return read(name).replace("/\n", "")


def decode(text: str | None, options: dict[str, Any] | None = None, **record: Any) -> Change:
    changes = ArcionInternalCsvDecoder(OPTIONS if options is None else options).decode(Record(text, **record))
    assert len(changes) == 1
    return changes[0]


def region_key(ch: Change) -> tuple:
    """The fold key: r_regionkey of the before image (update, delete; the realtime
    samples' after image lacks it), else of the after image."""
    image = ch.before if ch.op in ("update", "delete") and ch.before else ch.after
    return (image["r_regionkey"],)


def test_decoder_identity() -> None:
    assert ArcionInternalCsvDecoder.identifier == "arcion_internal_csv"
    assert ArcionInternalCsvDecoder.default_framing == "csv"
    assert ArcionInternalCsvDecoder.framings == ("csv",)


def test_realtime_insert() -> None:
    ch = decode(joined("realtime-insert.csv"))
    check(
        ch,
        op="insert",
        source_table="region",
        source_db=None,
        source_schema=None,
        key=None,
        before=None,
        before_cols=None,
        after={"r_comment": "India", "r_name": "India", "r_regionkey": "10"},
        after_cols=["r_comment", "r_name", "r_regionkey"],
        seq="00000001620787053904.00000000000001048408",
        commit_ts_us=1620787841959000,
        capture_ts_us=1620787841959000,
    )
    # the cursor field is quoted with "" escapes: the extras hold the unescaped JSON text
    assert ch.extras == {
        "cursor": '{"extractorId":0,"nodeID":"node1","timestamp":1620787841959,'
        '"extractionTimestamp":1620787841959,"dscId":1620787053904,"mutId":1048408,"partNum":1,"v":2}',
        "operationcount": '{"insertCount":6,"updateCount":0,"deleteCount":0,"replaceCount":0}',
        "insert_count": "6",
        "update_count": "0",
        "delete_count": "0",
        "replace_count": "0",
    }
    assert json.loads(ch.extras["cursor"])["mutId"] == 1048408


def test_realtime_update_and_delete() -> None:
    upd = decode(joined("realtime-update.csv"))
    check(
        upd,
        op="update",
        before={"r_regionkey": "10"},
        before_cols=["r_regionkey"],
        after={"r_comment": "USA"},
        after_cols=["r_comment"],
        seq="00000001620787053904.00000000000001048480",
        commit_ts_us=1620787852116000,
    )
    assert upd.extras["update_count"] == "1"
    dele = decode(joined("realtime-delete.csv"))
    check(
        dele,
        op="delete",
        before={"r_regionkey": "10"},
        before_cols=["r_regionkey"],
        after=None,
        after_cols=None,
        seq=None,  # the doc's cursor spells dscId "dscI": no (dscId, mutId) seq
        commit_ts_us=1620787872370000,
        capture_ts_us=1620787872370000,
    )
    assert dele.extras["delete_count"] == "1"
    assert '"dscI":1620787053905' in dele.extras["cursor"]


def test_fold_reaches_expected_states() -> None:
    changes = [decode(joined(f"realtime-{op}.csv")) for op in ("insert", "update", "delete")]
    assert changes[0].seq < changes[1].seq
    state = fold(changes[:2], region_key)
    assert state == {("10",): {"r_regionkey": "10", "r_comment": "USA", "r_name": "India"}}
    assert fold(changes[2:], region_key, state) == {}


def test_snapshot_row_with_header_and_with_config() -> None:
    header = ["r_regionkey", "r_name", "r_comment"]
    ch = decode(read("snapshot-row.csv"), options={"table": "region"}, header=header)
    # spaces are part of an RFC 4180 field: kept
    check(
        ch,
        op="snapshot",
        source_table="region",
        after={"r_regionkey": "0", "r_name": " AFRICA ", "r_comment": "AFRICA"},
        after_cols=None,
        before=None,
        seq=seq_of(0, 0, 0),
        commit_ts_us=None,
        extras={},
    )
    ch = decode(read("snapshot-row.csv"))
    assert ch.after == {"r_comment": "0", "r_name": " AFRICA ", "r_regionkey": "AFRICA"}


def test_realtime_header_names() -> None:
    suffix = [
        "r_comment_NEW",
        "r_comment_OLD",
        "r_comment_EXISTS",
        "r_name_new",
        "r_name_old",
        "r_name_exists",
    ]
    suffix += [
        "r_regionkey_NEW_VAL",
        "r_regionkey_OLD_VAL",
        "r_regionkey_EXISTS_VAL",
        "OP",
        "CURSOR",
        "OPCOUNT",
    ]
    assert columns_from_header(suffix) == (["r_comment", "r_name", "r_regionkey"], True)
    prefix = ["NEW_VAL_a", "OLD_VAL_a", "EXISTS_VAL_a", "NEWb", "OLDb", "EXISTSb", "op", "cursor", "opcount"]
    assert columns_from_header(prefix) == (["a", "b"], True)
    # unknown triplet names, recognized by the trailing cursor/operationcount names
    odd = ["a", "a_before", "a_flag", "op", "cursor", "operation_count"]
    assert columns_from_header(odd) == (["a"], True)
    # a plain 6-column snapshot header stays as it is
    plain = ["a", "b", "c", "d", "e", "f"]
    assert columns_from_header(plain) == (plain, False)

    ch = decode(joined("realtime-update.csv"), options={"table": "region"}, header=suffix)
    assert (ch.after, ch.before) == ({"r_comment": "USA"}, {"r_regionkey": "10"})
    with pytest.raises(SkipRecord, match="header row"):
        decode(",".join(suffix) + "\n", options={"table": "region"}, header=suffix)


def test_quoted_and_unquoted_null() -> None:
    row = '"NULL",x,1,NULL,"NULL",3,"10",NULL,1,I,NULL,NULL\r\n'
    ch = decode(row)
    assert ch.after == {"r_comment": "NULL", "r_name": None, "r_regionkey": "10"}
    assert ch.before == {"r_name": "NULL"}
    assert (ch.seq, ch.extras["cursor"], ch.extras["insert_count"]) == (None, None, None)
    snap = decode('NULL,"NULL",""\n')
    assert snap.after == {"r_comment": None, "r_name": "NULL", "r_regionkey": ""}


def test_quoted_newline_and_quotes() -> None:
    ch = decode('"multi\nline, ""quoted""",NULL,1,India,NULL,1,10,NULL,1,I,NULL,NULL')
    assert ch.after["r_comment"] == 'multi\nline, "quoted"'


def test_split_csv_row() -> None:
    assert split_csv_row('a,"b ""c""",,NULL,"NULL"\n') == [
        ("a", False),
        ('b "c"', True),
        ("", False),
        ("NULL", False),
        ("NULL", True),
    ]
    assert split_csv_row("a,") == [("a", False), ("", False)]
    with pytest.raises(QuarantineError, match="unterminated"):
        split_csv_row('a,"b')
    with pytest.raises(QuarantineError, match="more than one CSV row"):
        split_csv_row("a,b\nc,d\n")
    with pytest.raises(QuarantineError, match="after a quoted CSV field"):
        split_csv_row('"a"b,c')
    with pytest.raises(QuarantineError, match="quote inside an unquoted"):
        split_csv_row('a"b,c')


#: the pieces of random rows: separators, quotes, line ends, NULL, unicode
CSV_PIECES = [",", '"', '""', "\n", "\r", "\r\n", "a", "NULL", " ", "é😀", "\t", "x,y", '"q"']


def _outcome(split: Any, text: str) -> Any:
    try:
        return split(text)
    except QuarantineError as exc:
        return ("quarantined", str(exc))


def test_split_csv_row_regex_path_equals_the_character_path() -> None:
    """The two regular expressions split every row as the character-by-character parser
    does, and a row they reject gets that parser's reason (20,000 random rows, about
    a quarter well formed)."""
    rng = random.Random(11)
    well_formed = 0
    for _ in range(20_000):
        text = "".join(rng.choice(CSV_PIECES) for _ in range(rng.randint(0, 12)))
        expected = _outcome(split_csv_row_exact, text)
        assert _outcome(split_csv_row, text) == expected, repr(text)
        well_formed += not isinstance(expected, tuple)
    assert 3_000 < well_formed < 15_000, well_formed


def _csv_rows_by_character(text: str) -> list[str]:
    """RFC 4180 rows, one character at a time: the reference for ``split_csv``."""
    rows, start, quoted = [], 0, False
    for i, ch in enumerate(text):
        if ch == '"':
            quoted = not quoted
        elif ch == "\n" and not quoted:
            rows.append(text[start : i + 1])
            start = i + 1
    if start < len(text):
        rows.append(text[start:])
    return rows


def test_split_csv_cuts_rows_as_the_character_reference() -> None:
    """``split_csv`` (rows cut line by line) against a character-by-character cut, with
    and without a header, over 3,000 random files."""
    rng = random.Random(12)
    for _ in range(3_000):
        text = "".join(rng.choice(CSV_PIECES) for _ in range(rng.randint(0, 40)))
        rows = [r.rstrip("\r\n") for r in _csv_rows_by_character(text) if r.strip()]
        got = split_csv(text.encode("utf-8"))
        assert [r.text for r in got] == rows, repr(text)
        assert [r.record_index for r in got] == list(range(len(rows)))


def test_realtime_header_names_are_cached_but_not_shared() -> None:
    header = ["id_NEW", "id_OLD", "id_EXISTS", "n_NEW", "n_OLD", "n_EXISTS", "OPERATION", "CURSOR", "OPERATIONCOUNT"]
    first, realtime = columns_from_header(header)
    assert (first, realtime) == (["id", "n"], True)
    first.append("changed by a caller")
    assert columns_from_header(list(header)) == (["id", "n"], True)


def test_table_from_path() -> None:
    options = {"table_from_path": r"/(?P<table>[^/]+)/[^/]+\.csv$", "tables": {"region": REGION}}
    ch = decode(joined("realtime-insert.csv"), options=options, source_file="s3://b/io_blitzz/region/p-1.csv")
    assert ch.source_table == "region"
    with pytest.raises(QuarantineError, match="does not match"):
        decode(joined("realtime-insert.csv"), options=options, source_file="s3://b/region.json")


@pytest.mark.parametrize(
    ("text", "options", "reason"),
    [
        ("a,b,c,d,e\n", OPTIONS, "expected 3 or 12 fields, got 5"),
        ("a,b\n", OPTIONS, "expected 3 or 12 fields, got 2"),
        (None, OPTIONS, "empty record"),
        ("\n", OPTIONS, "empty record"),
        ("a,b,c", {"tables": {"region": REGION}}, "no table name"),
        ("a,b,c", {"table": "nation", "tables": {"region": REGION}}, "no configured columns"),
        ("x,NULL,1,y,NULL,1,10,NULL,1,X,NULL,NULL", OPTIONS, "unknown op 'X'"),
        ("x,NULL,4,y,NULL,1,10,NULL,1,I,NULL,NULL", OPTIONS, "exists code of 'r_comment'"),
        ('x,NULL,1,y,NULL,1,10,NULL,1,I,"{bad",NULL', OPTIONS, "cursor not JSON"),
    ],
)
def test_quarantine(text: str | None, options: dict[str, Any], reason: str) -> None:
    with pytest.raises(QuarantineError, match=reason):
        ArcionInternalCsvDecoder(options).decode(Record(text))


def test_unjoined_doc_sample_is_quarantined() -> None:
    # The decoder never undoes the doc's "/" wrapping: the raw extract is not valid CSV.
    for op in ("insert", "update", "delete"):
        with pytest.raises(QuarantineError, match="unexpected '/' after a quoted CSV field"):
            decode(read(f"realtime-{op}.csv"))


def test_configured_column_order_survives_the_pipeline_options(tmp_path: Path) -> None:
    """The decoder options reach the UDF as JSON with sorted keys (``dbt_vars``), which
    sorts the ``columns`` mapping; the CSV column order comes from ``column_order``."""
    import yaml

    from udfs.config import load_config
    from udfs.decode import decode_records
    from udfs.pipeline import dbt_vars

    (tmp_path / "landing").mkdir()
    cfg = {
        "feeds": [{"name": "f", "format": "arcion_internal_csv", "path": "landing", "options": {"table": "region"}}],
        # not alphabetical: r_regionkey, r_name, r_comment (the doc's snapshot order)
        "tables": {
            "region": {
                "key": ["r_regionkey"],
                "columns": {"r_regionkey": "int", "r_name": "string", "r_comment": "string"},
            }
        },
    }
    (tmp_path / "cdc.yml").write_text(yaml.safe_dump(cfg, sort_keys=False))
    options_json = dbt_vars(load_config(tmp_path / "cdc.yml"))["cdc"]["feeds"][0]["decoder_options"]
    (result,) = decode_records(options_json, [read("snapshot-row.csv").rstrip("\n")])
    assert result["status"] == "ok", result["reason"]
    assert result["changes"][0]["after"] == {"r_regionkey": "0", "r_name": " AFRICA ", "r_comment": "AFRICA"}


def test_snapshot_row_orders_before_realtime_changes() -> None:
    """A snapshot row has no cursor. With a null ``seq`` the order key (``seq`` first, a
    null ``seq`` after every position) put it after the realtime changes of its key: a
    later update was overwritten by the older snapshot image and a deleted row came back
    (found by the differential test). It gets the lowest position instead."""
    options = {"table": "region", "tables": {"region": {"columns": {"r_regionkey": "int", "r_name": "string"}}}}
    snap = ArcionInternalCsvDecoder(options).decode(Record("10,India"))[0]
    cursor = '"{""log"":""log-bin.000001"",""position"":4,""logSeqNum"":0,""timestamp"":1}"'
    delete = ArcionInternalCsvDecoder(options).decode(Record(f'NULL,10,2,NULL,NULL,0,D,{cursor},"{{}}"'))[0]
    assert snap.seq is not None and delete.seq is not None
    assert snap.seq < delete.seq
    assert snap.seq == seq_of(0, 0, 0)
