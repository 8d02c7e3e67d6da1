"""Regression tests for hostile records that used to crash a run (the exception escaped
the framing, or a decoded value did not fit its Arrow column in the Spark UDF, which
fails the whole batch) or lost the neighbours of a bad record.

Fixed in ``udfs/framing.py`` (documents nested too deeply, invalid UTF-8 isolated per
document / CSV row, kcat metadata checked) and ``udfs/contract.py`` (lone surrogate
escapes and out-of-range timestamps quarantined, for every decoder).
"""

from __future__ import annotations

import base64
import json

import pytest

from udfs.contract import Change, QuarantineError, loads_exact
from udfs.decode import decode_records
from udfs.framing import split_file

DEEP = b"[" * 100_000 + b"]" * 100_000


def opts(fmt: str, framing: str = "lines", **options: object) -> str:
    tables = {"items": {"key": ["id"], "columns": {"id": "int", "name": "string"}, "column_order": ["id", "name"]}}
    return json.dumps({"format": fmt, "framing": framing, "options": options, "tables": tables}, sort_keys=True)


# ------------------------------------------------------------------------- framing


def test_documents_nested_too_deeply_is_one_quarantined_record():
    content = b'{"a": 1}\n' + DEEP + b'\n{"b": 2}\n'
    records = split_file(content, "documents")
    assert [r.text for r in records[:1]] == ['{"a": 1}']
    assert len(records) == 2
    assert records[1].error == "not JSON: nested too deeply"
    assert records[1].text == (DEEP + b'\n{"b": 2}\n').decode()


def test_documents_invalid_utf8_quarantines_only_its_document():
    content = b'{"a": 1}\n{"b": "x\xffy"}\n{"c": 3}\n'
    records = split_file(content, "documents")
    assert [r.text for r in records] == ['{"a": 1}', None, '{"c": 3}']
    assert records[1].error == "invalid UTF-8 at byte 8"
    assert base64.b64decode(records[1].raw_b64) == b'{"b": "x\xffy"}'


def test_documents_invalid_utf8_outside_a_string_takes_the_rest_of_the_file():
    content = b'{"a": 1}\n\xff{"b": 2}\n'
    records = split_file(content, "documents")
    assert records[0].text == '{"a": 1}'
    assert records[1].text is None and records[1].error.startswith("invalid UTF-8 at byte 0; not JSON")
    assert base64.b64decode(records[1].raw_b64) == b'\xff{"b": 2}\n'


def test_csv_invalid_utf8_quarantines_only_its_row():
    records = split_file(b'\xef\xbb\xbf1,"a"\r\n2,"b\xff"\r\n3,"c"\r\n', "csv")
    assert [r.text for r in records] == ['1,"a"', None, '3,"c"']
    assert records[1].error == "invalid UTF-8 at byte 4"
    assert base64.b64decode(records[1].raw_b64) == b'2,"b\xff"'


def test_csv_header_with_invalid_utf8_is_text():
    records = split_file(b'id,n\xffame\n1,"a"\n', "csv", {"header": True})
    assert records[0].header == ["id", "n\ufffdame"] and records[0].text == '1,"a"'


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        (b'{"topic":5,"partition":0,"offset":1,"key":null,"payload":"{}"}', "topic is not text"),
        (b'{"topic":"t","partition":2147483648,"offset":1,"key":null,"payload":"{}"}', "integer out of range"),
        (b'{"topic":"t","partition":0,"offset":9223372036854775808,"key":null,"payload":"{}"}', "out of range"),
        (b'{"topic":"t","partition":0,"offset":1,"ts":-9223372036854775809,"payload":"{}"}', "out of range"),
        (b'{"topic":"t","partition":0,"offset":1,"key":null,"payload":"\\ud800"}', "surrogates not allowed"),
        (b'{"topic":"t","partition":0,"offset":1,"key":"\\udfff","payload":null}', "surrogates not allowed"),
        (b'{"topic":"\\ud800x","partition":0,"offset":1,"key":null,"payload":null}', "surrogates not allowed"),
        (b'{"topic":"t","key":null,"payload":' + DEEP + b"}", "nested too deeply"),
    ],
)
def test_kcat_metadata_no_column_holds_is_quarantined(line, reason):
    good = b'{"topic":"t","partition":2147483647,"offset":9223372036854775807,"key":"k","payload":"v"}'
    records = split_file(line + b"\n" + good + b"\n", "kcat")
    assert records[0].text is None and records[0].error.startswith("not a kcat -J line")
    assert reason in records[0].error
    assert base64.b64decode(records[0].raw_b64) == line
    assert (records[1].text, records[1].kafka_partition, records[1].kafka_offset) == ("v", 2**31 - 1, 2**63 - 1)


# ------------------------------------------------------------------------- contract


@pytest.mark.parametrize("text", ['{"a": "\\ud800"}', '{"\\udc00": 1}', '["x\\udfffy"]', '{"a": "\\udc00\\ud800"}'])
def test_loads_exact_rejects_lone_surrogate_escapes(text):
    with pytest.raises(QuarantineError, match="surrogate"):
        loads_exact(text)


def test_loads_exact_keeps_surrogate_pairs_and_escaped_backslashes():
    assert loads_exact('{"a": "\\ud83d\\ude00"}') == {"a": "😀"}
    assert loads_exact('{"a": "\\\\ud800"}') == {"a": "\\ud800"}


@pytest.mark.parametrize("field", ["commit_ts_us", "capture_ts_us"])
@pytest.mark.parametrize("value", [2**63, -(2**63) - 1, 10**30])
def test_change_rejects_timestamps_beyond_bigint(field, value):
    with pytest.raises(QuarantineError, match="out of range"):
        Change(op="insert", source_table="t", **{field: value})
    Change(op="insert", source_table="t", **{field: 2**63 - 1})


@pytest.mark.parametrize(
    ("fmt", "framing", "text"),
    [
        ("debezium_json", "lines", '{"after":{"id":1},"source":{"table":"items","db":"\\ud800"},"op":"c"}'),
        ("debezium_json", "lines", '{"after":{"id":1},"source":{"table":"items","ts_ms":10000000000000000},"op":"c"}'),
        (
            "cdl_json",
            "lines",
            '{"OPERATION":"INSERT","TABLE_NAME":"items","TIMESTAMP":10000000000000000,"data":{"id":1}}',
        ),
        ("lindorm_json", "lines", '{"payload":{"op":"c","after":{"id":1},"source":{"table":"items","ts_ms":2e3}}}'),
        (
            "lindorm_json",
            "lines",
            '{"payload":{"op":"c","after":{"id":1},"source":{"table":"items","ts_ms":10000000000000000}}}',
        ),
        (
            "arcion_kafka_json",
            "kcat",
            '{"op":"c","before":{},"after":{"id":1},"source":{"table":"items","ts_ms":10000000000000000}}',
        ),
        (
            "arcion_internal_json",
            "documents",
            '{"tableName":{"name":"items"},"opType":"I","after":{"id":"1"},"cursor":"{\\"timestamp\\":1e30}"}',
        ),
        (
            "arcion_internal_json",
            "documents",
            '{"tableName":{"name":"items"},"opType":"I","after":{"id":"1"},'
            '"cursor":"{\\"timestamp\\":10000000000000000,\\"dscId\\":1,\\"mutId\\":1}"}',
        ),
    ],
)
def test_decoders_quarantine_what_no_column_holds(fmt, framing, text):
    [result] = decode_records(opts(fmt, framing), [text])
    assert result["status"] == "quarantined" and result["reason"]
