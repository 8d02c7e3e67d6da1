"""The columnar Lindorm JSON decoder gives the very result of ``decode_records``.

Each case is decoded both ways and compared as Arrow (``DECODE_RESULT_DDL``): the spec's
samples, the benchmark's workload, every branch of the decoder (SQL and HBase tables,
``table_kind``, configured columns, schemas with typed fields, times) in valid and
malformed spellings, every message the Lindorm unit tests decode, and random messages.
What the columnar path cannot do exactly must fall back, never differ.
"""

from __future__ import annotations

import base64
import json
import random
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from formats import columnar_checks
from formats.columnar_checks import json_spellings
from spec_samples import (
    LINDORM_FORMAT_UPDATE,
    LINDORM_HBASE_PUT,
    LINDORM_SQL_COLUMN_DELETE,
    LINDORM_SQL_DELETE,
    LINDORM_SQL_INSERT,
    LINDORM_SQL_UPDATE,
)

from udfs.contract import Record
from udfs.formats import lindorm_json_columnar as col
from udfs.formats.lindorm_json import LindormJsonDecoder
from udfs.spark_udfs import columnar_feed

SPEC = [
    LINDORM_FORMAT_UPDATE,
    LINDORM_SQL_INSERT,
    LINDORM_SQL_UPDATE,
    LINDORM_SQL_DELETE,
    LINDORM_SQL_COLUMN_DELETE,
    LINDORM_HBASE_PUT,
]
TABLES = {
    "default.customers": {"key": ["id"]},
    "ns.t": {"key": ["id"], "columns": {"id": "bigint", "name": "string", "Email": "string", "NOTE": "string"}},
    "ns.o": {"key": ["id", "line"], "column_order": ["id", "line", "amount", "line"]},
    "ns.up": {"key": ["ID"]},  # upper case: never matches the lower-cased images
    "ns.wide": {"key": ["id"], "columns": ["id", "ünï"]},  # a non-ASCII configured column
    "ns.h": {"key": ["ROW"]},
}


def _opts(tables: dict[str, Any] | None = None, **options: Any) -> str:
    return json.dumps(
        {"format": "lindorm_json", "tables": TABLES if tables is None else tables, "options": options},
        sort_keys=True,
    )


def compare(opts: str, texts: list[str | None]) -> tuple[int, int]:
    return columnar_checks.compare(col, col.decode_lindorm_columnar, opts, texts)


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


FIELDS = [
    {"type": "int64", "optional": False, "field": "id"},
    {"type": "string", "optional": True, "field": "name"},
    {"type": "int32", "optional": True, "field": "n"},
    {"type": "double", "optional": True, "field": "f"},
    {"type": "boolean", "optional": True, "field": "ok"},
]


def schema(fields: list[dict[str, Any]] | None = None, after: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """An envelope schema: before and after structs of ``fields`` (after: ``after``)."""
    fields = FIELDS if fields is None else fields
    return {
        "type": "struct",
        "fields": [
            {"type": "string", "optional": False, "field": "op"},
            {"type": "struct", "fields": fields, "optional": True, "field": "before"},
            {"type": "struct", "fields": fields if after is None else after, "optional": True, "field": "after"},
        ],
    }


def msg(
    op: Any = "c",
    before: Any = None,
    after: Any = None,
    schema_: Any = None,
    drop: tuple[str, ...] = (),
    wrap: bool = True,
    **source: Any,
) -> dict[str, Any]:
    src: dict[str, Any] = {
        "version": "v2.0",
        "db": "ld-x",
        "namespace": "ns",
        "table": "t",
        "ts_ms": 1725258833727,
    }
    src.update(source)
    payload: dict[str, Any] = {"op": op, "ts_ms": 1725258859839, "before": before, "after": after, "source": src}
    for name in drop:
        if name in src:
            src.pop(name)
        else:
            payload.pop(name)
    if not wrap:
        return payload
    return {"schema": {} if schema_ is None else schema_, "payload": payload}


ROW = {"id": 1, "name": "Anne"}
OLD = {"id": 1, "name": "Jane", "Email": "j@x"}
H1 = {"ROW": b64("user1"), "f_name": b64("lucky")}
H2 = {"ROW": b64("user1"), "f_age": b64("42"), "g_x": ""}


def _cases() -> list[Any]:
    """Messages over every branch, as objects (dumped below) or as texts."""
    cases: list[Any] = []
    # SQL ops, with and without before; omitted columns; configured columns
    for op in ["c", "r", "u", "d", "x", "C", "", None, 1, ["c"]]:
        cases.append(msg(op, before=OLD, after=ROW))
        cases.append(msg(op, after=ROW))
        cases.append(msg(op, before=OLD))
    for table in ["t", "o", "up", "wide", "h", "none", "T"]:
        cases.append(msg("u", before={"id": 1, "line": 2, "x": 3}, after={"id": 1, "line": 2}, table=table))
        cases.append(msg("u", after={"id": 1, "line": 2, "amount": "1.5"}, table=table))
        cases.append(msg("u", before={}, after={"id": 1, "line": 2}, table=table))
        cases.append(msg("c", after={"id": 1, "line": 2}, table=table))
        cases.append(msg("d", before={"id": 1, "line": 2}, table=table))
    cases += [
        msg("u", before={"ID": 1, "NAME": "x"}, after={"id": 1}),  # before's spelling, lower-cased
        msg("u", before={"id": 1, "email": "x"}, after={"id": 1}),  # configured Email, known as email
        msg("u", before={"id": 1, "note": "n"}, after={"id": 1, "NAME": None}),
        msg("u", before={"id": 1}, after={"id": 2}),  # the key changes: two rows
        msg("u", before={"id": 1, "name": "a"}, after={"name": "b"}),  # key set NULL: two rows
        msg("u", before={"id": 1, "Id": 2}, after={"id": 1}),
        msg("c", after={"id": 1, "ID": 2}),
        msg("d", before=OLD, after=ROW),
        msg("c", before=OLD, after=ROW),
        msg("d", before={}, after=ROW),
        msg("c", after={}),
        msg("c", after=[1]),
        msg("c", after="x"),
        msg("d", before=5),
        msg("c", after={"name": "no key"}),
        msg("c", after={"id": None}),
    ]
    # values of every JSON kind, names escaped / non-ASCII
    values = [None, "", " ", "Ü 数 😀", "a\\b", 'q"q', "tab\there", "nl\nnl", "\u2028", "\x00", "/", 0, -1, 12]
    values += [2**70, -(2**64), True, False, 1.5, -0.0, 1e300, {"a": 1}, [1, 2], "__debezium_unavailable_value"]
    values += ["dXNlcjE=", "Anne"]
    for v in values:
        cases.append(msg("c", after={"id": 1, "v": v}))
        cases.append(msg("u", before={"id": 1, "v": "old"}, after={"id": 1, "v": v}))
    cases.append(msg("c", after={"id": 1, "NÄME": "x"}))
    base = json.dumps(msg("c", after={"id": 1, "v": 1}))
    cases.append(base.replace('"v"', '"\\u0076"'))
    cases.append(base.replace('"v": 1', '"v": 1.50, "w": 1E5, "x": -0, "y": -0.0'))
    cases.append(base.replace('"v": 1', '"v": "\\ud83d\\ude00 \\u00e9 \\/"'))
    cases.append(base.replace('"v": 1', '"v": "\\ud800"'))
    cases.append(base.replace('"v": 1', '"v": 1' + "0" * 5000))
    cases.append(base.replace('"op": "c"', '"op": "\\u0063"'))
    cases.append(base.replace('"table": "t"', '"table": "\\u0074"'))
    cases.append(base.replace('"ts_ms": 1725258833727', '"ts_ms": 1725258833727, "ts_ms": 5'))
    cases.append(base.replace('"op": "c"', '"op": "c", "op": "d"'))
    cases.append(base.replace('"v": 1', '"v": 1, "v": 2'))  # a name twice in an image
    # HBase: table_kind auto picks these up; puts as c and u, deletes
    for op in ["c", "u", "r", "d"]:
        cases.append(msg(op, after=H1 if op != "d" else None, before=H2 if op in ("d", "u") else None, table="h"))
    cases += [
        msg("c", after={"ROW": b64("user1")}, table="h"),
        msg("c", after={"ROW": "", "f_a": "AAAA===="}, table="h"),
        msg("c", after={"ROW": b64("u"), "f_name": "lucky!"}, table="h"),  # not base64: SQL in auto
        msg("c", after={"ROW": b64("u"), "f_name": None}, table="h"),
        msg("c", after={"ROW": b64("u"), "f_name": 5}, table="h"),
        msg("c", after={"ROW": b64("u"), "f_name": "YQ==\n"}, table="h"),
        msg("c", after={"ROW": "abcd", "f_name": "Anne"}, table="h"),  # base64-looking SQL values
        msg("c", after={"f_name": b64("x")}, table="h"),  # no ROW
        msg("c", after={"row": b64("x"), "f": b64("y")}, table="h"),
        msg("c", after={"ROW": b64("x"), "row": b64("y")}, table="h"),
        msg("c", after={"ROW": b64("x"), "Row": b64("y")}, table="h"),
        msg("u", before={"ROW": b64("old"), "f": b64("1")}, after={"ROW": b64("new"), "f": b64("2")}, table="h"),
        msg("u", before={"Row": b64("x"), "f_A": b64("1")}, after={"ROW": b64("x"), "f_a": b64("2")}, table="h"),
        msg("u", before={"f_b": "!!"}, after=H1, table="h"),  # before not base64
        msg("u", before={"f_b": b64("b"), "f_name": b64("n")}, after=H1, table="h"),
        msg("d", before=H1, after=H2, table="h"),
        msg("d", before={"f_name": b64("x")}, table="h"),
        msg("d", before={"ROW": b64("x"), "f": 1}, table="h"),
        msg("c", after={"ROW": b64("x"), "f": {"a": 1}}, table="h"),
    ]
    cases.append(json.dumps(msg("c", after=H1, table="h")).replace('"f_name"', '"f_n\\u0061me"'))
    cases.append(json.dumps(msg("c", after=H1, table="h")).replace(b64("lucky"), "bHVja3k\\u003d"))
    # times
    for ts in [0, 1, -1, "-0", 1.5, "1725258833727", True, None, 10**15 - 1, 10**15, 10**19, 1e3]:
        value: Any = json.loads(ts) if ts == "-0" else ts
        cases.append(msg("c", after=ROW, ts_ms=value))
        cases.append(dict(msg("c", after=ROW), payload=dict(msg("c", after=ROW)["payload"], ts_ms=value)))
    cases.append(json.dumps(msg("c", after=ROW)).replace("1725258833727", "-0"))
    cases.append(msg("c", after=ROW, drop=("ts_ms",)))
    p = msg("c", after=ROW)
    del p["payload"]["ts_ms"]
    cases.append(p)
    # source names
    for name in ["db", "namespace", "version", "table"]:
        for value in [None, "", 5, "Ä", "x.y", {"a": 1}, ["x"], True]:
            cases.append(msg("c", after=ROW, **{name: value}))
        cases.append(msg("c", after=ROW, drop=(name,)))
    cases.append(msg("c", after=ROW, table="t" * 300))
    cases += [msg("c", after=ROW, drop=("source",)), dict(msg("c", after=ROW), payload={"op": "c", "source": None})]
    # envelopes: unwrapped, extra keys, payload kinds, schema kinds
    cases += [msg("c", after=ROW, wrap=False), {"payload": msg("c", after=ROW, wrap=False)}]
    cases += [dict(msg("c", after=ROW), extra=1), {"schema": {}, "payload": None}, {"payload": None}]
    cases += [{"schema": {}, "payload": "x"}, {"schema": {}, "payload": [1]}, {"schema": {}}, [], "{", "", "5"]
    cases += [dict(msg("c", after=ROW, wrap=False), schema=schema()), dict(msg("c", after=ROW), schema=None)]
    for s in [5, "x", [1], None, {"type": "struct"}, {"fields": 5}, {"fields": [5, {"field": 5}]}]:
        cases.append(dict(msg("c", after=ROW), schema=s))
    # schemas with typed fields
    typed_rows = [
        {"id": 1, "name": "a", "n": 5, "f": 1.5, "ok": True},
        {"id": 1, "name": 5, "n": None, "f": 2, "ok": False},
        {"id": 1, "f": "NaN"},
        {"id": 1, "f": "x"},
        {"id": "1"},
        {"id": True},
        {"id": 1, "n": 1.5},
        {"id": 1, "ok": "true"},
        {"id": 1, "extra": "not in the schema"},
        {"id": -0, "n": -5},
        {"id": 1, "name": {"a": 1}},
    ]
    for row in typed_rows:
        cases.append(msg("c", after=row, schema_=schema()))
        cases.append(msg("u", before={"id": 1, "name": "x", "n": 1}, after=row, schema_=schema()))
        cases.append(msg("d", before=row, schema_=schema()))
    logical = [
        {"type": "bytes", "optional": True, "field": "v"},
        {"type": "bytes", "name": "org.apache.kafka.connect.data.Decimal", "parameters": {"scale": "2"}, "field": "v"},
        {"type": "bytes", "name": "org.apache.kafka.connect.data.Decimal", "parameters": {"scale": "9"}, "field": "v"},
        {"type": "bytes", "name": "org.apache.kafka.connect.data.Decimal", "parameters": {"scale": "x"}, "field": "v"},
        {"type": "bytes", "name": "org.apache.kafka.connect.data.Decimal", "field": "v"},
        {"type": "int64", "name": "io.debezium.time.MicroTimestamp", "field": "v"},
        {"type": "int64", "name": "io.debezium.time.Timestamp", "field": "v"},
        {"type": "int32", "name": "io.debezium.time.Date", "field": "v"},
        {"type": "string", "name": "io.debezium.time.ZonedTimestamp", "field": "v"},
        {"type": "string", "name": "some.Other", "field": "v"},
        {"type": "struct", "field": "v"},
        {"type": "float", "field": "v"},
        {"type": ["x"], "field": "v"},
        {"type": "int8", "name": ["x"], "field": "v"},
        {"type": "what", "field": "v"},
        {"field": "v"},
    ]
    for field in logical:
        fields = [FIELDS[0], field]
        for v in ["AQI=", "", "!", 1234, 1700000000123456, -5, "2024-01-02T03:04:05Z", None, True, 1.5, [1]]:
            cases.append(msg("c", after={"id": 1, "v": v}, schema_=schema(fields)))
        cases.append(msg("u", before={"id": 1, "v": "AQI="}, after={"id": 1}, schema_=schema(fields, after=FIELDS)))
    # types of after win, before's place first; a name twice in the schema
    cases.append(
        msg("c", after={"id": 1, "N": 2}, schema_=schema([FIELDS[0], FIELDS[2]], after=[FIELDS[1], FIELDS[0]]))
    )
    twice = [FIELDS[0], {"type": "string", "field": "n"}, FIELDS[2], {"type": "int64", "field": "N"}]
    cases.append(msg("c", after={"id": 1, "n": 5}, schema_=schema(twice)))
    return cases


def test_spec_samples_agree() -> None:
    n, fallbacks = compare(_opts(), SPEC)
    assert fallbacks == 0, col.LAST_STATS
    for kind in ("sql", "hbase", "auto", "HBase"):
        compare(_opts(table_kind=kind), SPEC)
    compare(_opts(tables={}), SPEC)


@pytest.mark.parametrize("kind", ["auto", "sql", "hbase"])
def test_every_branch_agrees(kind: str) -> None:
    texts = json_spellings(_cases(), random.Random(5))
    n, fallbacks = compare(_opts(table_kind=kind), texts)
    # not everything fell back (forced to HBase, the SQL rows are quarantined: fallbacks)
    assert n - fallbacks > (10 if kind == "hbase" else 100), (n, fallbacks)
    assert fallbacks > 50, (n, fallbacks)  # and the malformed ones did
    if kind == "auto":
        # without configured tables only HBase rows have a key; still the same results
        compare(_opts(tables={}), texts)


def test_configured_columns_are_set_null_column_wise() -> None:
    """The spec's column deletion, before lacking the column too: the configured
    columns (any spelling) complete after, on the columnar path."""
    doc = json.loads(LINDORM_SQL_COLUMN_DELETE)
    del doc["payload"]["before"]["last_name"]
    texts = [json.dumps(doc), LINDORM_SQL_UPDATE, LINDORM_SQL_INSERT]
    for columns in (
        {"id": "string", "first_name": "string", "last_name": "string", "email": "string"},
        {"ID": "string", "FIRST_NAME": "string", "last_name": "string"},
        ["email", "EMAIL", "id"],
    ):
        for place in ("columns", "column_order"):
            tables = {"default.customers": {"key": ["id"], place: columns}}
            n, fallbacks = compare(_opts(tables=tables), texts)
            assert fallbacks == 0
            assert col.LAST_STATS["null_filled"] > 0
    got = col.decode_lindorm_columnar(_opts(tables=tables), pa.array([json.dumps(doc)]))
    (change,) = got[0]["changes"].as_py()
    assert dict(change["after"]) == {"id": "1004", "first_name": "Anne Marie", "email": None}


def test_workload_agrees_without_fallback(tmp_path: Path) -> None:
    """The benchmark's records (SQL tables with and without schema, omitted NULL columns,
    HBase puts as ``c`` and ``u`` and deletes) all take the columnar path."""
    from bench.data import FORMAT_CASES, tables_config, write_dataset
    from udfs.framing import split_file

    case = FORMAT_CASES["lindorm_json"]
    ds = write_dataset(case, tmp_path, 4000, 11)
    texts = [r.text for p in ds.files for r in split_file(p.read_bytes(), case.framing, {})]
    assert len(texts) >= 4000
    with_columns = {t: dict(v, column_order=list(v["columns"]), name=t) for t, v in tables_config([case]).items()}
    for tables in (tables_config([case]), with_columns):
        for i in range(0, len(texts), 2000):
            n, fallbacks = compare(_opts(tables=tables), texts[i : i + 2000])
            assert fallbacks == 0, col.LAST_STATS
            assert col.LAST_STATS["null_filled"] > 0
    kinds = {json.loads(t)["payload"]["op"] for t in texts}
    assert kinds == {"c", "u", "d"}, kinds


def test_typical_messages_stay_columnar() -> None:
    """SQL inserts, updates (NULL filled) and deletes, with and without a schema, HBase
    puts and deletes: no record falls back, also when the schema cache is cold."""
    texts = []
    for i in range(200):
        row = {"id": i, "name": f"n{i}", "n": i % 7, "f": 0.5, "ok": i % 2 == 0}
        sch = schema() if i % 3 == 0 else {}
        texts.append(json.dumps(msg("c", after=row, schema_=sch)))
        texts.append(json.dumps(msg("u", before=row, after={"id": i, "name": "x"}, schema_=sch)))
        texts.append(json.dumps(msg("d", before=row, schema_=sch)))
        cell = {"ROW": b64(f"u{i}"), "f_name": b64(f"name {i}")}
        texts.append(json.dumps(msg(random.Random(i).choice("cu"), after=cell, table="h")))
        texts.append(json.dumps(msg("d", before=cell, table="h")))
    dated = schema()  # a date and a UTC timestamp, decoded column-wise
    for f in dated["fields"]:
        if f.get("field") in ("before", "after"):
            f["fields"] += [
                {"type": "int32", "name": "io.debezium.time.Date", "field": "day"},
                {"type": "string", "name": "io.debezium.time.ZonedTimestamp", "field": "at"},
            ]
    for i in range(20):
        row = {
            "id": i,
            "name": "d",
            "n": 1,
            "f": 0.5,
            "ok": True,
            "day": 19000 + i,
            "at": f"2024-01-0{i % 9 + 1}T00:00:00Z",
        }
        texts.append(json.dumps(msg("c", after=row, schema_=dated)))
    col.clear_schema_cache()
    for _ in range(2):  # cold, then with the schema cut out of the records
        n, fallbacks = compare(_opts(), texts)
        assert fallbacks == 0, col.LAST_STATS
    assert col.LAST_STATS["fast"] == len(texts)


CHARS = ["a", "Z", "é", "😀", ",", ":", '"', "\\", "\n", "\x00", "\u2028", " ", "/", "=", "+", "_"]


def test_random_messages_agree() -> None:
    """Random names, values, ops, kinds of table and schemas in every JSON spelling."""
    rng = random.Random(23)

    def text() -> str:
        return "".join(rng.choice(CHARS) for _ in range(rng.randint(0, 6)))

    def image(hbase: bool) -> dict[str, Any] | None:
        if rng.random() < 0.15:
            return None
        if hbase:
            row: dict[str, Any] = {rng.choice(["ROW", "ROW", "row"]): b64(text())}
            for _ in range(rng.randint(0, 3)):
                row[rng.choice(["f_a", "f_b", "g_c", "F_A"])] = rng.choice([b64(text()), b64(text()), text(), None])
            return row
        row = {rng.choice(["id", "ID", "Id"]): rng.choice([1, 2, "3", None, text()])}
        for _ in range(rng.randint(0, 4)):
            row[rng.choice(["name", "NAME", "n", "f", "ok", "email", text()])] = rng.choice(
                [text(), None, rng.randint(-9, 9), True, 2.5]
            )
        return row

    cases = []
    for _ in range(1500):
        hbase = rng.random() < 0.3
        doc = msg(
            rng.choice(["c", "u", "d", "r", "u", text()]),
            before=image(hbase),
            after=image(hbase),
            schema_=rng.choice([{}, {}, schema(), None]),
            table=rng.choice(["h"] if hbase else ["t", "o", "customers", "T", text()]),
            ts_ms=rng.choice([1, 10**12, None, -1, text()]),
            namespace=rng.choice(["ns", "NS", None, text()]),
        )
        for name in list(doc["payload"]):
            if rng.random() < 0.05:
                del doc["payload"][name]
        cases.append(doc)
    texts = json_spellings(cases, rng)
    for kind in ("auto", "sql", "hbase"):
        n, fallbacks = compare(_opts(table_kind=kind), texts)
        assert fallbacks < n, "some on the columnar path"


def test_unit_test_messages_agree(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every message (and options) the Lindorm unit tests decode, decoded column-wise
    (the unit tests call the decoder, not ``decode_records``: their messages are
    collected and replayed as batches per options)."""
    import formats.test_lindorm_json as unit

    from udfs.decode import decode_records

    seen: dict[str, list[str | None]] = {}

    class Recording(LindormJsonDecoder):
        def decode(self, record: Record) -> Any:
            options = {k: v for k, v in self.options.items() if k != "tables"}
            opts = _opts(tables=self.options.get("tables") or {}, **options)
            seen.setdefault(opts, []).append(record.text)
            return super().decode(record)

    monkeypatch.setattr(unit, "LindormJsonDecoder", Recording)
    monkeypatch.setattr(unit, "decode_records", decode_records, raising=False)
    columnar_checks.replay_unit_tests(monkeypatch, "formats.test_lindorm_json", ("lindorm_json",), lambda *a: None)
    assert sum(len(t) for t in seen.values()) > 30
    for opts, texts in seen.items():
        compare(opts, texts)
        compare(opts, texts * 3)


def test_empty_batch_and_options() -> None:
    compare(_opts(), [])
    compare("{not json", [LINDORM_SQL_INSERT])
    compare(_opts(columnar="no"), [LINDORM_SQL_INSERT])  # bad option: quarantined with the reason
    compare(_opts(table_kind="kudu"), [LINDORM_SQL_INSERT])
    compare(_opts(), [None, "null", LINDORM_SQL_INSERT, " "])
    assert columnar_feed(_opts()) is col.decode_lindorm_columnar
    assert columnar_feed(_opts(columnar=True)) is col.decode_lindorm_columnar
    assert columnar_feed(_opts(columnar=False)) is None
    assert columnar_feed(_opts(columnar="no")) is None


def test_internal_error_falls_back_with_a_warning(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    texts = [json.dumps(msg("c", after={"id": i, "name": "x"})) for i in range(20)]
    columnar_checks.check_internal_error_falls_back(
        monkeypatch, caplog, col, col.decode_lindorm_columnar, _opts(), texts, "lindorm_json"
    )


def test_spark_udf_columnar_true_and_false_agree(spark) -> None:
    """``cdc_decode`` in Spark SQL: the same results with ``columnar`` true and false,
    valid and malformed records alike."""
    texts = (json_spellings(_cases(), random.Random(7)) + SPEC) * 2
    on = columnar_checks.spark_on_and_off(spark, texts, _opts(), _opts(columnar=False), "lindorm_columnar_in")
    statuses = {json.loads(r)["status"] for r in on.values()}
    assert statuses == {"ok", "skipped", "quarantined"}, statuses
