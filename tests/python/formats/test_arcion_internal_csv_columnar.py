"""The columnar Arcion internal CSV decoder gives ``decode_records``' very result, row by row.

The vendor's samples, the benchmark's workload files (header rows, snapshot and realtime
files), random rows of every field spelling (quoted or not, ``NULL``, commas, quotes and
line breaks inside quotes, unicode), odd exists codes, ops and cursors, hostile rows,
header rows and configured columns, a table named by the feed or by the file's path.
Most rows stay on the columnar path; the others go to ``decode_records``; all agree.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from formats import columnar_checks
from formats.test_arcion_internal_csv import OPTIONS, REGION, joined, read

from udfs.decode import decode_records
from udfs.formats import arcion_internal_csv_columnar as col
from udfs.formats import columnar
from udfs.spark_udfs import columnar_feed, decode_array

CURSOR = (
    '{"extractorId":0,"timestamp":1620787841959,"extractionTimestamp":1620787841960,'
    '"log":"mysql-bin.000010","position":%d,"logSeqNum":%d,"v":2}'
)
COUNT = '{"insertCount":%d,"updateCount":0,"deleteCount":1,"replaceCount":0}'
HEADER = ["r_regionkey", "r_name", "r_comment"]
REALTIME_HEADER = [f"{c}_{k}" for c in HEADER for k in ("NEW", "OLD", "EXISTS")] + ["op", "cursor", "opcount"]
PATH_OPTIONS = {"table_from_path": r"/(?P<table>[a-z]+)/[^/]+\.csv$", "tables": {"region": REGION}}


def _opts(options: dict[str, Any] | None = None, tables: dict[str, Any] | None = None, **more: Any) -> str:
    options = dict(OPTIONS if options is None else options)
    tables = options.pop("tables", {}) if tables is None else tables
    return json.dumps(
        {"format": "arcion_internal_csv", "options": {**options, **more}, "tables": tables}, sort_keys=True
    )


def compare(
    opts: str,
    texts: list[str | None],
    files: list[str | None] | None = None,
    headers: list[list[str] | None] | None = None,
) -> tuple[int, int]:
    """Assert the columnar decoder and ``decode_records`` agree on every row (with its
    file and header); returns (rows, fallbacks)."""
    n = len(texts)
    files = files if files is not None else [None] * n
    headers = headers if headers is not None else [None] * n
    ref = pa.array(decode_records(opts, texts, None, files, headers), type=columnar.DECODE_TYPE)
    got = col.decode_arcion_csv_columnar(
        opts,
        pa.array(texts, pa.string()),
        None,
        pa.array(files, pa.string()),
        pa.array(headers, pa.list_(pa.string())),
    )
    assert "columnar_error" not in col.LAST_STATS, col.LAST_STATS["columnar_error"]
    bad = [i for i in range(n) if not ref[i].equals(got[i])]
    detail = [(texts[i], headers[i], ref[i].as_py(), got[i].as_py()) for i in bad[:2]]
    assert not bad, f"{len(bad)} of {n} differ, first: {detail}"
    return n, col.LAST_STATS.get("fallback", 0)


def _field(rng: random.Random, value: str | None, force_quote: bool = False) -> str:
    if value is None:
        return "NULL"
    if force_quote or rng.random() < 0.2 or any(c in value for c in ',"\r\n') or value == "NULL":
        return '"' + value.replace('"', '""') + '"'
    return value


VALUES = ["10", "India", " AFRICA ", "", "NULL", "a,b", 'say "hi"', "two\nlines", "cr\r\nlf", "é😀", "\\", "\x01"]


def _row(rng: random.Random, key: int, key_col: int = 2) -> str:
    """A realtime (3X+3) or snapshot (X) row of table region (X = 3), its key in column
    ``key_col`` (the configured order is r_comment, r_name, r_regionkey)."""
    if rng.random() < 0.2:
        values = [rng.choice(VALUES), rng.choice([*VALUES, None])]
        values.insert(key_col, str(key))
        return ",".join(_field(rng, v) for v in values)
    op = rng.choice("IIUUD")
    fields = []
    for c in range(3):
        exists = rng.choice("0123") if rng.random() < 0.97 else rng.choice(["4", " 1", "01", "", "NULL", "x"])
        if c == key_col and rng.random() < 0.9:  # mostly a key where the op needs one
            exists = {"I": "1", "U": rng.choice("23"), "D": "2"}[op]
        new = str(key) if c == key_col else rng.choice([*VALUES, None])
        old = str(key) if c == key_col else rng.choice([*VALUES, None])
        fields += [_field(rng, new), _field(rng, old), _field(rng, exists, rng.random() < 0.1)]
    if rng.random() < 0.03:
        op = rng.choice(["X", " I", "i", "NULL", '"U"'])
    cursor = CURSOR % (rng.randint(4, 10**9), rng.randint(0, 3))
    cursor = rng.choice([cursor] * 8 + [None, "{bad", '{"v":2}', '{"timestamp":"x"}'])
    count = rng.choice([COUNT % rng.randint(0, 99)] * 8 + [None, "[]", '{"insertCount":-1}'])
    fields += [op if op.startswith('"') else _field(rng, op), _field(rng, cursor, True), _field(rng, count)]
    return ",".join(fields)


def test_vendor_samples_agree() -> None:
    texts = [joined(f"realtime-{op}.csv") for op in ("insert", "update", "delete")]
    texts += [read("snapshot-row.csv").rstrip("\n")]
    n, fallbacks = compare(_opts(), texts)
    assert fallbacks == 0, col.LAST_STATS
    # the raw extracts (wrapped by the doc's "/") are quarantined, by the decoder
    assert compare(_opts(), [read(f"realtime-{op}.csv") for op in ("insert", "update", "delete")])[1] == 3


def test_random_rows_agree() -> None:
    rng = random.Random(1)
    texts = [_row(rng, rng.randint(0, 30)) for _ in range(3000)]
    n, fallbacks = compare(_opts(), texts)
    assert fallbacks < n * 0.3, col.LAST_STATS  # most on the columnar path


def test_header_rows_and_table_from_path_agree() -> None:
    rng = random.Random(2)
    texts, files, headers = [], [], []
    for i in range(1500):
        header = rng.choice([REALTIME_HEADER, HEADER, HEADER, REALTIME_HEADER, None, ["a", "b"]])
        text = _row(rng, i % 40, 0 if header else 2)  # a header names r_regionkey first
        if rng.random() < 0.02 and header:  # the header row itself, where a file repeats it
            text = ",".join(header)
        texts.append(text)
        headers.append(header)
        files.append(rng.choice(["s3://b/x/region/p-1.csv", "s3://b/region/p-2.csv", "s3://b/nation/p.csv", None]))
    for options in (OPTIONS, PATH_OPTIONS):
        n, fallbacks = compare(_opts(options), texts, files, headers)
        assert fallbacks < n, col.LAST_STATS
    # an empty header row is none: each row's table's columns (two tables from the paths)
    nation = {"key": ["n_id"], "column_order": ["n_id", "n_name"]}
    tables = {"region": REGION, "nation": nation}
    rows = ["1,a,b", "1,a", "2,c,d", "2,c"]
    files = ["s3://b/region/p.csv", "s3://b/nation/p.csv"] * 2
    n, fallbacks = compare(_opts(PATH_OPTIONS, tables), rows, files, [[], [], None, []])
    assert fallbacks == 0, col.LAST_STATS


def test_workload_files_agree(tmp_path: Path) -> None:
    from bench.data import FORMAT_CASES, tables_config, write_dataset
    from udfs.spark_udfs import RECORDS_TYPE, file_records_struct

    case = FORMAT_CASES["arcion_internal_csv"]
    data = write_dataset(case, tmp_path / "csv", 3000, seed=4, per_file=1500)
    opts = json.dumps({"format": case.format, "options": case.options, "tables": tables_config([case])}, sort_keys=True)
    for path in data.files:
        records = file_records_struct(path.read_bytes(), "csv", opts, RECORDS_TYPE.value_type).to_pylist()
        texts, headers = [r["text"] for r in records], [r["header"] for r in records]
        n, fallbacks = compare(opts, texts, [str(path)] * len(texts), headers)
        assert fallbacks == 0, (path.name, col.LAST_STATS)


HOSTILE = [
    None, "null", "", "\n", "\r\n", ",", ",,", ",,,,,,,,,,,", "a,b", "a,b,c,d,e", '"', '"a', 'a"b,c,d', '"a"b,c,d',
    '"a""b",c,d', '"a"""b",c,d', '"",c,d', '""""',  '"x",y,"z"\n', "x,y,z\n", "x,y,z\r\n", "x,y,z\r", "x,y\nz,w",
    '"a\nb",c,d', "a,b,c\n\n", "x,NULL,1,y,NULL,1,10,NULL,1,X,NULL,NULL", "x,NULL,4,y,NULL,1,10,NULL,1,I,NULL,NULL",
    'x,NULL,1,y,NULL,1,10,NULL,1,I,"{bad",NULL', "x,NULL,1,y,NULL,1,10,NULL,1, I ,NULL,NULL",
    "x,NULL, 1 ,y,NULL,1,10,NULL,1,I,NULL,NULL", "x,NULL,１,y,NULL,1,10,NULL,1,I,NULL,NULL",
    'x,NULL,"1",y,NULL,"3",10,NULL,"1","I",NULL,NULL', "x,NULL,0,y,NULL,0,10,NULL,0,I,NULL,NULL",
    "x,NULL,0,y,NULL,0,10,NULL,0,D,NULL,NULL", "x,a,3,y,b,3,10,11,3,U,NULL,NULL",  # a key change
    "x,a,3,y,b,3,10,10,3,U,NULL,NULL", "r_regionkey,r_name,r_comment", "NULL,NULL,NULL", "é,😀,\x00",
    '"a"b"",c,d', '"a""b"c"",c,d', 'a,"b"",c', '"a",b""c,d',  # a quote where a quoted field had ended
]  # fmt: skip


def test_hostile_rows_agree() -> None:
    for options in (OPTIONS, {"tables": {"region": REGION}}, {"table": "nation", "tables": {"region": REGION}}):
        n, fallbacks = compare(_opts(options), HOSTILE)
        assert fallbacks > 0
    for text in HOSTILE:  # each alone: one row's fallback never hides another's difference
        compare(_opts(), [text])
        compare(_opts(), [text], ["s3://region/p.csv"], [HEADER])


def test_one_line_end_closing_a_row_stays_columnar() -> None:
    rows = [f"{i},a,b{end}" for i, end in enumerate(["\n", "\r\n", "\r", ""])]
    rows += [f'{i},"a\nb","c\r\n"{end}' for i, end in enumerate(["\n", "\r\n", "\r"])]
    n, fallbacks = compare(_opts(), rows)
    assert fallbacks == 0, col.LAST_STATS
    assert compare(_opts(), ["1,a,b\n\n", "1,a,b\r\r", "1,a,b\n\r", "1,a\n,b"])[1] == 4  # the decoder's to judge


def test_column_names_agree() -> None:
    """Names from configured columns and from headers: upper case, non-ASCII, repeated."""
    rows = ["1,a,b", "1,NULL,1,a,NULL,1,b,NULL,1,I,NULL,NULL"]
    for columns in (["ID", "Name", "Note"], ["id", "NÄME", "note"], ["id", "ID", "x"], ["id", "a", "A"]):
        tables = {"region": {"key": ["id"], "column_order": columns}}
        compare(_opts({"table": "region"}, tables), rows)
        realtime = [f"{c}_{k}" for c in columns for k in ("NEW", "OLD", "EXISTS")] + ["op", "cursor", "opcount"]
        compare(_opts({"table": "region"}, tables), rows, None, [columns, realtime])


def test_empty_batch_and_options() -> None:
    compare(_opts(), [])
    compare("{not json", ["1,a,b"])
    compare(_opts(columnar="no"), ["1,a,b"])  # bad option: quarantined with the reason
    assert columnar_feed(_opts()) is col.decode_arcion_csv_columnar
    assert columnar_feed(_opts(columnar=False)) is None


def test_decode_array_hands_over_files_and_headers() -> None:
    """``cdc_decode``'s body gives the columnar decoder each row's file and header: the
    table from the path and the names from the header, as ``decode_records``."""
    opts = _opts(PATH_OPTIONS)
    texts = ["1,NULL,1,a,NULL,1,b,NULL,1,I,NULL,NULL", "2,x,y"]
    files = ["s3://b/region/p-1.csv"] * 2
    headers = [REALTIME_HEADER, HEADER]
    got = decode_array(
        pa.array([opts] * 2),
        pa.array(texts),
        pa.nulls(2, pa.string()),
        pa.array(files),
        pa.array(headers, pa.list_(pa.string())),
        columnar.DECODE_TYPE,
    )
    ref = pa.array(decode_records(opts, texts, None, files, headers), type=columnar.DECODE_TYPE)
    assert got.equals(ref) and col.LAST_STATS["fast"] == 2
    assert [dict(r["changes"][0]["after"])["r_regionkey"] for r in got.to_pylist()] == ["1", "2"]


def test_internal_error_falls_back_with_a_warning(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    texts = [f"{i},a,b" for i in range(20)]
    columnar_checks.check_internal_error_falls_back(
        monkeypatch, caplog, col, col.decode_arcion_csv_columnar, _opts(), texts, "arcion_internal_csv"
    )


def test_spark_udf_columnar_true_and_false_agree(spark) -> None:
    """``cdc_decode`` in Spark SQL: the same results with ``columnar`` true and false,
    valid and malformed rows alike."""
    rng = random.Random(9)
    texts = [_row(rng, rng.randint(0, 30)) for _ in range(300)] + HOSTILE
    on = columnar_checks.spark_on_and_off(spark, texts, _opts(), _opts(columnar=False), "csv_columnar_in")
    statuses = {json.loads(r)["status"] for r in on.values()}
    assert statuses == {"ok", "quarantined"}, statuses
