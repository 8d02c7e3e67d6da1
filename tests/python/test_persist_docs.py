"""Each model's description is its table's or view's comment (``persist_docs``), and an
incremental model's table, which runs keep, follows its description when it changes
(``macros/materializations/spark__persist_docs.sql``); a run with nothing to change
issues no statement for it. Every model's comment through the Thrift server is
``test_thrift_server.py``'s."""

from __future__ import annotations

import json
from pathlib import Path

from debezium_lines import land, one_feed_of_items, row_event

from udfs.pipeline import run_pipeline

#: a table's comment as an older description left it, and as a Spark SQL literal
STALE = "an older description, with a quote ' and a backslash \\"
STALE_LITERAL = "'an older description, with a quote \\' and a backslash \\\\'"


def _comments(spark, schema: str, tables: list[str]) -> dict[str, list[str]]:
    """Each table's comment as Spark describes it (none: an empty list)."""
    return {
        table: [
            r.data_type
            for r in spark.sql(f"describe table extended {schema}.{table}").collect()
            if r.col_name == "Comment"
        ]
        for table in tables
    }


def _comment_statements(warehouse: Path) -> int:
    """The `comment on table` statements dbt issued in every run so far (its debug log)."""
    log = (warehouse / "dbt" / "logs" / "dbt.log").read_text(encoding="utf-8")
    return sum("comment on table" in line.lower() for line in log.splitlines())


def test_an_incremental_tables_comment_follows_its_models_description(spark, make_config, tmp_path):
    config, schema, _, landing = one_feed_of_items(make_config, tmp_path)
    warehouse = config.warehouse
    land(landing, "items.jsonl", [row_event(10, "c", {"id": 1, "name": "a"})])
    assert run_pipeline(config, spark=spark).changes == 1

    manifest = json.loads((warehouse / "dbt" / "target" / "manifest.json").read_text(encoding="utf-8"))
    descriptions = {
        node["name"]: node["description"]
        for node in manifest["nodes"].values()
        if node["resource_type"] == "model" and node["config"]["materialized"] == "incremental"
    }
    assert {"changelog", "state_segments", "history_segments", "audit_files", "quarantine"} <= set(descriptions)
    kept = sorted(descriptions)
    want = {table: [descriptions[table]] for table in kept}
    assert _comments(spark, schema, kept) == want
    assert _comment_statements(warehouse) == 0  # created with their comment

    # the descriptions edited since the tables were created (as by an upgrade of the
    # project), and a table of a warehouse built before comments were written (none)
    for table in ("changelog", "state_segments"):
        spark.sql(f"comment on table {schema}.{table} is {STALE_LITERAL}")
    spark.sql(f"alter table {schema}.audit_files unset tblproperties ('comment')")
    assert _comments(spark, schema, ["changelog", "state_segments", "audit_files"]) == {
        "changelog": [STALE],
        "state_segments": [STALE],
        "audit_files": [],
    }
    assert run_pipeline(config, spark=spark).changes == 0
    assert _comments(spark, schema, kept) == want
    assert _comment_statements(warehouse) == 3

    # nothing differs: no statement
    assert run_pipeline(config, spark=spark).changes == 0
    assert _comments(spark, schema, kept) == want
    assert _comment_statements(warehouse) == 3
