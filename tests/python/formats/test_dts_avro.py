"""DTS Avro (``dts_avro``): records encoded with the project's own writer schema
(``udfs/formats/schemas/dts_record.avsc``, from RECORD-SCHEMA.md) and decoded back."""

from __future__ import annotations

import base64

import pytest

from udfs.contract import QuarantineError, Record, SkipRecord, seq_of
from udfs.formats import decoder_class
from udfs.formats.dts_avro import DtsAvroDecoder, encode_record
from udfs.formats.dts_avro import typed as t

FIELDS = [{"name": n, "dataTypeNumber": 0} for n in ("id", "amount", "note", "at", "f", "blob", "gone")]


def record(operation: str = "UPDATE", **changes) -> dict:
    rec = {
        "version": 1,
        "id": 42,
        "sourceTimestamp": 1600161894,
        "sourcePosition": "123@mysql-bin.000003",
        "sourceTxid": "77",
        "source": {"sourceType": "MySQL", "version": "5.7"},
        "operation": operation,
        "objectName": "shop.orders",
        "fields": FIELDS,
        "beforeImages": [
            t("Integer", {"precision": 8, "value": "5"}),
            t("Decimal", {"value": "1.50", "precision": 12, "scale": 2}),
            None,
            t("Timestamp", {"timestamp": 1600161894, "millis": 7}),
            t("Float", {"value": 9.9, "precision": 0, "scale": 0}),
            t("BinaryObject", {"type": "blob", "value": b"\x00\xff"}),
            "NULL",
        ],
        "afterImages": [
            t("Integer", {"precision": 8, "value": "5"}),
            t("Decimal", {"value": "12345678901234567890.12", "precision": 22, "scale": 2}),
            t("Character", {"charset": "utf8mb4", "value": "héllo".encode()}),
            t("DateTime", {"year": 2020, "month": 1, "day": 2, "hour": 3, "minute": 4, "second": 5, "millis": 6}),
            t("Float", {"value": 0.1, "precision": 0, "scale": 0}),
            "NULL",
            "NONE",
        ],
    }
    rec.update(changes)
    return rec


def decode(rec: dict) -> list:
    return DtsAvroDecoder({}).decode_value(encode_record(rec))


def test_registered_and_schema_round_trip() -> None:
    assert decoder_class("dts_avro") is DtsAvroDecoder


def test_update_values_types_and_provided_columns() -> None:
    (c,) = decode(record())
    assert (c.op, c.source_db, c.source_table, c.seq, c.tx_id) == ("update", "shop", "orders", seq_of(42), "77")
    assert c.commit_ts_us == 1600161894 * 1_000_000
    assert c.before == {
        "id": "5",
        "amount": "1.50",
        "note": None,
        "at": "2020-09-15 09:24:54.007",
        "f": "9.9",
        "blob": base64.b64encode(b"\x00\xff").decode(),
        "gone": None,
    }
    assert c.after == {
        "id": "5",
        "amount": "12345678901234567890.12",  # never through a float
        "note": "héllo",
        "at": "2020-01-02 03:04:05.006",
        "f": "0.1",
        "blob": None,
    }
    assert "gone" not in c.after_cols  # EmptyObject NONE: not provided
    assert c.col_types["amount"] == "decimal(12,2)" and c.col_types["blob"] == "binary"
    assert c.extras == {"source_position": "123@mysql-bin.000003", "source_type": "MySQL", "source_version": "5.7"}


@pytest.mark.parametrize(("operation", "op"), [("INSERT", "insert"), ("INIT", "snapshot"), ("DELETE", "delete")])
def test_row_operations(operation: str, op: str) -> None:
    (c,) = decode(record(operation))
    assert c.op == op
    assert (c.before is None) == (op != "delete") and (c.after is None) == (op == "delete")


def test_ddl_and_control_records_are_skipped() -> None:
    with pytest.raises(SkipRecord, match="ddl") as info:
        decode(record("DDL", fields=None, beforeImages=None, afterImages="ALTER TABLE orders ADD c int"))
    assert (info.value.ddl.sql, info.value.ddl.source_table) == ("ALTER TABLE orders ADD c int", "orders")
    for operation in ("BEGIN", "COMMIT", "HEARTBEAT", "CHECKPOINT"):
        with pytest.raises(SkipRecord, match=operation.lower()):
            decode(record(operation, objectName=None, fields=None, beforeImages=None, afterImages=None))


def test_malformed() -> None:
    with pytest.raises(QuarantineError, match="not a DTS Avro record"):
        DtsAvroDecoder({}).decode_value(b"\x02\x03")
    # a reason is the same every time: fastavro's message names its reader object by address
    cut = base64.b64decode(  # a record whose last Float value is cut short (found by a mutation test)
        "AvDhnMmR/tubWcyhhPYLKDEyM0BteXNxbC1iaW4uMDAwMDAzKDEyMEBteXNxbC1iaW4uMDAwMDAzABgAAgIMZGIucy50AgYCBAYABAJhAmIEw6kI8"
        "J+YgAAECgZ4X3kACE5hbWUCBGMxBARpZAYMYW1vdW50CAAABAoIAAAAAAAAAIAAAAAAAiYEMzkIAAA="
    )
    reasons = set()
    for _ in range(3):
        with pytest.raises(QuarantineError) as info:
            DtsAvroDecoder({}).decode_value(cut)
        reasons.add(str(info.value))
    assert reasons == {"not a DTS Avro record: EOFError: cannot read double from the record"}
    with pytest.raises(QuarantineError, match="has 1 values for 7 fields"):
        decode(record(afterImages=[None]))
    with pytest.raises(QuarantineError, match="without afterImages"):
        decode(record("INSERT", afterImages=None))
    with pytest.raises(QuarantineError, match="without objectName"):
        decode(record(objectName=None))


def test_records_arrive_as_base64_of_the_value() -> None:
    raw = encode_record(record("INSERT"))
    with pytest.raises(QuarantineError, match="not base64"):
        DtsAvroDecoder({}).decode(Record(text="not base64!"))
    (c,) = DtsAvroDecoder({}).decode(Record(text=base64.b64encode(raw).decode()))
    assert c.op == "insert"
    assert DtsAvroDecoder.binary_values and DtsAvroDecoder.framings == ("kafka_parquet", "length_prefixed")
