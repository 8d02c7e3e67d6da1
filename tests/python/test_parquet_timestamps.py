"""The warehouse's parquet timestamps are INT64 microseconds with row-group statistics
(``spark.sql.parquet.outputTimestampType``, set by ``udfs.session``), and a warehouse
whose earlier files are INT96 (Spark's default, before 2026-11-27) runs on unchanged.

Two runs over one Debezium feed, the first written as INT96 as an older warehouse was,
the second with the session's setting. What could go wrong: the setting lost (the
second run's files INT96 again, no statistics for the run's reads of ``loaded_at`` to
skip earlier files by), a microsecond lost in either layout, or the second run
misreading the first's rows (its pending changes and its tested rows are found by
``loaded_at``); a changelog compaction that kept the INT96 layout or lost a value
while rewriting it.
"""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pyarrow.parquet as pq
from table_files import TO_JSON_MICROS, table_files

from udfs.config import load_config
from udfs.pipeline import run_dbt, run_pipeline

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
SETTING = "spark.sql.parquet.outputTimestampType"
EVENT = (
    '{"before":null,"after":{"id":%d,"name":"%s"},"source":{"connector":"postgresql","db":"d","schema":"s",'
    '"table":"items","lsn":%d,"ts_us":%d},"op":"%s"}'
)


def _land(path: Path, events: list[tuple]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(EVENT % e for e in events) + "\n", encoding="utf-8")


def _leaf(data: pq.ParquetFile, column: str) -> int:
    """The index of a top-level column among the file's leaf columns (maps have two)."""
    return next(i for i in range(len(data.schema)) if data.schema.column(i).path == column)


def _timestamp_layout(data: pq.ParquetFile, column: str) -> tuple[str, str]:
    """``(physical type, logical type)`` of a column in a parquet file."""
    col = data.schema.column(_leaf(data, column))
    return col.physical_type, str(col.logical_type)


def _micros(value: datetime) -> int:
    return (value - EPOCH) // timedelta(microseconds=1)


def test_timestamps_are_int64_micros_and_an_int96_warehouse_runs_on(spark, make_config, tmp_path):
    assert spark.conf.get(SETTING) == "TIMESTAMP_MICROS"
    path = make_config([{"name": "f", "format": "debezium_json", "path": "landing/f"}], {"items": {"key": ["id"]}})
    config = load_config(path)
    schema = config.schema
    landing = tmp_path / "landing" / "f"

    # the first run as a warehouse written before the setting
    _land(landing / "a.jsonl", [(1, "one", 10, 1_700_000_000_000_001, "c"), (2, "two", 20, 1_700_000_001_999_999, "c")])
    spark.conf.set(SETTING, "INT96")
    try:
        first = run_pipeline(config, spark=spark)
    finally:
        spark.conf.set(SETTING, "TIMESTAMP_MICROS")
    _land(
        landing / "b.jsonl",
        [(2, "zwei ✓", 30, 1_700_000_002_000_007, "u"), (3, "three", 40, 1_700_000_003_123_456, "c")],
    )
    second = run_pipeline(config, spark=spark)
    assert (first.changes, second.changes) == (2, 2)

    # every changelog file is one run's (an append per run); its layout is its run's
    loaded = dict(
        spark.sql(f"select run_id, unix_micros(min(loaded_at)) from {schema}.changelog group by run_id").collect()
    )
    assert set(loaded) == {first.run_id, second.run_id} and loaded[first.run_id] < loaded[second.run_id]
    layouts = {first.run_id: set(), second.run_id: set()}
    for file in table_files(spark, f"{schema}.changelog"):
        data = pq.ParquetFile(file)
        (run_id,) = set(data.read(columns=["run_id"]).column("run_id").to_pylist())
        layouts[run_id].add(_timestamp_layout(data, "loaded_at"))
        if run_id == second.run_id:
            # statistics: what lets a read of the latest run's rows skip the first's files
            i = _leaf(data, "loaded_at")
            for g in range(data.metadata.num_row_groups):
                stats = data.metadata.row_group(g).column(i).statistics
                assert stats is not None and stats.has_min_max
                assert _micros(stats.min) == _micros(stats.max) == loaded[second.run_id]
    assert layouts[first.run_id] == {("INT96", "None")}
    assert layouts[second.run_id] == {
        (
            "INT64",
            "Timestamp(isAdjustedToUTC=true, timeUnit=microseconds, is_from_converted_type=false, "
            "force_set_converted_type=false)",
        )
    }

    # the second run's merge wrote INT64 too
    segment = [f for f in table_files(spark, f"{schema}.state_segments") if f"segment={second.run_id}" in str(f)]
    assert segment and {_timestamp_layout(pq.ParquetFile(f), "last_commit_ts")[0] for f in segment} == {"INT64"}

    # every value to the microsecond, from files of both layouts
    state = {
        r[0]: tuple(r[1:])
        for r in spark.sql(
            f"select row['id'], row['name'], cast(unix_micros(last_commit_ts) as string) from {schema}.state"
        ).collect()
    }
    assert state == {
        "1": ("one", "1700000000000001"),
        "2": ("zwei ✓", "1700000002000007"),
        "3": ("three", "1700000003123456"),
    }
    commits = sorted(
        r[0] for r in spark.sql(f"select cast(unix_micros(commit_ts) as string) from {schema}.changelog").collect()
    )
    assert commits == ["1700000000000001", "1700000001999999", "1700000002000007", "1700000003123456"]

    # a changelog compaction rewrites each partition holding several files as one INT64
    # file, every value kept (to_json's default timestamp format stops at milliseconds);
    # a partition of one file is left as it is, INT96 or not
    every_value = f"select to_json(struct(*), {TO_JSON_MICROS}) from {schema}.changelog"
    before = sorted(r[0] for r in spark.sql(every_value).collect())
    partitions_before = Counter(f.parent for f in table_files(spark, f"{schema}.changelog"))
    assert sorted(partitions_before.values()) == [1, 1, 2]  # the second run's key 2 shares key 2's partition
    run_dbt(config, "run-operation", extra=["cdc_compact_changelog", "--args", "{after_files: 1}"])
    spark.catalog.refreshTable(f"{schema}.changelog")
    after = {f.parent: f for f in table_files(spark, f"{schema}.changelog")}
    assert len(after) == len(table_files(spark, f"{schema}.changelog")) == len(partitions_before)
    for partition, n_files in partitions_before.items():
        data = pq.ParquetFile(after[partition])
        layout = {_timestamp_layout(data, c)[0] for c in ("loaded_at", "commit_ts")}
        runs = set(data.read(columns=["run_id"]).column("run_id").to_pylist())
        if n_files > 1:
            assert layout == {"INT64"} and runs == {first.run_id, second.run_id}
        else:
            assert layout == ({"INT96"} if runs == {first.run_id} else {"INT64"})
    assert sorted(r[0] for r in spark.sql(every_value).collect()) == before
