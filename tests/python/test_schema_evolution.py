"""Schema evolution over two runs, no manual DDL: a column added, columns widened
(int to bigint, decimal precision up), a column that stops appearing, and a column
whose type changes in a way that cannot widen (kept as text and reported)."""

from __future__ import annotations

import base64
import json

import yaml

from udfs.export import export_rows
from udfs.pipeline import run_pipeline


def _decimal(value: str, scale: int) -> str:
    unscaled = int(value.replace(".", ""))
    return base64.b64encode(unscaled.to_bytes((unscaled.bit_length() + 8) // 8, "big", signed=True)).decode()


def _event(lsn: int, row: dict, fields: list[dict], op: str = "c") -> str:
    value = {"type": "struct", "optional": True, "fields": fields, "name": "evo.public.items.Value"}
    schema = {
        "type": "struct",
        "name": "evo.public.items.Envelope",
        "fields": [
            {**value, "field": "before"},
            {**value, "field": "after"},
            {"type": "struct", "field": "source", "fields": []},
            {"type": "string", "field": "op"},
        ],
    }
    source = {"connector": "postgresql", "db": "evo", "schema": "public", "table": "items", "lsn": lsn}
    return json.dumps({"schema": schema, "payload": {"before": None, "after": row, "source": source, "op": op}})


def _dec(field: str, precision: int, scale: int) -> dict:
    return {
        "type": "bytes",
        "optional": True,
        "field": field,
        "name": "org.apache.kafka.connect.data.Decimal",
        "parameters": {"scale": str(scale), "connect.decimal.precision": str(precision)},
    }


V1 = [
    {"type": "int32", "optional": False, "field": "id"},
    {"type": "int32", "optional": True, "field": "qty"},
    _dec("price", 10, 2),
    {"type": "string", "optional": True, "field": "old_col"},
    {"type": "int32", "optional": True, "field": "code"},
]
V2 = [
    {"type": "int32", "optional": False, "field": "id"},
    {"type": "int64", "optional": True, "field": "qty"},
    _dec("price", 12, 4),
    {"type": "string", "optional": True, "field": "code"},
    {"type": "string", "optional": True, "field": "note"},
]


def test_columns_added_widened_dropped_and_conflicting(spark, make_config, tmp_path):
    config = make_config(
        [{"name": "evo", "format": "debezium_json", "path": "landing/evo"}], {"items": {"key": ["id"]}}
    )
    cfg = yaml.safe_load(config.read_text())
    landing = tmp_path / "landing" / "evo"
    (landing / "run1.jsonl").write_text(
        _event(10, {"id": 1, "qty": 5, "price": _decimal("12345678.90", 2), "old_col": "a", "code": 7}, V1)
        + "\n"
        + _event(20, {"id": 2, "qty": 6, "price": _decimal("-0.05", 2), "old_col": "b", "code": 8}, V1)
        + "\n"
    )
    run_pipeline(config, spark=spark)
    marts = cfg["marts_schema"]
    types = {f.name: f.dataType.simpleString() for f in spark.table(f"{marts}.items").schema}
    assert {k: types[k] for k in ("id", "qty", "price", "old_col", "code")} == {
        "id": "int",
        "qty": "int",
        "price": "decimal(10,2)",
        "old_col": "string",
        "code": "int",
    }

    big = 2**40
    (landing / "run2.jsonl").write_text(
        # an update of 2 whose image no longer has old_col: old_col keeps its value
        _event(30, {"id": 2, "qty": big, "price": _decimal("12345678.1234", 4), "code": "X-9", "note": "new"}, V2, "u")
        + "\n"
        + _event(40, {"id": 3, "qty": 1, "price": _decimal("0.0001", 4), "code": "Y", "note": None}, V2)
        + "\n"
    )
    summary = run_pipeline(config, spark=spark)
    assert (summary.records, summary.changes, summary.quarantined) == (2, 2, 0)

    types = {f.name: f.dataType.simpleString() for f in spark.table(f"{marts}.items").schema}
    assert {k: types[k] for k in ("id", "qty", "price", "old_col", "code", "note")} == {
        "id": "int",
        "qty": "bigint",  # int widened to bigint
        "price": "decimal(12,4)",  # decimal(10,2) and decimal(12,4): 8 integer + 4 fraction digits
        "old_col": "string",  # no longer in the events: kept
        "code": "string",  # int then string: cannot widen, kept as text
        "note": "string",  # new column
    }
    rows = {r["id"]: r for r in export_rows(spark, config, "items")}
    assert rows == {
        1: {"id": 1, "qty": 5, "price": "12345678.9000", "old_col": "a", "code": "7", "note": None},
        2: {"id": 2, "qty": big, "price": "12345678.1234", "old_col": "b", "code": "X-9", "note": "new"},
        3: {"id": 3, "qty": 1, "price": "0.0001", "old_col": None, "code": "Y", "note": None},
    }
    conflicts = spark.sql(f"select column_name, type_conflict from {cfg['schema']}.audit_type_conflicts").collect()
    assert [(c.column_name, "int" in c.type_conflict and "string" in c.type_conflict) for c in conflicts] == [
        ("code", True)
    ]
