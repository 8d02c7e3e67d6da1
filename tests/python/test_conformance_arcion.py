"""Conformance of the three Arcion formats with ``../shared/corpora/arcion`` (read in
place; a missing corpus fails, it never skips), through the real pipeline.

Every corpus file lands in one warehouse over three runs, in the order EXPECTED.md
describes: the inserts, then the updates, then the deletes (the tombstone lands with
the Kafka delete). One set of runs serves every test of the corpus (module fixture).

Feeds and tables of the corpus warehouse:

* ``json`` (``arcion_internal_json``, ``documents``): ``nation`` (the snapshot-mode
  samples, catalog ``tpch_scale_0_01``) and ``io_blitzz.region`` (the realtime samples,
  schema ``io_blitzz``).
* ``csv`` (``arcion_internal_csv``, option ``table: region``): the three realtime CSV
  samples, columns in the file's order ``r_comment, r_name, r_regionkey`` (EXPECTED.md).
  The doc wraps these lines with a trailing ``/`` (a typesetting artifact): the fixture
  joins them into one CSV row per file in ``tmp_path``; the decoder never undoes it.
* ``csv_snapshot``: ``snapshot-row.csv`` (``0, AFRICA ,AFRICA``) in the snapshot layout.
  Its values are in the doc's table order (key, name, comment), unlike the realtime
  samples, so it is its own table ``region_snapshot``.
* ``kafka`` (``arcion_kafka_json``, ``kcat``): the key and value files paired into
  ``kcat -C -J`` lines with offsets in EXPECTED.md's order; ``tombstone.value.json``
  (``null``) is a null payload. Table ``tpch.region``.

The operationcount audit (``models/audit/arcion_operationcount_gaps.sql``) is checked on
the corpus (no gaps expected) and on two feeds of our own (one complete, one with an
event removed).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import corpus

from udfs.export import export_rows
from udfs.pipeline import RunSummary, run_pipeline

REGION_COLUMNS = {"r_regionkey": "int", "r_name": "string", "r_comment": "string"}

CORPUS_FEEDS = [
    {"name": "json", "format": "arcion_internal_json", "path": "landing/json", "framing": "documents"},
    {"name": "csv", "format": "arcion_internal_csv", "path": "landing/csv", "options": {"table": "region"}},
    {
        "name": "csv_snapshot",
        "format": "arcion_internal_csv",
        "path": "landing/csv_snapshot",
        "options": {"table": "region_snapshot"},
    },
    {"name": "kafka", "format": "arcion_kafka_json", "path": "landing/kafka", "framing": "kcat"},
]
CORPUS_TABLES = {
    "nation": {
        "key": ["n_nationkey"],
        "columns": {"n_nationkey": "int", "n_name": "string", "n_regionkey": "int", "n_comment": "string"},
    },
    "io_blitzz.region": {"key": ["r_regionkey"], "columns": REGION_COLUMNS},
    # the CSV columns in the file's order: r_comment, r_name, r_regionkey
    "region": {"key": ["r_regionkey"], "columns": {"r_comment": "string", "r_name": "string", "r_regionkey": "int"}},
    "region_snapshot": {"key": ["r_regionkey"], "columns": REGION_COLUMNS},
    "tpch.region": {"key": ["r_regionkey"], "columns": REGION_COLUMNS},
}
EXPORTED = ("nation", "io_blitzz.region", "region", "region_snapshot", "tpch.region")
GAP_TEST = "test.cdc.assert_arcion_operationcount_no_gaps"


def write_config(root: Path, name: str, feeds: list[dict], tables: dict) -> Path:
    """A cdc.yml in ``root`` with this module's own schemas (as conftest's make_config)."""
    root.mkdir(parents=True, exist_ok=True)
    for feed in feeds:
        (root / feed["path"]).mkdir(parents=True, exist_ok=True)
    cfg = {
        "warehouse": ".cdc",
        "schema": f"{name}_cdc",
        "marts_schema": f"{name}_marts",
        "feeds": feeds,
        "tables": tables,
    }
    path = root / "cdc.yml"
    path.write_text(yaml.safe_dump(cfg, sort_keys=False))
    return path


def joined_csv(name: str) -> str:
    """A doc-wrapped CSV sample as one CSV row: the trailing ``/`` markers joined."""
    text = corpus("arcion", "internal-csv", name).read_text(encoding="utf-8")
    row = text.replace("/\n", "").rstrip("\n") + "\n"
    assert row.count("\n") == 1, f"{name} is not one row after joining the wrapped lines"
    return row


def kafka_message(name: str) -> tuple[str, str | None]:
    """(key text, value text or None) of a Kafka sample; None is the tombstone's null."""
    key = corpus("arcion", "kafka-json-cdc", f"{name}.key.json").read_text(encoding="utf-8")
    if name == "realtime-update":
        # the doc block is "KEY <key json> VALUE <value json>": the value follows VALUE
        text = corpus("arcion", "kafka-json-cdc", "realtime-update.value.txt").read_text(encoding="utf-8")
        head, value = text.split("\nVALUE\n", 1)
        assert json.loads(head.split("\nKEY\n", 1)[1]) == json.loads(key)
        return key, value
    value = corpus("arcion", "kafka-json-cdc", f"{name}.value.json").read_text(encoding="utf-8")
    return key, (None if json.loads(value) is None else value)


def kcat_file(path: Path, first_offset: int, names: list[str]) -> None:
    lines = []
    for offset, name in enumerate(names, start=first_offset):
        key, value = kafka_message(name)
        msg = {"topic": "arcion.tpch.region", "partition": 0, "offset": offset, "key": key, "payload": value}
        lines.append(json.dumps(msg))
    path.write_text("\n".join(lines) + "\n")


#: The three runs: what each lands (JSON files copied, CSV files joined, Kafka messages).
STAGES: list[dict[str, Any]] = [
    {
        "json": ["snapshot-insert.json", "realtime-insert.json"],
        "csv": ["realtime-insert.csv"],
        "csv_snapshot": ["snapshot-row.csv"],
        "kafka": ["snapshot-insert", "realtime-insert"],
    },
    {
        "json": ["snapshot-update.json", "realtime-update.json"],
        "csv": ["realtime-update.csv"],
        "csv_snapshot": [],
        "kafka": ["realtime-update"],
    },
    {
        "json": ["snapshot-delete.json", "realtime-delete.json"],
        "csv": ["realtime-delete.csv"],
        "csv_snapshot": [],
        "kafka": ["realtime-delete", "tombstone"],
    },
]


def land(root: Path, stage_no: int, stage: dict[str, list[str]], kafka_offset: int) -> None:
    for name in stage["json"]:
        shutil.copy(corpus("arcion", "internal-json", name), root / "landing" / "json" / name)
    for name in stage["csv"]:
        (root / "landing" / "csv" / name).write_text(joined_csv(name))
    for name in stage["csv_snapshot"]:
        shutil.copy(corpus("arcion", "internal-csv", name), root / "landing" / "csv_snapshot" / name)
    kcat_file(root / "landing" / "kafka" / f"run-{stage_no}.kcat", kafka_offset, stage["kafka"])


def gap_test_result(root: Path) -> dict[str, Any]:
    """The last dbt build's result of the gap test (status ``pass`` / ``warn``, failures)."""
    results = json.loads((root / ".cdc" / "dbt" / "target" / "run_results.json").read_text())
    (result,) = [r for r in results["results"] if r["unique_id"] == GAP_TEST]
    return {"status": result["status"], "failures": result["failures"]}


@pytest.fixture(scope="module")
def corpus_runs(spark, tmp_path_factory) -> dict[str, Any]:
    """Land the corpus in three runs; after each, the summary, the skip reasons and the
    exported rows of every table; after the last, the changelog, quarantine and audit."""
    root = tmp_path_factory.mktemp("arcion_corpus")
    config = write_config(root, "arcion_corpus", CORPUS_FEEDS, CORPUS_TABLES)
    schema = "arcion_corpus_cdc"
    stages = []
    offset = 0
    for stage_no, stage in enumerate(STAGES, start=1):
        land(root, stage_no, stage, offset)
        offset += len(stage["kafka"])
        summary = run_pipeline(config, spark=spark)
        skipped = spark.sql(
            f"select feed, skipped_by_reason from {schema}.audit_files "
            f"where run_id = '{summary.run_id}' and skipped > 0"
        ).collect()
        stages.append(
            {
                "summary": summary,
                "skipped": {r.feed: dict(r.skipped_by_reason) for r in skipped},
                "rows": {t: export_rows(spark, config, t) for t in EXPORTED},
                "gap_test": gap_test_result(root),
            }
        )
    changelog = spark.sql(
        f"select feed, table_id, op, key, before, after, before_cols, after_cols, seq, extras, "
        f"source_file from {schema}.changelog order by feed, order_key"
    ).collect()
    return {
        "stages": stages,
        "changelog": [r.asDict() for r in changelog],
        "quarantine": spark.sql(f"select * from {schema}.quarantine").collect(),
        "gaps": [r.asDict() for r in spark.sql(f"select * from {schema}.arcion_operationcount_gaps").collect()],
    }


def counts(summary: RunSummary) -> tuple[int, int, int, int, int]:
    return summary.files, summary.records, summary.changes, summary.quarantined, summary.skipped


def test_summary_counts(corpus_runs) -> None:
    """Every record is accounted for: records = changes + quarantined + skipped; the
    tombstone after the Kafka delete is skipped and counted."""
    stages = corpus_runs["stages"]
    # files, records, changes, quarantined, skipped
    assert counts(stages[0]["summary"]) == (5, 6, 6, 0, 0)  # 2 json + 1 csv + 1 snapshot csv + 1 kcat (2 messages)
    assert counts(stages[1]["summary"]) == (4, 4, 4, 0, 0)
    assert counts(stages[2]["summary"]) == (4, 5, 4, 0, 1)  # the kcat file: delete + tombstone
    assert [s["skipped"] for s in stages] == [{}, {}, {"kafka": {"tombstone": 1}}]
    assert corpus_runs["quarantine"] == []
    assert [s["summary"].tables for s in stages] == [sorted(EXPORTED)] + [
        ["io_blitzz.region", "nation", "region", "tpch.region"]
    ] * 2


def test_internal_json_insert_update_delete(corpus_runs) -> None:
    """EXPECTED.md, internal-json: nation 100 and region 10 inserted, updated, deleted;
    the realtime update is a partial image: r_name (exists 0) keeps ``India``."""
    rows = [s["rows"] for s in corpus_runs["stages"]]
    nation = {"n_nationkey": 100, "n_regionkey": 2, "n_comment": "Testing comment"}
    assert rows[0]["nation"] == [{**nation, "n_name": "Testing name"}]
    assert rows[1]["nation"] == [{**nation, "n_name": "Updating test name"}]
    assert rows[2]["nation"] == []
    assert rows[0]["io_blitzz.region"] == [{"r_regionkey": 10, "r_comment": "India", "r_name": "India"}]
    assert rows[1]["io_blitzz.region"] == [{"r_regionkey": 10, "r_comment": "USA", "r_name": "India"}]
    assert rows[2]["io_blitzz.region"] == []


def test_internal_json_changelog_images(corpus_runs) -> None:
    """The realtime update provides only what ``exists`` says: r_regionkey in before,
    r_comment in after; the "null" texts of not-provided columns never enter an image."""
    (update,) = [
        r
        for r in corpus_runs["changelog"]
        if r["feed"] == "json" and r["table_id"] == "io_blitzz.region" and r["op"] == "update"
    ]
    assert update["key"] == {"r_regionkey": "10"}
    assert (update["before"], update["before_cols"]) == ({"r_regionkey": "10"}, ["r_regionkey"])
    assert (update["after"], update["after_cols"]) == ({"r_comment": "USA"}, ["r_comment"])
    assert update["seq"] == "00000001620787053905.00000000000000326190"
    assert {k: update["extras"][k] for k in ("insert_count", "update_count", "delete_count", "replace_count")} == {
        "insert_count": "6",
        "update_count": "1",
        "delete_count": "0",
        "replace_count": "0",
    }


def test_internal_csv_insert_update_delete(corpus_runs) -> None:
    """EXPECTED.md, internal-csv: the realtime rows match the realtime JSON DMLs."""
    rows = [s["rows"] for s in corpus_runs["stages"]]
    assert rows[0]["region"] == [{"r_regionkey": 10, "r_comment": "India", "r_name": "India"}]
    assert rows[1]["region"] == [{"r_regionkey": 10, "r_comment": "USA", "r_name": "India"}]
    assert rows[2]["region"] == []


def test_internal_csv_snapshot_row(corpus_runs) -> None:
    """``0, AFRICA ,AFRICA``: X plain values; the spaces are part of the field (RFC 4180)."""
    expected = [{"r_regionkey": 0, "r_name": " AFRICA ", "r_comment": "AFRICA"}]
    assert [s["rows"]["region_snapshot"] for s in corpus_runs["stages"]] == [expected] * 3


def test_kafka_json_sequence(corpus_runs) -> None:
    """EXPECTED.md, kafka-json-cdc: snapshot 3, insert 10, update (an upsert) of 1, delete
    of 1 and its tombstone: regions 3 and 10 remain."""
    europe = {"r_regionkey": 3, "r_name": "EUROPE", "r_comment": "ly final courts cajole furiously final excuse"}
    test_nation = {"r_regionkey": 10, "r_name": "Test_nation", "r_comment": "ReplicationWorks"}
    america = {"r_regionkey": 1, "r_name": "AMERICA", "r_comment": "TestReplication"}
    rows = [sorted(s["rows"]["tpch.region"], key=lambda r: r["r_regionkey"]) for s in corpus_runs["stages"]]
    assert rows[0] == [europe, test_nation]
    assert rows[1] == [america, europe, test_nation]
    assert rows[2] == [europe, test_nation]


def test_operationcount_audit_on_the_corpus(corpus_runs) -> None:
    """The corpus feeds advance their operationcounts by one (nation 30, 31, 32; region 6,
    7, 8 in JSON and in CSV): no gap, and the warn-severity dbt test passes."""
    assert corpus_runs["gaps"] == []
    assert [s["gap_test"] for s in corpus_runs["stages"]] == [{"status": "pass", "failures": 0}] * 3


# ------------------------------------------------------------ operationcount audit


def arcion_event(table: str, n: int, op: str, row_id: int, name: str | None, total_counts: tuple) -> str:
    """One Arcion internal JSON event (one line) with a MySQL cursor at position 100*n."""
    cursor = {
        "extractorId": 0,
        "timestamp": 1700000000000 + n,
        "extractionTimestamp": 1700000000100 + n,
        "log": "log-bin.000003",
        "position": 100 * n,
        "logSeqNum": 1,
        "slaveServerId": 1,
        "v": 2,
    }
    ins, upd, dele, rep = total_counts
    operationcount = {"insertCount": ins, "updateCount": upd, "deleteCount": dele, "replaceCount": rep}
    image = {"id": str(row_id), "name": "null" if name is None else name}
    code = {"I": "1", "U": "3", "D": "2"}[op]
    doc = {
        "tableName": {"namespace": {"catalog": "shop", "schema": None}, "name": table},
        "opType": op,
        "cursor": json.dumps(cursor),
        "before": image if op != "I" else {},
        "after": image if op != "D" else {},
        "exists": {"id": code, "name": code},
        "operationcount": json.dumps(operationcount),
    }
    return json.dumps(doc)


def events(table: str) -> dict[int, str]:
    """Five consecutive events of ``table``: totals 1, 2, 3, 4, 5."""
    return {
        1: arcion_event(table, 1, "I", 1, "a", (1, 0, 0, 0)),
        2: arcion_event(table, 2, "I", 2, "b", (2, 0, 0, 0)),
        3: arcion_event(table, 3, "U", 1, "a2", (2, 1, 0, 0)),
        4: arcion_event(table, 4, "I", 3, "c", (3, 1, 0, 0)),
        5: arcion_event(table, 5, "D", 2, "b", (3, 1, 1, 0)),
    }


def test_operationcount_audit_flags_a_removed_event(spark, tmp_path) -> None:
    """Two feeds in one run. ``complete``: all five events, written out of order (the
    audit orders by seq) and event 5 delivered a second time (counted once): no gap.
    ``gappy``: event 3 removed, the rest in two files: one gap between event 2 (total 2)
    and event 4 (total 4), naming both neighbours. The dbt test warns, the run succeeds."""
    feeds = [
        {"name": "complete", "format": "arcion_internal_json", "path": "landing/complete", "framing": "lines"},
        {"name": "gappy", "format": "arcion_internal_json", "path": "landing/gappy", "framing": "lines"},
    ]
    tables = {t: {"key": ["id"], "columns": {"id": "bigint", "name": "string"}} for t in ("items", "orders")}
    config = write_config(tmp_path, "arcion_gaps", feeds, tables)
    items, orders = events("items"), events("orders")
    (tmp_path / "landing/complete/part-1.jsonl").write_text("\n".join(items[i] for i in (2, 1, 3, 5, 4)) + "\n")
    (tmp_path / "landing/complete/part-2.jsonl").write_text(items[5] + "\n")
    (tmp_path / "landing/gappy/part-1.jsonl").write_text(orders[1] + "\n" + orders[2] + "\n")
    (tmp_path / "landing/gappy/part-2.jsonl").write_text(orders[4] + "\n" + orders[5] + "\n")

    summary = run_pipeline(config, spark=spark)
    assert counts(summary) == (4, 10, 10, 0, 0)

    gaps = [r.asDict() for r in spark.sql("select * from arcion_gaps_cdc.arcion_operationcount_gaps").collect()]
    landing = tmp_path / "landing" / "gappy"
    assert gaps == [
        {
            "feed": "gappy",
            "table_id": "orders",
            "previous_seq": "00000000000000000003.00000000000000000200.00000000000000000001",
            "previous_source_file": str(landing / "part-1.jsonl"),
            "previous_record_index": 1,
            "previous_total": 2,
            "seq": "00000000000000000003.00000000000000000400.00000000000000000001",
            "source_file": str(landing / "part-2.jsonl"),
            "record_index": 0,
            "total": 4,
            "missing_events": 1,
        }
    ]
    assert gap_test_result(tmp_path) == {"status": "warn", "failures": 1}
    # the merge itself is untouched by the audit: items 1 (a2) and 3 remain
    assert export_rows(spark, config, "items") == [{"id": 1, "name": "a2"}, {"id": 3, "name": "c"}]
