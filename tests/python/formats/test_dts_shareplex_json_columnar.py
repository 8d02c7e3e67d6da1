"""The columnar DTS Shareplex JSON decoder gives the very result of ``decode_records``.

Each case is decoded both ways and compared as Arrow (``DECODE_RESULT_DDL``): the spec's
examples, the benchmark's workload, every branch of the decoder (ops, names, times,
positions, images, keys) in valid and malformed spellings, and random messages. What
the columnar path cannot do exactly must fall back, never differ.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest
from formats import columnar_checks
from formats.columnar_checks import json_spellings
from formats.test_dts_shareplex_json import SPEC_DELETE, SPEC_INSERT, SPEC_UPDATE

from udfs.formats import dts_shareplex_json_columnar as col
from udfs.spark_udfs import columnar_feed

TABLES = {
    "cl_biz1.mio_log": {"key": ["mio_log_id"]},
    "a.b": {"key": ["id"]},
    "t": {"key": ["id"]},
    "k2.t2": {"key": ["id", "line"]},
    "up.t": {"key": ["ID"]},  # upper case: never matches the lower-cased images
}


def _opts(tables: dict[str, Any] | None = None, **options: Any) -> str:
    return json.dumps(
        {"format": "dts_shareplex_json", "tables": TABLES if tables is None else tables, "options": options},
        sort_keys=True,
    )


def compare(opts: str, texts: list[str | None]) -> tuple[int, int]:
    return columnar_checks.compare(col, col.decode_shareplex_columnar, opts, texts)


def msg(op: Any = "ins", data: Any = None, key: Any = None, drop: tuple[str, ...] = (), **meta: Any) -> dict:
    base: dict[str, Any] = {
        "time": "2024-01-02T03:04:05",
        "userid": 84,
        "op": op,
        "scn": "14589063118712",
        "rowid": "AAATGpAAIAAItcIAAA",
        "trans": "7.0.411499",
        "seq": 1,
        "size": 11,
        "table": "A.B",
        "idx": "1/11",
        "posttime": "2024-01-02T03:04:06",
    }
    base.update(meta)
    for name in drop:
        base.pop(name)
    out: dict[str, Any] = {"meta": base}
    if data is not None:
        out["data"] = data
    if key is not None:
        out["key"] = key
    return out


ROW = {"ID": "1", "NAME": "x"}


def _cases() -> list[Any]:
    """Messages over every branch, as objects (dumped below) or as texts."""
    cases: list[Any] = []
    for op in ["ins", "INS", "insert", "INSERT", "Insert", "upd", "UPDATE", "UPDATE AFTER", "update_after"]:
        cases.append(msg(op, data=ROW, key={"ID": "1", "NAME": "old"}))
    cases += [msg(op, data=ROW) for op in [" upd ", "UPDATE  AFTER", "UPDATE_BEFORE", "UPDATE BEFORE", "merge"]]
    cases += [msg(op, data=ROW, key=ROW) for op in ["del", "DELETE", "TRUNCATE", "DROP COLUMN", "", 5, None, "ıns"]]
    cases += [msg("ins", data=ROW, drop=("op",)), msg("del", key=ROW), msg("del"), msg("del", data={}, key=ROW)]
    cases += [msg("upd", key=ROW), msg("upd", data={"NAME": "y"}), msg("upd", data={"NAME": "y"}, key=ROW)]
    cases += [msg("ins", data={}), msg("ins", data=["x"]), msg("ins", data="x"), msg("upd", data=ROW, key="k")]
    cases += [msg("ins", data=ROW, key=5), {"meta": None, "data": ROW}, {"data": ROW}, {"meta": "x"}, [], "{", ""]
    # the key overlaid: a key column data names takes data's value at key's place
    cases.append(msg("upd", data={"NAME": "new", "EXTRA": "e", "ID": "1"}, key={"NAME": "old", "ID": "1", "K": "k"}))
    cases.append(msg("upd", data={"ID": "2"}, key={"ID": "1", "NAME": "x"}))  # key change: two rows
    cases.append(msg("upd", data={"id": "1"}, key={"ID": "1"}))  # a name twice after lower-casing
    cases.append(msg("ins", data={"Id": "1", "iD": "2"}))
    cases.append('{"meta": {"op": "ins", "table": "A.B"}, "data": {"ID": "1", "ID": "2"}}')
    cases.append('{"meta": {"op": "ins", "op": "upd", "table": "A.B"}, "data": {"ID": "1"}}')
    cases.append('{"meta": {"op": "ins", "table": "A.B"}, "data": {"ID": "1"}, "data": {"ID": "2"}}')
    # names: case, escapes, non-ASCII; values of every JSON kind
    cases.append(msg("ins", data={"ID": "1", "N\\u0041ME": "x"}))
    cases.append('{"meta": {"op": "ins", "table": "A.B"}, "data": {"ID": "1", "N\\u0041ME": "x"}}')
    cases.append(msg("ins", data={"ID": "1", "NÄME": "x"}))
    values = [None, "", " ", "Ü 数 😀", "a\\b", 'q"q', "tab\there", "nl\nnl", "\u2028", "\x00", "/", 0, -1, 12]
    values += [2**70, -(2**64), True, False, 1.5, -0.0, 1e300, {"a": 1}, [1, 2], "__debezium_unavailable_value"]
    for v in values:
        cases.append(msg("ins", data={"ID": "1", "V": v}))
        cases.append(msg("upd", data={"V": v}, key={"ID": "1", "V": "old"}))
    cases.append('{"meta": {"op": "ins", "table": "A.B"}, "data": {"ID": -0, "V": 1.50, "W": 1E5, "X": -0.0}}')
    cases.append('{"meta": {"op": "ins", "table": "A.B"}, "data": {"ID": "1", "V": "\\ud83d\\ude00 \\u00e9 \\/"}}')
    cases.append('{"meta": {"op": "ins", "table": "A.B"}, "data": {"ID": "1", "V": "\\ud800"}}')
    cases.append('{"meta": {"op": "ins", "table": "A.B"}, "data": {"ID": 1' + "0" * 5000 + "}}")
    # tables
    for table in ["A.B", "a.b", "B", "T", "t", "A.", ".B", "", 5, None, "A.B.C", "Ä.B", "K2.T2", "UP.T", "X.Y"]:
        cases.append(msg("ins", data={"ID": "1", "LINE": "2"}, table=table))
    cases.append(msg("ins", data={"ID": "1"}, drop=("table",)))
    # times
    for t in ["2024-01-02T03:04:05Z", "2024-01-02 03:04:05", "2024-01-02T03:04:05.123456+08:00", "2024-1-2T3:4:5"]:
        cases.append(msg("ins", data=ROW, time=t, posttime=t))
    for t in ["2024-13-40T00:00:00", "16/06/2017", 20240102, None, "", " 2024-01-02T03:04:05 "]:
        cases.append(msg("ins", data=ROW, time=t))
        cases.append(msg("ins", data=ROW, posttime=t))
    cases += [msg("ins", data=ROW, drop=("time", "posttime"))]
    # positions
    for scn in ["100", 100, "0100", " 100", "-1", -1, "1.5", 1.5, True, "٣", 10**22, "0" * 22 + "7", "", None, 0]:
        cases.append(msg("ins", data=ROW, scn=scn))
    cases.append(msg("ins", data=ROW, drop=("scn",)))
    for seq, idx in [
        (1, "1/11"),
        (2, "1/11"),
        (None, "3/11"),
        (None, None),
        ("4", " 4 / 11 "),
        (None, "4 of 11"),
        (2, 5),
    ]:
        cases.append(msg("ins", data=ROW, seq=seq, idx=idx))
    cases += [
        msg("ins", data=ROW, drop=("seq",)),
        msg("ins", data=ROW, drop=("seq", "idx")),
        msg("ins", data=ROW, seq=0),
    ]
    for size in [11, "11", -3, "x", None, 1.0]:
        cases.append(msg("ins", data=ROW, size=size))
    for trans in ["7.0.1", "7", "7.0", 7, 7.5, "7..1", "a.b", "1.2.3.4", True, None, "", " 7.0.1", "007.000.010"]:
        cases.append(msg("ins", data=ROW, trans=trans))
    cases.append(msg("ins", data=ROW, drop=("trans",)))
    # extras: present with null, absent, nested
    cases += [msg("ins", data=ROW, userid=None, rowid=None), msg("ins", data=ROW, drop=("userid", "rowid", "size"))]
    cases += [msg("ins", data=ROW, userid={"a": 1}), msg("ins", data=ROW, rowid=[1]), msg("ins", data=ROW, userid=1.25)]
    cases += [dict(msg("ins", data=ROW), extra={"x": 1}), msg("ins", data=ROW, other="kept out")]
    # keys: configured key missing from the image, null, composite, upper-case configuration
    cases += [msg("ins", data={"NAME": "x"}), msg("ins", data={"ID": None}), msg("del", data={"NAME": "x"}, key=ROW)]
    cases += [msg("ins", data={"ID": "1", "LINE": "2"}, table="K2.T2"), msg("ins", data={"ID": "1"}, table="K2.T2")]
    cases += [msg("upd", data={"LINE": "3"}, key={"ID": "1", "LINE": "2"}, table="K2.T2")]
    return cases


def test_spec_examples_agree() -> None:
    n, fallbacks = compare(_opts(), [SPEC_INSERT, SPEC_UPDATE, SPEC_DELETE])
    # the insert and the update take the columnar path; the delete names no table
    # (quarantined: "without meta.table"), which decode_records says
    assert fallbacks == 1


def test_every_branch_agrees() -> None:
    texts = json_spellings(_cases(), random.Random(5))
    n, fallbacks = compare(_opts(), texts)
    assert n - fallbacks > 100, (n, fallbacks)  # not everything fell back
    assert fallbacks > 50, (n, fallbacks)  # and the malformed ones did
    # without configured keys nothing can be decoded column-wise; still the same results
    compare(_opts(tables={}), texts)


def test_workload_agrees(tmp_path: Path) -> None:
    from bench.data import FORMAT_CASES, tables_config, write_dataset
    from udfs.framing import split_file

    case = FORMAT_CASES["dts_shareplex_json"]
    ds = write_dataset(case, tmp_path, 4000, 11)
    tables = {t: dict(v, column_order=list(v["columns"]), name=t) for t, v in tables_config([case]).items()}
    texts = [r.text for p in ds.files for r in split_file(p.read_bytes(), case.framing, {})]
    opts = _opts(tables=tables)
    for i in range(0, len(texts), 2000):
        n, fallbacks = compare(opts, texts[i : i + 2000])
        assert fallbacks < n / 10, (n, fallbacks)


CHARS = ["a", "Z", "é", "😀", "\uffff", ",", ":", '"', "\\", "\n", "\x00", "\x1f", "\u2028", " ", "/", ".", "_"]


def test_random_messages_agree() -> None:
    """Random names, values, ops, tables and positions in every JSON spelling."""
    rng = random.Random(23)

    def text() -> str:
        return "".join(rng.choice(CHARS) for _ in range(rng.randint(0, 6)))

    def image() -> dict[str, Any] | None:
        if rng.random() < 0.15:
            return None
        row: dict[str, Any] = {rng.choice(["ID", "id", "Id"]): rng.choice(["1", "2", 3, None, text()])}
        for _ in range(rng.randint(0, 4)):
            row[rng.choice(["NAME", "name", "V", "W", text()])] = rng.choice(
                [text(), None, rng.randint(-9, 9), True, 2.5]
            )
        return row

    cases = []
    for _ in range(1500):
        meta = {
            "op": rng.choice(["ins", "upd", "del", "INSERT", "UPDATE AFTER", "UPDATE BEFORE", "TRUNCATE", text()]),
            "table": rng.choice(["A.B", "a.b", "T", "t", "A.B" + text(), "K2.T2"]),
            "time": rng.choice(["2024-01-02T03:04:05", "2024-01-02T03:04:05.5Z", None, text()]),
            "scn": rng.choice([str(rng.randint(0, 10**15)), rng.randint(0, 10**15), None, text()]),
            "trans": rng.choice(["7.0.1", "7", 7, None, text()]),
            "seq": rng.choice([1, 2, None, "3", text()]),
            "idx": rng.choice(["1/2", None, text()]),
        }
        for name in list(meta):
            if rng.random() < 0.1:
                del meta[name]
        cases.append({"meta": meta, "data": image(), "key": image()})
    n, fallbacks = compare(_opts(), json_spellings(cases, rng))
    assert fallbacks < n, "some on the columnar path"


def test_empty_batch_and_options() -> None:
    compare(_opts(), [])
    compare("{not json", [json.dumps(msg("ins", data=ROW))])
    compare(_opts(columnar="no"), [json.dumps(msg("ins", data=ROW))])  # bad option: quarantined with the reason
    assert columnar_feed(_opts()) is col.decode_shareplex_columnar
    assert columnar_feed(_opts(columnar=True)) is col.decode_shareplex_columnar
    assert columnar_feed(_opts(columnar=False)) is None
    assert columnar_feed(_opts(columnar="no")) is None


def test_internal_error_falls_back_with_a_warning(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    texts = [json.dumps(msg("ins", data={"ID": str(i)})) for i in range(20)]
    columnar_checks.check_internal_error_falls_back(
        monkeypatch, caplog, col, col.decode_shareplex_columnar, _opts(), texts, "dts_shareplex_json"
    )


def test_spark_udf_columnar_true_and_false_agree(spark) -> None:
    """``cdc_decode`` in Spark SQL: the same results with ``columnar`` true and false,
    valid and malformed records alike."""
    texts = json_spellings(_cases(), random.Random(7)) * 3
    on = columnar_checks.spark_on_and_off(spark, texts, _opts(), _opts(columnar=False), "shareplex_columnar_in")
    statuses = {json.loads(r)["status"] for r in on.values()}
    assert statuses == {"ok", "skipped", "quarantined"}, statuses
