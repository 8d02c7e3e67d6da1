"""DTS Avro through the real pipeline: records written by the project's own encoder
(writer schema from RECORD-SCHEMA.md) in a Kafka parquet dump and in a
length-prefixed dump; every value comes back exactly, DDL lands in ``ddl_log``,
non-row operations are skipped and counted, a truncated record is quarantined."""

from __future__ import annotations

import base64

import pyarrow as pa
import pyarrow.parquet as pq
import yaml

from udfs.export import export_rows
from udfs.formats.dts_avro import encode_record
from udfs.formats.dts_avro import typed as t
from udfs.framing import split_length_prefixed
from udfs.pipeline import run_pipeline

FIELDS = [{"name": n, "dataTypeNumber": 0} for n in ("id", "amount", "note", "at", "raw")]


def _rec(rid: int, operation: str, after=None, before=None, object_name="shop.orders") -> bytes:
    return encode_record(
        {
            "version": 1,
            "id": rid,
            "sourceTimestamp": 1600161894 + rid,
            "sourcePosition": f"{rid}@mysql-bin.000003",
            "sourceTxid": str(rid),
            "source": {"sourceType": "MySQL", "version": "5.7"},
            "operation": operation,
            "objectName": object_name,
            "fields": FIELDS if (after or before) and not isinstance(after, str) else None,
            "beforeImages": before,
            "afterImages": after,
        }
    )


def _row(i: int, amount: str, note: str | None, millis: int, raw: bytes) -> list:
    return [
        t("Integer", {"precision": 8, "value": str(i)}),
        t("Decimal", {"value": amount, "precision": 38, "scale": 10}),
        "NULL" if note is None else t("Character", {"charset": "utf8mb4", "value": note.encode()}),
        t("Timestamp", {"timestamp": 1600000000, "millis": millis}),
        t("BinaryObject", {"type": "blob", "value": raw}),
    ]


BIG = "12345678901234567890123456.0123456789"


def test_dts_avro_from_kafka_parquet_and_length_prefixed(spark, make_config, tmp_path):
    feeds = [
        {"name": "parquet", "format": "dts_avro", "path": "landing/parquet", "framing": "kafka_parquet"},
        {"name": "prefixed", "format": "dts_avro", "path": "landing/prefixed", "framing": "length_prefixed"},
    ]
    config = make_config(feeds, {"shop.orders": {"key": ["id"]}})
    schema = yaml.safe_load(config.read_text())["schema"]

    values = [
        _rec(1, "BEGIN"),
        _rec(2, "INIT", _row(1, "1.5", "zoë 🚀", 7, b"\x00\xff")),
        _rec(3, "INSERT", _row(2, BIG, "x\ny", 999, b"")),
        _rec(4, "DDL", "ALTER TABLE orders ADD COLUMN z int"),
        _rec(5, "UPDATE", _row(1, "-0.0000000001", None, 0, b"\x01"), before=_row(1, "1.5", "zoë 🚀", 7, b"\x00\xff")),
        _rec(6, "COMMIT"),
        _rec(7, "HEARTBEAT"),
    ]
    table = pa.table(
        {
            "key": pa.array([None] * len(values), pa.binary()),
            "value": pa.array(values, pa.binary()),
            "topic": ["dts"] * len(values),
            "partition": pa.array([0] * len(values), pa.int32()),
            "offset": pa.array(range(100, 100 + len(values)), pa.int64()),
        }
    )
    pq.write_table(table, tmp_path / "landing" / "parquet" / "part-0.parquet")

    deleted = _rec(8, "DELETE", None, before=_row(2, BIG, "x\ny", 999, b""))
    inserted = _rec(9, "INSERT", _row(3, "0", "ok", 1, b"abc"))
    truncated = _rec(10, "INSERT", _row(4, "4", "lost", 1, b""))
    dump = b"".join(len(v).to_bytes(4, "big") + v for v in (deleted, inserted))
    dump += len(truncated).to_bytes(4, "big") + truncated[:-3]
    (tmp_path / "landing" / "prefixed" / "dump.bin").write_bytes(dump)
    assert [r.error for r in split_length_prefixed(dump)][-1].startswith("truncated")

    summary = run_pipeline(config, spark=spark)
    assert (summary.files, summary.records, summary.changes, summary.quarantined, summary.skipped) == (2, 10, 5, 1, 4)

    rows = {r["id"]: r for r in export_rows(spark, config, "shop.orders")}
    assert rows == {
        1: {"id": 1, "amount": "-0.0000000001", "note": None, "at": "2020-09-13T12:26:40.000000Z", "raw": "AQ=="},
        3: {
            "id": 3,
            "amount": "0.0000000000",
            "note": "ok",
            "at": "2020-09-13T12:26:40.001000Z",
            "raw": base64.b64encode(b"abc").decode(),
        },
    }
    skipped = {
        r.feed: r.skipped_by_reason
        for r in spark.sql(f"select feed, skipped_by_reason from {schema}.audit_files").collect()
    }
    assert skipped == {"parquet": {"begin": 1, "commit": 1, "heartbeat": 1, "ddl": 1}, "prefixed": {}}
    ddl = spark.sql(f"select source_db, source_table, sql_text from {schema}.ddl_log").collect()
    assert [(r.source_db, r.source_table, r.sql_text) for r in ddl] == [
        ("shop", "orders", "ALTER TABLE orders ADD COLUMN z int")
    ]
    q = spark.sql(f"select record_index, reason, raw_record, raw_is_base64 from {schema}.quarantine").collect()
    assert len(q) == 1 and q[0].record_index == 2 and q[0].reason.startswith("truncated") and q[0].raw_is_base64
    assert base64.b64decode(q[0].raw_record) == dump[-(len(truncated) + 1) :]
    # the INSERT of id 2 held a 36-digit decimal exactly before its delete
    versions = spark.sql(f"select row from {schema}.history where key['id'] = '2' order by version_no").collect()
    assert versions[0].row["amount"] == BIG and versions[0].row["note"] == "x\ny"
