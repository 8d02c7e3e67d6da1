"""The columnar Debezium JSON decoder gives the very result of ``decode_records``.

Each case is decoded both ways and compared as Arrow (``DECODE_RESULT_DDL``): the
public corpora, the workload (plain and with Kafka Connect logical types), hostile and
edge-case envelopes, and (``test_unit_test_batches_agree``) every batch the Debezium
unit tests hand to ``decode_records``. Cases the columnar decoder cannot do exactly must fall
back, never differ. Run single-process: ``pytest -p no:xdist tests/python/formats/test_debezium_json_columnar.py``.
"""

from __future__ import annotations

import copy
import json
import random
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from formats import columnar_checks

from udfs.formats import columnar
from udfs.formats import debezium_json_columnar as col

CORPORA = Path(__file__).resolve().parents[3].parent / "shared" / "corpora"

TABLES = {
    "inventory.customers": {"key": ["id"]},
    "inventory.orders": {"key": ["order_id", "line_no"]},
    "products": {"key": ["id"]},
    "customers": {"key": ["id"]},
    "t": {"key": ["id"]},
}


def _opts(tables: dict[str, Any] | None = None, **options: Any) -> str:
    return json.dumps({"format": "debezium_json", "tables": tables or TABLES, "options": options}, sort_keys=True)


def compare(opts: str, texts: list[str | None], keys: list[str | None] | None = None) -> tuple[int, int]:
    return columnar_checks.compare(col, col.decode_debezium_columnar, opts, texts, keys)


def _corpus_texts() -> list[str]:
    assert CORPORA.is_dir(), f"{CORPORA} is missing: ../shared/corpora must be beside the repository"
    out = []
    for path in sorted((CORPORA / "flink").glob("debezium-*.txt")):
        out += [line for line in path.read_text().splitlines() if line.strip()]
    for path in sorted((CORPORA / "debezium").glob("*.json")):
        out.append(path.read_text())  # pretty-printed documents: whitespace and newlines
    return out


def test_corpora_agree() -> None:
    texts = _corpus_texts()
    assert texts
    compare(_opts(), texts)
    compare(_opts(table="products"), texts)


def test_workload_agrees_plain_and_logical() -> None:
    from bench.data import workload

    wl = workload()
    events = wl.generate(7, 600)
    rng = random.Random(3)
    plain, logical = [], []
    for ev in events:
        body = wl.render_debezium(ev, rng.random() < 0.5)
        plain.append(json.dumps(body, ensure_ascii=rng.random() < 0.3))
        logical.append(json.dumps(wl.render_debezium_json(ev), separators=(",", ":")))
    tables = {t.name: {"key": list(t.key)} for t in wl.DEFAULT_TABLES}
    n, fallbacks = compare(_opts(tables), plain)
    assert fallbacks == 0, "the plain workload is expected on the columnar path"
    n, fallbacks = compare(_opts(tables), logical)
    assert fallbacks == 0, "Decimal and MicroTimestamp are decoded column-wise"
    compare(_opts(tables), plain + logical + plain[:50])  # mixed, cached schemas


BASE = {
    "before": None,
    "after": {"id": 1, "name": "a"},
    "source": {
        "version": "2.5.0.Final",
        "connector": "mysql",
        "name": "srv",
        "ts_ms": 1700000000000,
        "snapshot": "false",
        "db": "inventory",
        "table": "t",
        "server_id": 1,
        "gtid": None,
        "file": "mysql-bin.000003",
        "pos": 154,
        "row": 0,
    },
    "op": "c",
    "ts_ms": 1700000000123,
}


def _env(**changes: Any) -> dict[str, Any]:
    out = copy.deepcopy(BASE)
    for k, v in changes.items():
        if k.startswith("source_"):
            name = k[len("source_") :]
            if v is ...:
                out["source"].pop(name, None)
            else:
                out["source"][name] = v
        elif v is ...:
            out.pop(k, None)
        else:
            out[k] = v
    return out


def _schema(fields: list[dict[str, Any]]) -> dict[str, Any]:
    row = {"type": "struct", "fields": fields, "optional": True, "name": "x.Value"}
    return {
        "type": "struct",
        "fields": [
            dict(row, field="before"),
            dict(row, field="after"),
            {"type": "struct", "fields": [], "field": "source"},
        ],
    }


def _hostile() -> list[str | None]:
    sch = _schema(
        [
            {"type": "int64", "optional": False, "field": "id"},
            {"type": "string", "optional": True, "field": "name"},
            {"type": "double", "optional": True, "field": "w"},
            {"type": "boolean", "optional": True, "field": "ok"},
            {"type": "int32", "optional": True, "field": "ID2"},
        ]
    )
    envs: list[Any] = [
        _env(),
        _env(op="r"),
        _env(op="u", before={"id": 1, "name": "x"}),
        _env(op="u", before={"id": 2, "name": "x"}),  # key change: two rows
        _env(op="u", before=None),
        _env(op="d", before={"id": 1}, after=None),
        _env(op="d", before=None, after=None),  # no key
        _env(op="t", before=None, after=None),
        _env(op="m"),
        _env(op="x"),
        _env(op=1),
        _env(op=...),
        _env(transaction={"id": "tx1", "total_order": 1}),
        _env(transaction=None),
        _env(after={"id": 1, "name": "__debezium_unavailable_value"}),
        _env(after={"id": 1, "name": "X19kZWJleml1bV91bmF2YWlsYWJsZV92YWx1ZQ=="}),
        _env(after={"id": 1, "ID": 2}),
        _env(after={"ID": 1, "Name": "b"}),
        _env(after={"id": 1, "meta": {"a": [1, 2.50]}}),
        _env(after={"id": 1, "w": 1.50, "e": 1e3, "z": -0.0, "n": -0, "big": 123456789012345678901234567890}),
        _env(after={"id": -0, "ok": True, "no": False, "s": "-0", "nul": None}),
        _env(after={"id": 1, "s": 'q"\\\n\t\r\b\f\u0001\u007f\u2028 é 😀 /'}),
        _env(after={"id": "k\u0000z"}),
        _env(after={}),
        _env(after=[1]),
        _env(after="x"),
        _env(source=None),
        _env(source=...),
        _env(source=[1]),
        _env(source_connector="MySQL"),
        _env(source_connector="postgresql", source_lsn=33000123, source_file=..., source_pos=...),
        _env(source_connector="postgresql", source_lsn=None, source_file=..., source_pos=...),
        _env(source_connector="sqlserver", source_change_lsn="00000027:00000758:0005", source_file=..., source_pos=...),
        _env(source_connector="oracle", source_scn="1234", source_file=..., source_pos=...),
        _env(source_connector=None, source_file=..., source_pos=...),
        _env(source_connector=7),
        _env(source_file=None),
        _env(source_file="nodigits"),
        _env(source_file="bin.0007\n"),
        _env(source_pos="154"),
        _env(source_pos=-1),
        _env(source_pos=1.5),
        _env(source_row=None),
        _env(source_row=True),
        _env(source_ts_ms="1700000000000"),
        _env(source_ts_us=1700000000000123),
        _env(source_ts_ns=1700000000000123456),
        _env(source_ts_ms=99999999999999999),
        _env(source_ts_ms=-1234),
        _env(ts_ms=None),
        _env(ts_ms=1.5),
        _env(ts_ms=True),
        _env(source_snapshot="TRUE"),
        _env(source_snapshot=True),
        _env(source_snapshot="last"),
        _env(source_snapshot="incremental"),
        _env(source_snapshot="İ"),
        _env(source_table=...),
        _env(source_table="", source_collection="coll"),
        _env(source_table=...),
        _env(source_table="T"),
        _env(source_table="x" * 300),
        _env(source_table="nokey"),
        _env(source_db=None),
        _env(source_db=5),
        _env(source_schema="sch"),
        _env(source_txId=77),
        _env(source_gtid="g-1"),
        _env(source_name={"nested": 1}),
        {"schema": sch, "payload": _env()},
        {"schema": sch, "payload": _env(after={"id": "12", "name": 5, "w": "NaN", "ok": None})},
        {"schema": sch, "payload": _env(after={"id": 1.5})},
        {"schema": sch, "payload": _env(after={"id": 1, "w": "abc"})},
        {"schema": sch, "payload": _env(after={"id": 1, "ok": 1})},
        {"schema": sch, "payload": _env(after={"id": 1, "w": 2.25, "ok": False, "ID2": 5, "extra": 3})},
        {"schema": sch, "payload": _env(after={"id": 1, "name": "X19kZWJleml1bV91bmF2YWlsYWJsZV92YWx1ZQ=="})},
        {"schema": sch, "payload": _env(after={"id": "__debezium_unavailable_value"})},
        {"schema": sch, "payload": None},
        {"schema": None, "payload": _env()},
        {"schema": {}, "payload": _env()},
        {"schema": "s", "payload": _env()},
        {"payload": _env()},
        {"schema": sch, "payload": _env(), "x": 1},
        {"schema": sch, "payload": 5},
        {"payload": _env(), "schema": sch},
        {"id": 1, "name": "flattened"},
        [1, 2],
        "str",
        5,
        None,
    ]
    texts: list[str | None] = []
    for e in envs:
        texts.append(json.dumps(e, ensure_ascii=False))
        texts.append(json.dumps(e, ensure_ascii=True, separators=(",", ":")))
        texts.append(json.dumps(e, indent=2))
    texts += [
        None,
        "",
        "   ",
        "null",
        " null ",
        '{"op":"c","after":{"id":1,',
        '{"op":"c","after":{"id":1},}',
        "\ufeff" + json.dumps(_env()),
        json.dumps(_env()) + " x",
        json.dumps(_env()).replace('"name": "a"', '"name": "\\ud800"'),
        json.dumps(_env()).replace('"name": "a"', '"name": "\\ud83d\\ude00"'),
        json.dumps(_env()).replace('"name": "a"', '"name": "\\\\ud800"'),
        json.dumps(_env()).replace('"name": "a"', '"na\\"me": "a"'),
        json.dumps(_env()).replace('"name": "a"', '"\\u006eame": "a"'),
        json.dumps(_env()).replace('"name": "a"', '"name": "a", "name": "b"'),
        json.dumps(_env()).replace('"op": "c"', '"op": "c", "op": "d"'),
        json.dumps(_env()).replace('"name": "a"', '"name": "a\\/b"'),
        json.dumps(_env()).replace('"name": "a"', '"name": NaN'),
        json.dumps(_env()).replace('"name": "a"', '"name": 1E400'),
        json.dumps(_env()).replace('"name": "a"', '"name": ' + "9" * 5000),
        json.dumps(_env()).replace(": ", " :\t ").replace(", ", " ,\r\n "),
    ]
    return texts


def test_hostile_and_edge_cases_agree() -> None:
    texts = _hostile()
    tables = dict(TABLES, coll={"key": ["id"]}, nokey={})
    compare(_opts(tables), texts)
    compare(_opts(tables, table="fallback_table"), texts)
    compare(_opts({"t": {"key": ["ID"]}}), texts)
    compare(_opts({"t": {"key": ["name", "id"]}}), texts)
    rng = random.Random(5)
    for _ in range(5):  # shuffled batches: fallback and fast records interleaved
        sample = rng.sample(texts, len(texts) // 2)
        compare(_opts(tables), sample)


def _dec(value: int) -> str:
    import base64

    length = (value + (value < 0)).bit_length() // 8 + 1
    return base64.b64encode(value.to_bytes(length, "big", signed=True)).decode()


def test_logical_types_agree() -> None:
    rng = random.Random(11)
    fields = [{"type": "int64", "optional": False, "field": "id"}]
    for sc in (0, 1, 2, 6, 7, 10, 38, -2):
        fields.append(
            {
                "type": "bytes",
                "optional": True,
                "name": "org.apache.kafka.connect.data.Decimal",
                "parameters": {"scale": str(sc), "connect.decimal.precision": "38"},
                "field": f"d{sc}".replace("-", "m"),
            }
        )
    fields += [
        {"type": "bytes", "optional": True, "name": "org.apache.kafka.connect.data.Decimal", "field": "noscale"},
        {"type": "int64", "optional": True, "name": "io.debezium.time.MicroTimestamp", "field": "tus"},
        {"type": "int64", "optional": True, "name": "io.debezium.time.Timestamp", "field": "tms"},
        {"type": "int64", "optional": True, "name": "org.apache.kafka.connect.data.Timestamp", "field": "tk"},
        {"type": "int64", "optional": True, "name": "io.debezium.time.NanoTimestamp", "field": "tns"},
        {"type": "int32", "optional": True, "name": "io.debezium.time.Date", "field": "dt"},
        {"type": "bytes", "optional": True, "field": "raw"},
    ]
    sch = _schema(fields)
    values: list[dict[str, Any]] = []
    for _ in range(300):
        v: dict[str, Any] = {"id": rng.randint(0, 10)}
        for f in fields[1:9]:
            if f["field"] == "dm2" and rng.random() < 0.97:
                continue  # a negative scale, left to the fallback: rare
            d = rng.choice([1, 2, 5, 18, 19, 20, 30, 38])
            x = rng.randint(-(10**d) + 1, 10**d - 1)
            v[f["field"]] = rng.choice([_dec(x), _dec(0), None, _dec(-1), _dec(2**127 - 1), _dec(-(2**127))])
        far = rng.random() < 0.05  # beyond the years 1000..9999 or int64 microseconds: the fallback
        v["tus"] = rng.randint(-(2**62), 2**62) if far else rng.choice([rng.randint(-(10**15), 10**16), 0, -1, None])
        v["tms"] = 2**62 if far else rng.choice([rng.randint(-(10**12), 10**13), 0, -1, None])
        v["tk"] = rng.choice([rng.randint(0, 10**13), None])
        values.append(v)
    odd = [
        {"id": 1, "d6": "X19kZWJleml1bV91bmF2YWlsYWJsZV92YWx1ZQ=="},
        {"id": 1, "d6": "X19kZWJleml1bV91bmF2YWlsYWJsZV92YWx1ZR=="},
        {"id": 1, "d6": "__debezium_unavailable_value"},
        {"id": 1, "d6": "AB=C"},
        {"id": 1, "d6": "ABC"},
        {"id": 1, "d6": "A==="},
        {"id": 1, "d6": "AA=="},
        {"id": 1, "d6": ""},
        {"id": 1, "d6": "AAAAAAAAAAAAAAAAAAAAAAAAAAAA"},
        {"id": 1, "d6": "AQ/="},
        {"id": 1, "d6": 12.5},
        {"id": 1, "d6": 12},
        {"id": 1, "d6": True},
        {"id": 1, "tus": "12"},
        {"id": 1, "tus": 1.5},
        {"id": 1, "tus": 10**19},
        {"id": 1, "tns": 5},
        {"id": 1, "dt": 5},
        {"id": 1, "raw": "AQ=="},
        {"id": 1, "noscale": "AQ=="},
    ]
    texts = []
    for v in values + odd:
        env = {"schema": sch, "payload": _env(after=v, op=rng.choice("cru"), before=rng.choice([None, v]))}
        # "AQ/=" written with JSON's escaped solidus
        texts.append(json.dumps(env, separators=(",", ":")).replace('"AQ/="', r'"AQ\/="'))
    n, fallbacks = compare(_opts(), texts)
    assert fallbacks < n // 5, (fallbacks, n)  # most on the columnar path
    compare(_opts(), [json.dumps(_env(after=v)) for v in values + odd])  # schemaless


TIME_FIELDS = [
    {"type": "int64", "optional": False, "field": "id"},
    {"type": "int32", "optional": True, "name": "io.debezium.time.Date", "field": "d"},
    {"type": "int32", "optional": True, "name": "org.apache.kafka.connect.data.Date", "field": "kd"},
    {"type": "int32", "optional": True, "name": "io.debezium.time.Time", "field": "tm"},
    {"type": "int32", "optional": True, "name": "org.apache.kafka.connect.data.Time", "field": "ktm"},
    {"type": "int64", "optional": True, "name": "io.debezium.time.MicroTime", "field": "tu"},
    {"type": "int64", "optional": True, "name": "io.debezium.time.NanoTime", "field": "tn"},
    {"type": "int64", "optional": True, "name": "io.debezium.time.NanoTimestamp", "field": "tsn"},
    {"type": "string", "optional": True, "name": "io.debezium.time.ZonedTimestamp", "field": "z"},
]


def _zoned(rng: random.Random) -> str:
    stamp = f"{rng.randint(1000, 9999)}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}T"
    stamp += f"{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d}"
    stamp += rng.choice(["", ".5", ".123456", ".123456789", ".000001", "." + "7" * 12])
    return stamp + rng.choice(["Z", "Z", "+02:00", "-05:30", "+0545", "-11", "+14:00", "+01:02:03", "-00:00"])


def _time_values(rng: random.Random) -> dict[str, Any]:
    """Values of every date and time kind, in range, their edges and nulls."""
    day = rng.choice([rng.randint(-354285, 2932896), -354285, 2932896, 0, -1, None])
    return {
        "id": rng.randint(0, 10),
        "d": day,
        "kd": rng.choice([rng.randint(-50000, 50000), None]),
        "tm": rng.choice([rng.randint(0, 86_399_999), 0, 86_399_999, -1, -86_399_999, 10**11, None]),
        "ktm": rng.choice([rng.randint(0, 86_399_999), None]),
        "tu": rng.choice([rng.randint(-(10**12), 10**14), 0, -1, 999_999, 10**17, None]),
        "tn": rng.choice([rng.randint(0, 86_399_999_999_999), 1, 10**18, -(10**18), None]),
        # int64 nanoseconds within 9e18 (the years 1684..2255); beyond: the fallback
        "tsn": rng.choice([rng.randint(-9 * 10**18 + 1, 9 * 10**18 - 1), 1_700_000_000_123_456_789, -1, 0, None]),
        "z": rng.choice(
            [_zoned(rng), "1970-01-01T00:00:00Z", "9999-12-31T23:59:59.999999Z", "1000-01-01T01:00:00+01:00", None]
        ),
    }


def test_dates_and_times_agree_and_stay_columnar() -> None:
    """Date, Time, MicroTime, NanoTime, NanoTimestamp and ZonedTimestamp values are
    decoded column-wise: as ``decode_records`` writes them, and without the fallback."""
    rng = random.Random(5)
    sch = _schema(TIME_FIELDS)
    values = [_time_values(rng) for _ in range(400)]
    texts = [json.dumps({"schema": sch, "payload": _env(after=v, op=rng.choice("cru"))}) for v in values]
    n, fallbacks = compare(_opts(), texts)
    assert (n, fallbacks) == (400, 0)


def test_odd_dates_and_times_fall_back_or_agree() -> None:
    """Values the column-wise path must leave to the decoder: out of range, of the wrong
    JSON kind, odd offsets, dates that do not exist, moments out of the years 1000..9999,
    other digits."""
    sch = _schema(TIME_FIELDS)
    odd: list[dict[str, Any]] = [
        {"d": -354286},  # 0999-12-31: Python writes it, this path leaves it
        {"d": 2932897},  # year 10000: decode_records quarantines it
        {"d": 10**12},
        {"d": 2**63},  # beyond int64
        {"d": -(2**63) - 1},
        {"d": 10**30},
        {"d": 1.5},
        {"d": "12"},
        {"d": True},
        {"tm": 10**19},
        {"tm": -(10**17)},
        {"tn": 2**63 - 1},
        {"tn": "5"},
        {"tsn": 2**63},
        {"tsn": 2**63 - 1},
        {"tsn": -(2**63)},
        {"tsn": -9 * 10**18},
        {"tsn": 1.0},
        {"z": "2020-01-01T10:00:00+2:00"},
        {"z": "2020-01-01T10:00:00+02:0"},
        {"z": "2020-01-01T10:00:00+02:00Z"},
        {"z": "2020-01-01T10:00:00+99:99:99"},
        {"z": "2020-01-01T10:00:00-0530:"},
        {"z": "9999-12-31T23:00:00-01:00"},  # year 10000 in UTC: decode_records quarantines it
        {"z": "1000-01-01T00:30:00+01:00"},  # 0999-12-31 in UTC
        {"z": "2020-02-30T10:00:00Z"},
        {"z": "2021-02-29T00:00:00Z"},
        {"z": "2024-02-29T00:00:00Z"},
        {"z": "2020-01-01T24:00:00Z"},
        {"z": "2020-01-01T23:59:60Z"},
        {"z": "2020-13-01T00:00:00Z"},
        {"z": "0999-01-01T00:00:00Z"},
        {"z": "0000-01-01T00:00:00Z"},
        {"z": "2020-01-01T00:00:00.Z"},
        {"z": "2020-01-01T00:00:00"},
        {"z": "2020-01-01 00:00:00Z"},
        {"z": "2020-01-01T00:00:00Z\n"},
        {"z": "\u0662020-01-01T00:00:00Z"},
        {"z": "2020-01-01T00:00:00.\u0661\u0662Z"},
        {"z": "2020-01-01T00:00:00\u005a"},
        {"z": 1577836800},
        {"z": "__debezium_unavailable_value"},
        {"z": "X19kZWJleml1bV91bmF2YWlsYWJsZV92YWx1ZQ=="},
        {"d": "__debezium_unavailable_value"},
        {"d": "X19kZWJleml1bV91bmF2YWlsYWJsZV92YWx1ZQ=="},
    ]
    texts = []
    for v in odd:
        text = json.dumps({"schema": sch, "payload": _env(after=dict(v, id=1), op="u")}, ensure_ascii=False)
        texts.append(text.replace("\\\\", "\\"))  # the escapes above as JSON escapes
    compare(_opts(), texts)
    # and in a batch with typical values, whose records stay columnar
    rng = random.Random(6)
    typical = [json.dumps({"schema": sch, "payload": _env(after=_time_values(rng))}) for _ in range(100)]
    n, fallbacks = compare(_opts(), typical + texts)
    assert fallbacks <= len(texts), (n, fallbacks)


def test_mutated_dates_and_times_agree() -> None:
    """Valid ZonedTimestamp texts with one character changed, inserted or dropped, and
    integers of every magnitude in each date and time kind: column-wise or not, the
    result is ``decode_records``'."""
    rng = random.Random(8)
    sch = _schema(TIME_FIELDS)
    alphabet = "0123456789-:TZ.+ zt\u0660\u00e9"
    values: list[dict[str, Any]] = []
    for _ in range(600):
        z = list(_zoned(rng))
        at = rng.randrange(len(z))
        change = rng.choice(["set", "insert", "drop"])
        if change == "set":
            z[at] = rng.choice(alphabet)
        elif change == "insert":
            z.insert(at, rng.choice(alphabet))
        else:
            del z[at]
        field = rng.choice([f["field"] for f in TIME_FIELDS[1:-1]])
        magnitude = rng.choice([0, 1, 5, 9, 12, 15, 17, 18, 19, 20, 25])
        number = rng.choice([-1, 1]) * rng.randint(0, 10**magnitude)
        values.append({"id": 1, "z": "".join(z), field: number})
    texts = [json.dumps({"schema": sch, "payload": _env(after=v, op="c")}) for v in values]
    compare(_opts(), texts)


B64_PLACEHOLDER = "X19kZWJleml1bV91bmF2YWlsYWJsZV92YWx1ZQ=="
VSD = {"type": "struct", "optional": True, "name": "io.debezium.data.VariableScaleDecimal", "version": 1}


def test_variable_scale_decimals_agree_and_stay_columnar() -> None:
    """PostgreSQL NUMERIC without a precision (``{"scale": s, "value": base64}``) is
    decoded column-wise, as ``decode_records`` writes it; odd objects fall back."""
    rng = random.Random(9)
    sch = _schema([{"type": "int64", "optional": False, "field": "id"}, dict(VSD, field="n"), dict(VSD, field="m")])

    def vsd(scale: int, unscaled: int) -> dict[str, Any]:
        return {"scale": scale, "value": _dec(unscaled)}

    typical = []
    for i in range(300):
        digits = rng.choice([1, 3, 10, 19, 30, 38])
        unscaled = rng.randint(-(10**digits) + 1, 10**digits - 1)
        row: dict[str, Any] = {"id": i, "n": vsd(rng.randint(0, 38), unscaled), "m": rng.choice([None, vsd(0, 0)])}
        if rng.random() < 0.5:
            row["n"] = {"value": row["n"]["value"], "scale": row["n"]["scale"]}  # members in the other order
        typical.append(json.dumps({"schema": sch, "payload": _env(after=row, op=rng.choice("cru"))}))
    n, fallbacks = compare(_opts(), typical)
    assert (n, fallbacks) == (300, 0)
    odd_values: list[Any] = [
        {"scale": 2},
        {"value": "AQ=="},
        {"scale": 2, "value": "AQ==", "x": 1},
        {"scale": 2, "value": "AQ==", "scale2": 1},
        {"scale": -1, "value": "AQ=="},
        {"scale": 39, "value": "AQ=="},
        {"scale": 100, "value": "AQ=="},
        {"scale": 2.0, "value": "AQ=="},
        {"scale": "2", "value": "AQ=="},
        {"scale": True, "value": "AQ=="},
        {"scale": None, "value": "AQ=="},
        {"scale": 2, "value": None},
        {"scale": 2, "value": 1},
        {"scale": 2, "value": "AQ"},
        {"scale": 2, "value": "*Q=="},
        {"scale": 2, "value": ""},
        {"scale": 2, "value": {"a": 1}},
        {"scale": 2, "value": ["AQ=="]},
        {"scale": {"a": 1}, "value": "AQ=="},
        {"scale": 2, "value": "X19kZWJleml1bV91bmF2YWlsYWJsZV92YWx1ZQ=="},
        {"scale": 2, "value": "X19kZWJleml1bV91bmF2YWlsYWJsZV92YWx1ZR=="},
        {"scale": 2, "value": "__debezium_unavailable_value"},
        {"scale": 2, "value": _dec(2**127 - 1)},
        {"scale": 2, "value": _dec(2**127)},
        {},
        "X19kZWJleml1bV91bmF2YWlsYWJsZV92YWx1ZQ==",
        "__debezium_unavailable_value",
        "1.5",
        12,
        [1],
    ]
    odd = [json.dumps({"schema": sch, "payload": _env(after={"id": 1, "n": v}, op="u")}) for v in odd_values]
    odd.append(odd[0].replace('"scale"', '"sc\\u0061le"'))  # an escaped member name
    odd.append(odd[0].replace('"scale": 2}', '"scale": 2, "scale": 3}'))  # a member twice
    odd.append(json.dumps({"payload": _env(after={"id": 1, "n": {"scale": 2, "value": "AQ=="}})}))  # no schema
    compare(_opts(), odd)
    toast = [json.dumps({"schema": sch, "payload": _env(after={"id": 1, "n": B64_PLACEHOLDER}, op="u")})]
    assert compare(_opts(), toast) == (1, 0)  # the placeholder's base64: not provided, column-wise
    n, fallbacks = compare(_opts(), typical[:50] + odd)
    assert fallbacks <= len(odd), (n, fallbacks)


def test_kafka_keys_agree() -> None:
    from bench.data import workload

    wl = workload()
    rng = random.Random(23)
    texts, keys = [], []
    for ev in wl.generate(9, 800):
        body = wl.render_debezium(ev, rng.random() < 0.5, logical_types=rng.random() < 0.3)
        texts.append(json.dumps(body, ensure_ascii=rng.random() < 0.3))
        keys.append(
            json.dumps(wl.render_key(ev, rng.random() < 0.5), separators=rng.choice([(",", ":"), (", ", ": ")]))
        )
    tables = {t.name: {"key": list(t.key)} for t in wl.DEFAULT_TABLES}
    n, fallbacks = compare(_opts(tables), texts, keys)
    assert fallbacks < n // 10, (fallbacks, n)
    n, fallbacks = compare(_opts({}), texts, keys)  # no configured key: the Kafka key's columns
    assert fallbacks < n // 10, (fallbacks, n)
    key_schema = {"type": "struct", "fields": [{"type": "int64", "optional": False, "field": "id"}]}
    dec_schema = {
        "type": "struct",
        "fields": [
            {
                "type": "bytes",
                "name": "org.apache.kafka.connect.data.Decimal",
                "parameters": {"scale": "2"},
                "field": "id",
            }
        ],
    }
    date_schema = {"type": "struct", "fields": [{"type": "int32", "name": "io.debezium.time.Date", "field": "id"}]}
    zoned_schema = {
        "type": "struct",
        "fields": [{"type": "string", "name": "io.debezium.time.ZonedTimestamp", "field": "id"}],
    }
    odd_keys = [
        None,
        "null",
        " null ",
        "{",
        "5",
        '"k"',
        "[1]",
        "{}",
        '{"id": 1}',
        '{"id": 2}',
        '{"ID": 1}',
        '{"id": 1, "ID": 2}',
        '{"id": "1"}',
        '{"id": 1.5}',
        '{"id": null}',
        '{"id": {"a": 1}}',
        '{"other": 1}',
        '{"name": "a", "id": 1}',
        '{"id": 1, "name": "a"}',
        '{"i\\u0064": 1}',
        json.dumps({"schema": key_schema, "payload": {"id": 1}}),
        json.dumps({"schema": key_schema, "payload": {"id": "x"}}),
        json.dumps({"schema": key_schema, "payload": None}),
        json.dumps({"schema": key_schema, "payload": 5}),
        json.dumps({"schema": None, "payload": {"id": 1}}),
        json.dumps({"schema": dec_schema, "payload": {"id": "AQ=="}}),
        json.dumps({"schema": dec_schema, "payload": {"id": "A"}}),
        json.dumps({"schema": date_schema, "payload": {"id": 19782}}),
        json.dumps({"schema": date_schema, "payload": {"id": 10**9}}),
        json.dumps({"schema": zoned_schema, "payload": {"id": "2024-02-29T10:00:00.5Z"}}),
        json.dumps({"schema": zoned_schema, "payload": {"id": "2024-02-29T10:00:00+01:00"}}),
        json.dumps({"payload": {"id": 1}, "x": 1}),
    ]
    envs = [
        _env(),
        _env(op="d", before={"id": 1}, after=None),
        _env(op="d", before=None, after=None),
        _env(op="u", before={"id": 1}, after={"id": 2, "name": "b"}),
        _env(op="u", before=None, after={"name": "b"}),
        _env(op="r", after={"ID": 1, "Name": "b"}),
        {"schema": _schema([{"type": "int64", "field": "id"}]), "payload": _env()},
    ]
    texts2, keys2 = [], []
    for e in envs:
        for k in odd_keys:
            texts2.append(json.dumps(e))
            keys2.append(k)
    for tables2 in (TABLES, {}, {"t": {"key": ["name"]}}):
        compare(_opts(tables2), texts2, keys2)


def test_empty_batch() -> None:
    assert len(col.decode_debezium_columnar(_opts(), pa.array([], pa.string()))) == 0


def _wide_envelope(table: int, width: int, row: int) -> str:
    """A Debezium envelope with its Kafka Connect schema: a table of ``width`` columns
    whose names depend on ``table``, so each table has a schema text of its own."""
    names = ["id"] + [f"t{table}_column_{i:04d}" for i in range(width)]
    fields = [{"type": "int64", "optional": False, "field": "id"}]
    fields += [{"type": "string", "optional": True, "field": n} for n in names[1:]]
    value = {"type": "struct", "optional": True, "name": f"db.t{table}.Value", "fields": fields}
    schema = {
        "type": "struct",
        "name": f"db.t{table}.Envelope",
        "fields": [
            {**value, "field": "before"},
            {**value, "field": "after"},
            {"type": "struct", "optional": False, "field": "source", "fields": [
                {"type": "string", "optional": False, "field": "db"},
                {"type": "string", "optional": False, "field": "table"},
                {"type": "int64", "optional": False, "field": "ts_ms"},
            ]},
            {"type": "string", "optional": False, "field": "op"},
            {"type": "int64", "optional": True, "field": "ts_ms"},
        ],
    }  # fmt: skip
    after = {"id": row, **{n: f"v{row}" for n in names[1:]}}
    payload = {"before": None, "after": after, "source": {"db": "db", "table": f"t{table}", "ts_ms": row},
               "op": "c", "ts_ms": row}  # fmt: skip
    return json.dumps({"schema": schema, "payload": payload})


def test_schema_cache_is_bounded_by_bytes(monkeypatch: pytest.MonkeyPatch) -> None:
    """Wide tables' schemas are emptied from the cache past its byte bound, between
    batches; the results stay those of ``decode_records`` before and after."""
    monkeypatch.setattr(columnar, "_MAX_SCHEMA_BYTES", 200_000)  # the cache is shared there
    col.clear_schema_cache()
    tables = {f"db.t{t}": {"key": ["id"]} for t in range(12)}
    sizes = []
    for t in range(12):
        texts = [_wide_envelope(t, 300, row) for row in range(3)]  # a schema of ~40 kB
        records, fallbacks = compare(_opts(tables), texts)
        assert (records, fallbacks) == (3, 0)
        sizes.append(col.schema_cache_size())
    col.clear_schema_cache()
    one = sizes[0][1]
    assert sizes[0][0] == 1 and 30_000 < one < 60_000, sizes[0]
    # emptied as soon as a batch starts past the bound: never more than the bound plus
    # one batch's schemas, and the count went back down at least once
    assert max(b for _, b in sizes) <= 200_000 + one, sizes
    assert any(later[0] < earlier[0] for earlier, later in zip(sizes, sizes[1:], strict=False)), sizes


def test_unit_test_batches_agree(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every ``decode_records`` call the Debezium unit tests make, decoded both ways."""
    seen = columnar_checks.replay_unit_tests(monkeypatch, "formats.test_debezium_json", ("debezium_json",), compare)
    assert seen


def test_bad_options_and_other_formats_fall_back() -> None:
    texts = [json.dumps(_env())]
    compare("{not json", texts)
    compare(json.dumps({"format": "no_such_format"}), texts)
    compare(json.dumps({"format": "cdl_json", "tables": TABLES}), texts)


CHARS = [
    "a",
    "Z",
    "é",
    "😀",
    "\uffff",
    "\U00010000",
    ",",
    ":",
    '"',
    "\\",
    "\n",
    "\x00",
    "\x1f",
    "\x7f",
    "\u2028",
    " ",
    "/",
]


def test_random_values_and_spellings_agree() -> None:
    """Values and names of random characters (escapes, controls, astral planes), every
    JSON spelling (ASCII-escaped, compact, indented), mixed with schemas."""
    rng = random.Random(17)

    def text() -> str:
        return "".join(rng.choice(CHARS) for _ in range(rng.randint(0, 8)))

    sch = _schema([{"type": "int64", "optional": False, "field": "id"}, {"type": "string", "field": "s"}])
    texts = []
    for _ in range(1500):
        after: dict[str, Any] = {"id": rng.choice([rng.randint(-(2**63), 2**63 - 1), 0, -1, "7", None])}
        for _ in range(rng.randint(0, 4)):
            name = rng.choice(["s", "t", "u", "S", text()])
            after[name] = rng.choice([text(), None, rng.randint(-10, 10), True, 1.25, "__debezium_unavailable_value"])
        env: Any = _env(op=rng.choice("crud"), after=after, before=rng.choice([None, after, {"id": 1}]))
        env["source"]["table"] = rng.choice(["t", "T", "t" + text()])
        if rng.random() < 0.5:
            env = {"schema": sch, "payload": env}
        texts.append(
            json.dumps(
                env,
                ensure_ascii=rng.random() < 0.4,
                indent=rng.choice([None, None, 1]),
                separators=rng.choice([(",", ":"), (", ", ": ")]),
            )
        )
    n, fallbacks = compare(_opts(), texts)
    assert fallbacks < n, "some on the columnar path"


def test_internal_error_falls_back_with_a_warning(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    columnar_checks.check_internal_error_falls_back(
        monkeypatch, caplog, col, col.decode_debezium_columnar, _opts(), _corpus_texts()[:20], "debezium_json"
    )
