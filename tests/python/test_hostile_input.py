"""Hostile input through the real pipeline (Spark + dbt, ``run_pipeline``): one run over
several feeds and files at once, each case asserted on its own.

* a 10 MB string value is kept exactly (length and SHA-256 in the state and the mart);
* JSON nested 100,000 levels deep is quarantined with a reason, in ``lines`` and in
  ``documents`` (where the rest of the file is the one quarantined record);
* a row with 10,000 columns is decoded: all of them in the state and in the mart (its
  own run: its mart is a table, since the view text would be too long for the Derby
  metastore);
* an empty file and a whitespace-only file: 0 records, each with its audit row;
* a UTF-8 BOM and CRLF line ends (JSON lines and CSV) are not part of any value;
* a NUL inside a string value (escaped ``\\u0000``) is kept; a raw NUL byte in a line
  (not JSON) is quarantined with its text; invalid UTF-8 is quarantined with the raw
  bytes as base64, its neighbours decoded (``lines``, ``documents``, ``csv``);
* kcat lines whose metadata no record column holds (a numeric topic, a partition beyond
  int, a lone surrogate escape) are quarantined, not a failed run;
* table and column names with quotes, backticks, spaces, backslashes and SQL keywords
  land in the state and get a queryable mart view; names built to break out of a quoted
  identifier or string literal do not (no name from the data is pasted into SQL
  unquoted);
* landing files named with blanks, a colon, ``#``, ``%``, glob characters, a newline,
  quotes and non-ASCII letters are each read once, as themselves;
* a table name longer than a file name (300 characters) lands or is quarantined, and the
  run does not fail (its own run): a name too long for a partition directory is
  quarantined with the reason.

Every file's audit balances: records read = change records + quarantined + skipped.
"""

from __future__ import annotations

import base64
import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from udfs.pipeline import run_pipeline

BIG_LEN = 10 * 1024 * 1024
DEPTH = 100_000
WIDE = 10_000
WEIRD_TABLE = 'we"ird `t` select'
INJECT_TABLE = "x' or 'a'='a"
#: a column name that, pasted into SQL without doubling its backticks, adds a column
INJECT_COLUMN = "a`, 1 as `injected"
WEIRD_COLUMNS = ("from", "a b", "x`y", "it's\\", INJECT_COLUMN)


def big_value() -> str:
    """10 MiB of text mixing ASCII, multi-byte characters, quotes, backslashes, newlines."""
    unit = 'abc"\\\n\té日本😀' + "".join(chr(c) for c in range(32, 127))
    return (unit * (BIG_LEN // len(unit) + 1))[:BIG_LEN]


def sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def dbz(table: str, after: dict[str, Any], lsn: int, **source: Any) -> str:
    src = {"connector": "postgresql", "table": table, "lsn": lsn, **source}
    return json.dumps({"before": None, "after": after, "source": src, "op": "c"}, ensure_ascii=False)


def arcion_doc(key: str, name: str, n: int) -> str:
    cursor = json.dumps({"timestamp": 1620788088431, "dscId": 1620787053905, "mutId": n})
    doc = {
        "tableName": {"namespace": {"catalog": None, "schema": "io"}, "name": "docs_t"},
        "opType": "I",
        "cursor": cursor,
        "before": {"id": "null", "name": "null"},
        "after": {"id": key, "name": name},
        "exists": {"id": "1", "name": "1"},
        "operationcount": json.dumps({"insertCount": n}),
    }
    return json.dumps(doc, indent=2, ensure_ascii=False)


def kcat(offset: int, key: Any, payload: Any, **meta: Any) -> bytes:
    line = {"topic": "kt", "partition": 0, "offset": offset, "ts": 1, "key": key, "payload": payload, **meta}
    return json.dumps(line).encode()


def kafka_value(key: int, name: str, pos: int) -> str:
    source = {"db": "d", "table": "kt", "file": "binlog.000001", "pos": pos, "row": 0, "ts_ms": 1}
    return json.dumps({"before": {}, "after": {"id": key, "name": name}, "op": "c", "ts_ms": 2, "source": source})


# line-level NUL and invalid UTF-8 cases (nul.jsonl)
NUL_VALUE_LINE = dbz("items", {"id": 1, "name": "a\x00b"}, 10).encode()  # json escapes it: \u0000
RAW_NUL_LINE = b'{"before":null,"after":{"id":2,"name":"a\x00b"},"source":{"table":"items","lsn":11},"op":"c"}'
BAD_UTF8_LINE = b'{"before":null,"after":{"id":3,"name":"a\xff\xfeb"},"source":{"table":"items","lsn":12},"op":"c"}'
NEIGHBOUR_LINE = dbz("items", {"id": 4, "name": "ok"}, 13).encode()


#: landing file names a shell, a URI or a glob would take apart (read by their own names)
ODD_FILE_NAMES = (
    "a b.jsonl",
    "c:d.jsonl",
    "e#f.jsonl",
    "g%20h.jsonl",
    "%zz.jsonl",
    "ü-日本.jsonl",
    "[1].jsonl",
    "{x,y}.jsonl",
    "star*.jsonl",
    "q?.jsonl",
    "sub dir/x.jsonl",
    "new\nline.jsonl",
    "tab\tname.jsonl",
    "back\\slash.jsonl",
    "quote'\".jsonl",
)

#: a feed's landing folder named as the files above are: it is listed by the project too
DOCS_FOLDER = "docs [1] {a,b} *?:#%20\\'ü"


def land(root: Path) -> dict[str, bytes]:
    """Write every landing file; returns relative path -> content."""
    files: dict[str, bytes] = {}
    big = big_value()
    files["dbz/big.jsonl"] = (dbz("big", {"id": 1, "v": big}, 1) + "\n").encode()
    deep = '{"before":null,"after":{"id":1,"v":' + "[" * DEPTH + "]" * DEPTH + '},"source":{"table":"items"},"op":"c"}'
    files["dbz/deep.jsonl"] = (deep + "\n" + dbz("items", {"id": 5, "name": "after deep"}, 20) + "\n").encode()
    files["dbz/empty.jsonl"] = b""
    files["dbz/blank.jsonl"] = b"\n   \r\n\t\n \n"
    crlf = [dbz("items", {"id": 6, "name": "crlf one"}, 30), dbz("items", {"id": 7, "name": "crlf two"}, 31)]
    files["dbz/bom_crlf.jsonl"] = b"\xef\xbb\xbf" + "\r\n".join(crlf).encode() + b"\r\n"
    files["dbz/nul.jsonl"] = b"\n".join([NUL_VALUE_LINE, RAW_NUL_LINE, BAD_UTF8_LINE, NEIGHBOUR_LINE]) + b"\n"
    weird_row = {"id": 1, **{c: f"value of {c}" for c in WEIRD_COLUMNS}}
    names = [dbz(WEIRD_TABLE, weird_row, 40), dbz(INJECT_TABLE, {"id": 2, "name": "only row"}, 41)]
    files["dbz/names.jsonl"] = ("\n".join(names) + "\n").encode()

    for n, name in enumerate(ODD_FILE_NAMES):
        files[f"dbz/{name}"] = (dbz("items", {"id": 200 + n, "name": name}, 200 + n) + "\n").encode()

    deep_doc = '{"tableName":{"name":"docs_t"},"opType":"I","after":' + "[" * DEPTH + "]" * DEPTH + "}"
    files[f"{DOCS_FOLDER}/deep.json"] = (arcion_doc("1", "before deep", 1) + "\n" + deep_doc + "\n").encode()
    bad_doc = arcion_doc("3", "BAD", 3).encode().replace(b"BAD", b"b\xffd")
    utf8 = [arcion_doc("2", "first", 2).encode(), bad_doc, arcion_doc("4", "last", 4).encode()]
    files[f"{DOCS_FOLDER}/utf8.json"] = b"\n".join(utf8) + b"\n"

    rows = [b'1,"one"', b'2,"tw\xffo"', b'3,"th""ree"']
    files["csv/bom_crlf.csv"] = b"\xef\xbb\xbf" + b"\r\n".join(rows) + b"\r\n"

    files["kcat/meta.kcat"] = (
        b"\n".join(
            [
                kcat(0, '{"id":1}', kafka_value(1, "one", 100)),
                kcat(1, '{"id":2}', kafka_value(2, "two", 101), topic=5),
                kcat(2, '{"id":3}', kafka_value(3, "three", 102), partition=2**40),
                # the kcat line's payload string holds a lone surrogate (framing)
                kcat(3, '{"id":4}', kafka_value(4, "four", 103)).replace(b'\\"four\\"', b'\\"\\ud800\\"'),
                # the payload's own JSON holds a lone surrogate escape (decoder)
                kcat(4, '{"id":5}', kafka_value(5, "five", 104)).replace(b'\\"five\\"', b'\\"\\\\ud800\\"'),
                kcat(5, '{"id":6}', kafka_value(6, "six", 105)),
            ]
        )
        + b"\n"
    )

    for rel, content in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content)
    return files


@pytest.fixture(scope="module")
def hostile(spark, tmp_path_factory):
    """One pipeline run over every hostile file; the module's tests read its tables."""
    tmp = tmp_path_factory.mktemp("hostile")
    files = land(tmp / "landing")
    feeds = [
        {"name": "dbz", "format": "debezium_json", "path": "landing/dbz"},
        {"name": "docs", "format": "arcion_internal_json", "path": f"landing/{DOCS_FOLDER}"},
        {"name": "csv", "format": "arcion_internal_csv", "path": "landing/csv", "options": {"table": "items_csv"}},
        {"name": "kcat", "format": "arcion_kafka_json", "path": "landing/kcat"},
    ]
    tables = {
        "items": {"key": ["id"]},
        "big": {"key": ["id"]},
        "docs_t": {"key": ["id"]},
        "items_csv": {"key": ["id"], "columns": {"id": "bigint", "name": "string"}},
        WEIRD_TABLE: {"key": ["id"]},
        INJECT_TABLE: {"key": ["id"]},
    }
    config = {
        "warehouse": ".cdc",
        "schema": "hostile_cdc",
        "marts_schema": "hostile_marts",
        "feeds": feeds,
        "tables": tables,
    }
    path = tmp / "cdc.yml"
    path.write_text(yaml.safe_dump(config, sort_keys=False, allow_unicode=True))
    summary = run_pipeline(path, spark=spark)
    audit = {
        r.source_file.split("/landing/", 1)[1]: r
        for r in spark.sql(f"select * from hostile_cdc.audit_files where run_id = '{summary.run_id}'").collect()
    }
    quarantine: dict[tuple[str, int], Any] = {
        (r.source_file.split("/landing/", 1)[1], r.record_index): r
        for r in spark.sql("select * from hostile_cdc.quarantine").collect()
    }
    return {
        "spark": spark,
        "config": path,
        "files": files,
        "summary": summary,
        "audit": audit,
        "quarantine": quarantine,
    }


def counts(audit_row: Any) -> tuple[int, int, int, int]:
    return audit_row.records_read, audit_row.change_records, audit_row.quarantined, audit_row.skipped


def state_row(spark: Any, table_id: str, key: str) -> dict[str, str]:
    rows = spark.sql(
        "select row from hostile_cdc.state where table_id = ? and key_text = ? and not is_deleted",
        args=[table_id, json.dumps({"id": key}, separators=(",", ":"))],
    ).collect()
    assert len(rows) == 1, (table_id, key)
    return dict(rows[0].row)


def test_every_file_audited_and_balanced(hostile):
    audit, files = hostile["audit"], hostile["files"]
    assert sorted(audit) == sorted(files), "every landing file has its audit row, the empty ones too"
    for name, row in audit.items():
        assert row.records_read == row.change_records + row.quarantined + row.skipped, name
        assert row.file_size == len(files[name])
    summary = hostile["summary"]
    assert summary.files == len(files)
    assert summary.records == sum(r.records_read for r in audit.values())
    assert summary.quarantined == len(hostile["quarantine"]) == sum(r.quarantined for r in audit.values())
    for q in hostile["quarantine"].values():
        assert q.reason and q.reason.strip() and q.raw_record is not None


def test_ten_megabyte_value_kept_exactly(hostile):
    spark, big = hostile["spark"], big_value()
    assert counts(hostile["audit"]["dbz/big.jsonl"]) == (1, 1, 0, 0)
    state = spark.sql(
        "select length(row['v']) as n, sha2(row['v'], 256) as h from hostile_cdc.state where table_id = 'big'"
    ).collect()
    assert [(r.n, r.h) for r in state] == [(BIG_LEN, sha(big))]
    mart = spark.sql("select id, length(v) as n, sha2(v, 256) as h from hostile_marts.big").collect()
    assert [(r.id, r.n, r.h) for r in mart] == [("1", BIG_LEN, sha(big))]


def test_deeply_nested_json_quarantined_with_reason(hostile):
    audit, quarantine, files = hostile["audit"], hostile["quarantine"], hostile["files"]
    # lines: the one deep line, its neighbour decoded
    assert counts(audit["dbz/deep.jsonl"]) == (2, 1, 1, 0)
    q = quarantine[("dbz/deep.jsonl", 0)]
    assert q.reason.startswith("not JSON") and "recursion" in q.reason
    assert q.raw_is_base64 is False and q.raw_record == files["dbz/deep.jsonl"].decode().split("\n")[0]
    assert state_row(hostile["spark"], "items", "5")["name"] == "after deep"
    # documents: the deep document's end cannot be found: the rest of the file is one record
    assert counts(audit[f"{DOCS_FOLDER}/deep.json"]) == (2, 1, 1, 0)
    q = quarantine[(f"{DOCS_FOLDER}/deep.json", 1)]
    assert q.reason == "not JSON: nested too deeply"
    assert q.raw_record.startswith('{"tableName"') and len(q.raw_record) > 2 * DEPTH
    assert state_row(hostile["spark"], "docs_t", "1")["name"] == "before deep"


def test_empty_and_whitespace_files_audited_with_zero_records(hostile):
    for name in ("dbz/empty.jsonl", "dbz/blank.jsonl"):
        row = hostile["audit"][name]
        assert counts(row) == (0, 0, 0, 0) and row.changes_emitted == 0, name
    assert not [k for k in hostile["quarantine"] if k[0] in ("dbz/empty.jsonl", "dbz/blank.jsonl")]


def test_bom_and_crlf_are_not_data(hostile):
    spark, audit = hostile["spark"], hostile["audit"]
    assert counts(audit["dbz/bom_crlf.jsonl"]) == (2, 2, 0, 0)
    assert state_row(spark, "items", "6")["name"] == "crlf one"
    assert state_row(spark, "items", "7")["name"] == "crlf two"
    # CSV: BOM and CRLF stripped; the row with invalid UTF-8 quarantined alone
    assert counts(audit["csv/bom_crlf.csv"]) == (3, 2, 1, 0)
    assert state_row(spark, "items_csv", "1") == {"id": "1", "name": "one"}
    assert state_row(spark, "items_csv", "3") == {"id": "3", "name": 'th"ree'}
    q = hostile["quarantine"][("csv/bom_crlf.csv", 1)]
    assert q.raw_is_base64 and base64.b64decode(q.raw_record) == b'2,"tw\xffo"'
    assert q.reason.startswith("invalid UTF-8")


def test_nul_and_invalid_utf8(hostile):
    spark, audit, quarantine = hostile["spark"], hostile["audit"], hostile["quarantine"]
    assert counts(audit["dbz/nul.jsonl"]) == (4, 2, 2, 0)
    assert state_row(spark, "items", "1")["name"] == "a\x00b", "an escaped NUL in a value is kept"
    mart = spark.sql("select name from hostile_marts.items where id = '1'").collect()
    assert [r.name for r in mart] == ["a\x00b"]
    raw_nul = quarantine[("dbz/nul.jsonl", 1)]
    assert raw_nul.reason.startswith("not JSON: Invalid control character")
    assert raw_nul.raw_is_base64 is False and raw_nul.raw_record.encode() == RAW_NUL_LINE
    bad = quarantine[("dbz/nul.jsonl", 2)]
    assert bad.reason.startswith("invalid UTF-8") and bad.raw_is_base64
    assert base64.b64decode(bad.raw_record) == BAD_UTF8_LINE
    assert state_row(spark, "items", "4")["name"] == "ok"
    # documents: invalid UTF-8 inside one document quarantines that document only
    assert counts(audit[f"{DOCS_FOLDER}/utf8.json"]) == (3, 2, 1, 0)
    doc = quarantine[(f"{DOCS_FOLDER}/utf8.json", 1)]
    assert doc.reason.startswith("invalid UTF-8") and doc.raw_is_base64
    assert base64.b64decode(doc.raw_record) == arcion_doc("3", "BAD", 3).encode().replace(b"BAD", b"b\xffd")
    assert state_row(spark, "docs_t", "2")["name"] == "first"
    assert state_row(spark, "docs_t", "4")["name"] == "last"


def test_kcat_metadata_no_column_holds_is_quarantined(hostile):
    spark, audit, quarantine = hostile["spark"], hostile["audit"], hostile["quarantine"]
    assert counts(audit["kcat/meta.kcat"]) == (6, 2, 4, 0)
    reasons = {i: quarantine[("kcat/meta.kcat", i)].reason for i in (1, 2, 3, 4)}
    assert reasons[1] == "not a kcat -J line: topic is not text"
    assert reasons[2] == f"not a kcat -J line: integer out of range: {2**40}"
    assert "surrogate" in reasons[3] and "surrogate" in reasons[4]
    assert {
        r.key_text for r in spark.sql("select key_text from hostile_cdc.state where table_id = 'd.kt'").collect()
    } == {
        '{"id":"1"}',
        '{"id":"6"}',
    }


def test_names_with_quotes_backticks_spaces_and_keywords(hostile):
    spark = hostile["spark"]
    assert counts(hostile["audit"]["dbz/names.jsonl"]) == (2, 2, 0, 0)
    row = state_row(spark, WEIRD_TABLE, "1")
    assert row == {"id": "1", **{c: f"value of {c}" for c in WEIRD_COLUMNS}}

    views = {r.viewName for r in spark.sql("show views in hostile_marts").collect()}
    assert {"we_ird__t__select", "x__or__a___a"} <= views
    mart = spark.table("hostile_marts.we_ird__t__select")
    assert [c for c in mart.columns if not c.startswith("_cdc_")] == sorted(["id", *WEIRD_COLUMNS])
    assert "injected" not in mart.columns
    got = spark.sql(
        "select id, `from`, `a b`, `x``y`, `it's\\`, `a``, 1 as ``injected` from hostile_marts.we_ird__t__select"
    ).collect()
    assert [tuple(r) for r in got] == [
        ("1", *(f"value of {c}" for c in ("from", "a b", "x`y", "it's\\", INJECT_COLUMN)))
    ]

    # a table name built to widen the view's filter if it were pasted unescaped
    only = spark.sql("select id, name from hostile_marts.x__or__a___a").collect()
    assert [tuple(r) for r in only] == [("2", "only row")]

    # each view's comment names its table as it is, quotes and backticks included
    for view, table_id in (("we_ird__t__select", WEIRD_TABLE), ("x__or__a___a", INJECT_TABLE)):
        details = spark.sql(f"describe table extended hostile_marts.{view}").collect()
        assert [r.data_type for r in details if r.col_name == "Comment"] == [
            f"The live rows of {table_id}, one per key, each column typed as hostile_cdc.mart_columns lists it "
            "(from hostile_cdc.state)."
        ], view


def test_files_named_with_blanks_quotes_and_glob_characters_are_each_read_once(hostile):
    """(The docs feed's folder is named so too: DOCS_FOLDER, its files' own tests.)"""
    spark, audit = hostile["spark"], hostile["audit"]
    for n, name in enumerate(ODD_FILE_NAMES):
        assert counts(audit[f"dbz/{name}"]) == (1, 1, 0, 0), name
        assert state_row(spark, "items", str(200 + n))["name"] == name, "each file read as itself"
    again = run_pipeline(hostile["config"], spark=spark)
    assert (again.files, again.records) == (0, 0), "a name read once is known as read"


def test_ten_thousand_columns_decoded(spark, make_config, tmp_path):
    """A row with 10,000 columns: decoded into the state and the mart (a table: the view
    text would pass the metastore's limit)."""
    config = make_config([{"name": "dbz", "format": "debezium_json", "path": "landing/dbz"}], {"wide": {"key": ["id"]}})
    names = yaml.safe_load(config.read_text())
    wide_row = {"id": 1, **{f"c{i:05d}": str(i) for i in range(WIDE)}}
    (tmp_path / "landing" / "dbz" / "wide.jsonl").write_text(dbz("wide", wide_row, 1) + "\n", encoding="utf-8")

    summary = run_pipeline(config, spark=spark)

    assert (summary.records, summary.changes, summary.quarantined) == (1, 1, 0)
    rows = spark.sql(f"select row from `{names['schema']}`.state where table_id = 'wide'").collect()
    assert len(rows) == 1 and len(rows[0].row) == WIDE + 1 and rows[0].row["c09999"] == "9999"
    mart = spark.table(f"`{names['marts_schema']}`.wide")
    assert len([c for c in mart.columns if not c.startswith("_cdc_")]) == WIDE + 1
    got = mart.select("id", "c00000", "c05000", "c09999").collect()
    assert [tuple(r) for r in got] == [("1", "0", "5000", "9999")]
    # the table that stands in for the view carries the view's comment
    details = spark.sql(f"describe table extended `{names['marts_schema']}`.wide").collect()
    schema = names["schema"]
    assert [r.data_type for r in details if r.col_name == "Comment"] == [
        f"The live rows of wide, one per key, each column typed as {schema}.mart_columns lists it "
        f"(from {schema}.state)."
    ]


def test_table_name_longer_than_a_file_name(spark, make_config, tmp_path):
    """Table names of 300 characters (ASCII, and 300 bytes of UTF-8) whose events carry
    their key (no configuration needed): each lands in the state or is quarantined with
    a reason; the run does not fail and the neighbour lands (its own run, since today
    the build fails)."""
    config = make_config([{"name": "k", "format": "arcion_kafka_json", "path": "landing/k"}], {})
    schema = yaml.safe_load(config.read_text())["schema"]
    long_names = ["t" * 300, "日" * 100]
    lines = [
        kcat(i, '{"id":1}', kafka_value(1, "x", i).replace('"kt"', json.dumps(t))) for i, t in enumerate(long_names)
    ]
    lines.append(kcat(2, '{"id":1}', kafka_value(1, "neighbour", 2)))
    (tmp_path / "landing" / "k" / "a.kcat").write_bytes(b"\n".join(lines) + b"\n")

    summary = run_pipeline(config, spark=spark)

    assert summary.records == 3
    state = {r.table_id: dict(r.row) for r in spark.sql(f"select table_id, row from `{schema}`.state").collect()}
    quarantined = {r.record_index: r.reason for r in spark.sql(f"select * from `{schema}`.quarantine").collect()}
    assert state["d.kt"] == {"id": "1", "name": "neighbour"}
    for i, name in enumerate(long_names):
        assert f"d.{name}" not in state, name
        assert "is too long" in quarantined[i], quarantined
