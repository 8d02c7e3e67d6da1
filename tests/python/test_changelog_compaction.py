"""Changelog compaction: when a partition (``table_id``, ``bucket``) has had more than
``compact_changelog_after_files`` files appended since the last compaction, every
partition holding several files is rewritten as one file at the end of a run
(macros/sql/cdc_compact_changelog.sql), and a compaction cut short is finished by the
next run's ``on-run-start``.

What could go wrong: rows lost, doubled or changed by the rewrite (every row, its
``loaded_at`` and ``run_id`` included, must be the same after it); a rewritten file
whose rows are not in load order (the reads by ``loaded_at`` would then read it whole);
a merge after a compaction that applies other changes than without one; a crash
between Spark's delete of a partition's old files and the move of its new one, after
which the next run would merge from a changelog missing rows.

Every warehouse here lands the same four batches; the reference compacts nothing.
"""

from __future__ import annotations

import json
import shutil
from collections import Counter
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from table_files import TO_JSON_MICROS, files_per_changelog_partition, local_path, table_files

from udfs.config import load_config
from udfs.pipeline import RUN_LOCK_TABLE, PipelineError, run_dbt, run_lock_holder, run_pipeline

BUCKETS = 2

# batch -> (op, id) in order; the log position grows across batches
BATCHES = {
    1: [("c", i) for i in range(12)],
    2: [("u", i) for i in range(6)] + [("d", 6), ("d", 7)],
    3: [("u", i) for i in range(3)] + [("c", i) for i in range(12, 16)] + [("c", 6)],
    4: [("u", 1), ("d", 12), ("u", 6), ("c", 7)],
    5: [("u", 2), ("u", 13)],
    6: [("u", 3), ("u", 14), ("u", 4), ("u", 15)],
}
#: the batches of the reference warehouse
REFERENCE_BATCHES = (1, 2, 3, 4)

STATE = "select table_id, key_text, to_json(row) as row, is_deleted, last_seq, last_event_id, last_op from {s}.state"
HISTORY = (
    "select table_id, key_text, event_id, op, to_json(row) as row, valid_from_seq, valid_to_seq, is_deleted, "
    "is_current from {s}.history"
)


def event(batch: int, position: int, op: str, key: int) -> str:
    image = {"id": key, "name": f"item {key} \u00e9 batch {batch}\nline 2", "qty": 10**18 + batch}
    return json.dumps(
        {
            "before": {"id": key} if op in ("u", "d") else None,
            "after": None if op == "d" else image,
            "source": {
                "connector": "postgresql",
                "db": "d",
                "schema": "s",
                "table": "items",
                "lsn": batch * 1000 + position,
                "ts_us": 1700000000000000 + batch * 1000 + position,
            },
            "op": op,
        },
        ensure_ascii=False,
    )


def warehouse(tmp_path: Path, after_files: int) -> Path:
    """A cdc.yml of its own (schemas unique to this warehouse) in ``tmp_path``."""
    name = tmp_path.name.replace("-", "_").lower()
    (tmp_path / "landing").mkdir()
    path = tmp_path / "cdc.yml"
    path.write_text(
        json.dumps(
            {
                "warehouse": ".cdc",
                "schema": f"{name}_cdc",
                "marts_schema": f"{name}_marts",
                "buckets": BUCKETS,
                "compact_changelog_after_files": after_files,
                "feeds": [{"name": "f", "format": "debezium_json", "path": "landing"}],
                "tables": {"items": {"key": ["id"], "columns": {"id": "bigint", "name": "string", "qty": "bigint"}}},
            }
        ),
        encoding="utf-8",
    )
    return path


def land_and_run(spark, path: Path, batch: int) -> None:
    lines = [event(batch, i, op, key) for i, (op, key) in enumerate(BATCHES[batch])]
    (path.parent / "landing" / f"batch-{batch}.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    summary = run_pipeline(path, spark=spark)
    assert summary.changes == len(lines) and summary.quarantined == 0


def rows(spark, sql: str) -> list[str]:
    return sorted(json.dumps(r.asDict(recursive=True), default=str, sort_keys=True) for r in spark.sql(sql).collect())


def changelog_rows(spark, schema: str) -> list[str]:
    """Every changelog row as JSON, its timestamps to the microsecond."""
    return rows(spark, f"select to_json(struct(*), {TO_JSON_MICROS}) as row from {schema}.changelog")


def sql_rows(spark):
    """``fetch(sql)`` for ``run_lock_holder``: the rows of a statement in this session."""
    return lambda sql: spark.sql(sql).collect()


def hold_run_lock(spark, schema: str) -> None:
    """The run lock as another run, still going, holds it (a dbt build through a server)."""
    spark.sql(
        f"create table {schema}.{RUN_LOCK_TABLE} (held boolean) using parquet tblproperties ("
        "'cdc.invocation_id' = 'a-running-run', 'cdc.command' = 'build', 'cdc.started_at' = '2026-12-02 08:00:00')"
    )


#: the error of a compaction by hand refused while that run holds the lock
REFUSED = "another run holds the warehouse .*: dbt build, invocation a-running-run"


def lock_holders_at(spark, schema: str, statement: str) -> tuple[list, object]:
    """The run lock's holders as each statement that holds ``statement`` starts (dbt's
    query comment comes first), and the dbt callback that reads them."""
    holders = []

    def read_lock(event) -> None:
        if event.info.name == "SQLQuery" and statement in event.data.sql:
            holders.append(run_lock_holder(sql_rows(spark), schema))

    return holders, read_lock


def files_per_partition(spark, schema: str) -> Counter:
    spark.catalog.refreshTable(f"{schema}.changelog")
    return files_per_changelog_partition(spark, f"{schema}.changelog")


def compactions(spark, schema: str) -> list[tuple]:
    if not spark.catalog.tableExists(f"{schema}.changelog_compactions"):
        return []
    return [
        (r.compaction_id, r.step, r.partitions, r.rows_moved)
        for r in spark.sql(f"select * from {schema}.changelog_compactions order by logged_at, step").collect()
    ]


def staging_tables(spark, schema: str) -> list[str]:
    return sorted(r.tableName for r in spark.sql(f"show tables in {schema} like 'changelog__compaction*'").collect())


def table_folder(spark, table: str) -> Path:
    location = spark.sql(f"describe table extended {table}").where("col_name = 'Location'").first().data_type
    return local_path(location)


def latest_run_id(spark, schema: str) -> str:
    table = f"{schema}.changelog"
    return spark.sql(f"select max(run_id) from {table} where loaded_at = (select max(loaded_at) from {table})").first()[
        0
    ]


def assert_files_in_load_order(spark, schema: str) -> None:
    for file in table_files(spark, f"{schema}.changelog"):
        loaded = pq.read_table(file, columns=["loaded_at"]).column("loaded_at").to_pylist()
        assert loaded == sorted(loaded), file


@pytest.fixture(scope="module")
def reference(spark, tmp_path_factory) -> dict:
    """The state and history after the four batches, never compacted."""
    path = warehouse(tmp_path_factory.mktemp("reference"), after_files=0)
    for batch in REFERENCE_BATCHES:
        land_and_run(spark, path, batch)
    schema = load_config(path).schema
    assert compactions(spark, schema) == []
    assert max(files_per_partition(spark, schema).values()) == len(REFERENCE_BATCHES)
    return {"state": rows(spark, STATE.format(s=schema)), "history": rows(spark, HISTORY.format(s=schema))}


def test_a_run_rewrites_each_partition_past_the_limit_as_one_file_and_keeps_every_row(spark, tmp_path, reference):
    path = warehouse(tmp_path, after_files=2)
    schema = load_config(path).schema
    land_and_run(spark, path, 1)
    land_and_run(spark, path, 2)
    assert set(files_per_partition(spark, schema).values()) == {2}
    assert compactions(spark, schema) == []  # at the limit, not past it
    before = changelog_rows(spark, schema)

    # a user's own table whose name only begins like a staging table's: left alone
    spark.sql(f"create table {schema}.changelog__compaction_notes (note string) using parquet")
    spark.sql(f"insert into {schema}.changelog__compaction_notes values ('mine')")

    # an analyst's temporary view named like the compactions' log (`show tables` lists
    # temporary views in every schema): not the log, which this compaction creates
    spark.sql("create temporary view changelog_compactions as select 'not the log' as note")
    land_and_run(spark, path, 3)  # a third file in each partition: the run's end compacts
    assert spark.catalog.dropTempView("changelog_compactions")  # left as it was
    assert set(files_per_partition(spark, schema).values()) == {1}
    log = compactions(spark, schema)
    assert [step for _, step, _, _ in log] == [1, 2] and log[0][0] == log[1][0]
    assert log[0][2] == BUCKETS and log[0][3] == len(before) + len(BATCHES[3])
    assert staging_tables(spark, schema) == ["changelog__compaction_notes"]
    assert spark.table(f"{schema}.changelog__compaction_notes").collect() == [("mine",)]
    third_run = latest_run_id(spark, schema)
    after = changelog_rows(spark, schema)
    assert [r for r in after if third_run not in r] == before
    assert len(after) == len(before) + len(BATCHES[3])
    assert_files_in_load_order(spark, schema)

    # and one named like the run lock: no run holds the lock, so the run goes on
    spark.sql(f"create temporary view {RUN_LOCK_TABLE} as select 'not the lock' as note")
    land_and_run(spark, path, 4)  # merged from the compacted changelog
    assert spark.catalog.dropTempView(RUN_LOCK_TABLE)
    assert set(files_per_partition(spark, schema).values()) == {2}
    assert rows(spark, STATE.format(s=schema)) == reference["state"]
    assert rows(spark, HISTORY.format(s=schema)) == reference["history"]

    # three files in a partition, two of them appended since the compaction: the limit
    # counts the files appended since, so nothing is compacted
    land_and_run(spark, path, 5)
    assert max(files_per_partition(spark, schema).values()) == 3
    assert compactions(spark, schema) == log

    # by hand, with a lower limit: the partitions holding several files become one each,
    # under the run lock (a run appending beside the rewrite would lose its rows with
    # the old files). While another run holds it, the compaction is refused.
    by_hand = ["cdc_compact_changelog", "--args", "{after_files: 1}"]
    config = load_config(path)
    hold_run_lock(spark, schema)
    with pytest.raises(PipelineError, match=REFUSED):
        run_dbt(config, "run-operation", extra=by_hand)
    assert compactions(spark, schema) == log and max(files_per_partition(spark, schema).values()) == 3
    assert run_lock_holder(sql_rows(spark), schema)["cdc.invocation_id"] == "a-running-run"
    spark.sql(f"drop table {schema}.{RUN_LOCK_TABLE}")

    before = changelog_rows(spark, schema)
    holders, read_lock_at_rewrite = lock_holders_at(spark, schema, "insert overwrite table")
    run_dbt(config, "run-operation", extra=by_hand, callbacks=[read_lock_at_rewrite])
    assert set(files_per_partition(spark, schema).values()) == {1}
    assert [step for _, step, _, _ in compactions(spark, schema)] == [1, 2, 1, 2]
    compaction_id = compactions(spark, schema)[-1][0]  # the operation's invocation id
    assert [(h["cdc.command"], h["cdc.invocation_id"]) for h in holders] == [
        ("run-operation cdc_compact_changelog", compaction_id)
    ]
    assert run_lock_holder(sql_rows(spark), schema) is None  # given back
    assert changelog_rows(spark, schema) == before
    assert_files_in_load_order(spark, schema)


def test_a_compaction_cut_short_after_the_old_files_were_deleted_is_finished_by_the_next_run(
    spark, tmp_path, reference, capsys
):
    path = warehouse(tmp_path, after_files=0)  # no compaction at a run's end
    config = load_config(path)
    schema = config.schema
    for batch in (1, 2, 3):
        land_and_run(spark, path, batch)
    before = changelog_rows(spark, schema)

    # the first step, as a run's end takes it, run alone by hand: refused while another
    # run holds the run lock (a run's appends beside it would be missing from the staged
    # partitions), else under the lock for the step, and the lock given back
    stage = ["cdc_changelog_compaction_stage"]
    hold_run_lock(spark, schema)
    with pytest.raises(PipelineError, match=REFUSED):
        run_dbt(config, "run-operation", extra=stage)
    assert compactions(spark, schema) == [] and staging_tables(spark, schema) == []
    spark.sql(f"drop table {schema}.{RUN_LOCK_TABLE}")
    holders, read_lock_at_staging = lock_holders_at(spark, schema, "insert into")
    run_dbt(config, "run-operation", extra=stage, callbacks=[read_lock_at_staging])
    [(stage_id, step, _, _)] = compactions(spark, schema)
    assert step == 1
    assert len(holders) == 2  # the staged rows' insert, then the log's
    assert {(h["cdc.command"], h["cdc.invocation_id"]) for h in holders} == {
        ("run-operation cdc_changelog_compaction_stage", stage_id)
    }
    assert run_lock_holder(sql_rows(spark), schema) is None

    # then what a crash inside the second leaves: Spark deletes the old files of each
    # partition before it moves the new one in
    deleted = table_files(spark, f"{schema}.changelog")
    assert len(deleted) == BUCKETS * 3
    for file in deleted:
        file.unlink()
    spark.catalog.refreshTable(f"{schema}.changelog")
    assert spark.table(f"{schema}.changelog").count() == 0

    # the second step run alone by hand is refused while another run holds the lock
    hold_run_lock(spark, schema)
    with pytest.raises(PipelineError, match=REFUSED):
        run_dbt(config, "run-operation", extra=["cdc_changelog_compaction_apply"])
    assert [step for _, step, _, _ in compactions(spark, schema)] == [1]
    assert spark.table(f"{schema}.changelog").count() == 0
    spark.sql(f"drop table {schema}.{RUN_LOCK_TABLE}")

    land_and_run(spark, path, 4)  # its on-run-start rewrites the partitions first
    assert [step for _, step, _, _ in compactions(spark, schema)] == [1, 2]
    assert staging_tables(spark, schema) == []
    fourth_run = latest_run_id(spark, schema)
    assert [r for r in changelog_rows(spark, schema) if fourth_run not in r] == before
    assert rows(spark, STATE.format(s=schema)) == reference["state"]
    assert rows(spark, HISTORY.format(s=schema)) == reference["history"]

    # cut short again, staged by an older version (one staging table for every
    # compaction: changelog__compaction); by hand (no on-run-start), the compaction
    # macro finishes the staged one first, whatever its limit (here the setting's, 0:
    # never compact)
    before = changelog_rows(spark, schema)
    run_dbt(config, "run-operation", extra=["cdc_changelog_compaction_stage"])
    [staged] = staging_tables(spark, schema)
    assert staged == "changelog__compaction_" + compactions(spark, schema)[-1][0].replace("-", "")
    spark.sql(f"alter table {schema}.{staged} rename to {schema}.changelog__compaction")
    legacy_folder = table_folder(spark, f"{schema}.changelog__compaction")
    for file in table_files(spark, f"{schema}.changelog"):
        file.unlink()
    spark.catalog.refreshTable(f"{schema}.changelog")
    kept = tmp_path / "kept-staging-folder"  # outside the warehouse, which `cdc run` cleans
    shutil.copytree(legacy_folder, kept)
    # a staging table short of a file is refused (the changelog is not rewritten from
    # it), and the compaction is finished once the file is back
    lost = table_files(spark, f"{schema}.changelog__compaction")[0]
    lost.unlink()
    spark.catalog.refreshTable(f"{schema}.changelog__compaction")
    with pytest.raises(
        PipelineError,
        match=r"(?s)run-operation failed:\nmacro.cdc.cdc_compact_changelog: error: .*holds \d+ rows, \d+ were",
    ):
        run_dbt(config, "run-operation", extra=["cdc_compact_changelog"])
    assert [step for _, step, _, _ in compactions(spark, schema)] == [1, 2, 1]
    assert run_lock_holder(sql_rows(spark), schema) is None  # the refused compaction gave the lock back
    shutil.copy2(kept / lost.relative_to(legacy_folder), lost)
    spark.catalog.refreshTable(f"{schema}.changelog__compaction")
    run_dbt(config, "run-operation", extra=["cdc_compact_changelog"])
    assert [step for _, step, _, _ in compactions(spark, schema)] == [1, 2, 1, 2]
    assert changelog_rows(spark, schema) == before
    assert set(files_per_partition(spark, schema).values()) == {1}
    assert staging_tables(spark, schema) == [] and not legacy_folder.exists()

    # what a kill inside that `drop table` leaves: the metastore's entry gone, the
    # folder kept. Spark refuses a table over an existing folder (LOCATION_ALREADY_EXISTS),
    # so the next compaction stages into a table of its own. A run removes such folders
    # before dbt starts, naming each (as `cdc serve` does when it starts); a compaction
    # by hand does not, so the folder is put back again after the runs.
    shutil.copytree(kept, legacy_folder)
    capsys.readouterr()
    land_and_run(spark, path, 5)
    removed = f"cdc run: removed {legacy_folder}, a table folder no table owns (left by a killed run)"
    assert removed in capsys.readouterr().err.splitlines()
    assert not legacy_folder.exists()
    land_and_run(spark, path, 6)
    shutil.move(kept, legacy_folder)
    before = changelog_rows(spark, schema)
    # this time its two steps run alone by hand, each under the run lock for the step
    stage_holders, read_lock_at_staging = lock_holders_at(spark, schema, "insert into")
    run_dbt(config, "run-operation", extra=stage, callbacks=[read_lock_at_staging])
    apply_holders, read_lock_at_rewrite = lock_holders_at(spark, schema, "insert overwrite table")
    run_dbt(config, "run-operation", extra=["cdc_changelog_compaction_apply"], callbacks=[read_lock_at_rewrite])
    assert [h["cdc.command"] for h in stage_holders + apply_holders] == [
        "run-operation cdc_changelog_compaction_stage",
        "run-operation cdc_changelog_compaction_stage",
        "run-operation cdc_changelog_compaction_apply",
    ]
    assert stage_holders[0]["cdc.invocation_id"] != apply_holders[0]["cdc.invocation_id"]
    assert run_lock_holder(sql_rows(spark), schema) is None
    assert [step for _, step, _, _ in compactions(spark, schema)] == [1, 2, 1, 2, 1, 2]
    assert changelog_rows(spark, schema) == before
    assert set(files_per_partition(spark, schema).values()) == {1}
    assert staging_tables(spark, schema) == [] and legacy_folder.is_dir()


def test_a_run_in_which_a_data_test_failed_compacts_nothing(spark, tmp_path):
    path = warehouse(tmp_path, after_files=1)
    schema = load_config(path).schema
    # by hand before any run: nothing to compact (and no schema yet to hold the run lock)
    run_dbt(load_config(path), "run-operation", extra=["cdc_compact_changelog", "--args", "{after_files: 1}"])
    assert schema.lower() not in [r[0].lower() for r in spark.sql("show schemas").collect()]
    land_and_run(spark, path, 1)
    assert compactions(spark, schema) == []  # one file a partition: at the limit
    # a changelog file lost: the next run's audit balance test fails, and its end must
    # not rewrite the changelog as if it were whole
    sorted(table_files(spark, f"{schema}.changelog"))[0].unlink()
    spark.catalog.refreshTable(f"{schema}.changelog")
    with pytest.raises(PipelineError, match="assert_audit_files_balance"):
        land_and_run(spark, path, 2)
    assert compactions(spark, schema) == []
    assert max(files_per_partition(spark, schema).values()) == 2
