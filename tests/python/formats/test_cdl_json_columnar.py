"""The columnar Huawei CDL JSON decoder gives the very result of ``decode_records``.

Each case is decoded both ways and compared as Arrow (``DECODE_RESULT_DDL``): the spec's
two samples (read from ``../shared/specs`` too), the benchmark's workload (1.0 and 2.0
mixed, with and without schema, deletes with full, key or no images), every branch of
the decoder (versions, ops, heartbeats, LSN spellings and ``lsn_format``, the
``database`` option, ``unique``, TOAST placeholders, typed values, times, extras) in
valid and malformed spellings, every message the CDL unit tests decode, and random
messages. What the columnar path cannot do exactly must fall back, never differ.
"""

from __future__ import annotations

import base64
import copy
import inspect
import json
import random
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest
from conftest import SPECS
from formats import columnar_checks
from formats.columnar_checks import json_spellings
from spec_samples import CDL_V1_INSERT, CDL_V2_INSERT

from udfs.formats import cdl_json_columnar as col
from udfs.formats.cdl_json import CdlJsonDecoder
from udfs.spark_udfs import columnar_feed

TABLES = {
    "public.ct_pg2hudi": {"key": ["id"]},
    "public.nokey": {},
    "s.k2": {"key": ["id", "line"]},
}
PLACEHOLDER = "__debezium_unavailable_value"
B64_PLACEHOLDER = base64.b64encode(PLACEHOLDER.encode()).decode()
_DROP = object()


def _opts(tables: dict[str, Any] | None = None, **options: Any) -> str:
    return json.dumps(
        {"format": "cdl_json", "tables": TABLES if tables is None else tables, "options": options}, sort_keys=True
    )


def compare(opts: str, texts: list[str | None]) -> tuple[int, int]:
    return columnar_checks.compare(col, col.decode_cdl_columnar, opts, texts)


V1 = json.loads(CDL_V1_INSERT)
V2 = json.loads(CDL_V2_INSERT)
ROW = {"count1": 13, "id": 34, "time1": None, "decimalNum": "1.50"}


def _apply(base: dict[str, Any], changes: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(base)
    for name, value in changes.items():
        if value is _DROP:
            out.pop(name, None)
        else:
            out[name] = copy.deepcopy(value)
    return out


def v1(wrap: bool = True, schema: Any = _DROP, **changes: Any) -> dict[str, Any]:
    """The spec's 1.0 sample with payload fields replaced (``_DROP``: removed)."""
    payload = _apply(V1["payload"], changes)
    if not wrap:
        return payload
    return {"schema": V1["schema"] if schema is _DROP else schema, "payload": payload}


def v2(wrap: bool = True, schema: Any = _DROP, source: dict[str, Any] | None = None, **changes: Any) -> dict[str, Any]:
    """The spec's 2.0 sample with payload (and ``source``) fields replaced."""
    payload = _apply(V2["payload"], changes)
    if source is not None:
        payload["source"] = _apply(payload["source"], source)
    if not wrap:
        return payload
    return {"schema": V2["schema"] if schema is _DROP else schema, "payload": payload}


def props(lsn: Any = 163955221008, tx: Any = 57227595) -> dict[str, Any]:
    items = []
    if lsn is not _DROP:
        items.append({"name": "lsn", "value": lsn})
    if tx is not _DROP:
        items.append({"name": "txId", "value": tx})
    return {"properties": items}


def typed_schema(version: str, field: dict[str, Any]) -> dict[str, Any]:
    """The sample's schema with ``decimalNum`` of both images typed by ``field``."""
    schema = copy.deepcopy((V1 if version == "1.0" else V2)["schema"])
    for f in schema["fields"]:
        if f.get("field") in ("data", "after", "before"):
            f["fields"] = [dict(field, field="decimalNum") if g["field"] == "decimalNum" else g for g in f["fields"]]
    return schema


def _cases() -> list[Any]:
    """Messages over every branch; objects are dumped below, texts kept."""
    cases: list[Any] = [V1, V2, V1["payload"], V2["payload"]]
    # ops, both versions, wrapped or not
    for op in ["INSERT", "UPDATE", "DELETE", "insert", "Update", "MERGE", "", None, 1, "ınsert", _DROP]:
        before = ROW if op in ("UPDATE", "DELETE", "Update") else None
        data = None if op == "DELETE" else ROW
        cases += [v1(OPERATION=op, before=before, data=data), v1(False, OPERATION=op, before=before, data=data)]
    for op in ["c", "r", "u", "d", "t", "m", "x", "C", None, 1, _DROP]:
        before = ROW if op in ("u", "d") else None
        after = None if op in ("d", "t", "m") else ROW
        cases += [v2(op=op, before=before, after=after), v2(False, op=op, before=before, after=after)]
    cases.append(
        '{"payload": {"OPERATION": "\\u0049NSERT", "TABLE_NAME": "t", "unique": {"id": 1}, "data": {"id": 1}}}'
    )
    cases.append('{"op": "\\u0063", "source": {"table": "t"}, "unique": {"id": 1}, "after": {"id": 1}}')
    # versions: text, numbers, absent (told by OPERATION / op), unknown
    for mv in ["1.0", "1", 1, 1.0, "2.0", "2", 2, 2.0, "3.0", "1.0 ", True, None, [1], _DROP]:
        cases += [v1(message_version=mv), v2(message_version=mv)]
    cases += [v1(False, message_version=_DROP, OPERATION=None), v2(False, message_version=_DROP, op=_DROP)]
    cases.append({"message_version": None, "OPERATION": "INSERT", "op": "c", "TABLE_NAME": "t", "data": {"id": 1}})
    # message_type and heartbeats
    for mt in ["0", "heartbeat", "HEARTBEAT", "Heartbeat", 0, 1.5, None, True, [1], "hé", _DROP]:
        cases += [v1(message_type=mt), v2(False, message_type=mt)]
    cases += [v1(SEG_OWNER="CDC_CDL", TABLE_NAME="CDC_HEARTBEAT"), v1(SEG_OWNER="cdc_cdl", TABLE_NAME="cdc_heartbeat")]
    cases += [v2(source={"schema": "cdc_cdl", "table": "cdc_heartbeat"})]
    cases += [{"message_type": "heartbeat", "HEARTBEAT_IDENTIFIER": "hb-1", "TIMESTAMP": 1}, {"TIMESTAMP": 1}]
    cases += [v1(OPERATION=None, data=None, before=None), v2(op=None, after=None, before=None), {}]
    # LSN and txId spellings (1.0 properties, 2.0 source)
    lsns = [163955221008, "163955221008", "0123", "26/2C09E510", "0/0", "FFFFFFFF/FFFFFFFF", "0x1A", "0X1a"]
    lsns += ["00AB", "abc", "1000", "FFFFFFFFFFFFFFFF", "1FFFFFFFFFFFFFFFF", "0x", "x/y", "123456789/1", " 12"]
    lsns += ["12 ", "-1", -1, -0, 1.5, 1e5, True, None, "", "lsn-1", 10**25, "١٢", {"a": 1}, [1], _DROP]
    for lsn in lsns:
        cases += [v1(transaction=props(lsn)), v2(source={"lsn": lsn})]
    for tx in [57227595, "57", "0x1F", "1/2", "ab", -3, 2.5, None, True, "", _DROP]:
        cases += [v1(transaction=props(tx=tx)), v2(source={"txId": tx})]
        cases += [v1(transaction=props(_DROP, tx)), v2(source={"txId": tx, "lsn": None})]
    # transaction blocks: absent, null, scalar, properties as an object, odd elements
    for tr in [None, _DROP, "x", [], {}, {"properties": None}, {"properties": "x"}, {"properties": {"lsn": 5}}]:
        cases.append(v1(transaction=tr))
    odd = [
        [{"name": "lsn", "value": 5}, {"name": "lsn", "value": 6}],
        [{"name": "lsn"}, {"name": "txId", "value": 7}],
        [5, "x", None, {"name": "lsn", "value": 9}],
        [{"name": 5, "value": 1}, {"value": 2}, {"name": "LSN", "value": 3}],
        [{"name": "lsn", "value": 5, "extra": {"a": [1]}}, [{"name": "txId", "value": 1}]],
        [{"name": "lsn", "value": {"a": 1}}],
    ]
    cases += [v1(transaction={"properties": p}) for p in odd]
    cases.append('{"OPERATION": "INSERT", "TABLE_NAME": "t", "unique": {"id": 1}, "data": {"id": 1}, '
                 '"transaction": {"properties": [{"name": "lsn", "value": 1, "value": 2}]}}')  # fmt: skip
    cases.append('{"OPERATION": "INSERT", "TABLE_NAME": "t", "unique": {"id": 1}, "data": {"id": 1}, '
                 '"transaction": {"properties": [{"name": "lsn", "name": "txId", "value": 1}]}}')  # fmt: skip
    cases.append('{"OPERATION": "INSERT", "TABLE_NAME": "t", "unique": {"id": 1}, "data": {"id": 1}, '
                 '"transaction": {"properties": [{"name": "\\u006csn", "value": 12}]}}')  # fmt: skip
    # unique: present, absent, null, empty, not an object, several columns, another case
    for unique in [{"id": 34}, None, _DROP, {}, "x", [1], {"ID": 34}, {"id": 34, "count1": 13}, {"id": "34"}]:
        cases += [v1(unique=unique), v1(OPERATION="DELETE", data=None, before=None, unique=unique)]
        cases += [v2(op="u", before=ROW, unique=unique), v2(op="d", before=ROW, after=None, unique=unique)]
    for unique in [{"id": {"a": 1}}, {"id": 1, "ID": 2}, {"id": PLACEHOLDER}, {"id": B64_PLACEHOLDER}, {"Ïd": 1}]:
        cases += [v1(unique=unique), v1(OPERATION="DELETE", data=None, before=None, unique=unique)]
    cases.append('{"OPERATION": "INSERT", "TABLE_NAME": "t", "unique": {"\\u0069d": 1}, "data": {"id": 1}}')
    cases.append('{"OPERATION": "DELETE", "TABLE_NAME": "t", "unique": {"id": 1, "id": 2}, "before": null}')
    cases += [v1(unique={"id": 35}), v2(op="u", before=ROW, after=dict(ROW, id=35), unique={"id": 35})]
    cases += [v2(op="u", before=ROW, after={"count1": 1}, unique={"id": 34}), v1(data={"count1": 1})]
    cases += [v1(unique=None, TABLE_NAME="nokey"), v1(unique={}, TABLE_NAME="k2", data={"id": 1, "line": 2})]
    cases += [v2(unique=None, op="u", before=ROW, after=dict(ROW, id=35))]  # a key change: two rows
    # TOAST placeholders, with and without schema
    for value in [PLACEHOLDER, B64_PLACEHOLDER, B64_PLACEHOLDER[:-2], B64_PLACEHOLDER + "x", "x" + PLACEHOLDER]:
        toast = dict(ROW, decimalNum=value)
        cases += [v1(OPERATION="UPDATE", before=ROW, data=toast), v1(False, OPERATION="UPDATE", data=toast)]
        cases += [v2(op="u", before=toast, after=toast), v2(False, op="u", before=None, after=toast)]
    cases.append(v2(op="u", after=dict(ROW, id=PLACEHOLDER), before=None))
    # typed values: the envelope schema's types (Connect logical types and CDL's own names)
    dec2 = {"type": "bytes", "name": "org.apache.kafka.connect.data.Decimal", "parameters": {"scale": "2"}}
    fields = [
        dec2,
        dict(dec2, parameters={"scale": "8"}),
        dict(dec2, parameters={"scale": "x"}),
        dict(dec2, parameters={}),
        {"type": "int64", "name": "io.debezium.time.MicroTimestamp"},
        {"type": "int64", "name": "org.apache.kafka.connect.data.Timestamp"},
        {"type": "int32", "name": "io.debezium.time.Date"},
        {"type": "string", "name": "io.debezium.time.ZonedTimestamp"},
        {"type": "bytes"},
        {"type": "string", "name": "com.xxx.cdc.data.Decimal"},
        {"type": "int32", "name": "com.xxx.cdc.data.int"},
        {"type": "double"},
        {"type": "boolean"},
        {"type": "int64"},
        {"type": "string", "name": 5},
        {"type": ["x"]},
        {"name": "io.debezium.data.Json"},
    ]
    unscaled = base64.b64encode((-12340).to_bytes(2, "big", signed=True)).decode()
    values = [unscaled, "AA==", "not*base64", 1709164800123, -1, 10**19, "1.50", 1.5, 7, True, None, "NaN", "x"]
    values += [PLACEHOLDER, B64_PLACEHOLDER, "2024-02-29T10:00:00+01:00"]
    for i, field in enumerate(fields):
        for value in values:
            row = dict(ROW, decimalNum=value)
            if i % 2:
                cases.append(v1(schema=typed_schema("1.0", field), OPERATION="UPDATE", before=ROW, data=row))
            else:
                cases.append(v2(schema=typed_schema("2.0", field), op="u", before=row, after=row))
    ts_schema = copy.deepcopy(V1["schema"])
    cases.append(v1(schema=ts_schema, data=dict(ROW, time1=1709164800123), unique={"id": "34"}))
    cases.append(v1(schema=ts_schema, data=dict(ROW, time1="x")))
    cases.append(v1(schema=ts_schema, data=dict(ROW, id="34")))  # an int32 as text: quarantined
    cases.append(v1(schema=ts_schema, data=dict(ROW, count1=1.5)))
    cases.append(v1(schema=ts_schema, unique={"id": "x"}))  # unique typed by its schema
    # values of every JSON kind without schema, escapes, nested values
    for value in ["", "Ü 数 😀", 'q"q', "tab\there", "nl\nnl", "\u2028", "\x00", "/", 0, -1, 2**70, True, False]:
        cases += [v1(False, data=dict(ROW, decimalNum=value)), v2(op="u", before=ROW, after=dict(ROW, count1=value))]
    for value in [1.5, -0.0, 1e300, {"a": 1}, [1, 2]]:
        cases += [v1(False, data=dict(ROW, decimalNum=value))]
    cases.append('{"OPERATION": "INSERT", "TABLE_NAME": "t", "unique": {"id": -0}, "data": {"id": -0, "v": 1.50, '
                 '"w": 1E5, "x": -0.0, "y": "\\ud83d\\ude00 \\u00e9 \\/"}}')  # fmt: skip
    cases.append('{"OPERATION": "INSERT", "TABLE_NAME": "t", "unique": {"id": 1}, "data": {"id": 1, "v": "\\ud800"}}')
    cases.append('{"OPERATION": "INSERT", "TABLE_NAME": "t", "unique": {"id": 1}, "data": {"id": 1' + "0" * 5000 + "}}")
    # images: null, empty, absent, wrong kinds, names twice, escaped and non-ASCII names
    for data in [None, {}, _DROP, "x", [1], {"Id": 1, "iD": 2}, {"id": 1, "VÄ": 2}]:
        cases += [v1(data=data), v2(after=data)]
    for before in [None, {}, "x", ROW]:
        cases += [v1(OPERATION="DELETE", data=None, before=before), v2(op="d", after=None, before=before)]
        cases += [v1(OPERATION="DELETE", data=None, before=before, unique={})]
    cases.append('{"OPERATION": "INSERT", "TABLE_NAME": "t", "unique": {"id": 1}, "data": {"id": 1, "id": 2}}')
    cases.append('{"OPERATION": "INSERT", "TABLE_NAME": "t", "unique": {"id": 1}, "data": {"id": 1, "\\u0076": 2}}')
    # tables and schemas
    for table in ["ct_pg2hudi", "CT_PG2HUDI", "", None, 5, "Ä", "x" * 300, "k2", _DROP]:
        cases += [v1(TABLE_NAME=table), v2(source={"table": table})]
    for schema in ["public", "PUBLIC", None, 7, "", _DROP]:
        cases += [v1(SEG_OWNER=schema), v2(source={"schema": schema})]
    for source in [None, {}, "x", [1]]:
        doc = v2()
        doc["payload"]["source"] = source
        cases.append(doc)
    # times
    for ts in [0, -5, 1707047996013, "1707047996013", "-5", "+5", " 5", "yesterday", 1.5, True, 10**16, None, _DROP]:
        cases += [v1(TIMESTAMP=ts), v2(ts_ms=ts), v2(source={"ts_ms": ts}), v1(ts_ms=ts)]
    # extras
    for value in ["decimalNum", None, 5, 1.25, True, ["a"], "é", _DROP]:
        cases += [v1(LOB_COLUMNS=value), v2(LOB_COLUMNS=value), v1(DATA_STORE=value)]
        cases += [v2(source={"connector": value}), v2(source={"db": value})]
    # envelopes
    cases += [{"schema": None, "payload": V1["payload"]}, {"schema": {}, "payload": V2["payload"]}]
    cases += [{"schema": "x", "payload": V1["payload"]}, {"payload": V2["payload"]}, {"schema": V1["schema"]}]
    cases += [{"schema": V1["schema"], "payload": None}, {"schema": None, "payload": "x"}, {"payload": [1]}]
    cases += [{**V1, "x": 1}, {**V1["payload"], "schema": V1["schema"]}, {**V2["payload"], "payload": 1}]
    cases += [[V1], "5", '"x"', "{", "[]"]
    cases.append('{"schema": {"type": "struct"}, "payload": {"OPERATION": "INSERT", "OPERATION": "INSERT"}}')
    cases.append('{"schema": null, "payload": {"op": "c"}, "payload": {"op": "c"}}')
    return cases


def _spell(cases: list[Any], rng: random.Random) -> list[str | None]:
    return json_spellings(cases, rng)


def test_spec_samples_agree() -> None:
    """The spec's two samples, as the shared spec file holds them (a missing file fails)."""
    path = SPECS / "huawei-cdl-json-and-debezium-json.txt"
    assert path.is_file(), f"spec {path} is missing: ../shared/specs must be beside the repository"
    samples = [line.strip() for line in path.read_text(encoding="utf-8").splitlines() if line.strip().startswith("{")]
    assert samples == [CDL_V1_INSERT, CDL_V2_INSERT]
    n, fallbacks = compare(_opts(), samples)
    assert fallbacks == 0
    n, fallbacks = compare(_opts(tables={}), samples * 2)  # the second time, the schemas are cut out unread
    assert fallbacks == 0
    compare(_opts(database="Shop"), samples)


def test_every_branch_agrees() -> None:
    values = _spell(_cases(), random.Random(5))
    n, fallbacks = compare(_opts(), values)
    assert len(values) > 600, len(values)
    assert n - fallbacks > 250, (n, fallbacks)  # not everything fell back
    assert fallbacks > 150, (n, fallbacks)  # and the malformed ones did
    compare(_opts(tables={}), values)
    compare(_opts(database="Shop", lsn_format="hex"), values)
    compare(_opts(heartbeat_tables=["public.ct_pg2hudi"]), values)
    compare(_opts(heartbeat_tables="PUBLIC.CT_PG2HUDI", lsn_format="HEX"), values)


def test_options_change_the_columnar_result() -> None:
    """The options the columnar path reads: ``database``, ``lsn_format``, ``heartbeat_tables``."""
    texts = [json.dumps(v1(transaction=props("1000", "10"))), json.dumps(v2(source={"lsn": "1000"}))]
    for opts in (_opts(), _opts(database="Shop"), _opts(lsn_format="hex"), _opts(tables={"shop.public.t": {}})):
        n, fallbacks = compare(opts, texts)
        assert fallbacks == 0
    compare(_opts(heartbeat_tables=["public.ct_pg2hudi"]), texts)
    compare(_opts(tables={"shop.public.ct_pg2hudi": {"key": ["count1"]}}, database="shop"), texts)


def test_what_the_columnar_path_takes() -> None:
    """Typical messages stay on the columnar path (a fallback would hide a mistake)."""
    dec = {"type": "bytes", "name": "org.apache.kafka.connect.data.Decimal", "parameters": {"scale": "2"}}
    decs = typed_schema("2.0", dec)
    texts = [
        CDL_V1_INSERT,
        CDL_V2_INSERT,
        json.dumps(v1(OPERATION="UPDATE", before=ROW, data=dict(ROW, decimalNum=PLACEHOLDER))),
        json.dumps(v1(False, OPERATION="DELETE", data=None, before=None)),
        json.dumps(v2(False, op="d", before={"id": 34}, after=None, message_version=_DROP)),
        json.dumps(v2(op="r", source={"lsn": "26/2C09E510", "txId": None}), ensure_ascii=False),
        json.dumps(v2(op="u", before=None, after=dict(ROW, decimalNum=B64_PLACEHOLDER), schema=decs)),
        json.dumps(v2(op="u", before=dict(ROW, decimalNum="AQ=="), after=dict(ROW, decimalNum="AA=="), schema=decs)),
        json.dumps(v1(transaction=props("0x1A", "7"), unique=None, data=dict(ROW, e="ü\n"))),
        json.dumps(v1(transaction=None, unique={}, TIMESTAMP="17", message_version=_DROP)),
        json.dumps(v1(False, SEG_OWNER=None, TABLE_NAME="T", LOB_COLUMNS="decimalNum", DATA_STORE=None)),
    ]
    # dates, times and NUMERIC without precision, decoded column-wise as Debezium's are
    for name, connect_type, value in [
        ("io.debezium.time.Date", "int32", 19782),
        ("io.debezium.time.Date", "int32", -1),
        ("io.debezium.time.MicroTime", "int64", 45_296_000_001),
        ("io.debezium.time.NanoTimestamp", "int64", 1_709_164_800_123_456_789),
        ("io.debezium.time.ZonedTimestamp", "string", "2024-02-29T10:00:00.5+01:00"),
        ("io.debezium.data.VariableScaleDecimal", "struct", {"scale": 3, "value": "AeI="}),
    ]:
        typed = typed_schema("2.0", {"type": connect_type, "name": name})
        texts.append(json.dumps(v2(op="u", before=None, after=dict(ROW, decimalNum=value), schema=typed)))
    n, fallbacks = compare(_opts(), texts)
    assert fallbacks == 0
    n, fallbacks = compare(_opts(database="Shop", lsn_format="hex"), texts)
    assert fallbacks == 0
    # CDL reads no Kafka key (``unique`` is the key): any key, the same result
    keys = [None, "null", '{"id": 1}', "x", '{"payload": {"id": 2}}'] * 2 + [None] * (len(texts) - 10)
    n, fallbacks = columnar_checks.compare(col, col.decode_cdl_columnar, _opts(), texts, keys)
    assert fallbacks == 0


def test_workload_agrees(tmp_path: Path) -> None:
    from bench.data import FORMAT_CASES, tables_config, write_dataset
    from udfs.framing import split_file

    case = FORMAT_CASES["cdl_json"]
    ds = write_dataset(case, tmp_path, 3000, 11)
    tables = {t: dict(v, column_order=list(v["columns"]), name=t) for t, v in tables_config([case]).items()}
    records = [r for p in ds.files for r in split_file(p.read_bytes(), case.framing, {})]
    texts = [r.text for r in records]
    for opts in (_opts(tables=tables), _opts(tables=tables, database="cdl")):
        for i in range(0, len(texts), 1500):
            n, fallbacks = compare(opts, texts[i : i + 1500])
            assert fallbacks == 0, (n, fallbacks)


def test_unit_test_messages_agree() -> None:
    """Every message the CDL unit tests decode, with their options, both ways."""
    import formats.test_cdl_json as unit

    seen: dict[str, list[str | None]] = defaultdict(list)

    class Recording(CdlJsonDecoder):
        def decode(self, record: Any) -> Any:
            options = {k: v for k, v in self.options.items() if k != "tables"}
            seen[json.dumps(options, sort_keys=True)].append(record.text)
            return super().decode(record)

    mp = pytest.MonkeyPatch()
    mp.setattr(unit, "CdlJsonDecoder", Recording)
    ran = 0
    try:
        for name in dir(unit):
            fn = getattr(unit, name)
            if not name.startswith("test_") or not callable(fn):
                continue
            params = [m for m in getattr(fn, "pytestmark", []) if m.name == "parametrize"]
            if not params:
                if not inspect.signature(fn).parameters:
                    fn()
                    ran += 1
                continue
            argnames, values = params[0].args[0], params[0].args[1]
            names = [a.strip() for a in argnames.split(",")] if isinstance(argnames, str) else list(argnames)
            for v in values:
                fn(*(v if len(names) > 1 else (v,)))
                ran += 1
    finally:
        mp.undo()
    assert ran > 30, ran
    total = 0
    for options, texts in seen.items():
        n, _ = compare(_opts(**json.loads(options)), texts)
        compare(_opts(tables={}, **json.loads(options)), texts)
        total += n
    assert total > 50, total


CHARS = ["a", "Z", "é", "😀", ",", ":", '"', "\\", "\n", "\x00", " ", "/", ".", "_"]


def test_random_messages_agree() -> None:
    """Random versions, ops, images, keys, positions and times in every JSON spelling
    (an odd value in a field now and then)."""
    rng = random.Random(23)

    def text() -> str:
        return "".join(rng.choice(CHARS) for _ in range(rng.randint(0, 6)))

    def pick(*choices: Any) -> Any:
        return text() if rng.random() < 0.04 else rng.choice(choices)

    def image() -> dict[str, Any] | None:
        if rng.random() < 0.15:
            return rng.choice([None, {}])
        row: dict[str, Any] = {pick("id", "ID", "count1"): rng.choice([1, 2, "3", None, text()])}
        for _ in range(rng.randint(0, 4)):
            row[pick("v", "decimalNum", "w")] = rng.choice([text(), None, rng.randint(-9, 9), True, 2.5, PLACEHOLDER])
        return row

    cases = []
    for _ in range(1500):
        unique = rng.choice([{"id": rng.choice([1, 2, "3"])}, {}, None, {"ID": 1}])
        lsn = pick(rng.randint(0, 10**12), str(rng.randint(0, 99)), f"{rng.randint(0, 9)}/{rng.randint(0, 99):X}", None)
        tx = pick(rng.randint(0, 10**6), None, "12")
        ts = pick(rng.randint(0, 10**13), None, str(rng.randint(0, 99)))
        table = pick("ct_pg2hudi", "CT_PG2HUDI", "k2", "nokey")
        if rng.random() < 0.5:
            op = pick("INSERT", "UPDATE", "DELETE", "insert")
            doc = v1(OPERATION=op, data=image(), before=image(), unique=unique, TIMESTAMP=ts, TABLE_NAME=table,
                     transaction=props(lsn, tx) if rng.random() < 0.9 else None)  # fmt: skip
        else:
            op = pick("c", "u", "d", "r")
            doc = v2(op=op, after=image(), before=image(), unique=unique, ts_ms=ts,
                     source={"lsn": lsn, "txId": tx, "table": table, "ts_ms": ts})  # fmt: skip
        payload = doc["payload"]
        for name in list(payload):
            if rng.random() < 0.03:
                del payload[name]
        cases.append(doc if rng.random() < 0.5 else payload)
    values = _spell(cases, rng)
    n, fallbacks = compare(_opts(), values)
    assert n - fallbacks > 300, (n, fallbacks)
    compare(_opts(lsn_format="hex", database="db"), values)


def test_empty_batch_and_options() -> None:
    compare(_opts(), [])
    compare("{not json", [CDL_V1_INSERT])
    compare(_opts(columnar="no"), [CDL_V1_INSERT])  # bad option: quarantined with the reason
    compare(_opts(lsn_format="octal"), [CDL_V1_INSERT])
    compare(_opts(database=""), [CDL_V2_INSERT])
    assert columnar_feed(_opts()) is col.decode_cdl_columnar
    assert columnar_feed(_opts(columnar=False)) is None


def test_internal_error_falls_back_with_a_warning(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    texts = [json.dumps(v1(unique={"id": i}, data=dict(ROW, id=i))) for i in range(20)]
    columnar_checks.check_internal_error_falls_back(
        monkeypatch, caplog, col, col.decode_cdl_columnar, _opts(), texts, "cdl_json"
    )


def test_spark_udf_columnar_true_and_false_agree(spark) -> None:
    """``cdc_decode`` in Spark SQL: the same results with ``columnar`` true and false,
    valid and malformed records alike."""
    values = _spell(_cases(), random.Random(7))
    on = columnar_checks.spark_on_and_off(spark, values * 2, _opts(), _opts(columnar=False), "cdl_columnar_in")
    statuses = {json.loads(r)["status"] for r in on.values()}
    assert statuses == {"ok", "skipped", "quarantined"}, statuses
