"""Kafka Connect / Debezium logical types through the real pipeline (Spark + dbt).

One table, ``logical_types``, with one column per logical type, landed as Debezium
``schema`` + ``payload`` envelopes (PostgreSQL connector) and NO ``columns:`` types in
``cdc.yml``: every mart type comes from the envelope's schema. One pipeline run; the
tests check

* the changelog ``after`` text (the exact canonical text of every value),
* ``col_types`` (the Spark type the logical type maps to),
* the mart view's column types,
* ``cdc export`` (``udfs.export.export_lines``, the code the command runs): decimals as
  strings with every digit, timestamps ISO-8601 UTC ending in ``Z`` with microseconds,
  dates ``YYYY-MM-DD``, bytes base64,
* and a row of NULLs (NULL for every logical type).

NanoTimestamp (and a ZonedTimestamp with 9 fractional digits): the changelog text keeps
all nine digits; a Spark ``timestamp`` holds microseconds, so the mart (and the export)
drops the digits beyond the sixth (truncated toward the past, never rounded:
``...59.999999999`` becomes ``...59.999999``).
"""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest
import yaml

from udfs.export import export_lines, rows_as_json
from udfs.pipeline import run_pipeline

TABLE = "logical_types"
SCHEMA = "lt_pipeline_cdc"
MARTS = "lt_pipeline_marts"

DECIMAL = "org.apache.kafka.connect.data.Decimal"


def _field(name: str, type_: str, logical: str | None = None, **parameters: str) -> dict:
    field = {"type": type_, "optional": name != "id", "field": name}
    if logical:
        field["name"] = logical
        field["version"] = 1
    if parameters:
        field["parameters"] = parameters
    return field


#: one column per logical type (Kafka Connect JsonConverter field schemas)
ROW_FIELDS = [
    _field("id", "int32"),
    _field("dec_s2", "bytes", DECIMAL, scale="2", **{"connect.decimal.precision": "10"}),
    _field("dec_38", "bytes", DECIMAL, scale="10", **{"connect.decimal.precision": "38"}),
    {
        "type": "struct",
        "fields": [
            {"type": "int32", "optional": False, "field": "scale"},
            {"type": "bytes", "optional": False, "field": "value"},
        ],
        "optional": True,
        "name": "io.debezium.data.VariableScaleDecimal",
        "version": 1,
        "doc": "Variable scaled decimal",
        "field": "vsd",
    },
    _field("d_date", "int32", "io.debezium.time.Date"),
    _field("t_time", "int32", "io.debezium.time.Time"),
    _field("t_micro", "int64", "io.debezium.time.MicroTime"),
    _field("ts_milli", "int64", "io.debezium.time.Timestamp"),
    _field("ts_micro", "int64", "io.debezium.time.MicroTimestamp"),
    _field("ts_nano", "int64", "io.debezium.time.NanoTimestamp"),
    _field("ts_zoned", "string", "io.debezium.time.ZonedTimestamp"),
    _field("k_date", "int32", "org.apache.kafka.connect.data.Date"),
    _field("k_time", "int32", "org.apache.kafka.connect.data.Time"),
    _field("k_ts", "int64", "org.apache.kafka.connect.data.Timestamp"),
    _field("raw", "bytes"),
]

SOURCE_FIELDS = [
    {"type": "string", "optional": False, "field": "version"},
    {"type": "string", "optional": False, "field": "connector"},
    {"type": "string", "optional": False, "field": "name"},
    {"type": "int64", "optional": False, "field": "ts_ms"},
    {"type": "string", "optional": True, "field": "snapshot"},
    {"type": "string", "optional": False, "field": "db"},
    {"type": "string", "optional": False, "field": "schema"},
    {"type": "string", "optional": False, "field": "table"},
    {"type": "int64", "optional": True, "field": "txId"},
    {"type": "int64", "optional": True, "field": "lsn"},
]


def _struct(name: str, fields: list[dict], logical: str, optional: bool = True) -> dict:
    return {"type": "struct", "fields": fields, "optional": optional, "name": logical, "field": name}


ENVELOPE_SCHEMA = {
    "type": "struct",
    "fields": [
        _struct("before", ROW_FIELDS, "pg.public.logical_types.Value"),
        _struct("after", ROW_FIELDS, "pg.public.logical_types.Value"),
        _struct("source", SOURCE_FIELDS, "io.debezium.connector.postgresql.Source", optional=False),
        {"type": "string", "optional": False, "field": "op"},
        {"type": "int64", "optional": True, "field": "ts_ms"},
    ],
    "optional": False,
    "name": "pg.public.logical_types.Envelope",
}


def unscaled(n: int) -> str:
    """Connect Decimal wire form: base64 of the minimal big-endian two's complement."""
    return base64.b64encode(n.to_bytes(n.bit_length() // 8 + 1, "big", signed=True)).decode()


def vsd(n: int, scale: int) -> dict:
    return {"scale": scale, "value": unscaled(n)}


def b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode()


MAX38 = 10**38 - 1

# Input rows (wire values) ------------------------------------------------------------
ROWS = [
    {  # zero / the epoch
        "id": 1,
        "dec_s2": unscaled(0),
        "dec_38": unscaled(0),
        "vsd": vsd(0, 0),
        "d_date": 0,
        "t_time": 0,
        "t_micro": 86_399_999_999,
        "ts_milli": 0,
        "ts_micro": 0,
        "ts_nano": 0,
        "ts_zoned": "1970-01-01T05:30:00+05:30",
        "k_date": 0,
        "k_time": 0,
        "k_ts": 0,
        "raw": "",
    },
    {  # negative / before 1970 / +05:30
        "id": 2,
        "dec_s2": unscaled(-1_234_567_890),
        "dec_38": unscaled(-MAX38),
        "vsd": vsd(-123, 5),
        "d_date": -25_567,
        "t_time": 45_296_789,
        "t_micro": 45_296_789_012,
        "ts_milli": -1,
        "ts_micro": -1,
        "ts_nano": -1,
        "ts_zoned": "2024-02-29T23:59:59.123456+05:30",
        "k_date": -1,
        "k_time": 86_399_999,
        "k_ts": -86_400_000,
        "raw": b64(b"\xff\x00\x2a"),
    },
    {  # maximum precision / leap day 2024-02-29 / -08:00 with nanoseconds
        "id": 3,
        "dec_s2": unscaled(9_999_999_999),
        "dec_38": unscaled(MAX38),
        "vsd": vsd(12345678901234567890123456789012345678901234567890, 20),
        "d_date": 19_782,
        "t_time": 1,
        "t_micro": 1,
        "ts_milli": 1_709_210_096_789,
        "ts_micro": 1_709_210_096_123_456,
        "ts_nano": 1_709_210_096_123_456_789,
        "ts_zoned": "2024-02-29T04:34:56.123456789-08:00",
        "k_date": 19_782,
        "k_time": 45_296_789,
        "k_ts": 1_709_210_096_789,
        "raw": b64("héllo ✓".encode()),
    },
    {"id": 4, **{f["field"]: None for f in ROW_FIELDS[1:]}},  # NULL for every logical type
]

# Expected changelog `after` text ------------------------------------------------------
AFTER = {
    1: {
        "id": "1",
        "dec_s2": "0.00",
        "dec_38": "0.0000000000",
        "vsd": "0",
        "d_date": "1970-01-01",
        "t_time": "00:00:00.000000",
        "t_micro": "23:59:59.999999",
        "ts_milli": "1970-01-01T00:00:00.000000Z",
        "ts_micro": "1970-01-01T00:00:00.000000Z",
        "ts_nano": "1970-01-01T00:00:00.000000000Z",
        "ts_zoned": "1970-01-01T00:00:00.000000Z",
        "k_date": "1970-01-01",
        "k_time": "00:00:00.000000",
        "k_ts": "1970-01-01T00:00:00.000000Z",
        "raw": "",
    },
    2: {
        "id": "2",
        "dec_s2": "-12345678.90",
        "dec_38": "-9999999999999999999999999999.9999999999",
        "vsd": "-0.00123",
        "d_date": "1900-01-01",
        "t_time": "12:34:56.789000",
        "t_micro": "12:34:56.789012",
        "ts_milli": "1969-12-31T23:59:59.999000Z",
        "ts_micro": "1969-12-31T23:59:59.999999Z",
        "ts_nano": "1969-12-31T23:59:59.999999999Z",
        "ts_zoned": "2024-02-29T18:29:59.123456Z",
        "k_date": "1969-12-31",
        "k_time": "23:59:59.999000",
        "k_ts": "1969-12-31T00:00:00.000000Z",
        "raw": "/wAq",
    },
    3: {
        "id": "3",
        "dec_s2": "99999999.99",
        "dec_38": "9999999999999999999999999999.9999999999",
        "vsd": "123456789012345678901234567890.12345678901234567890",
        "d_date": "2024-02-29",
        "t_time": "00:00:00.001000",
        "t_micro": "00:00:00.000001",
        "ts_milli": "2024-02-29T12:34:56.789000Z",
        "ts_micro": "2024-02-29T12:34:56.123456Z",
        "ts_nano": "2024-02-29T12:34:56.123456789Z",
        "ts_zoned": "2024-02-29T12:34:56.123456789Z",
        "k_date": "2024-02-29",
        "k_time": "12:34:56.789000",
        "k_ts": "2024-02-29T12:34:56.789000Z",
        "raw": "aMOpbGxvIOKckw==",
    },
    4: {"id": "4", **{f["field"]: None for f in ROW_FIELDS[1:]}},
}

# Expected col_types (the Spark type each logical type maps to) --------------------------
COL_TYPES = {
    "id": "int",
    "dec_s2": "decimal(10,2)",
    "dec_38": "decimal(38,10)",
    "vsd": "string",  # a scale per row, up to 131072 digits: no fixed Spark decimal
    "d_date": "date",
    "t_time": "string",  # Spark has no time-of-day type
    "t_micro": "string",
    "ts_milli": "timestamp",
    "ts_micro": "timestamp",
    "ts_nano": "timestamp",
    "ts_zoned": "timestamp",
    "k_date": "date",
    "k_time": "string",
    "k_ts": "timestamp",
    "raw": "binary",
}

# Expected `cdc export` lines (exact text, columns in name order) ----------------------
EXPORT = [
    {
        "d_date": "1970-01-01",
        "dec_38": "0.0000000000",
        "dec_s2": "0.00",
        "id": 1,
        "k_date": "1970-01-01",
        "k_time": "00:00:00.000000",
        "k_ts": "1970-01-01T00:00:00.000000Z",
        "raw": "",
        "t_micro": "23:59:59.999999",
        "t_time": "00:00:00.000000",
        "ts_micro": "1970-01-01T00:00:00.000000Z",
        "ts_milli": "1970-01-01T00:00:00.000000Z",
        "ts_nano": "1970-01-01T00:00:00.000000Z",
        "ts_zoned": "1970-01-01T00:00:00.000000Z",
        "vsd": "0",
    },
    {
        "d_date": "1900-01-01",
        "dec_38": "-9999999999999999999999999999.9999999999",
        "dec_s2": "-12345678.90",
        "id": 2,
        "k_date": "1969-12-31",
        "k_time": "23:59:59.999000",
        "k_ts": "1969-12-31T00:00:00.000000Z",
        "raw": "/wAq",
        "t_micro": "12:34:56.789012",
        "t_time": "12:34:56.789000",
        "ts_micro": "1969-12-31T23:59:59.999999Z",
        "ts_milli": "1969-12-31T23:59:59.999000Z",
        # 23:59:59.999999999 -> the nanoseconds are truncated (not rounded to 1970)
        "ts_nano": "1969-12-31T23:59:59.999999Z",
        "ts_zoned": "2024-02-29T18:29:59.123456Z",
        "vsd": "-0.00123",
    },
    {
        "d_date": "2024-02-29",
        "dec_38": "9999999999999999999999999999.9999999999",
        "dec_s2": "99999999.99",
        "id": 3,
        "k_date": "2024-02-29",
        "k_time": "12:34:56.789000",
        "k_ts": "2024-02-29T12:34:56.789000Z",
        "raw": "aMOpbGxvIOKckw==",
        "t_micro": "00:00:00.000001",
        "t_time": "00:00:00.001000",
        "ts_micro": "2024-02-29T12:34:56.123456Z",
        "ts_milli": "2024-02-29T12:34:56.789000Z",
        "ts_nano": "2024-02-29T12:34:56.123456Z",  # .123456789 -> .123456
        "ts_zoned": "2024-02-29T12:34:56.123456Z",
        "vsd": "123456789012345678901234567890.12345678901234567890",
    },
    {"id": 4, **{name: None for name in COL_TYPES if name != "id"}},
]


def envelope(row: dict, lsn: int) -> str:
    payload = {
        "before": None,
        "after": row,
        "source": {
            "version": "2.5.0.Final",
            "connector": "postgresql",
            "name": "pg",
            "ts_ms": 1_709_210_096_000 + lsn,
            "snapshot": "false",
            "db": "shop",
            "schema": "public",
            "table": TABLE,
            "txId": 700 + lsn,
            "lsn": lsn,
        },
        "op": "c",
        "ts_ms": 1_709_210_097_000 + lsn,
    }
    return json.dumps({"schema": ENVELOPE_SCHEMA, "payload": payload}, ensure_ascii=False)


@pytest.fixture(scope="module")
def pipeline(spark, tmp_path_factory):
    """One run: the four rows in one landing file, no column types in cdc.yml."""
    root: Path = tmp_path_factory.mktemp("logical_types")
    landing = root / "landing" / "pg"
    landing.mkdir(parents=True)
    lines = [envelope(row, lsn=1000 + 10 * n) for n, row in enumerate(ROWS)]
    (landing / "part-0.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    config = root / "cdc.yml"
    config.write_text(
        yaml.safe_dump(
            {
                "warehouse": ".cdc",
                "schema": SCHEMA,
                "marts_schema": MARTS,
                "feeds": [{"name": "pg", "format": "debezium_json", "path": "landing/pg"}],
                # the key only: no `columns:`, so the mart types come from the envelopes
                "tables": {TABLE: {"key": ["id"]}},
            },
            sort_keys=False,
        )
    )
    summary = run_pipeline(config, spark=spark)
    return config, summary


def test_run_summary(pipeline) -> None:
    _, summary = pipeline
    assert (summary.files, summary.records, summary.changes, summary.quarantined, summary.skipped) == (1, 4, 4, 0, 0)
    assert summary.tables == [TABLE]


def test_changelog_after_text_and_col_types(spark, pipeline) -> None:
    rows = spark.sql(
        f"select key, op, after, after_cols, before, col_types, seq from {SCHEMA}.changelog order by order_key"
    ).collect()
    assert [r.key for r in rows] == [{"id": str(n)} for n in (1, 2, 3, 4)]
    for r in rows:
        n = int(r.key["id"])
        assert r.op == "insert"
        assert r.before is None
        assert r.after == AFTER[n], f"row {n}"
        assert r.after_cols == [f["field"] for f in ROW_FIELDS]
        # a NULL value still carries its column's logical type
        assert r.col_types == COL_TYPES, f"row {n}"
    assert rows[0].seq == "1000".zfill(20)


def test_mart_column_types_come_from_the_envelope_schema(spark, pipeline) -> None:
    mart = spark.table(f"{MARTS}.{TABLE}")
    types = {f.name: f.dataType.simpleString() for f in mart.schema.fields}
    assert types == {
        **COL_TYPES,
        "_cdc_op": "string",
        "_cdc_seq": "string",
        "_cdc_commit_ts": "timestamp",
        "_cdc_event_id": "string",
        "_cdc_key": "string",
        "raw__text": "string",  # the binary column's UTF-8 text view
    }
    described = {r.col_name: r.data_type for r in spark.sql(f"describe {MARTS}.{TABLE}").collect()}
    assert {c: described[c] for c in COL_TYPES} == COL_TYPES


def test_mart_values_are_typed_exactly(spark, pipeline) -> None:
    row = spark.sql(
        f"select dec_38, unix_micros(ts_nano) as nano_us, unix_micros(ts_zoned) as zoned_us, d_date, raw "
        f"from {MARTS}.{TABLE} where id = 3"
    ).collect()[0]
    assert str(row.dec_38) == "9999999999999999999999999999.9999999999"
    # the ns digits beyond the microsecond are dropped in the mart timestamp
    assert row.nano_us == 1_709_210_096_123_456
    assert row.zoned_us == 1_709_210_096_123_456
    assert str(row.d_date) == "2024-02-29"
    assert bytes(row.raw) == "héllo ✓".encode()


def test_export_gives_every_value_exactly(spark, pipeline) -> None:
    config, _ = pipeline
    lines = list(export_lines(spark, config, TABLE))
    assert [json.loads(line) for line in lines] == EXPORT
    # decimals are JSON strings (all 38 digits), never numbers
    assert '"dec_38": "9999999999999999999999999999.9999999999"' in lines[2]
    assert '"dec_38": "-9999999999999999999999999999.9999999999"' in lines[1]
    # the row of NULLs exports JSON null for every logical type
    assert lines[3].count("null") == len(COL_TYPES) - 1


def test_a_statement_without_a_result_prints_nothing_and_has_run(spark) -> None:
    """``cdc sql "create schema x"`` without a server: the statement runs and there is
    no row to print (rendering a select list of no columns used to fail after it ran)."""
    schema = "logical_types_statement_without_result"
    spark.sql(f"drop schema if exists {schema} cascade")
    assert list(rows_as_json(spark, spark.sql(f"create schema {schema}"))) == []
    assert spark.catalog.databaseExists(schema)
    spark.sql(f"drop schema {schema}")


def test_column_names_with_backquotes_spaces_and_unicode_are_read_back_exactly(spark) -> None:
    """``cdc sql`` renders each column by its quoted name (``udfs.identifiers``): a name
    with a backquote, a space, a dot or unicode is that column, not a parse error."""
    sql = (
        "select 0 as `a``b`, 1 as `two words`, 2 as `x.y`, 3 as `Zoë`, timestamp'2024-01-02 03:04:05.000006' as `t``s`"
    )
    (line,) = rows_as_json(spark, spark.sql(sql))
    want = {"a`b": 0, "two words": 1, "x.y": 2, "Zoë": 3, "t`s": "2024-01-02T03:04:05.000006Z"}
    assert json.loads(line) == want
