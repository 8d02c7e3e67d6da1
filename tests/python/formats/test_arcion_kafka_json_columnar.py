"""The columnar Arcion JSON CDC (Kafka) decoder gives the very result of ``decode_records``.

Each case is decoded both ways, with its Kafka key, and compared as Arrow
(``DECODE_RESULT_DDL``): the documentation's messages, the benchmark's workload, every
branch of the decoder (envelopes, ops, images, keys, positions, times, extras, schemas)
in valid and malformed spellings, and random messages. What the columnar path cannot do
exactly must fall back, never differ.
"""

from __future__ import annotations

import copy
import json
import random
from pathlib import Path
from typing import Any

import pytest
from formats import columnar_checks
from formats.columnar_checks import json_spellings
from formats.test_arcion_kafka_json import message

from udfs.formats import arcion_kafka_json_columnar as col
from udfs.spark_udfs import columnar_feed

TABLES = {
    "tpch.region": {"key": ["r_regionkey"]},
    "db.t": {"key": ["id"]},
    "db.k2": {"key": ["id", "line"]},
    "db.up": {"key": ["ID"]},  # upper case: never matches the lower-cased images
}


def _opts(tables: dict[str, Any] | None = None, **options: Any) -> str:
    return json.dumps(
        {"format": "arcion_kafka_json", "tables": TABLES if tables is None else tables, "options": options},
        sort_keys=True,
    )


def compare(opts: str, texts: list[str | None], keys: list[str | None] | None = None) -> tuple[int, int]:
    return columnar_checks.compare(col, col.decode_arcion_kafka_columnar, opts, texts, keys)


SCHEMA = {
    "type": "struct",
    "name": "KAFKA_Connector.db.t.Envelope",
    "fields": [
        {"type": "struct", "field": "before", "fields": [{"type": "int64", "field": "ID"},
                                                          {"type": "string", "field": "v"}]},
        {"type": "struct", "field": "after", "fields": [{"type": "int64", "field": "ID"},
                                                         {"type": "bytes", "name": "decimal", "field": "w"}]},
        {"type": "struct", "field": "source", "fields": [{"type": "string", "field": "table"}]},
    ],
}  # fmt: skip


def src(**fields: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "version": "5.7.41",
        "connector": "MYSQL",
        "name": "KAFKA_Connector",
        "ts_ms": 1700000000123,
        "db": "db",
        "schema": None,
        "table": "t",
        "query": "INSERT t",
        "snapshot": "false",
        "server_id": "1",
        "gtid": None,
        "file": "mysql-log.000012",
        "pos": 4567,
        "row": 1,
        "thread": 309,
    }
    for name, value in fields.items():
        if value is _DROP:
            base.pop(name, None)
        else:
            base[name] = value
    return base


_DROP = object()
ROW = {"id": 1, "v": "x"}


def payload(op: Any = "c", before: Any = None, after: Any = ROW, source: Any = None, **extra: Any) -> dict[str, Any]:
    out: dict[str, Any] = {
        "before": {} if before is None else before,
        "after": after,
        "source": src() if source is None else source,
        "op": op,
        "ts_ms": 1700000000456,
    }
    out.update(extra)
    return {name: value for name, value in out.items() if value is not _DROP}


def wrap(p: Any, schema: Any = SCHEMA) -> dict[str, Any]:
    return {"schema": schema, "payload": p}


def _cases() -> list[tuple[Any, Any]]:
    """(value, key) pairs over every branch; objects are dumped below, texts kept."""
    key = {"id": 1}
    cases: list[tuple[Any, Any]] = []
    for op in ["c", "u", "d", "r", "C", "x", "", None, 1]:
        before = {"id": 1, "v": "old"} if op in ("u", "d") else None
        after = {} if op == "d" else ROW
        cases += [(wrap(payload(op, before, after)), key), (payload(op, before, after), key)]
    cases.append(('{"schema": null, "payload": {"op": "\\u0063", "after": {"id": 1}, "source": {"table": "t"}}}', None))
    # envelopes: wrapped or not, schema null / text / absent, a null or scalar payload, extra top-level fields
    cases += [(wrap(payload(), None), key), ({"payload": payload()}, key), (wrap(payload(), "s"), key)]
    cases += [(wrap(None), key), (wrap("x"), key), (wrap([1]), key), ({**wrap(payload()), "x": 1}, key)]
    cases += [({"schema": SCHEMA, **payload()}, key), ([payload()], key), ("5", key), ('"x"', key), ("{", key)]
    # images: {} / null / absent, nested values, every JSON kind, escapes and names
    cases += [(payload("u", before={}, after=ROW), key), (payload("u", before=None, after=ROW), key)]
    cases += [
        (payload("c", after={}), key),
        (payload("c", after=None), None),
        (payload("d", before=ROW, after={}), None),
    ]
    cases += [(payload("c", after=_DROP), key), (payload("c", after="x"), key), (payload("c", after=[1]), key)]
    values = [None, "", "Ü 数 😀", 'q"q', "tab\there", "nl\nnl", "\u2028", "\x00", "/", 0, -1, 2**70, True, False]
    values += [1.5, -0.0, 1e300, {"a": 1}, [1, 2], "__debezium_unavailable_value"]
    for v in values:
        cases.append((payload("c", after={"id": 1, "v": v}), key))
        cases.append((payload("u", before={"id": 1, "v": "old"}, after={"id": 1, "v": v}), None))
    cases.append(('{"payload": {"op": "c", "after": {"id": -0, "v": 1.50, "w": 1E5, "x": -0.0}, '
                  '"source": {"db": "db", "table": "t"}}}', None))  # fmt: skip
    cases.append(('{"op": "c", "after": {"id": 1, "v": "\\ud83d\\ude00 \\u00e9 \\/"}, "source": {"table": "t"}}', key))
    cases.append(('{"op": "c", "after": {"id": 1, "v": "\\ud800"}, "source": {"table": "t"}}', key))
    cases.append(('{"op": "c", "after": {"id": 1' + "0" * 5000 + '}, "source": {"table": "t"}}', None))
    cases.append(('{"op": "c", "after": {"id": 1, "id": 2}, "source": {"table": "t"}}', None))
    cases.append(('{"op": "c", "after": {"id": 1, "\\u0076": 2}, "source": {"table": "t"}}', None))
    cases += [(payload("c", after={"Id": 1, "iD": 2}), None), (payload("c", after={"id": 1, "VÄ": 2}), None)]
    # keys: the Kafka key (with or without schema, null, scalar, nested, another case), else the configuration
    for k in [None, "null", {"id": 1}, {"ID": 1}, {"id": "1"}, {"id": None}, {}, {"id": 1, "v": "x"}, 5, "x"]:
        cases.append((payload("c"), k))
        cases.append((payload("d", before=ROW, after={}), k))
    for k in [{"schema": {"type": "struct"}, "payload": {"id": 1}}, {"schema": None, "payload": None},
              {"payload": {"id": 2}}, {"payload": 5}, {"payload": {"id": 1}, "x": 1}, {"id": {"a": 1}},
              {"id": 1, "ID": 2}, {"\\u0069d": 1}, {"ïd": 1}, [1]]:  # fmt: skip
        cases.append((payload("u", before=ROW, after={"id": 1, "v": "y"}), k))
    cases.append((payload("c", after={"v": "x"}), None))  # no key anywhere
    cases.append((payload("u", before=ROW, after={"id": 2, "v": "x"}), None))  # a key change: two rows
    cases.append((payload("u", before=ROW, after={"id": 2, "v": "x"}), key))
    cases += [(payload("c", after={"id": 1, "line": 2}, source=src(table="k2")), None)]
    cases += [
        (payload("c", after={"id": 1}, source=src(table="k2")), None),
        (payload("c", source=src(table="up")), None),
    ]
    cases += [(payload("c", source=src(table="nokey")), None), (payload("c", source=src(table="nokey")), key)]
    # source: names, tables, db / schema of any kind, positions, times, extras
    for table in ["t", "T", "", None, 5, "Ä", "x" * 300, _DROP]:
        cases.append((payload("c", source=src(table=table)), key))
    for db in ["db", None, 5, True, "DB", {"a": 1}, _DROP]:
        cases.append((payload("c", source=src(db=db)), key))
    for schema in ["public", None, 7, _DROP]:
        cases.append((payload("c", source=src(schema=schema)), key))
    for source in [None, {}, "x", [1], 5]:
        cases.append((payload("c", source=source), key))
    for file in ["mysql-log.000012", "log.9", "nodigits", "x.00", "", 12, None, "l.1\n", "l.١", True, _DROP]:
        cases.append((payload("c", source=src(file=file)), key))
        cases.append((payload("r", source=src(file=file)), key))
    for pos in [4567, "4567", "0045", "", " 1", "-1", -1, 1.5, True, 10**25, "١", None, _DROP]:
        cases.append((payload("c", source=src(pos=pos)), key))
        cases.append((payload("r", source=src(pos=pos)), key))
    for row in [0, "3", -2, None, "x", _DROP]:
        cases.append((payload("u", before=ROW, source=src(row=row)), key))
    snap = src(ts_ms=None, file=None, pos=None, row=None, server_id=None, thread=None, snapshot="true")
    cases += [(payload("r", source=snap, ts_ms=None), key), (payload("r", source=snap), None)]
    for ts in [0, -5, 1700000000123, 10**15, 10**16, "1700000000123", 1.5, True, None, _DROP]:
        cases.append((payload("c", source=src(ts_ms=ts)), key))
        cases.append((payload("c", ts_ms=ts), key))
    for gtid in [None, "3E11FA47-71CA-11E1-9E33-C80AA9429562:23", 5, _DROP]:
        cases.append((payload("c", source=src(gtid=gtid)), key))
    cases += [(payload("c", source=src(query={"q": 1})), key), (payload("c", source=src(thread=[1])), key)]
    cases += [(payload("c", source=src(extra="e", snapshot=False, server_id=1.25)), key)]
    cases += [(payload("c", source={"table": "t", "z": 1, "a": None, "db": "db", "m": "x"}), key)]
    cases.append(('{"op": "c", "after": {"id": 1}, "source": {"table": "t", "q": 1, "q": 2}}', key))
    cases.append(('{"op": "c", "after": {"id": 1}, "source": {"table": "t", "\\u0071": 1}}', key))
    cases.append(('{"op": "c", "after": {"id": 1}, "source": {"table": "t", "qü": 1}}', key))
    cases.append(('{"op": "c", "after": {"id": 1}, "source": {"table": "t", "table": "u"}}', key))
    # schemas: types by name or type, both images, names in another case, not a struct
    other = copy.deepcopy(SCHEMA)
    other["fields"][1]["fields"].append({"type": "int32", "name": "io.x.Date", "field": "V"})
    cases += [(wrap(payload("u", before={"id": 1, "v": "a"}), other), key), (wrap(payload(), {"fields": "x"}), key)]
    cases += [(wrap(payload(), {"fields": [{"field": "after", "fields": [{"field": 5}, "x"]}]}), key)]
    return cases


def _spell(cases: list[tuple[Any, Any]], rng: random.Random) -> tuple[list[str | None], list[str | None]]:
    values = json_spellings([v for v, _ in cases], rng)
    keys = [None] * (len(values) - len(cases)) + json_spellings([k for _, k in cases], rng)[4:]
    return values, keys


def test_documentation_messages_agree() -> None:
    names = ["snapshot-insert", "realtime-insert", "realtime-update", "realtime-delete", "tombstone"]
    records = [message(name) for name in names]
    n, fallbacks = compare(_opts(), [r.text for r in records], [r.kafka_key for r in records])
    # the tombstone file's "null\n" is no JSON object: decode_records skips it
    assert fallbacks == 1, "the documentation's messages take the columnar path"
    # and without their Kafka keys: the configured key
    compare(_opts(), [r.text for r in records])


def test_every_branch_agrees() -> None:
    values, keys = _spell(_cases(), random.Random(5))
    n, fallbacks = compare(_opts(), values, keys)
    assert n - fallbacks > 120, (n, fallbacks)  # not everything fell back
    assert fallbacks > 60, (n, fallbacks)  # and the malformed ones did
    # without configured keys only Kafka-keyed messages can be decoded column-wise
    compare(_opts(tables={}), values, keys)
    compare(_opts(), values)


def test_what_the_columnar_path_takes() -> None:
    """Typical messages stay on the columnar path (a fallback would hide a mistake)."""
    key = json.dumps({"schema": {"type": "struct"}, "payload": {"id": 7}})
    texts = [
        json.dumps(wrap(payload("c", after={"ID": 7, "v": "é"}))),
        json.dumps(payload("u", before={"id": 7, "v": "a"}, after={"id": 7, "v": None})),
        json.dumps(payload("d", before={"id": 7, "v": "a"}, after={})),
        json.dumps(payload("r", source=src(file=None, pos=None, row=None, snapshot="true"))),
        json.dumps(payload("c", source=src(pos="0045", extra="e"))),
    ]
    n, fallbacks = compare(_opts(), texts, [key, None, key, None, key])
    assert fallbacks == 0


def test_workload_agrees(tmp_path: Path) -> None:
    from bench.data import FORMAT_CASES, tables_config, write_dataset
    from udfs.framing import split_file

    case = FORMAT_CASES["arcion_kafka_json"]
    ds = write_dataset(case, tmp_path, 3000, 11)
    tables = {t: dict(v, column_order=list(v["columns"]), name=t) for t, v in tables_config([case]).items()}
    records = [r for p in ds.files for r in split_file(p.read_bytes(), case.framing, {})]
    texts, keys = [r.text for r in records], [r.kafka_key for r in records]
    opts = _opts(tables=tables)
    for i in range(0, len(texts), 1500):
        n, fallbacks = compare(opts, texts[i : i + 1500], keys[i : i + 1500])
        assert fallbacks == 0, (n, fallbacks)
        compare(opts, texts[i : i + 1500])  # the configured key


CHARS = ["a", "Z", "é", "😀", "\uffff", ",", ":", '"', "\\", "\n", "\x00", "\x1f", "\u2028", " ", "/", ".", "_"]


def test_random_messages_agree() -> None:
    """Random names, values, ops, tables, keys and positions in every JSON spelling
    (an odd text in a field now and then)."""
    rng = random.Random(23)

    def text() -> str:
        return "".join(rng.choice(CHARS) for _ in range(rng.randint(0, 6)))

    def pick(*choices: Any) -> Any:
        return text() if rng.random() < 0.04 else rng.choice(choices)

    def image() -> dict[str, Any] | None:
        if rng.random() < 0.15:
            return rng.choice([None, {}])
        row: dict[str, Any] = {pick("id", "ID", "Id"): rng.choice([1, 2, "3", None, text()])}
        for _ in range(rng.randint(0, 4)):
            row[pick("v", "V", "w")] = rng.choice([text(), None, rng.randint(-9, 9), True, 2.5])
        return row

    cases = []
    for _ in range(1500):
        source = src(
            table=pick("t", "T", "k2"),
            file=pick("mysql-log.000012", None, "x.7"),
            pos=pick(rng.randint(0, 10**12), str(rng.randint(0, 99)), None),
            row=pick(1, 2, None, "3"),
            ts_ms=pick(rng.randint(0, 10**13), None),
            query=rng.choice([text(), None]),
        )
        for name in list(source):
            if rng.random() < 0.04:
                del source[name]
        p = payload(pick("c", "u", "d", "r"), image(), image(), source)
        value = wrap(p, rng.choice([SCHEMA, None])) if rng.random() < 0.5 else p
        key = pick(None, {"id": rng.choice([1, 2, "x"])}, {"payload": {"ID": 1}}, {})
        cases.append((value, key))
    values, keys = _spell(cases, rng)
    n, fallbacks = compare(_opts(), values, keys)
    assert n - fallbacks > 300, (n, fallbacks)  # (most fall back: duplicate or escaped names, no key)


def test_empty_batch_and_options() -> None:
    compare(_opts(), [])
    compare("{not json", [json.dumps(payload())])
    compare(_opts(columnar="no"), [json.dumps(payload())])  # bad option: quarantined with the reason
    assert columnar_feed(_opts()) is col.decode_arcion_kafka_columnar
    assert columnar_feed(_opts(columnar=False)) is None


def test_internal_error_falls_back_with_a_warning(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    texts = [json.dumps(payload(after={"id": i})) for i in range(20)]
    columnar_checks.check_internal_error_falls_back(
        monkeypatch, caplog, col, col.decode_arcion_kafka_columnar, _opts(), texts, "arcion_kafka_json"
    )


def test_spark_udf_columnar_true_and_false_agree(spark) -> None:
    """``cdc_decode`` in Spark SQL: the same results with ``columnar`` true and false,
    valid and malformed records alike (the configured key: the SQL passes no Kafka key)."""
    values, _ = _spell(_cases(), random.Random(7))
    on = columnar_checks.spark_on_and_off(spark, values * 3, _opts(), _opts(columnar=False), "arcion_kafka_columnar_in")
    statuses = {json.loads(r)["status"] for r in on.values()}
    assert statuses == {"ok", "skipped", "quarantined"}, statuses
