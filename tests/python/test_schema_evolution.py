"""Schema evolution over two runs, no manual DDL: a column added, columns widened
(int to bigint, decimal precision up), a column that stops appearing, and a column
whose type changes in a way that cannot widen (kept as text and reported). Values that
their mart column's type cannot hold: NULL in the mart, listed and counted."""

from __future__ import annotations

import base64
import dataclasses
import json

import yaml

from udfs.config import load_config
from udfs.export import export_rows
from udfs.pipeline import run_dbt, run_pipeline


def _decimal(value: str, scale: int) -> str:
    unscaled = int(value.replace(".", ""))
    return base64.b64encode(unscaled.to_bytes((unscaled.bit_length() + 8) // 8, "big", signed=True)).decode()


def _event(lsn: int, row: dict, fields: list[dict], op: str = "c") -> str:
    """A Debezium event of ``evo.public.items``: ``row`` is its after image (its before
    image for a delete, ``op`` "d")."""
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
    before, after = (row, None) if op == "d" else (None, row)
    return json.dumps({"schema": schema, "payload": {"before": before, "after": after, "source": source, "op": op}})


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
    assert summary.cast_failures == 0, summary  # every value fits its widened type

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


# Every type a value can fail to fit: the events carry text and wide numbers, cdc.yml
# declares narrower types (as after the source widened a column and cdc.yml was not updated).
UNFIT_FIELDS = [
    {"type": "string", "optional": False, "field": "id"},
    {"type": "int64", "optional": True, "field": "qty"},
    _dec("price", 10, 2),
    {"type": "string", "optional": True, "field": "raw"},
    {"type": "string", "optional": True, "field": "at"},
    {"type": "string", "optional": True, "field": "note"},
]
UNFIT_TYPES = {"id": "int", "qty": "int", "price": "decimal(6,2)", "raw": "binary", "at": "timestamp"}


def _unfit_row(id_: str, qty=None, price=None, raw=None, at=None, note=None) -> dict:
    price = _decimal(price, 2) if price is not None else None
    return {"id": id_, "qty": qty, "price": price, "raw": raw, "at": at, "note": note}


def _arcion_update_of_a_row_not_inserted(key: str, body: str, n: int) -> str:
    """An Arcion realtime update of ``notes`` whose key is in its before image only (the
    WHERE of its statement, exists 2) and that arrives before the insert of its row: the
    state's row has no ``id``, the mart shows it from the key."""
    return json.dumps(
        {
            "tableName": {"namespace": {"catalog": None, "schema": "evo"}, "name": "notes"},
            "opType": "U",
            "cursor": json.dumps({"timestamp": 1620788088431, "dscId": 1620787053905, "mutId": n}),
            "before": {"id": key, "body": "null"},
            "after": {"id": "null", "body": body},
            "exists": {"id": "2", "body": "1"},
            "operationcount": json.dumps({"insertCount": 0, "updateCount": n}),
        }
    )


def test_values_their_mart_type_cannot_hold_read_as_null_and_are_listed_and_counted(spark, make_config, tmp_path):
    config = make_config(
        [
            {"name": "evo", "format": "debezium_json", "path": "landing/evo"},
            {"name": "notes", "format": "arcion_internal_json", "path": "landing/notes"},
        ],
        {"items": {"key": ["id"], "columns": UNFIT_TYPES}, "notes": {"key": ["id"], "columns": {"id": "int"}}},
    )
    cfg = yaml.safe_load(config.read_text())
    landing = tmp_path / "landing" / "evo"
    events = [
        _event(10, _unfit_row("1", 5, "1234.56", "aGVsbG8=", "2024-01-02T03:04:05.123456Z", "fits"), UNFIT_FIELDS),
        # past int's range and decimal(6,2)'s precision
        _event(20, _unfit_row("2", 2**40, "12345678.90", "aGk=", None, "x"), UNFIT_FIELDS),
        # a key that is no int (the mart's key column reads NULL too), bytes that are not base64
        _event(30, _unfit_row("A-1", 1, "0.01", "hello!", "2024-01-01T00:00:00Z"), UNFIT_FIELDS),
        _event(40, _unfit_row("3"), UNFIT_FIELDS),  # nulls fit every type
        # a deleted key's value is in no mart row
        _event(50, _unfit_row("4", at="not a time"), UNFIT_FIELDS),
        _event(60, _unfit_row("4", at="not a time"), UNFIT_FIELDS, "d"),
    ]
    (landing / "run1.jsonl").write_text("\n".join(events) + "\n")
    # a key value no image gave (the mart's key column reads it from the key): listed too
    notes = [
        _arcion_update_of_a_row_not_inserted("B-7", "no int", 1),
        _arcion_update_of_a_row_not_inserted("8", "fits", 2),
    ]
    (tmp_path / "landing" / "notes" / "run1.json").write_text("\n".join(notes) + "\n")
    first = run_pipeline(config, spark=spark)
    assert (first.changes, first.quarantined, first.cast_failures) == (8, 0, 5), first
    assert (
        "WARNING: 5 value(s) do not fit their mart column's type and read as NULL in the mart "
        "(see audit_mart_cast_failures)"
    ) in str(first)

    def listed(where: str = "true", table: str = "audit_mart_cast_failures") -> set[tuple]:
        rows = spark.sql(f"select * from {cfg['schema']}.{table} where {where}").collect()
        return {(json.loads(r.key_text)["id"], r.column_name, r.spark_type, r.value_text, r.mart_view) for r in rows}

    def found_by(run_id: str) -> set[tuple]:
        return listed(f"run_id = '{run_id}'", "audit_run_cast_failures")

    def counted() -> dict[str, int]:
        rows = spark.sql(f"select run_id, cast_failures from {cfg['schema']}.audit_runs").collect()
        return {r.run_id: r.cast_failures for r in rows}

    first_found = {
        ("2", "qty", "int", "1099511627776", "items"),
        ("2", "price", "decimal(6,2)", "12345678.90", "items"),
        ("A-1", "id", "int", "A-1", "items"),
        ("A-1", "raw", "binary", "hello!", "items"),
        ("B-7", "id", "int", "B-7", "notes"),
    }
    assert listed() == first_found
    # each run's finds are kept, and counted in audit_runs
    assert found_by(first.run_id) == first_found
    assert counted() == {first.run_id: 5}
    shown = spark.sql(f"select _cdc_key, id, body from {cfg['marts_schema']}.notes").collect()
    assert sorted((json.loads(r._cdc_key)["id"], r.id, r.body) for r in shown) == [
        ("8", 8, "fits"),
        ("B-7", None, "no int"),
    ]
    mart = spark.sql(f"select _cdc_key, id, qty, price, raw, at from {cfg['marts_schema']}.items").collect()
    by_key = {json.loads(r._cdc_key)["id"]: r for r in mart}
    assert set(by_key) == {"1", "2", "A-1", "3"}
    assert (by_key["2"].qty, by_key["2"].price, by_key["A-1"].id, by_key["A-1"].raw) == (None, None, None, None)
    assert (by_key["1"].id, by_key["1"].qty, str(by_key["1"].price), by_key["1"].raw) == (1, 5, "1234.56", b"hello")
    assert (by_key["A-1"].qty, str(by_key["A-1"].price)) == (1, "0.01")

    # the run's keys only: 2 now fits, 5 does not; A-1's values were reported by the first run
    (landing / "run2.jsonl").write_text(
        _event(70, _unfit_row("2", 7, "10.00", "aGk=", None, "x"), UNFIT_FIELDS, "u")
        + "\n"
        + _event(80, _unfit_row("5", at="2024-13-45T00:00:00Z"), UNFIT_FIELDS)
        + "\n"
    )
    second = run_pipeline(config, spark=spark)
    assert (second.changes, second.cast_failures) == (2, 1), second
    assert "WARNING: 1 value(s) do not fit" in str(second)
    standing = {
        ("A-1", "id", "int", "A-1", "items"),
        ("A-1", "raw", "binary", "hello!", "items"),
        ("B-7", "id", "int", "B-7", "notes"),
        ("5", "at", "timestamp", "2024-13-45T00:00:00Z", "items"),
    }
    assert listed() == standing
    # the first run's finds stay as it found them (key 2 fits now)
    assert found_by(first.run_id) == first_found
    assert found_by(second.run_id) == {("5", "at", "timestamp", "2024-13-45T00:00:00Z", "items")}
    assert counted() == {first.run_id: 5, second.run_id: 1}

    # a plain `dbt test` warns of the last run's values; with the test scope `all`, of
    # every value the state holds now
    def warned(test_scope: str) -> int:
        every = dataclasses.replace(load_config(config), test_scope=test_scope)
        result = run_dbt(every, "test", extra=["--select", "assert_no_mart_cast_failures"])
        (test,) = [r for r in result.result.results if r.node.resource_type == "test"]
        return test.failures

    assert (warned("run"), warned("all")) == (1, len(standing))
