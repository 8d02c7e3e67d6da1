"""Runs find the changelog rows they need by ``loaded_at``, the start of the run that
appended them: a merge applies the rows loaded after the last merge
(``merge_log.merged_through``), and the changelog's unique test reads the rows loaded
since the latest run that processed files began (``audit_files.processed_at``). So a
run whose clock is behind those watermarks fails before any model runs
(``macros/sql/cdc_check_clock.sql``), the warehouse left as it was.

One warehouse, six runs over one Debezium feed, the second dying after its changelog
append (a run of the models up to ``changelog``), after a first run completed. What
could go wrong: the interrupted run's rows appended a second time, a run behind the
clock appending changes the merge never applies, or the check refusing a run once the
clock is right again. Also the run lock (``macros/sql/cdc_acquire_run_lock.sql``):
a refused run's lock must not outlive it, whether a plain ``dbt build`` refused by the
clock check or a ``cdc run`` whose hook fails with Spark's own error, and a killed
run's must not block the next ``cdc run``.
"""

from __future__ import annotations

import pytest

from udfs.config import load_config
from udfs.pipeline import RUN_LOCK_TABLE, PipelineError, run_dbt, run_lock_holder, run_pipeline

EVENT = (
    '{"before":null,"after":{"id":%d,"name":"%s"},"source":{"connector":"postgresql","db":"d","schema":"s",'
    '"table":"items","lsn":%d,"ts_us":%d},"op":"%s"}'
)


def _land(config, name: str, events: list[tuple]) -> None:
    path = config.feeds[0].path / name
    path.write_text("\n".join(EVENT % e for e in events) + "\n", encoding="utf-8")


def _rows(spark, sql: str) -> list[tuple]:
    return sorted(tuple(r) for r in spark.sql(sql).collect())


def _tables(spark, schema: str) -> dict[str, list[tuple]]:
    """What a run can change: the changelog's rows per file, the processed files, the state."""
    return {
        "changelog": _rows(
            spark,
            f"select regexp_extract(source_file, '[^/]+$', 0), record_index, row_index, count(*) "
            f"from {schema}.changelog group by 1, 2, 3",
        ),
        "audit": _rows(
            spark, f"select regexp_extract(source_file, '[^/]+$', 0), records_read from {schema}.audit_files"
        ),
        "state": _rows(spark, f"select row['id'], row['name'] from {schema}.state where not is_deleted"),
    }


def _run_lock(spark, schema: str) -> dict[str, str] | None:
    """The run lock's properties (``macros/sql/cdc_acquire_run_lock.sql``), if a run holds it."""
    return run_lock_holder(lambda sql: spark.sql(sql).collect(), schema)


def test_interrupted_run_is_found_and_a_run_behind_the_clock_fails_before_any_model(spark, make_config, capsys):
    path = make_config([{"name": "f", "format": "debezium_json", "path": "landing/f"}], {"items": {"key": ["id"]}})
    config = load_config(path)
    schema = config.schema

    _land(config, "a.jsonl", [(1, "one", 10, 1_700_000_000_000_001, "c"), (2, "two", 20, 1_700_000_001_000_000, "c")])
    run_pipeline(config, spark=spark)

    # a run that dies after appending b.jsonl's rows, before its audit rows mark the file
    _land(
        config, "b.jsonl", [(2, "zwei ✓", 30, 1_700_000_002_000_000, "u"), (3, "three", 40, 1_700_000_003_000_000, "c")]
    )
    run_dbt(config, "run", extra=["--select", "+changelog"])
    assert [r for r in _tables(spark, schema)["changelog"] if r[0] == "b.jsonl"] == [
        ("b.jsonl", 0, 0, 1),
        ("b.jsonl", 1, 0, 1),
    ]

    # the next run finds those rows and appends none of them again
    run_pipeline(config, spark=spark)
    after_b = _tables(spark, schema)
    assert after_b == {
        "changelog": [("a.jsonl", i, 0, 1) for i in (0, 1)] + [("b.jsonl", i, 0, 1) for i in (0, 1)],
        "audit": [("a.jsonl", 2), ("b.jsonl", 2)],
        "state": [("1", "one"), ("2", "zwei ✓"), ("3", "three")],
    }

    # the clock set back: the warehouse's merges a day ahead of any run started now
    spark.sql(f"create table {schema}.merge_log_saved using parquet as select * from {schema}.merge_log")
    columns = spark.table(f"{schema}.merge_log").columns
    ahead = ", ".join("merged_through + interval 1 day" if c == "merged_through" else c for c in columns)
    spark.sql(f"insert overwrite table {schema}.merge_log select {ahead} from {schema}.merge_log_saved")
    _land(config, "c.jsonl", [(4, "four", 50, 1_700_000_004_000_000, "c")])
    # a plain dbt run, as an analyst's through the server: nothing of Python around it
    with pytest.raises(PipelineError, match="the clock is behind the warehouse: this run started at") as failed:
        run_dbt(config, "build")
    assert "Nothing was run" in str(failed.value)
    assert _tables(spark, schema) == after_b
    # the refused run had taken the run lock (the check runs under it), and dbt skips
    # the on-run-end that gives it back: the check gave it back before failing
    assert _run_lock(spark, schema) is None

    # a hook failing with Spark's own error (a merge_log without its watermark column):
    # `cdc run` gives back the lock its dbt took
    spark.sql(f"alter table {schema}.merge_log rename to {schema}.merge_log_kept")
    spark.sql(f"create view {schema}.merge_log as select 1 as unreadable")
    with pytest.raises(PipelineError, match="merged_through"):
        run_pipeline(config, spark=spark)
    assert _run_lock(spark, schema) is None
    spark.sql(f"drop view {schema}.merge_log")
    spark.sql(f"alter table {schema}.merge_log_kept rename to {schema}.merge_log")
    assert _tables(spark, schema) == after_b

    # the clock right again: the same run goes through, after a run killed before its
    # on-run-end left the lock (this process holds the warehouse: no run is going on)
    spark.sql(f"insert overwrite table {schema}.merge_log select * from {schema}.merge_log_saved")
    spark.sql(
        f"create table {schema}.{RUN_LOCK_TABLE} (held boolean) using parquet tblproperties ("
        "'cdc.invocation_id' = 'a-killed-run', 'cdc.command' = 'build', 'cdc.started_at' = '2026-12-01 23:59:59')"
    )
    capsys.readouterr()
    summary = run_pipeline(config, spark=spark)
    assert (
        "cdc run: released the run lock of dbt build (invocation a-killed-run, started 2026-12-01 23:59:59 UTC), "
        "a run that did not finish"
    ) in capsys.readouterr().err
    assert _run_lock(spark, schema) is None
    assert summary.changes == 1
    assert _tables(spark, schema)["state"] == [("1", "one"), ("2", "zwei ✓"), ("3", "three"), ("4", "four")]
