"""Tests of the Arcion cursor / operationcount decoding (every cursor of the S3 spec)."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import pytest

from udfs.contract import QuarantineError, loads_exact
from udfs.formats.arcion_cursor import (
    CURSOR_FIELDS,
    OPERATIONCOUNT_FIELDS,
    cursor_batch,
    cursor_batch_masked,
    cursor_seq,
    decode_cursor,
    decode_operationcount,
    log_file_number,
    operationcount_batch,
    operationcount_batch_masked,
)
from udfs.formats.arcion_internal_csv import split_csv_row

SHARED = Path(__file__).resolve().parents[3].parent / "shared"
ARCION = SHARED / "corpora" / "arcion"
SPEC = SHARED / "specs" / "arcion-internal-cdc-format-s3.txt"


def read(path: Path) -> str:
    """Read a shared file; a missing corpus is a failure, never a skip."""
    assert path.is_file(), f"missing shared corpus file {path}"
    return path.read_text(encoding="utf-8")


def json_cursor(name: str) -> str:
    return loads_exact(read(ARCION / "internal-json" / name))["cursor"]


def csv_cursor(name: str) -> str:
    # The doc wraps CSV lines with a trailing "/": join them back (a doc artifact).
    fields = split_csv_row(read(ARCION / "internal-csv" / name).replace("/\n", ""))
    return fields[-2][0]


def cursor(**fields: object) -> dict[str, object]:
    out: dict[str, object] = dict.fromkeys(CURSOR_FIELDS)
    out["unknown"] = {}
    out.update(fields)
    return out


def mysql(ts: int, ext: int, position: int) -> dict[str, object]:
    return cursor(
        extractor_id=0,
        timestamp_us=ts * 1000,
        extraction_timestamp_us=ext * 1000,
        lag_ms=ext - ts,
        log="log-bin.000010",
        position=position,
        log_seq_num=1,
        server_id=1,
        version=2,
    )


def node(ts: int, mut_id: int, part_typo: str) -> dict[str, object]:
    # The realtime JSON cursors have "extraction Timestamp" and "partNu m"/"partN um":
    # doc line-wrapping typos, kept in `unknown`, never read as the real fields.
    return cursor(
        extractor_id=0,
        node_id="node1",
        timestamp_us=ts * 1000,
        dsc_id=1620787053905,
        mut_id=mut_id,
        version=2,
        unknown={"extraction Timestamp": str(ts), part_typo: "1"},
    )


JSON_CURSORS = {
    "snapshot-insert.json": mysql(1657516903000, 1657516904088, 7461),
    "snapshot-update.json": mysql(1657516946000, 1657516947142, 9149),
    "snapshot-delete.json": mysql(1657516954000, 1657516955151, 9872),
    "realtime-insert.json": node(1620788088431, 326118, "partNu m"),
    "realtime-update.json": node(1620788090478, 326190, "partN um"),
    "realtime-delete.json": node(1620788092539, 326250, "partN um"),
}


def csv_expected(ts: int, dsc: int | None, mut_id: int, unknown: dict[str, str]) -> dict[str, object]:
    return cursor(
        extractor_id=0,
        node_id="node1",
        timestamp_us=ts * 1000,
        extraction_timestamp_us=ts * 1000,
        lag_ms=0,
        dsc_id=dsc,
        mut_id=mut_id,
        part_num=1,
        version=2,
        unknown=unknown,
    )


CSV_CURSORS = {
    "realtime-insert.csv": csv_expected(1620787841959, 1620787053904, 1048408, {}),
    "realtime-update.csv": csv_expected(1620787852116, 1620787053904, 1048480, {}),
    # "dscI" is a typo of the doc: not read as dscId
    "realtime-delete.csv": csv_expected(1620787872370, None, 1721, {"dscI": "1620787053905"}),
}


@pytest.mark.parametrize("name", sorted(JSON_CURSORS))
def test_json_cursors(name: str) -> None:
    assert decode_cursor(json_cursor(name)) == JSON_CURSORS[name]


@pytest.mark.parametrize("name", sorted(CSV_CURSORS))
def test_csv_cursors(name: str) -> None:
    assert decode_cursor(csv_cursor(name)) == CSV_CURSORS[name]


def test_every_json_cursor_of_the_spec_is_covered() -> None:
    # The spec text holds the same six JSON cursors as the corpus files.
    spec_cursors = [loads_exact(m) for m in re.findall(r'"cursor":\s*("(?:[^"\\]|\\.)*")', read(SPEC))]
    assert len(spec_cursors) == 6
    assert sorted(spec_cursors) == sorted(json_cursor(name) for name in JSON_CURSORS)
    for text in spec_cursors:
        assert decode_cursor(text) in JSON_CURSORS.values()


def test_cursor_seq_mysql_and_dsc() -> None:
    seqs = {name: cursor_seq(decode_cursor(json_cursor(name))) for name in JSON_CURSORS}
    assert seqs["snapshot-insert.json"] == "00000000000000000010.00000000000000007461.00000000000000000001"
    assert seqs["realtime-insert.json"] == "00000001620787053905.00000000000000326118"
    assert seqs["snapshot-insert.json"] < seqs["snapshot-update.json"] < seqs["snapshot-delete.json"]
    assert seqs["realtime-insert.json"] < seqs["realtime-update.json"] < seqs["realtime-delete.json"]
    csv = {name: cursor_seq(decode_cursor(csv_cursor(name))) for name in CSV_CURSORS}
    assert csv["realtime-insert.csv"] < csv["realtime-update.csv"]
    assert csv["realtime-delete.csv"] is None  # the dscI typo leaves no dscId


def test_cursor_seq_orders_by_log_file_number() -> None:
    late = decode_cursor('{"log":"log-bin.000010","position":4}')
    early = decode_cursor('{"log":"log-bin.9","position":99999,"logSeqNum":7}')
    assert cursor_seq(early) < cursor_seq(late)
    assert cursor_seq(late) == "00000000000000000010.00000000000000000004.00000000000000000000"
    # a log name without a number falls back to dscId/mutId, else None
    assert cursor_seq(decode_cursor('{"log":"binlog","position":4,"dscId":5,"mutId":6}')) == (
        "00000000000000000005.00000000000000000006"
    )
    assert cursor_seq(decode_cursor('{"log":"binlog","position":4}')) is None
    assert cursor_seq(decode_cursor('{"dscId":5}')) is None
    assert cursor_seq(None) is None
    assert log_file_number("mysql-log.000013") == 13
    assert log_file_number(None) is None


def test_cursor_key_spelling_drift() -> None:
    got = decode_cursor(
        '{"EXTRACTOR_ID":3,"node_id":"n","Log_Seq_Num":"4","slave_server_id":9,"dsc_id":1,"mutid":2,'
        '"part_num":5,"V":2,"TimeStamp":10,"extraction_timestamp":15,"nodeID":"dup","extra":[1,{"b":1.50}]}'
    )
    assert got == cursor(
        extractor_id=3,
        node_id="n",
        log_seq_num=4,
        server_id=9,
        dsc_id=1,
        mut_id=2,
        part_num=5,
        version=2,
        timestamp_us=10000,
        extraction_timestamp_us=15000,
        lag_ms=5,
        # a second spelling of a field already read is kept aside, not used
        unknown={"nodeID": "dup", "extra": '[1,{"b":1.50}]'},
    )
    assert decode_cursor('{"serverId":4}')["server_id"] == 4


def test_cursor_null_and_malformed() -> None:
    assert decode_cursor(None) is None
    with pytest.raises(QuarantineError, match="cursor not JSON"):
        decode_cursor('{"extractorId":0,')
    with pytest.raises(QuarantineError, match="not JSON"):
        decode_cursor("")
    with pytest.raises(QuarantineError, match="not a JSON object"):
        decode_cursor("[1, 2]")
    with pytest.raises(QuarantineError, match="position is not an integer"):
        decode_cursor('{"position":"abc"}')
    with pytest.raises(QuarantineError, match="boolean"):
        decode_cursor('{"mutId":true}')
    with pytest.raises(QuarantineError, match="not an integer"):
        decode_cursor('{"timestamp":1.5}')


def test_operationcount() -> None:
    text = loads_exact(read(ARCION / "internal-json" / "realtime-delete.json"))["operationcount"]
    assert decode_operationcount(text) == {
        "insert_count": 6,
        "update_count": 1,
        "delete_count": 1,
        "replace_count": 0,
    }
    assert decode_operationcount('{"insert_count":2,"other":1}') == {
        "insert_count": 2,
        "update_count": None,
        "delete_count": None,
        "replace_count": None,
    }
    assert decode_operationcount(None) is None
    with pytest.raises(QuarantineError, match="operationcount not JSON"):
        decode_operationcount('{"insertCount":')
    with pytest.raises(QuarantineError, match="not a JSON object"):
        decode_operationcount("5")
    with pytest.raises(QuarantineError, match="not an integer"):
        decode_operationcount('{"deleteCount":"x"}')


def test_cursor_batch() -> None:
    texts = [json_cursor("snapshot-insert.json"), None, "{not json", json_cursor("realtime-insert.json")]
    frame = cursor_batch(pd.Series(texts, index=[10, 11, 12, 13]))
    assert list(frame.columns) == list(CURSOR_FIELDS)
    assert list(frame.index) == [10, 11, 12, 13]
    assert str(frame["position"].dtype) == "Int64"
    assert str(frame["timestamp_us"].dtype) == "Int64"
    assert frame.loc[10, "position"] == 7461
    assert frame.loc[10, "log"] == "log-bin.000010"
    assert frame.loc[13, "dsc_id"] == 1620787053905
    assert frame.loc[13, "unknown"] == {"extraction Timestamp": "1620788088431", "partNu m": "1"}
    for row in (11, 12):  # null and malformed input give a null row
        assert frame.loc[row].isna().all()
    assert pd.isna(frame.loc[13, "extraction_timestamp_us"])


def test_operationcount_batch() -> None:
    frame = operationcount_batch(pd.Series(['{"insertCount":6,"updateCount":1}', None, "oops"]))
    assert list(frame.columns) == list(OPERATIONCOUNT_FIELDS)
    assert len(frame) == 3
    assert frame.loc[0, "insert_count"] == 6
    assert frame.loc[0, "update_count"] == 1
    assert pd.isna(frame.loc[0, "delete_count"])
    assert frame.loc[1].isna().all()
    assert frame.loc[2].isna().all()
    assert all(str(frame[c].dtype) == "Int64" for c in OPERATIONCOUNT_FIELDS)


def test_batch_validity_tells_null_and_malformed_from_empty_objects() -> None:
    texts = pd.Series(["{}", None, "{oops", "[1]", '{"mutId":"x"}', '{"v":2}'], index=list("abcdef"))
    frame, valid = cursor_batch_masked(texts)
    assert valid.to_dict() == {"a": True, "b": False, "c": False, "d": False, "e": False, "f": True}
    assert frame.loc["a", "unknown"] == {}  # "{}" is a cursor with every field absent
    assert frame.loc["a"].drop("unknown").isna().all()
    assert frame.loc["f", "version"] == 2
    counts, valid = operationcount_batch_masked(pd.Series(["{}", None, "5", '{"insertCount":1}']))
    assert valid.tolist() == [True, False, False, True]
    assert counts.loc[0].isna().all()  # valid, every count absent
    assert counts.loc[3, "insert_count"] == 1


def test_batch_keeps_bigints_exact_next_to_nulls() -> None:
    # A frame built from row dicts would make these columns float64 (None -> NaN) and
    # round 2**62 + 1; every value above 2**53 must survive exactly.
    big = 2**62 + 1
    frame = cursor_batch(pd.Series([f'{{"position":{big},"dscId":{2**63 - 1}}}', '{"v":2}', None]))
    assert frame.loc[0, "position"] == big
    assert frame.loc[0, "dsc_id"] == 2**63 - 1
    assert pd.isna(frame.loc[1, "position"])
    counts = operationcount_batch(pd.Series([None, f'{{"insertCount":{big}}}']))
    assert counts.loc[1, "insert_count"] == big


def test_batch_value_outside_bigint_is_a_null_row_not_a_batch_failure() -> None:
    # 2**63 is no bigint; a timestamp in ms whose microseconds overflow is none either.
    texts = pd.Series([f'{{"position":{2**63}}}', f'{{"timestamp":{2**63 // 1000 + 1}}}', '{"position":7}'])
    frame, valid = cursor_batch_masked(texts)
    assert valid.tolist() == [False, False, True]
    assert frame.loc[0].isna().all()
    assert frame.loc[1].isna().all()
    assert frame.loc[2, "position"] == 7
    counts, valid = operationcount_batch_masked(pd.Series([f'{{"deleteCount":{-(2**63) - 1}}}']))
    assert valid.tolist() == [False]
