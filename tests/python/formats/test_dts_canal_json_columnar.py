"""The columnar Canal JSON decoder (``dts_canal_json``, ``canal_json``) gives the very
result of ``decode_records``.

Each case is decoded both ways and compared as Arrow (``DECODE_RESULT_DDL``): the public
corpora (Flink's and Paimon's Canal samples, with the filter, table and order options),
the spec's examples, the benchmark's workload, every branch of the decoder in valid and
malformed spellings, every batch the Canal unit tests hand to ``decode_records``, and
random messages. What the columnar path cannot do exactly must fall back, never differ.
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

from udfs.formats import dts_canal_json_columnar as col
from udfs.spark_udfs import columnar_feed

CORPORA = Path(__file__).resolve().parents[3].parent / "shared" / "corpora"

TABLES = {"shop.orders": {"key": ["id"]}, "products": {"key": ["id"]}, "t": {"key": ["ID"]}}


def _opts(fmt: str = "dts_canal_json", tables: dict[str, Any] | None = None, **options: Any) -> str:
    return json.dumps(
        {"format": fmt, "tables": TABLES if tables is None else tables, "options": options}, sort_keys=True
    )


def compare(opts: str, texts: list[str | None]) -> tuple[int, int]:
    return columnar_checks.compare(col, col.decode_canal_columnar, opts, texts)


def _corpus_texts() -> list[str]:
    assert CORPORA.is_dir(), f"{CORPORA} is missing: ../shared/corpora must be beside the repository"
    out = []
    for path in sorted((CORPORA / "flink").glob("canal-*.txt")):
        out += [line for line in path.read_text().splitlines() if line.strip()]
    for path in sorted((CORPORA / "paimon" / "canal").rglob("event-*.txt")):  # after the licence comment
        out += [line for line in path.read_text().splitlines() if line.startswith("{")]
    return out


def test_corpora_agree_with_every_option() -> None:
    texts = _corpus_texts()
    assert len(texts) > 20
    n, fallbacks = compare(_opts(), texts)
    assert fallbacks < n / 2, (n, fallbacks)
    compare(_opts("canal_json"), texts)
    compare(_opts("canal_json", order="id"), texts)
    compare(_opts(table="products"), texts)
    compare(_opts(database_include="inventory", table_include="prod.*"), texts)
    compare(_opts(tables={}), texts)


def msg(kind: Any = "INSERT", data: Any = None, old: Any = None, drop: tuple[str, ...] = (), **fields: Any) -> dict:
    out: dict[str, Any] = {
        "data": data,
        "old": old,
        "database": "shop",
        "table": "orders",
        "es": 1700000000000,
        "ts": 1700000000123,
        "id": 7,
        "isDdl": False,
        "mysqlType": {"id": "int(11)", "amount": "decimal(12,2)", "note": "varchar(20)", "bin": "varbinary(8)"},
        "sqlType": {"id": 4, "amount": 3, "note": 12, "bin": -3},
        "pkNames": ["id"],
        "sql": "",
        "type": kind,
    }
    out.update(fields)
    for name in drop:
        out.pop(name)
    return out


ROW = {"id": "1", "amount": "12.50", "note": "x"}


def _cases() -> list[Any]:
    cases: list[Any] = []
    for kind in ["INSERT", "insert", "INIT", "Init", "UPDATE", "DELETE", "TRUNCATE", "CREATE", "ALTER", "QUERY"]:
        cases.append(msg(kind, data=[ROW], old=[{"note": "y"}]))
        cases.append(msg(kind, data=[ROW]))
    cases += [msg(kind, data=[ROW]) for kind in ["", "ınsert", None, 5, "MERGE"]]
    cases += [msg("INSERT", data=[ROW], drop=("type",)), msg("INSERT", data=[ROW], isDdl=True)]
    cases += [msg("INSERT", data=[ROW], isDdl=None), msg("INSERT", data=[ROW], isDdl="false")]
    # rows: several, none, not objects, old of another length, both delete layouts
    cases.append(msg("INSERT", data=[ROW, {"id": "2"}, {"id": "3", "note": None}]))
    cases.append(msg("UPDATE", data=[ROW, {"id": "2", "note": "b"}], old=[{"note": "a"}, {"note": None}]))
    cases.append(msg("UPDATE", data=[ROW, {"id": "2"}], old=[{"note": "a"}]))
    cases.append(msg("UPDATE", data=[ROW], old=[]))
    cases += [msg("INSERT", data=[]), msg("INSERT", data=None), msg("INSERT", data=[5]), msg("INSERT", data=[ROW, 5])]
    cases += [
        msg("INSERT", data=[5, ROW]),
        msg("INSERT", data=[[ROW]]),
        msg("INSERT", data=ROW),
        msg("INSERT", data="x"),
    ]
    cases += [
        msg("INSERT", data=[ROW], old=5),
        msg("INSERT", data=[ROW], old=[5]),
        msg("INSERT", data=[ROW], old=[ROW]),
    ]
    cases += [msg("DELETE", data=None, old=[ROW]), msg("DELETE", data=[ROW], old=[{"id": "9"}])]
    cases += [msg("DELETE", old=[ROW, {"id": "2"}], drop=("data",)), msg("DELETE", data=None, old=None)]
    cases += [msg("DELETE", data=[], old=[ROW]), msg("DELETE", data=None, old=[5])]
    # update images: old overlays data; a key column in old moves the row
    cases.append(msg("UPDATE", data=[ROW], old=[{"note": None, "amount": "1.00"}]))
    cases.append(msg("UPDATE", data=[ROW], old=[{"id": "0"}]))
    cases.append(msg("UPDATE", data=[ROW], old=[{"id": "1"}]))
    cases.append(msg("UPDATE", data=[{"amount": "1"}], old=[{"id": "1"}]))  # the key only in old
    cases.append(msg("UPDATE", data=[ROW], old=None))
    # names and values
    cases.append(msg("INSERT", data=[{"id": "1", "ID": "2"}]))
    cases.append(msg("INSERT", data=[{"id": "1", "Note": "x"}]))  # undeclared (declared names are case-sensitive)
    cases.append(msg("INSERT", data=[{"id": "1", "extra": "x"}]))
    cases.append(msg("INSERT", data=[{"id": "1", "extra": "x"}], mysqlType=None, sqlType=None))
    cases.append(msg("INSERT", data=[{"id": "1", "extra": "x"}], drop=("mysqlType", "sqlType")))
    cases.append(msg("INSERT", data=[{"id": "1", "nöte": "x"}], mysqlType=None, sqlType=None))
    cases.append(
        '{"type": "INSERT", "table": "orders", "database": "shop", "es": 1, "id": 1, "pkNames": ["id"], '
        '"data": [{"id": "1", "n\\u006fte": "x"}]}'
    )
    cases.append(
        '{"type": "INSERT", "table": "orders", "database": "shop", "es": 1, "id": 1, "pkNames": ["id"], '
        '"data": [{"id": "1", "note": "a", "note": "b"}]}'
    )
    cases.append(
        '{"type": "INSERT", "type": "DELETE", "table": "orders", "database": "shop", "es": 1, "id": 1, '
        '"pkNames": ["id"], "data": [{"id": "1"}]}'
    )
    values = [None, "", "Ü 数 😀", "a\\b", 'q"q', "tab\there", "nl\nnl", "\u2028", "\x00", "/", 0, -1, 2**70, True]
    values += [False, 1.5, -0.0, 1e300, {"a": 1}, [1], "__debezium_unavailable_value", "ÿ\x80", "数"]
    for v in values:
        cases.append(msg("INSERT", data=[{"id": "1", "note": v, "bin": v}]))
        cases.append(msg("UPDATE", data=[{"id": "1", "note": v}], old=[{"note": v, "bin": v}]))
    cases.append(
        '{"type": "INSERT", "table": "orders", "database": "shop", "es": 1, "id": 1, "pkNames": ["id"], '
        '"data": [{"id": -0, "note": 1.50, "amount": 1E5, "bin": "\\ud83d\\ude00 \\u00e9 \\/"}]}'
    )
    cases.append(
        '{"type": "INSERT", "table": "orders", "database": "shop", "es": 1, "id": 1, "pkNames": ["id"], '
        '"data": [{"id": "1", "note": "\\ud800"}]}'
    )
    cases.append('{"type": "INSERT", "table": "orders", "es": 1, "id": 1, "data": [{"id": 1' + "0" * 5000 + "}]}")
    # names of database and table
    for db, table in [("shop", "orders"), ("SHOP", "Orders"), (None, "orders"), ("", "orders"), ("shop", "")]:
        cases.append(msg("INSERT", data=[ROW], database=db, table=table))
    cases += [
        msg("INSERT", data=[ROW], table=None),
        msg("INSERT", data=[ROW], table=5),
        msg("INSERT", data=[ROW], database=5),
    ]
    cases += [msg("INSERT", data=[ROW], table="t" * 300), msg("INSERT", data=[ROW], drop=("table", "database"))]
    # positions and times
    for name in ("es", "id", "ts"):
        for v in [0, "7", "007", " 7", "-7", -7, 7.5, "7.5", True, None, "", 2**53, 2**62, 2**64, "9" * 25]:
            cases.append(msg("INSERT", data=[ROW], **{name: v}))
        cases.append(msg("INSERT", data=[ROW], drop=(name,)))
    cases.append(msg("INSERT", data=[ROW], es=(2**63 - 1) // 1000, ts=(2**63 - 1) // 1000 + 1))
    # types: mysqlType wins, sqlType codes, malformed maps
    cases.append(msg("INSERT", data=[ROW], mysqlType={"id": "bigint(20) unsigned"}, sqlType={"id": -5, "note": 12}))
    cases.append(msg("INSERT", data=[ROW], mysqlType={"ID": "int", "id": "bigint"}, sqlType=None))
    cases.append(msg("INSERT", data=[{"id": "1"}], mysqlType={"ID": "int", "id": "bigint"}, sqlType={"Id": 12}))
    cases += [msg("INSERT", data=[ROW], mysqlType={"id": 5}), msg("INSERT", data=[ROW], sqlType={"id": "int"})]
    cases += [msg("INSERT", data=[ROW], sqlType={"id": True}), msg("INSERT", data=[ROW], mysqlType=[1])]
    # a lone surrogate escape in a type's name, a column name, pkNames (quarantined by the decoder)
    for field, value in (("mysqlType", {"\ud800": "int"}), ("data", [{"\ud800": "1"}]), ("pkNames", ["\ud800"])):
        cases.append(json.dumps({**msg("INSERT", data=[ROW]), field: value}))  # ASCII: the escape as such
    cases += [
        msg("INSERT", data=[ROW], mysqlType="int", sqlType=None),
        msg("INSERT", data=[{"id": "1", "bin": "nine.bin"}]),
    ]
    # keys: pkNames, the configured key, none
    for pk in [["id"], ["ID"], ["id", "note"], [], None, ["missing"], [""], [5], "id", ["id", "id"]]:
        cases.append(msg("INSERT", data=[ROW], pkNames=pk))
        cases.append(msg("DELETE", data=[ROW], pkNames=pk, table="t", database=None))
    cases += [msg("INSERT", data=[ROW], drop=("pkNames",)), msg("INSERT", data=[ROW], drop=("pkNames",), table="x")]
    cases += [dict(msg("INSERT", data=[ROW]), extra={"x": [1]}), msg("INSERT", data=[ROW], sql=None)]
    return cases


def _texts(cases: list[Any], rng: random.Random) -> list[str | None]:
    return json_spellings(["{", "[]", "5", *cases], rng)


def test_every_branch_agrees() -> None:
    texts = _texts(_cases(), random.Random(5))
    n, fallbacks = compare(_opts(), texts)
    assert n - fallbacks > 100, (n, fallbacks)  # not everything fell back
    assert fallbacks > 50, (n, fallbacks)  # and the malformed ones did
    compare(_opts("canal_json"), texts)
    compare(_opts(tables={}), texts)
    compare(_opts(table="one"), texts)
    compare(_opts(table=""), texts)
    compare(_opts(database_include="sh.*", table_include="orders|t"), texts)


def test_what_the_columnar_path_takes() -> None:
    """Messages the columnar path decodes itself (none falls back): several rows, both
    delete layouts, binary values, upper-case pkNames, names differing in case only in
    the types, the table and order options."""
    texts = [
        json.dumps(msg("INSERT", data=[ROW, {"id": "2", "bin": "nine.bin"}])),
        json.dumps(msg("UPDATE", data=[ROW], old=[{"note": None}])),
        json.dumps(msg("DELETE", data=None, old=[ROW])),
        json.dumps(msg("DELETE", data=[ROW], pkNames=["ID"])),
        json.dumps(msg("INIT", data=[{"id": "1"}], mysqlType={"ID": "int", "id": "bigint"}, sqlType={"Id": 12})),
    ]
    for opts in (_opts(), _opts("canal_json"), _opts(table="one", order="es")):
        n, fallbacks = compare(opts, texts)
        assert fallbacks == 0, col.LAST_STATS


def test_workload_agrees(tmp_path: Path) -> None:
    from bench.data import FORMAT_CASES, tables_config, write_dataset
    from udfs.framing import split_file

    case = FORMAT_CASES["dts_canal_json"]
    ds = write_dataset(case, tmp_path, 4000, 11)
    tables = {t: dict(v, column_order=list(v["columns"]), name=t) for t, v in tables_config([case]).items()}
    texts = [r.text for p in ds.files for r in split_file(p.read_bytes(), case.framing, {})]
    opts = _opts(tables=tables)
    for i in range(0, len(texts), 2000):
        n, fallbacks = compare(opts, texts[i : i + 2000])
        assert fallbacks < n / 10, (n, fallbacks)


def test_unit_test_batches_agree(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every ``decode_records`` call the Canal unit tests make, decoded both ways."""
    seen = columnar_checks.replay_unit_tests(
        monkeypatch, "formats.test_dts_canal_json", ("dts_canal_json", "canal_json"), lambda o, t, k: compare(o, t)
    )
    assert len(seen) > 5, seen


CHARS = ["a", "Z", "é", "😀", "\uffff", ",", ":", '"', "\\", "\n", "\x00", "\x1f", "\u2028", " ", "/", ".", "_"]


def test_random_messages_agree() -> None:
    """Random names, values, ops, rows, types and positions in every JSON spelling."""
    rng = random.Random(29)

    def text() -> str:
        return "".join(rng.choice(CHARS) for _ in range(rng.randint(0, 6)))

    def row() -> dict[str, Any]:
        out: dict[str, Any] = {rng.choice(["id", "ID", "Id"]): rng.choice(["1", "2", 3, None, text()])}
        for _ in range(rng.randint(0, 4)):
            out[rng.choice(["amount", "note", "bin", "NOTE", text()])] = rng.choice(
                [text(), None, rng.randint(-9, 9), True, 2.5]
            )
        return out

    cases = []
    for _ in range(1500):
        rows = [row() for _ in range(rng.choice([1, 1, 1, 2, 3]))]
        base = msg(rng.choice(["INSERT", "UPDATE", "DELETE", "INIT", "TRUNCATE", text()]), data=rows)
        if rng.random() < 0.4:
            base["old"] = [{rng.choice(["note", "id", "amount"]): rng.choice([text(), None])} for _ in rows]
        if rng.random() < 0.1:
            base["data"], base["old"] = None, rows
        if rng.random() < 0.2:
            base["pkNames"] = rng.choice([None, [], ["ID"], ["id", "note"], [text()]])
        if rng.random() < 0.2:
            base["mysqlType"] = rng.choice([None, {"id": "int"}, {"id": "int", "note": "blob", "amount": "x"}])
        for name in ("es", "id", "ts"):
            if rng.random() < 0.1:
                base[name] = rng.choice([str(rng.randint(0, 10**15)), None, text(), -1])
        base["table"] = rng.choice(["orders", "Orders", "t", "orders" + text()])
        cases.append(copy.deepcopy(base))
    n, fallbacks = compare(_opts(), _texts(cases, rng))
    assert fallbacks < n, "some on the columnar path"


def test_empty_batch_and_options() -> None:
    compare(_opts(), [])
    compare("{not json", [json.dumps(msg("INSERT", data=[ROW]))])
    compare(_opts(columnar="no"), [json.dumps(msg("INSERT", data=[ROW]))])  # bad option: quarantined
    assert columnar_feed(_opts()) is col.decode_canal_columnar
    assert columnar_feed(_opts("canal_json")) is col.decode_canal_columnar
    assert columnar_feed(_opts(columnar=False)) is None
    assert columnar_feed(_opts(columnar="no")) is None


def test_internal_error_falls_back_with_a_warning(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    texts = [json.dumps(msg("INSERT", data=[{"id": str(i)}])) for i in range(20)]
    columnar_checks.check_internal_error_falls_back(
        monkeypatch, caplog, col, col.decode_canal_columnar, _opts(), texts, "dts_canal_json"
    )


def test_spark_udf_columnar_true_and_false_agree(spark) -> None:
    """``cdc_decode`` in Spark SQL: the same results with ``columnar`` true and false,
    valid and malformed records alike."""
    texts = _texts(_cases(), random.Random(7)) * 3
    on = columnar_checks.spark_on_and_off(spark, texts, _opts(), _opts(columnar=False), "canal_columnar_in")
    statuses = {json.loads(r)["status"] for r in on.values()}
    assert statuses == {"ok", "skipped", "quarantined"}, statuses


def test_invalid_records_are_counted() -> None:
    texts = [json.dumps(msg("INSERT", data=[ROW])), "{", '{"data": "\\ud800"}', json.dumps(msg("INSERT", data=[ROW]))]
    n, fallbacks = compare(_opts(), texts)
    assert (fallbacks, col.LAST_STATS["invalid_json"], col.LAST_STATS["fast"]) == (2, 2, 2)
