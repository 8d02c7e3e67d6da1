"""Conformance of ``canal_json`` / ``dts_canal_json`` with the public corpora, read in
place from ``../shared/corpora`` (a missing corpus fails, it never skips):

* Flink's canal-json test files (``flink/EXPECTED.md`` sections 1-3): the 26-row
  changelog Flink asserts and the final table of the ``*.final.jsonl`` file;
* Paimon's Canal events (``paimon/EXPECTED.md``), fed one run per file, with the table
  state Paimon asserts after each run.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml
from conftest import corpus
from flink_expected import as_flink_rows, expected_changelog, final_rows, same_rows_float32

from udfs.export import export_rows
from udfs.pipeline import run_pipeline

USER02_DDL = "CREATE TABLE `xj_`.`user02` (`uid` int(0) NOT NULL,`uname` varchar(255) NULL, PRIMARY KEY (`uid`))"


def _schema(config: Path) -> str:
    return yaml.safe_load(config.read_text())["schema"]


@pytest.mark.parametrize(
    ("fmt", "data_file", "section", "table", "options", "counts", "ddl"),
    [
        # records, changes, quarantined, skipped (the DDL line)
        ("canal_json", "canal-data.txt", 1, "products2", None, (11, 20, 0, 1), [("user02", USER02_DDL)]),
        # DTS emits INIT rows; its `id` is a stream position (the dts default order)
        ("dts_canal_json", "canal-data-with-init.txt", 3, "products2", None, (11, 20, 0, 1), [("user02", USER02_DDL)]),
        # 6 messages of other tables (2 of them DDL) are skipped as `filtered`: no ddl_log rows
        (
            "canal_json",
            "canal-data-filter-table.txt",
            2,
            "product",
            {"database_include": "^my.*", "table_include": "^prod.*"},
            (16, 20, 0, 6),
            [],
        ),
    ],
)
def test_flink_canal_corpus(spark, make_config, tmp_path, fmt, data_file, section, table, options, counts, ddl):
    source = corpus("flink", data_file)
    feed = {"name": "canal", "format": fmt, "path": "landing/canal"}
    if options:
        feed["options"] = options
    config = make_config([feed], {table: {}})
    shutil.copy(source, tmp_path / "landing" / "canal" / source.name)
    summary = run_pipeline(config, spark=spark)
    assert (summary.records, summary.changes, summary.quarantined, summary.skipped) == counts

    schema = _schema(config)
    changes = [
        r.asDict()
        for r in spark.sql(f"select op, before, after, col_types from {schema}.changelog order by order_key").collect()
    ]
    # op sequence and values, 106's before image description = null
    assert as_flink_rows(changes) == expected_changelog(section)
    assert changes[9]["op"] == "update" and changes[9]["before"]["description"] is None
    assert {json.dumps(c["col_types"], sort_keys=True) for c in changes} == {
        json.dumps({"description": "string", "id": "int", "name": "string", "weight": "float"}, sort_keys=True)
    }

    final = final_rows(data_file.replace(".txt", ".final.jsonl"))
    same_rows_float32(export_rows(spark, config, table), final)

    logged = spark.sql(f"select source_table, sql_text from {schema}.ddl_log order by record_index").collect()
    assert [(r.source_table, r.sql_text) for r in logged] == ddl


def _json_lines(path: Path) -> str:
    """The lines of a Paimon event file that are JSON (Paimon's ``isRecordLine``): the
    Apache licence header in ``/* */`` is not part of the Kafka messages."""
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        try:
            json.loads(line)
        except ValueError:
            continue
        out.append(line)
    return "\n".join(out) + "\n"


NINE = {
    "pt": 1,
    "_id": 9,
    "v1": "nine",
    "v2": 90000000000,
    "v3": "99999.999",
    "v4": "bmluZS5iaW4=",  # base64 of the bytes [110, 105, 110, 101, 46, 98, 105, 110]
    "v5": 9.9,
}


def _row(pt: int, _id: int, v1: str) -> dict:
    return {"pt": pt, "_id": _id, "v1": v1, "v2": None, "v3": None, "v4": None, "v5": None}


PAIMON_STEPS = [
    ("event-row.txt", [NINE]),
    ("event-insert.txt", [_row(1, 1, "one"), _row(1, 2, "two"), NINE, _row(2, 4, "four")]),
    ("event-update.txt", [_row(1, 1, "one"), _row(1, 2, "second"), NINE, _row(2, 4, "four")]),
    ("event-delete.txt", [_row(1, 2, "second"), NINE, _row(2, 4, "four")]),
]


def test_paimon_canal_events_run_by_run(spark, make_config, tmp_path):
    """One run per file in the order of paimon/EXPECTED.md; every message goes to one
    table (option ``table``), as Paimon's sync-table action does."""
    feed = {"name": "paimon", "format": "canal_json", "path": "landing/paimon", "options": {"table": "event"}}
    config = make_config([feed], {"event": {}})
    landing = tmp_path / "landing" / "paimon"
    states = []
    for name, _ in PAIMON_STEPS:
        (landing / name).write_text(_json_lines(corpus("paimon", "canal", "table", "event", name)), encoding="utf-8")
        summary = run_pipeline(config, spark=spark)
        assert (summary.files, summary.quarantined, summary.skipped) == (1, 0, 0), name
        states.append(sorted(export_rows(spark, config, "event"), key=lambda r: r["_id"]))
    assert states == [sorted(expected, key=lambda r: r["_id"]) for _, expected in PAIMON_STEPS]

    types = spark.sql(f"describe {yaml.safe_load(config.read_text())['marts_schema']}.event").collect()
    declared = {r.col_name: r.data_type for r in types if not r.col_name.startswith("_cdc")}
    assert {k: declared[k] for k in ("pt", "_id", "v1", "v2", "v3", "v4", "v5")} == {
        "pt": "int",
        "_id": "int",
        "v1": "string",
        "v2": "bigint",  # INT in the update widens with BIGINT
        "v3": "decimal(8,3)",
        "v4": "binary",
        "v5": "float",
    }
