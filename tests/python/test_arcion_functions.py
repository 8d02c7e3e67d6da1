"""The SQL functions ``arcion_cursor(text)`` and ``arcion_operationcount(text)``, called
from Spark SQL on every cursor / operationcount of the two Arcion specs.

The cursor and operationcount texts below are copied from
``../shared/specs/arcion-internal-cdc-format-s3.txt`` (six JSON samples, three CSV
samples with the doc's ``/`` line wraps joined and ``""`` unquoted);
:func:`test_literals_are_every_cursor_of_the_specs` checks the copies against the spec
text. The Kafka spec (``arcion-json-cdc-format-kafka.txt``) has no cursor or
operationcount: its position is Debezium-like ``source.file``/``pos``.
"""

from __future__ import annotations

import json
import re

import pyarrow as pa
import pytest
from conftest import SPECS

from udfs.spark_udfs import (
    ARCION_CURSOR_DDL,
    ARCION_OPERATIONCOUNT_DDL,
    arcion_cursor_array,
    arcion_operationcount_array,
)

# --------------------------------------------------------------------------- cursors

SNAPSHOT_INSERT = (
    '{"extractorId":0,"timestamp":1657516903000,"extractionTimestamp":1657516904088,'
    '"log":"log-bin.000010","position":7461,"logSeqNum":1,"slaveServerId":1,"v":2}'
)
SNAPSHOT_UPDATE = (
    '{"extractorId":0,"timestamp":1657516946000,"extractionTimestamp":1657516947142,'
    '"log":"log-bin.000010","position":9149,"logSeqNum":1,"slaveServerId":1,"v":2}'
)
SNAPSHOT_DELETE = (
    '{"extractorId":0,"timestamp":1657516954000,"extractionTimestamp":1657516955151,'
    '"log":"log-bin.000010","position":9872,"logSeqNum":1,"slaveServerId":1,"v":2}'
)
# The realtime JSON samples carry the doc's line-wrapping typos "extraction Timestamp",
# "partNu m" and "partN um": they are unknown keys, never read as the real fields.
REALTIME_INSERT = (
    '{"extractorId":0,"nodeID":"node1","timestamp":1620788088431,"extraction Timestamp":1620788088431,'
    '"dscId":1620787053905,"mutId":326118,"partNu m":1,"v":2}'
)
REALTIME_UPDATE = (
    '{"extractorId":0,"nodeID":"node1","timestamp":1620788090478,"extraction Timestamp":1620788090478,'
    '"dscId":1620787053905,"mutId":326190,"partN um":1,"v":2}'
)
REALTIME_DELETE = (
    '{"extractorId":0,"nodeID":"node1","timestamp":1620788092539,"extraction Timestamp":1620788092539,'
    '"dscId":1620787053905,"mutId":326250,"partN um":1,"v":2}'
)
CSV_INSERT = (
    '{"extractorId":0,"nodeID":"node1","timestamp":1620787841959,"extractionTimestamp":1620787841959,'
    '"dscId":1620787053904,"mutId":1048408,"partNum":1,"v":2}'
)
CSV_UPDATE = (
    '{"extractorId":0,"nodeID":"node1","timestamp":1620787852116,"extractionTimestamp":1620787852116,'
    '"dscId":1620787053904,"mutId":1048480,"partNum":1,"v":2}'
)
# "dscI": the doc's typo of dscId, kept in `unknown`.
CSV_DELETE = (
    '{"extractorId":0,"nodeID":"node1","timestamp":1620787872370,"extractionTimestamp":1620787872370,'
    '"dscI":1620787053905,"mutId":1721,"partNum":1,"v":2}'
)

NULL_CURSOR = {
    "extractor_id": None,
    "node_id": None,
    "timestamp": None,
    "extraction_timestamp": None,
    "lag_ms": None,
    "log": None,
    "position": None,
    "log_seq_num": None,
    "server_id": None,
    "dsc_id": None,
    "mut_id": None,
    "part_num": None,
    "version": None,
    "unknown": {},
}


def mysql(timestamp: str, extraction: str, lag_ms: int, position: int) -> dict[str, object]:
    return {
        **NULL_CURSOR,
        "extractor_id": 0,
        "timestamp": timestamp,
        "extraction_timestamp": extraction,
        "lag_ms": lag_ms,
        "log": "log-bin.000010",
        "position": position,
        "log_seq_num": 1,
        "server_id": 1,
        "version": 2,
    }


def node(timestamp: str, extraction: str | None, dsc_id: int | None, mut_id: int, **rest: object) -> dict[str, object]:
    return {
        **NULL_CURSOR,
        "extractor_id": 0,
        "node_id": "node1",
        "timestamp": timestamp,
        "extraction_timestamp": extraction,
        "lag_ms": None if extraction is None else 0,
        "dsc_id": dsc_id,
        "mut_id": mut_id,
        "version": 2,
        **rest,
    }


#: name -> (cursor text, expected struct with timestamps as UTC text to the millisecond)
CURSORS: dict[str, tuple[str, dict[str, object]]] = {
    "json snapshot insert": (
        SNAPSHOT_INSERT,
        mysql("2022-07-11 05:21:43.000", "2022-07-11 05:21:44.088", 1088, 7461),
    ),
    "json snapshot update": (
        SNAPSHOT_UPDATE,
        mysql("2022-07-11 05:22:26.000", "2022-07-11 05:22:27.142", 1142, 9149),
    ),
    "json snapshot delete": (
        SNAPSHOT_DELETE,
        mysql("2022-07-11 05:22:34.000", "2022-07-11 05:22:35.151", 1151, 9872),
    ),
    "json realtime insert": (
        REALTIME_INSERT,
        node(
            "2021-05-12 02:54:48.431",
            None,
            1620787053905,
            326118,
            unknown={"extraction Timestamp": "1620788088431", "partNu m": "1"},
        ),
    ),
    "json realtime update": (
        REALTIME_UPDATE,
        node(
            "2021-05-12 02:54:50.478",
            None,
            1620787053905,
            326190,
            unknown={"extraction Timestamp": "1620788090478", "partN um": "1"},
        ),
    ),
    "json realtime delete": (
        REALTIME_DELETE,
        node(
            "2021-05-12 02:54:52.539",
            None,
            1620787053905,
            326250,
            unknown={"extraction Timestamp": "1620788092539", "partN um": "1"},
        ),
    ),
    "csv realtime insert": (
        CSV_INSERT,
        node("2021-05-12 02:50:41.959", "2021-05-12 02:50:41.959", 1620787053904, 1048408, part_num=1),
    ),
    "csv realtime update": (
        CSV_UPDATE,
        node("2021-05-12 02:50:52.116", "2021-05-12 02:50:52.116", 1620787053904, 1048480, part_num=1),
    ),
    "csv realtime delete": (
        CSV_DELETE,
        node(
            "2021-05-12 02:51:12.370",
            "2021-05-12 02:51:12.370",
            None,
            1721,
            part_num=1,
            unknown={"dscI": "1620787053905"},
        ),
    ),
}

# ------------------------------------------------------------------- operationcounts


def counts(insert: int, update: int, delete: int, replace: int) -> dict[str, int]:
    return {"insert_count": insert, "update_count": update, "delete_count": delete, "replace_count": replace}


#: name -> (operationcount text as in the spec, expected counts)
OPERATIONCOUNTS: dict[str, tuple[str, dict[str, int]]] = {
    "json snapshot insert": (
        '{"insertCount":30,"updateCount":0,"deleteCount":0,"replaceCount":0}',
        counts(30, 0, 0, 0),
    ),
    "json snapshot update": (
        '{"insertCount":30,"updateCount":1,"deleteCount":0,"replaceCount":0}',
        counts(30, 1, 0, 0),
    ),
    "json snapshot delete": (
        '{"insertCount":30,"updateCount":1,"deleteCount":1,"replaceCount":0}',
        counts(30, 1, 1, 0),
    ),
    "realtime insert": ('{"insertCount":6,"updateCount":0,"deleteCount":0,"replaceCount":0}', counts(6, 0, 0, 0)),
    "realtime update": ('{"insertCount":6,"updateCount":1,"deleteCount":0,"replaceCount":0}', counts(6, 1, 0, 0)),
    "realtime delete": ('{"insertCount":6,"updateCount":1,"deleteCount":1,"replaceCount":0}', counts(6, 1, 1, 0)),
}

MALFORMED = {
    "truncated": '{"extractorId":0,',
    "empty": "",
    "array": "[1, 2]",
    "number": "5",
    "not an integer": '{"position":"abc","insertCount":"abc"}',
    "boolean": '{"mutId":true,"deleteCount":true}',
    "fraction": '{"timestamp":1.5,"updateCount":1.5}',
    "beyond bigint": '{"position":9223372036854775808,"insertCount":9223372036854775808}',
}


def _spec(name: str) -> str:
    path = SPECS / name
    assert path.is_file(), f"spec {path} is missing: ../shared/specs must be beside the repository"
    return path.read_text(encoding="utf-8")


def test_literals_are_every_cursor_of_the_specs() -> None:
    s3 = _spec("arcion-internal-cdc-format-s3.txt")
    json_cursors = [json.loads(m) for m in re.findall(r'"cursor":\s*("(?:[^"\\]|\\.)*")', s3)]
    json_counts = [json.loads(m) for m in re.findall(r'"operationcount":\s*("(?:[^"\\]|\\.)*")', s3)]
    # The CSV samples: the doc wraps each row with a trailing "/"; join, then read the
    # two quoted JSON fields after the op.
    csv_rows = re.findall(r',[IUD],"((?:[^"]|"")*)","((?:[^"]|"")*)"', s3.replace("/\n", ""))
    csv_cursors = [c.replace('""', '"') for c, _ in csv_rows]
    csv_counts = [o.replace('""', '"') for _, o in csv_rows]
    assert (len(json_cursors), len(csv_cursors)) == (6, 3)
    assert sorted(json_cursors + csv_cursors) == sorted(text for text, _ in CURSORS.values())
    assert sorted(set(json_counts + csv_counts)) == sorted(text for text, _ in OPERATIONCOUNTS.values())
    kafka = _spec("arcion-json-cdc-format-kafka.txt")
    assert not re.search(r"cursor|operationcount|extractorId", kafka, re.IGNORECASE)


def _cursor_rows(spark, texts: dict[str, str | None]) -> dict[str, dict[str, object]]:
    """``arcion_cursor`` over ``texts`` in one SQL query; timestamps as UTC text with ms."""
    assert spark.conf.get("spark.sql.session.timeZone") == "UTC"
    spark.createDataFrame(list(texts.items()), "name string, text string").createOrReplaceTempView("cursor_texts")
    rows = spark.sql(
        """
        select
            name,
            c,
            date_format(c.timestamp, 'yyyy-MM-dd HH:mm:ss.SSS') as timestamp_text,
            date_format(c.extraction_timestamp, 'yyyy-MM-dd HH:mm:ss.SSS') as extraction_timestamp_text,
            unix_millis(c.timestamp) as timestamp_ms,
            unix_millis(c.extraction_timestamp) as extraction_timestamp_ms
        from (select name, arcion_cursor(text) as c from cursor_texts)
        """
    ).collect()
    out: dict[str, dict[str, object]] = {}
    for row in rows:
        if row.c is None:
            out[row.name] = None
            continue
        value = row.c.asDict()
        value["timestamp"] = row.timestamp_text
        value["extraction_timestamp"] = row.extraction_timestamp_text
        # the millisecond epoch survives exactly
        assert value["lag_ms"] is None or value["lag_ms"] == row.extraction_timestamp_ms - row.timestamp_ms
        out[row.name] = value
    return out


def test_arcion_cursor_schema(spark) -> None:
    from pyspark.sql.types import _parse_datatype_string

    df = spark.sql("select arcion_cursor('{}') as c, arcion_operationcount('{}') as o")
    assert df.schema["c"].dataType == _parse_datatype_string(ARCION_CURSOR_DDL)
    assert df.schema["o"].dataType == _parse_datatype_string(ARCION_OPERATIONCOUNT_DDL)
    types = spark.sql(
        """
        select
            typeof(c.extractor_id), typeof(c.node_id), typeof(c.timestamp), typeof(c.extraction_timestamp),
            typeof(c.lag_ms), typeof(c.log), typeof(c.position), typeof(c.log_seq_num), typeof(c.server_id),
            typeof(c.dsc_id), typeof(c.mut_id), typeof(c.part_num), typeof(c.version), typeof(c.unknown),
            typeof(o.insert_count), typeof(o.update_count), typeof(o.delete_count), typeof(o.replace_count)
        from (select arcion_cursor('{}') as c, arcion_operationcount('{}') as o)
        """
    ).collect()[0]
    assert list(types) == [
        "bigint",
        "string",
        "timestamp",
        "timestamp",
        "bigint",
        "string",
        "bigint",
        "bigint",
        "bigint",
        "bigint",
        "bigint",
        "bigint",
        "bigint",
        "map<string,string>",
        "bigint",
        "bigint",
        "bigint",
        "bigint",
    ]


def test_arcion_cursor_every_spec_cursor(spark) -> None:
    got = _cursor_rows(spark, {name: text for name, (text, _) in CURSORS.items()})
    for name, (_, expected) in CURSORS.items():
        assert got[name] == expected, name


def test_arcion_cursor_typos_do_not_feed_the_real_fields(spark) -> None:
    row = spark.sql(
        """
        select
            c.extraction_timestamp is null as no_extraction,
            c.lag_ms is null as no_lag,
            c.part_num is null as no_part,
            c.unknown['extraction Timestamp'] as typo_extraction,
            c.unknown['partNu m'] as typo_part,
            unix_millis(c.timestamp) as ts
        from (select arcion_cursor(:text) as c)
        """,
        args={"text": REALTIME_INSERT},
    ).collect()[0]
    assert row.asDict() == {
        "no_extraction": True,
        "no_lag": True,
        "no_part": True,
        "typo_extraction": "1620788088431",
        "typo_part": "1",
        "ts": 1620788088431,
    }


def test_arcion_cursor_null_and_malformed_give_a_null_struct(spark) -> None:
    texts: dict[str, str | None] = {"null": None, **MALFORMED, "empty object": "{}"}
    got = _cursor_rows(spark, texts)
    assert got.pop("empty object") == NULL_CURSOR  # valid JSON, every field absent: not null
    assert got == dict.fromkeys(texts.keys() - {"empty object"})
    row = spark.sql(
        "select arcion_cursor(cast(null as string)) is null as n, arcion_cursor('{oops') is null as m"
    ).collect()[0]
    assert (row.n, row.m) == (True, True)


def test_arcion_cursor_bigints_exact(spark) -> None:
    text = f'{{"position":{2**63 - 1},"dscId":{2**62 + 1},"mutId":{-(2**63)},"timestamp":-1}}'
    c = spark.sql("select arcion_cursor(:text) as c", args={"text": text}).collect()[0].c
    assert (c.position, c.dsc_id, c.mut_id) == (2**63 - 1, 2**62 + 1, -(2**63))
    ts = spark.sql("select unix_micros(arcion_cursor(:text).timestamp) as us", args={"text": text}).collect()[0]
    assert ts.us == -1000


def test_arcion_operationcount_every_spec_count(spark) -> None:
    cases: dict[str, str | None] = {name: text for name, (text, _) in OPERATIONCOUNTS.items()}
    cases |= {"null": None, **MALFORMED, "empty object": "{}", "partial": '{"insert_count":2,"other":1}'}
    # (the total adds null before it could overflow: ANSI mode would fail the query)
    cases["max"] = f'{{"insertCount":{2**63 - 1},"replaceCount":"{2**62 + 1}"}}'
    spark.createDataFrame(list(cases.items()), "name string, text string").createOrReplaceTempView("count_texts")
    rows = spark.sql(
        """
        select
            name,
            o,
            o.insert_count + o.update_count + o.delete_count + o.replace_count as total
        from (select name, arcion_operationcount(text) as o from count_texts)
        """
    ).collect()
    got = {r.name: (None if r.o is None else r.o.asDict(), r.total) for r in rows}
    for name, (_, expected) in OPERATIONCOUNTS.items():
        assert got.pop(name) == (expected, sum(expected.values())), name
    nothing = dict.fromkeys(["insert_count", "update_count", "delete_count", "replace_count"])
    assert got.pop("empty object") == (nothing, None)
    assert got.pop("partial") == ({**nothing, "insert_count": 2}, None)
    assert got.pop("max") == ({**nothing, "insert_count": 2**63 - 1, "replace_count": 2**62 + 1}, None)
    # null and malformed (every MALFORMED text) give a null struct
    assert got == dict.fromkeys(["null", *MALFORMED], (None, None))


def test_functions_over_several_arrow_batches(spark) -> None:
    # 5000 rows cross the session's 2000-row Arrow batches; nulls stay on their rows.
    row = spark.sql(
        """
        select
            count(*) as n,
            count(c) as cursors,
            sum(c.mut_id) as mut_sum,
            count(o) as counts,
            sum(o.insert_count) as insert_sum
        from (
            select
                arcion_cursor(case when id % 3 = 0 then null else concat('{"mutId":', id, '}') end) as c,
                arcion_operationcount(case when id % 5 = 0 then 'x' else concat('{"insertCount":', id, '}') end)
                    as o
            from range(5000)
        )
        """
    ).collect()[0]
    keep3 = [i for i in range(5000) if i % 3]
    keep5 = [i for i in range(5000) if i % 5]
    assert row.asDict() == {
        "n": 5000,
        "cursors": len(keep3),
        "mut_sum": sum(keep3),
        "counts": len(keep5),
        "insert_sum": sum(keep5),
    }


@pytest.mark.parametrize(
    ("function", "text"),
    [(arcion_cursor_array, CSV_DELETE), (arcion_operationcount_array, OPERATIONCOUNTS["realtime delete"][0])],
)
def test_pure_batch_functions_without_spark(function, text) -> None:
    """The pure Arrow functions behind the UDFs: null and malformed rows are null structs."""
    out = function(pa.array([text, None, "{bad"], type=pa.string()))
    assert isinstance(out, pa.StructArray)
    assert out.is_null().to_pylist() == [False, True, True]
    first = out[0].as_py()
    if function is arcion_cursor_array:
        assert first["mut_id"] == 1721
        assert first["unknown"] == [("dscI", "1620787053905")]
        assert first["timestamp"].isoformat() == "2021-05-12T02:51:12.370000+00:00"
    else:
        assert first == counts(6, 1, 1, 0)
