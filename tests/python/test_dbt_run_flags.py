"""What dbt's run flags do to the project's models: ``--full-refresh`` keeps what runs
read and merged, ``--empty`` is refused.

dbt's ``--full-refresh`` rebuilds an incremental model from its query, and these
models' queries read only the landing files no run has processed. Before the
changelog's and the state's models were ``full_refresh: false`` (dbt_project.yml), a
``dbt build --full-refresh`` through ``cdc serve`` left the example's warehouse with no
changelog row, no processed file in ``audit_files`` (so the next run would read every
landing file still there again) and a mart that had lost a column. ``--empty`` builds
every model from refs of no rows: after a run killed past its changelog append, a
``dbt build --empty`` through ``cdc serve`` recorded a merge of nothing in ``merge_log``,
and the next run left the killed run's change out of the state.

Here two runs (one record quarantined), then the landing files deleted (a retention
policy), then ``dbt build --full-refresh``: the changelog, the quarantine, the audit,
the history and the mart are as they were, and dbt's log names the models kept. Then a
file lands, ``dbt build --empty`` is refused before the run lock and changes nothing,
and the next run reads that file alone and merges it onto the kept state.
"""

from __future__ import annotations

import json

import pytest
from debezium_lines import items_view_rows, land, one_feed_of_items, row_event

from udfs.pipeline import RUN_LOCK_TABLE, PipelineError, run_dbt, run_pipeline

KEPT_TABLES = ("changelog", "quarantine", "audit_files", "history", "merge_log")


def _rows(spark, table: str) -> list[str]:
    rows = spark.table(table).collect()
    return sorted(json.dumps(r.asDict(recursive=True), sort_keys=True, default=str) for r in rows)


def test_a_full_refresh_keeps_what_runs_read_and_merged_and_empty_is_refused(spark, make_config, tmp_path):
    config, schema, marts, landing = one_feed_of_items(make_config, tmp_path)

    land(
        landing,
        "1.jsonl",
        [row_event(10, "c", {"id": 1, "a": "x"}), row_event(20, "c", {"id": 2, "a": "y"}), "{not json"],
    )
    run_pipeline(config, spark=spark)
    land(
        landing,
        "2.jsonl",
        [row_event(30, "u", {"id": 1, "a": "x2", "b": "new"}), row_event(40, "d", {"id": 2, "a": "y"})],
    )
    run_pipeline(config, spark=spark)
    before = {table: _rows(spark, f"{schema}.{table}") for table in KEPT_TABLES}
    assert [len(before[t]) for t in ("changelog", "quarantine", "audit_files", "history")] == [4, 1, 2, 4]
    mart = items_view_rows(spark, marts)
    assert mart == {1: {"id": "1", "a": "x2", "b": "new"}}
    for landed in landing.iterdir():
        landed.unlink()

    events = []
    run_dbt(config, "build", extra=["--full-refresh"], callbacks=[events.append])

    after = {table: _rows(spark, f"{schema}.{table}") for table in KEPT_TABLES}
    for table in ("changelog", "quarantine", "audit_files", "history"):
        assert after[table] == before[table], table
    assert set(before["merge_log"]) <= set(after["merge_log"])
    assert items_view_rows(spark, marts) == mart
    (notice,) = [e.info.msg for e in events if e.info.msg.startswith("cdc: --full-refresh keeps the rows of ")]
    assert notice.startswith(
        "cdc: --full-refresh keeps the rows of audit_changed_files, audit_files, audit_run_cast_failures, changelog,"
        " ddl_log, history_segments, key_moves, merge_log, quarantine, quarantine_retries, state_segments"
        " (full_refresh: false"
    ), notice

    land(landing, "3.jsonl", [row_event(50, "u", {"id": 1, "a": "x3", "b": "new"})])
    with pytest.raises(PipelineError, match=r"--empty builds every model from no rows, .* Nothing was run"):
        run_dbt(config, "build", extra=["--empty"])
    assert {table: _rows(spark, f"{schema}.{table}") for table in KEPT_TABLES} == after
    assert not spark.sql(f"show tables in {schema} like '{RUN_LOCK_TABLE}'").collect()

    summary = run_pipeline(config, spark=spark)
    assert (summary.files, summary.records, summary.changes) == (1, 1, 1)
    assert items_view_rows(spark, marts) == {1: {"id": "1", "a": "x3", "b": "new"}}
    assert len(_rows(spark, f"{schema}.changelog")) == 5
