"""DTS Shareplex JSON (``dts_shareplex_json``): the spec's three examples
(``specs/alibaba-dts-kafka-formats.txt``) and the cases around them."""

from __future__ import annotations

import json

import pytest

from udfs.contract import Change, QuarantineError, Record, SkipRecord, seq_of
from udfs.decode import decode_records
from udfs.formats import decoder_class
from udfs.formats.dts_shareplex_json import DtsShareplexJsonDecoder, parse_time

# The spec's examples as printed, minus the trailing commas and "..." of the abbreviated ones.
SPEC_INSERT = """{
    "meta": {
        "time": "2017-06-16T14:24:34",
        "userid": 84,
        "op": "ins",
          "scn": "14589063118712",
          "rowid": "AAATGpAAIAAItcIAAA",
        "trans": "7.0.411499",
        "seq": 1,
        "size": 11,
        "table": "CL_BIZ1.MIO_LOG",
          "idx": "1/11",
        "posttime": "2017-06-16T14:33:52"
    },
    "data": {
        "MIO_LOG_ID": "32539737"
     }
}"""
SPEC_UPDATE = """{
    "meta": {
        "time": "2017-06-16T15:38:13",
        "userid": 84,
        "op": "upd",
        "table": "CL_BIZ1.MIO_LOG"
    },
    "data": {
        "CNTR_NO": "1171201606"
    },
    "key": {
        "MIO_LOG_ID": "32537893",
        "PLNMIO_REC_ID": "31557806",
        "POL_CODE": null,
        "CNTR_TYPE": null,
        "CNTR_NO": "1171201606syui26"
    }
}"""
SPEC_DELETE = """{
    "meta": {
        "time": "2017-06-16T15:51:35",
        "userid": 84,
        "op": "del"
     },
    "data": {
        "MIO_LOG_ID": "32539739",
        "PLNMIO_REC_ID": "31557806",
        "POL_CODE": null,
        "CNTR_TYPE": null,
        "CG_NO": null
     }
}"""
TABLES = {"cl_biz1.mio_log": {"key": ["mio_log_id"]}}


def us(text: str) -> int:
    return parse_time(text, "time")


def decode(text: str | dict | None) -> list[Change]:
    if isinstance(text, dict):
        text = json.dumps(text)
    return DtsShareplexJsonDecoder({}).decode(Record(text=text))


def normalized(text: str | dict, tables: dict | None = None) -> dict:
    if isinstance(text, dict):
        text = json.dumps(text)
    opts = json.dumps({"format": "dts_shareplex_json", "options": {}, "tables": TABLES if tables is None else tables})
    (result,) = decode_records(opts, [text])
    return result


def message(op: str, data=None, key=None, **meta) -> dict:
    base = {"time": "2024-01-02T03:04:05", "op": op, "scn": "100", "trans": "7.0.1", "seq": 1, "size": 1}
    base["table"] = "CL_BIZ1.MIO_LOG"
    base.update(meta)
    msg: dict = {"meta": base}
    if data is not None:
        msg["data"] = data
    if key is not None:
        msg["key"] = key
    return msg


def test_registered() -> None:
    assert decoder_class("dts_shareplex_json") is DtsShareplexJsonDecoder
    assert not DtsShareplexJsonDecoder.carries_key("lines")


def test_spec_insert() -> None:
    assert decode(SPEC_INSERT) == [
        Change(
            op="insert",
            source_table="MIO_LOG",
            source_schema="CL_BIZ1",
            after={"MIO_LOG_ID": "32539737"},
            seq=seq_of(14589063118712, 7, 0, 411499, 1),
            commit_ts_us=1497623074 * 1_000_000,
            capture_ts_us=1497623632 * 1_000_000,
            tx_id="7.0.411499",
            extras={
                "scn": "14589063118712",
                "rowid": "AAATGpAAIAAItcIAAA",
                "trans": "7.0.411499",
                "seq": "1",
                "size": "11",
                "idx": "1/11",
                "userid": "84",
                "time": "2017-06-16T14:24:34",
                "posttime": "2017-06-16T14:33:52",
            },
        )
    ]
    (row,) = normalized(SPEC_INSERT)["changes"]
    assert (row["table_id"], row["key"], row["after"]) == (
        "cl_biz1.mio_log",
        {"mio_log_id": "32539737"},
        {"mio_log_id": "32539737"},
    )


def test_spec_update_data_is_changed_columns_key_is_old_row() -> None:
    (change,) = decode(SPEC_UPDATE)
    old = {
        "MIO_LOG_ID": "32537893",
        "PLNMIO_REC_ID": "31557806",
        "POL_CODE": None,
        "CNTR_TYPE": None,
        "CNTR_NO": "1171201606syui26",
    }
    assert change.op == "update"
    assert change.before == old
    assert change.after == {**old, "CNTR_NO": "1171201606"}
    assert change.seq is None  # the abbreviated sample has no scn
    assert change.commit_ts_us == us("2017-06-16T15:38:13Z")
    (row,) = normalized(SPEC_UPDATE)["changes"]
    assert row["key"] == {"mio_log_id": "32537893"}
    assert row["after"]["cntr_no"] == "1171201606" and row["before"]["cntr_no"] == "1171201606syui26"


def test_update_provides_only_what_the_message_names() -> None:
    (change,) = decode(message("upd", data={"B": "2"}, key={"ID": "1"}))
    assert change.after == {"ID": "1", "B": "2"}  # C, named nowhere, is not provided
    assert change.after_cols is None and change.before == {"ID": "1"}


def test_update_of_the_key_moves_the_row() -> None:
    result = normalized(message("upd", data={"MIO_LOG_ID": "2"}, key={"MIO_LOG_ID": "1", "X": "x"}))
    assert [(r["op"], r["key"]) for r in result["changes"]] == [
        ("delete", {"mio_log_id": "1"}),
        ("insert", {"mio_log_id": "2"}),
    ]
    assert result["changes"][1]["after"] == {"mio_log_id": "2", "x": "x"}


def test_spec_delete_without_table_is_quarantined() -> None:
    # the printed delete sample is abbreviated: it names no table
    with pytest.raises(QuarantineError, match="without meta.table"):
        decode(SPEC_DELETE)
    doc = json.loads(SPEC_DELETE)
    doc["meta"]["table"] = "CL_BIZ1.MIO_LOG"
    (change,) = decode(doc)
    assert change.op == "delete" and change.after is None
    assert change.before == doc["data"]
    (row,) = normalized(doc)["changes"]
    assert row["key"] == {"mio_log_id": "32539739"}


def test_delete_with_key_only() -> None:
    (change,) = decode(message("DELETE", key={"MIO_LOG_ID": "5"}))
    assert change.before == {"MIO_LOG_ID": "5"}


@pytest.mark.parametrize(
    ("op", "expected"),
    [
        ("ins", "insert"),
        ("INSERT", "insert"),
        ("Insert", "insert"),
        ("upd", "update"),
        ("UPDATE", "update"),
        ("UPDATE AFTER", "update"),
        ("update_after", "update"),
        ("del", "delete"),
        ("DELETE", "delete"),
        ("TRUNCATE", "truncate"),
    ],
)
def test_both_op_spellings(op: str, expected: str) -> None:
    (change,) = decode(message(op, data={"MIO_LOG_ID": "1"}, key={"MIO_LOG_ID": "1"}))
    assert change.op == expected


def test_update_before_is_skipped_and_update_after_applies() -> None:
    with pytest.raises(SkipRecord, match="update_before"):
        decode(message("UPDATE BEFORE", data={"MIO_LOG_ID": "1", "A": "old"}, seq=1, size=2))
    (after,) = decode(message("UPDATE AFTER", data={"A": "new"}, key={"MIO_LOG_ID": "1"}, seq=2, size=2))
    assert after.after == {"MIO_LOG_ID": "1", "A": "new"}


def test_truncate() -> None:
    (change,) = decode(message("TRUNCATE"))
    assert (change.op, change.source_schema, change.source_table) == ("truncate", "CL_BIZ1", "MIO_LOG")
    (row,) = normalized(message("TRUNCATE"))["changes"]
    assert row["op"] == "truncate" and row["key"] is None


def test_drop_column_is_ddl() -> None:
    with pytest.raises(SkipRecord, match="ddl") as info:
        decode(message("DROP COLUMN", data={"OLD_COL": None}))
    ddl = info.value.ddl
    assert (ddl.sql, ddl.source_schema, ddl.source_table) == ("DROP COLUMN OLD_COL", "CL_BIZ1", "MIO_LOG")
    assert normalized(message("DROP COLUMN"))["ddl"]["sql"] == "DROP COLUMN"


def test_order_scn_then_trans_then_seq() -> None:
    def seq(**meta) -> str:
        return decode(message("ins", data={"MIO_LOG_ID": "1"}, **meta))[0].seq

    assert seq(scn="99") < seq(scn="100")  # numeric, not text order
    assert seq(scn="100", trans="7.0.9") < seq(scn="100", trans="7.0.10")
    assert seq(scn="100", trans="7.0.1", seq=2) < seq(scn="100", trans="7.0.1", seq=10)
    assert seq(scn=100, trans="7.0.1", seq=None, idx="3/11") == seq_of(100, 7, 0, 1, 3)
    assert seq(trans="8") == seq_of(100, 8, 0, 0, 1)


def test_times() -> None:
    assert parse_time("1970-01-01T00:00:01", "time") == 1_000_000
    assert parse_time("1970-01-01T00:00:01Z", "time") == 1_000_000
    assert parse_time("1970-01-01T01:00:01+01:00", "time") == 1_000_000
    assert parse_time("1970-01-01 00:00:01.5", "time") == 1_500_000
    assert parse_time(None, "time") is None


def test_tombstones() -> None:
    for text in (None, "", "null"):
        with pytest.raises(SkipRecord, match="tombstone"):
            decode(text)


@pytest.mark.parametrize(
    ("msg", "reason"),
    [
        ("{", "not JSON"),
        ("[]", "not an object"),
        ({"data": {}}, "without a meta object"),
        ({"meta": {"table": "A.B"}}, "without meta.op"),
        (message("merge", data={"A": "1"}), "unknown Shareplex op"),
        (message("ins"), "without data"),
        (message("upd", key={"A": "1"}), "without data"),
        (message("del"), "without data or key"),
        (message("ins", data=["x"]), "data is not an object"),
        (message("upd", data={"A": "1"}, key="k"), "key is not an object"),
        (message("ins", data={"A": "1"}, table=5), "meta.table is not a string"),
        (message("ins", data={"A": "1"}, table="A."), "OWNER.TABLE expected"),
        (message("ins", data={"A": "1"}, time="16/06/2017"), "bad Shareplex time"),
        (message("ins", data={"A": "1"}, time="2017-13-40T00:00:00"), "bad Shareplex time"),
        (message("ins", data={"A": "1"}, posttime=5), "bad Shareplex posttime"),
        (message("ins", data={"A": "1"}, scn="0x1F"), "bad Shareplex scn"),
        (message("ins", data={"A": "1"}, seq=-1), "bad Shareplex seq"),
        (message("ins", data={"A": "1"}, trans="a.b.c"), "bad Shareplex trans"),
        (message("ins", data={"A": "1"}, idx="1 of 11"), "bad Shareplex idx"),
    ],
)
def test_malformed_is_quarantined_with_reason(msg, reason: str) -> None:
    with pytest.raises(QuarantineError, match=reason):
        decode(msg)


def test_repeated_time_and_trans_texts_decode_alike_each_time() -> None:
    """``time``, ``posttime`` and ``trans`` texts are parsed once and remembered (a
    stream repeats them); a remembered text must give every message the same answer,
    a bad one must be quarantined every time, and a non-text value is not confused
    with the text it prints as."""
    for _ in range(3):
        with pytest.raises(QuarantineError, match="bad Shareplex time: '16/06/2017'"):
            decode(message("ins", data={"A": "1"}, time="16/06/2017"))
        with pytest.raises(QuarantineError, match="bad Shareplex posttime: '16/06/2017'"):
            decode(message("ins", data={"A": "1"}, posttime="16/06/2017"))
        with pytest.raises(QuarantineError, match=r"bad Shareplex trans: 'a\.b\.c'"):
            decode(message("ins", data={"A": "1"}, trans="a.b.c"))
        (change,) = decode(message("ins", data={"A": "1"}, time="2024-01-02T03:04:05Z", trans="7.0.1"))
        assert change.commit_ts_us == 1_704_164_645_000_000
        assert change.seq == seq_of(100, 7, 0, 1, 1)
    # the number 7 and the text "7" are the same transaction; the number 7.5 is the text "7.5"
    assert decode(message("ins", data={"A": "1"}, trans=7))[0].seq == seq_of(100, 7, 0, 0, 1)
    assert decode(message("ins", data={"A": "1"}, trans="7"))[0].seq == seq_of(100, 7, 0, 0, 1)
    assert decode('{"meta": {"op": "ins", "scn": "100", "trans": 7.5, "seq": 1, "table": "A.B"}, "data": {"A": "1"}}')[
        0
    ].seq == seq_of(100, 7, 5, 0, 1)
    # a time that is not text is quarantined with its own value, however its text was seen
    with pytest.raises(QuarantineError, match="bad Shareplex time: 20240102"):
        decode(message("ins", data={"A": "1"}, time=20240102))
