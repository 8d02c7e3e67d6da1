"""The columnar Arcion internal CDC JSON decoder gives the very result of ``decode_records``.

Each case is decoded both ways and compared as Arrow (``DECODE_RESULT_DDL``): the
documentation's samples (the shared corpus), the benchmark's workload, every branch of
the decoder (ops, ``exists`` codes, images, ``"null"`` texts, tables, cursors of both
layouts, operationcounts, typo keys) in valid and malformed spellings, and random
records. What the columnar path cannot do exactly must fall back, never differ.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest
from formats import columnar_checks
from formats.columnar_checks import json_spellings

from udfs.formats import arcion_internal_json_columnar as col
from udfs.spark_udfs import columnar_feed

SHARED = Path(__file__).resolve().parents[3].parent / "shared"
ARCION = SHARED / "corpora" / "arcion" / "internal-json"
SPEC = SHARED / "specs" / "arcion-internal-cdc-format-s3.txt"
SAMPLES = [f"{mode}-{op}.json" for mode in ("snapshot", "realtime") for op in ("insert", "update", "delete")]

TABLES = {
    "tpch_scale_0_01.default_schema.nation": {"key": ["n_nationkey"]},
    "io_blitzz.region": {"key": ["r_regionkey"]},
    "db.s.t": {"key": ["id"]},
    "s.t": {"key": ["id"]},
    "db.t": {"key": ["id"]},
    "t": {"key": ["id"]},
    "db.s.k2": {"key": ["id", "line"]},
    "db.s.up": {"key": ["ID"]},  # upper case: never matches the lower-cased images
}


def _opts(tables: dict[str, Any] | None = None, **options: Any) -> str:
    return json.dumps(
        {"format": "arcion_internal_json", "tables": TABLES if tables is None else tables, "options": options},
        sort_keys=True,
    )


def compare(opts: str, texts: list[str | None]) -> tuple[int, int]:
    return columnar_checks.compare(col, col.decode_arcion_internal_columnar, opts, texts)


def read(name: str) -> str:
    """A corpus file; a missing shared file is a failure, never a skip."""
    path = ARCION / name
    assert path.is_file(), f"missing shared corpus file {path}"
    return path.read_text(encoding="utf-8")


_DROP = object()
MYSQL_CURSOR = {
    "extractorId": 0,
    "timestamp": 1700000000123,
    "extractionTimestamp": 1700000000456,
    "log": "log-bin.000003",
    "position": 1444,
    "logSeqNum": 1,
    "slaveServerId": 1,
    "v": 2,
}
OTHER_CURSOR = {
    "extractorId": 0,
    "nodeID": "node1",
    "timestamp": 1620788088431,
    "extractionTimestamp": 1620788088500,
    "dscId": 1620787053905,
    "mutId": 326118,
    "partNum": 1,
    "v": 2,
}
COUNTS = {"insertCount": 6, "updateCount": 1, "deleteCount": 0, "replaceCount": 0}


def cursor(base: dict[str, Any] | None = None, **fields: Any) -> str:
    out = dict(MYSQL_CURSOR if base is None else base)
    for name, value in fields.items():
        if value is _DROP:
            out.pop(name, None)
        else:
            out[name] = value
    return json.dumps(out, separators=(",", ":"))


def record(
    op: Any = "U",
    before: Any = None,
    after: Any = None,
    exists: Any = None,
    table: Any = None,
    **fields: Any,
) -> dict[str, Any]:
    out: dict[str, Any] = {
        "tableName": {"namespace": {"catalog": "db", "schema": "s", "hash": 1}, "name": "t", "hash": 2}
        if table is None
        else table,
        "opType": op,
        "cursor": cursor(),
        "before": {"id": "1", "v": "old", "w": "null"} if before is None else before,
        "after": {"id": "1", "v": "new", "w": "null"} if after is None else after,
        "exists": {"id": "3", "v": "3", "w": "0"} if exists is None else exists,
        "operationcount": json.dumps(COUNTS, separators=(",", ":")),
    }
    out.update(fields)
    return {name: value for name, value in out.items() if value is not _DROP}


def ns(catalog: Any = "db", schema: Any = "s", name: Any = "t") -> dict[str, Any]:
    space = {k: v for k, v in {"catalog": catalog, "schema": schema, "hash": 1}.items() if v is not _DROP}
    return {k: v for k, v in {"namespace": space, "name": name, "hash": 2}.items() if v is not _DROP}


def _cases() -> list[Any]:
    """Records over every branch; objects are dumped below, texts kept."""
    cases: list[Any] = []
    # ops, with the images and exists each op writes
    for op in ["I", "U", "D", "i", "X", "", None, 1, ["I"]]:
        cases.append(record(op))
    cases.append(record("I", before={}, after={"id": "1", "v": "x"}, exists={"id": "1", "v": "1"}))
    cases.append(record("D", before={"id": "1", "v": "x"}, after={}, exists={"id": "2", "v": "2"}))
    cases.append(record("D", after=_DROP, exists={"id": "2", "v": "2", "w": "2"}))
    cases.append('{"tableName": {"name": "t"}, "opType": "\\u0055", "before": {"id": "1"}, "after": {"id": "2"}, '
                 '"exists": {"id": "3"}}')  # fmt: skip
    # exists codes: text, integers, odd spellings, every code
    for code in ["0", "1", "2", "3", 0, 1, 2, 3, "4", 4, -1, " 1", "01", "1.0", 1.0, True, None, "", "x", "١", [1]]:
        cases.append(record(exists={"id": "3", "v": code, "w": "0"}))
    for codes in [("1", "2"), ("2", "1"), ("3", "0"), ("0", "3"), ("1", "1"), ("2", "2"), ("0", "0")]:
        cases.append(record(exists={"id": codes[0], "v": codes[1]}))
        cases.append(record("D", exists={"id": codes[0], "v": codes[1]}))
    cases.append(record(exists={"id": "0", "v": "0", "w": "0"}))  # no image at all: no key
    cases.append(record(exists={"v": "1", "id": "3"}))  # the exists order, not the images'
    cases.append(record(exists={}))
    # missing or odd exists, images that lack a column exists names
    for exists in [_DROP, None, "x", [1], 5]:
        cases.append(record(exists=exists))
        cases.append(record("I", before=_DROP, exists=exists))
        cases.append(record("D", after=_DROP, exists=exists))
    cases.append(record(after={"id": "1"}, exists={"id": "3", "v": "1"}))
    cases.append(record(before={"v": "x"}, exists={"id": "3", "v": "2"}))
    cases.append(record(after={"id": "1", "v": "x", "extra": "e"}, exists={"id": "3", "v": "1"}))
    # images: "null" vs JSON null, every JSON kind, absent / null / {} / not an object
    values = ["null", None, "NULL", "Null", "", "Ü 数 😀", 'q"q', "tab\there", "\u2028", "\x00", "/", 0, -0, 5]
    values += [2**70, True, False, 1.5, 1e300, {"a": 1}, [1, 2], " null"]
    for v in values:
        cases.append(record(after={"id": "1", "v": v, "w": "x"}, exists={"id": "3", "v": "1", "w": "1"}))
        cases.append(record("D", before={"id": "1", "v": v}, exists={"id": "2", "v": "2"}))
    cases.append(record(after={"id": "null", "v": "x"}, exists={"id": "3", "v": "1"}))  # a NULL key column
    for image in [_DROP, None, {}, "x", [1], 5]:
        cases.append(record(before=image))
        cases.append(record(after=image))
        cases.append(record("I", before=image, after={"id": "1"}, exists={"id": "1"}))
    cases.append('{"tableName": {"name": "t"}, "opType": "I", "after": {"id": "1", "v": "\\ud83d\\ude00 \\u00e9 \\/"}, '
                 '"exists": {"id": "1", "v": "1"}}')  # fmt: skip
    cases.append('{"tableName": {"name": "t"}, "opType": "I", "after": {"id": "1", "v": "\\ud800"}, '
                 '"exists": {"id": "1", "v": "1"}}')  # fmt: skip
    cases.append('{"tableName": {"name": "t"}, "opType": "I", "after": {"id": "n\\u0075ll", "v": "null"}, '
                 '"exists": {"id": "1", "v": "1"}}')  # fmt: skip
    cases.append('{"tableName": {"name": "t"}, "opType": "I", "after": {"id": 1' + "0" * 5000 + "}, "
                 '"exists": {"id": "1"}}')  # fmt: skip
    cases.append('{"tableName": {"name": "t"}, "opType": "I", "after": {"id": "1", "id": "2"}, "exists": {"id": "1"}}')
    cases.append('{"tableName": {"name": "t"}, "opType": "I", "after": {"id": "1"}, "exists": {"id": "1", "id": "0"}}')
    cases.append('{"tableName": {"name": "t"}, "opType": "I", "after": {"id": "1", "\\u0076": "2"}, '
                 '"exists": {"id": "1", "v": "1"}}')  # fmt: skip
    cases.append(record("I", after={"Id": "1", "iD": "2"}, exists={"Id": "1", "iD": "1"}))
    cases.append(record("I", after={"id": "1", "VÄ": "2"}, exists={"id": "1", "VÄ": "1"}))
    cases.append(record("I", after={"ID": "1", "V": "2"}, exists={"ID": "1", "V": "1"}))
    # keys: a composite key, a key change, no key configured, an upper-case configured key
    cases.append(record("I", after={"id": "1", "line": "2"}, exists={"id": "1", "line": "1"}, table=ns(name="k2")))
    cases.append(record("I", after={"id": "1"}, exists={"id": "1"}, table=ns(name="k2")))
    cases.append(record(after={"id": "2", "v": "x"}, exists={"id": "3", "v": "1"}))  # key change: two rows
    cases.append(record(after={"id": "1", "v": "x"}, exists={"id": "2", "v": "1"}))  # key only before
    cases += [record(table=ns(name="up")), record(table=ns(name="nokey")), record(table=ns(catalog="x"))]
    # tables: names, namespaces, catalog / schema of any kind
    for name in ["t", "T", "", None, 5, "Ä", "x" * 300, _DROP, {"a": 1}]:
        cases.append(record(table=ns(name=name)))
    for catalog in ["db", None, 5, True, "DB", "", 1.5, {"a": 1}, [1], _DROP]:
        cases.append(record(table=ns(catalog=catalog)))
    for schema in ["s", None, 7, "", _DROP]:
        cases.append(record(table=ns(schema=schema)))
    for table in [None, {}, "t", [1], 5, {"name": "t"}, {"name": "t", "namespace": None}]:
        cases.append(record(table=table))
    for namespace in [None, {}, "x", 0, [1], {"schema": "s"}, {"catalog": "db"}]:
        cases.append(record(table={"namespace": namespace, "name": "t"}))
    cases.append(
        '{"tableName": {"name": "t", "name": "u"}, "opType": "I", "after": {"id": "1"}, "exists": {"id": "1"}}'
    )
    cases.append('{"tableName": {"\\u006eame": "t"}, "opType": "I", "after": {"id": "1"}, "exists": {"id": "1"}}')
    cases.append('{"tableName": {"name": "\\u0074"}, "opType": "I", "after": {"id": "1"}, "exists": {"id": "1"}}')
    # cursors: both layouts, typo keys, tolerant spellings, odd values, not JSON, inline, absent
    for c in [
        cursor(),
        cursor(OTHER_CURSOR),
        cursor(logSeqNum=_DROP),
        cursor(logSeqNum=None),
        cursor(logSeqNum=0),
        cursor(log="log-bin.000010"),
        cursor(log="nodigits"),
        cursor(log="x.00"),
        cursor(log=""),
        cursor(log=12),
        cursor(log=None),
        cursor(log="l.1\n"),
        cursor(log="l.١"),
        cursor(log="é.5"),
        cursor(log=_DROP),
        cursor(position="1444"),
        cursor(position="0045"),
        cursor(position=" 1"),
        cursor(position=-1),
        cursor(position="-1"),
        cursor(position=1.5),
        cursor(position=True),
        cursor(position=10**25),
        cursor(position=None),
        cursor(position=_DROP),
        cursor(position="x"),
        cursor(timestamp=_DROP),
        cursor(timestamp=None),
        cursor(timestamp="1700000000123"),
        cursor(timestamp=10**15),
        cursor(timestamp=10**16),
        cursor(timestamp=-5),
        cursor(timestamp=0),
        cursor(extractionTimestamp=_DROP),
        cursor(extractionTimestamp=2**62),
        cursor(OTHER_CURSOR, dscId=_DROP),
        cursor(OTHER_CURSOR, mutId=None),
        cursor(OTHER_CURSOR, mutId="12"),
        cursor(OTHER_CURSOR, dscId=-1),
        cursor(OTHER_CURSOR, nodeID={"a": 1}),
        cursor(OTHER_CURSOR, nodeID=5),
        cursor(OTHER_CURSOR, partNum="x"),
        cursor(OTHER_CURSOR, v=[1]),
        cursor(slaveServerId="x"),
        cursor(extractorId=None),
        cursor(unknownKey={"a": [1]}),
        '{"extractorId":0,"nodeID":"node1","timestamp":1620788088431,"extraction Timestamp":1620788088431,'
        '"dscI":1620787053905,"mutId":326118,"partNu m":1,"v":2}',
        '{"EXTRACTIONTIMESTAMP":5,"Time_Stamp":7,"dsc_id":1,"MUTID":2}',
        '{"timestamp":1,"timestamp":2,"dscId":1,"mutId":2}',
        '{"timestamp":1,"TimeStamp":2,"dscId":1,"mutId":2}',
        '{"timestamp":null,"TimeStamp":2,"dscId":1,"mutId":2}',
        '{"timestamp":"x","TimeStamp":2,"dscId":1,"mutId":2}',
        '{"TimeStamp":2,"timestamp":"x","dscId":1,"mutId":2}',
        '{"serverId":1,"slaveServerId":"x"}',
        '{"\\u0074imestamp":1}',
        '{"tïmestamp":1}',
        '{"log":"a\\"b.7","position":1}',
        '{"log":"a\\u00e9.7","position":1}',
        '{"log":"a.7\\n","position":1}',
        "{}",
        '{"extractorId":',
        "[1]",
        '"text"',
        "5",
        "null",
        "",
        " ",
        '{"a":"\\ud800"}',
        {"log": "log-bin.000002", "position": 5, "timestamp": 1},
        None,
        _DROP,
        5,
        ["x"],
        True,
    ]:
        cases.append(record(cursor=c))
    # operationcount: variants, tolerant keys, odd values, not JSON, inline, absent
    for oc in [
        json.dumps(COUNTS),
        '{"insertCount":1}',
        '{"insert_count":"0045","UPDATECOUNT":2,"delete_count":null,"deleteCount":3}',
        '{"insertCount":null,"insertCount":5}',
        '{"insertCount":1,"insertCount":5}',
        '{"insertCount":1,"InsertCount":"x"}',
        '{"insertCount":"x"}',
        '{"insertCount":-1}',
        '{"insertCount":1.5}',
        '{"insertCount":true}',
        '{"insertCount":' + "9" * 30 + "}",
        '{"insertCount":" 5"}',
        '{"replaceCount":{"a":1}}',
        '{"other":{"a":1},"updateCount":0}',
        '{"\\u0069nsertCount":1}',
        "{}",
        "{oops",
        "[1]",
        "null",
        "",
        {"insertCount": 1},
        None,
        _DROP,
        7,
    ]:
        cases.append(record(operationcount=oc))
    # other top-level fields, a top level that is not an object, not JSON
    cases += [record(extra="x"), record(opType="I", after={"id": "1"}, exists={"id": "1"}, before=_DROP)]
    cases += ["[1]", "5", '"x"', "{", "{}", '{"tableName": {"name": "t"}}', "   ", ""]
    cases.append('{"tableName": {"name": "t"}, "opType": "I", "opType": "D", "after": {"id": "1"}, '
                 '"exists": {"id": "1"}}')  # fmt: skip
    return cases


def _spell(cases: list[Any], rng: random.Random) -> list[str | None]:
    return json_spellings(cases, rng)


def test_shared_files_are_there() -> None:
    assert SPEC.is_file(), f"missing shared spec {SPEC}"
    for name in SAMPLES:
        read(name)


def test_documentation_samples_agree() -> None:
    texts = [read(name) for name in SAMPLES]
    n, fallbacks = compare(_opts(), texts)
    assert fallbacks == 0, "the documentation's samples take the columnar path"
    # on one line each, and without any configured key (all fall back: quarantined)
    compare(_opts(), [json.dumps(json.loads(t)) for t in texts])
    n, fallbacks = compare(_opts(tables={}), texts)
    assert fallbacks == n


def test_every_branch_agrees() -> None:
    cases = _cases()
    assert len(cases) > 150, len(cases)
    values = _spell(cases, random.Random(5))
    n, fallbacks = compare(_opts(), values)
    assert n - fallbacks > 100, (n, fallbacks)  # not everything fell back
    assert fallbacks > 100, (n, fallbacks)  # and the malformed ones did
    compare(_opts(tables={}), values)
    # each case alone (a batch of one: no other record's tokens around it)
    for text in values[:: max(1, len(values) // 60)]:
        compare(_opts(), [text])


def test_what_the_columnar_path_takes() -> None:
    """Typical records stay on the columnar path (a fallback would hide a mistake)."""
    texts = [
        json.dumps(record("I", before={}, after={"id": "1", "v": "é"}, exists={"id": "1", "v": "1"})),
        json.dumps(record()),
        json.dumps(record(after={"id": "1", "v": "null", "w": None}, exists={"id": "3", "v": "1", "w": "1"})),
        json.dumps(record("D", after={"id": "null"}, exists={"id": "2", "v": "2", "w": 0})),
        json.dumps(record(cursor=cursor(OTHER_CURSOR), table=ns(catalog=None))),
        json.dumps(record(cursor=cursor(position="0045", logSeqNum=_DROP))),
        json.dumps(record(cursor='{"extraction Timestamp":1,"dscI":2,"mutId":3}')),
        json.dumps(record(cursor=None, operationcount=None)),
        json.dumps(record(operationcount='{"insert_count":"0045","UPDATECOUNT":2}')),
        json.dumps(record(exists={"id": 3, "v": 1, "w": 0})),
        read("realtime-update.json"),
    ]
    n, fallbacks = compare(_opts(), texts)
    assert fallbacks == 0, col.LAST_STATS
    assert col.LAST_STATS["metadata_python"] == 0, col.LAST_STATS


def test_workload_agrees(tmp_path: Path) -> None:
    from bench.data import FORMAT_CASES, tables_config, write_dataset
    from udfs.framing import split_file

    case = FORMAT_CASES["arcion_internal_json"]
    ds = write_dataset(case, tmp_path, 3000, 11)
    tables = {t: dict(v, column_order=list(v["columns"]), name=t) for t, v in tables_config([case]).items()}
    records = [r for p in ds.files for r in split_file(p.read_bytes(), case.framing, {})]
    texts = [r.text for r in records]
    opts = _opts(tables=tables)
    for i in range(0, len(texts), 1500):
        n, fallbacks = compare(opts, texts[i : i + 1500])
        assert fallbacks == 0, (n, fallbacks)
        assert col.LAST_STATS["metadata_python"] == 0, col.LAST_STATS


CHARS = ["a", "Z", "é", "😀", ",", ":", '"', "\\", "\n", "\x00", " ", "/", ".", "_", "1", "n", "u", "l"]


def test_random_records_agree() -> None:
    """Random names, values, codes, ops, tables, cursors and counts in every JSON
    spelling (an odd text in a field now and then)."""
    rng = random.Random(23)

    def text() -> str:
        return "".join(rng.choice(CHARS) for _ in range(rng.randint(0, 6)))

    def pick(*choices: Any) -> Any:
        return text() if rng.random() < 0.04 else rng.choice(choices)

    cases = []
    for _ in range(1200):
        names = ["id"] + rng.sample(["v", "w", "x", "V"], rng.randint(0, 3))
        before, after, exists = {}, {}, {}
        for name in names:
            code = pick("0", "1", "2", "3", 1, 3)
            exists[name] = code
            value = rng.choice(["null", text(), None, "1", str(rng.randint(0, 3))])
            if code in ("1", "3", 1, 3) or rng.random() < 0.2:
                after[name] = value
            if code in ("2", "3", 3) or rng.random() < 0.2:
                before[name] = rng.choice(["null", "1", text()])
        c = cursor(
            rng.choice([MYSQL_CURSOR, OTHER_CURSOR]),
            timestamp=pick(rng.randint(0, 10**13), None, str(rng.randint(0, 99))),
            position=pick(rng.randint(0, 10**9), "0012", None, _DROP),
            mutId=pick(rng.randint(0, 10**6), _DROP),
        )
        oc = json.dumps({pick("insertCount", "insert_count", "deleteCount"): pick(rng.randint(0, 99), "7", None)})
        rec = record(
            pick("I", "U", "D"),
            before if rng.random() < 0.9 else rng.choice([None, {}]),
            after if rng.random() < 0.9 else rng.choice([None, {}]),
            exists if rng.random() < 0.95 else _DROP,
            ns(pick("db", None), pick("s", None), pick("t", "T", "k2")),
            cursor=rng.choice([c, c, c, None]),
            operationcount=rng.choice([oc, oc, None]),
        )
        cases.append(rec)
    values = _spell(cases, rng)
    n, fallbacks = compare(_opts(), values)
    assert n - fallbacks > 300, (n, fallbacks)


def test_empty_batch_and_options() -> None:
    compare(_opts(), [])
    compare("{not json", [json.dumps(record())])
    compare(_opts(columnar="no"), [json.dumps(record())])  # bad option: quarantined with the reason
    compare(_opts(), [None, "null", json.dumps(record()), " null ", None])  # quarantined, not skipped
    compare(_opts(), [None, "null"])
    assert columnar_feed(_opts()) is col.decode_arcion_internal_columnar
    assert columnar_feed(_opts(columnar=False)) is None


def test_internal_error_falls_back_with_a_warning(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    texts = [json.dumps(record("I", after={"id": str(i)}, exists={"id": "1"})) for i in range(20)]
    columnar_checks.check_internal_error_falls_back(
        monkeypatch, caplog, col, col.decode_arcion_internal_columnar, _opts(), texts, "arcion_internal_json"
    )


def test_spark_udf_columnar_true_and_false_agree(spark) -> None:
    """``cdc_decode`` in Spark SQL: the same results with ``columnar`` true and false,
    valid and malformed records alike."""
    values = _spell(_cases(), random.Random(7))
    on = columnar_checks.spark_on_and_off(
        spark, values * 2, _opts(), _opts(columnar=False), "arcion_internal_columnar_in"
    )
    statuses = {json.loads(r)["status"] for r in on.values()}
    assert statuses == {"ok", "quarantined"}, statuses
