"""How a run's reads of ``changelog`` grow with the changelog, in four layouts:

* ``INT96``: timestamps as INT96 (Spark's default), every writing task's files;
* ``INT64``: timestamps as INT64 microseconds (the project's session setting,
  ``udfs.session``), every writing task's files;
* ``INT64 rebalanced``: INT64, the rows rebalanced by partition before the write, as
  the changelog model's append is: one file per partition and run;
* ``INT64 compacted``: as ``INT64 rebalanced``, and before the latest run's append
  every partition is rewritten as one file in load order, as the changelog compaction
  does (the statements of ``macros/sql/cdc_changelog_compaction_stage.sql`` and
  ``..._apply.sql``): one file per partition for the earlier runs, one for the latest.

``python -m bench.changelog_scan [--runs 10,40] [--rows-per-run 250000]
[--write-tasks 2] [--rounds 3]``

One table per layout, shaped as ``changelog`` is for these reads (partitioned by
``table_id`` and 16 buckets; the test's key columns, ``format``, ``loaded_at``,
``run_id``, a 200-byte image and Debezium's ``extras``), gets one append per run, each
with its own ``loaded_at`` and ``run_id``, as a daily run's append does; 1% of each
run's rows are an Arcion table's, with their ``operationcount`` in ``extras``. A run's
rows are written by ``--write-tasks`` tasks (the tasks that read a run's decoded
batch: each writes a file into every partition it has rows for). At each
size of ``--runs``, the reads as dbt compiles them; the latest run is the one whose rows
are not merged yet, and the one that died before its audit rows:

* *pending*: the rows loaded after the last merge (``int_pending_changes``:
  ``loaded_at > (select max(merged_through) from merge_log)``), counted;
* *tested*: the changelog's unique test over the run's rows (``cdc_run_rows``:
  ``loaded_at >= (select max(processed_at) from audit_files) or run_id = <invocation>``;
  here the latest ``processed_at`` is the latest run's start), grouped by its key;
* *op values all* / *run*: the changelog's ``accepted_values`` test of ``op`` over every
  row (before 2026-11-28) / over the run's rows (the unique test's scope), grouped by
  ``op``; each run holds one row whose ``op`` is not accepted, so the first finds one
  a run and the second the latest run's;
* *present*: what the changelog model finds already appended for the batch's files
  (the latest run's, as if it died before its audit rows), over every run's rows;
* *files counted*: the compaction's check at a run's end
  (``cdc_changelog_files_since_compaction``: the most files a partition got since the
  last compaction; in the compacted layout the rows loaded before it are skipped by
  their ``loaded_at`` statistics, in the others every file is counted);
* *arcion audit*: the rows ``arcion_operationcount_gaps`` reads, every row's
  ``extras`` *before*, the Arcion formats' rows only *after* (by ``format``'s
  statistics).

The layouts take turns round by round (the machine is shared and noisy); the best round
of each counts. Prints the files, the seconds, each layout over INT96 at each size, the
growth from the first size to the last (the size ratio when a read scans every run's
rows, less when it skips them by their ``loaded_at`` statistics; what remains grows
with the files) and the Arcion audit's read after over before; no assertion.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

#: layout -> (``spark.sql.parquet.outputTimestampType``, rebalanced by partition,
#: compacted before the latest run); the layout before the project's settings first
LAYOUTS = {
    "INT96": ("INT96", False, False),
    "INT64": ("TIMESTAMP_MICROS", False, False),
    "INT64 rebalanced": ("TIMESTAMP_MICROS", True, False),
    "INT64 compacted": ("TIMESTAMP_MICROS", True, True),
}
READS = (
    "pending",
    "tested",
    "op values all",
    "op values run",
    "present",
    "files counted",
    "arcion before",
    "arcion after",
)
#: one second a run apart, far from any epoch edge
_RUN_START_US = 1_700_000_000_000_000
_BUCKETS = 16
#: one row in ARCION_EVERY of a run is an Arcion internal table's
ARCION_EVERY = 100


def _loaded_at(run: int) -> str:
    return f"timestamp_micros({_RUN_START_US + run * 1_000_000})"


def _append_run(spark: Any, table: str, layout: str, run: int, rows: int, tasks: int) -> None:
    timestamps, rebalanced, _ = LAYOUTS[layout]
    spark.conf.set("spark.sql.parquet.outputTimestampType", timestamps)
    arcion = f"id % {ARCION_EVERY} = 0"
    counts = "'insert_count', cast(id as string), 'update_count', '0', 'delete_count', '0', 'replace_count', '0'"
    debezium = "'connector', 'postgresql', 'snapshot', 'false', 'server', 'dbserver1', 'lsn', cast(id as string)"
    appended = spark.range(0, rows, 1, tasks).selectExpr(
        f"'landing/f/file-{run:05d}.jsonl' as source_file",
        "cast(id as int) as record_index",
        "0 as row_index",
        f"if({arcion}, 'arcion_internal_json', 'debezium_json') as format",
        "case when id = 1 then 'upsert' when id % 2 = 0 then 'insert' else 'update' end as op",
        f"concat('{{\"id\":', cast(id + {run * rows} as string), '}}') as key_text",
        "repeat('x', 200) as after",
        f"if({arcion}, map({counts}), map({debezium})) as extras",
        f"{_loaded_at(run)} as loaded_at",
        f"'run-{run:05d}' as run_id",
        f"if({arcion}, 'arcion.s.orders', 'inventory.s.items') as table_id",
        f"cast(pmod(xxhash64(id), {_BUCKETS}) as int) as bucket",
    )
    if rebalanced:
        appended = appended.hint("rebalance", "table_id", "bucket")
    appended.write.mode("append").format("parquet").partitionBy("table_id", "bucket").saveAsTable(table)


def _compact(spark: Any, table: str) -> float:
    """Every partition of ``table`` rewritten as one file in load order, as the changelog
    compaction's two steps do (staged in a copy, then a dynamic partition overwrite from
    it); returns the seconds it took."""
    t0 = time.perf_counter()
    staging = f"{table}__compaction"
    spark.sql(f"drop table if exists {staging}")
    spark.sql(f"create table {staging} like {table}")
    spark.sql(f"insert into {staging} select * from {table}")
    before = spark.conf.get("spark.sql.sources.partitionOverwriteMode")
    spark.conf.set("spark.sql.sources.partitionOverwriteMode", "dynamic")
    try:
        # the macro sorts by `loaded_at, order_key`; these tables have no `order_key`,
        # and the reads' `loaded_at` statistics are the same either way
        spark.sql(
            f"insert overwrite table {table} partition (table_id, bucket) select * from {staging} "
            "distribute by table_id, bucket sort by table_id, bucket, loaded_at"
        )
    finally:
        spark.conf.set("spark.sql.sources.partitionOverwriteMode", before)
    spark.sql(f"drop table {staging}")
    return time.perf_counter() - t0


def _most_files_per_partition(spark: Any, table: str, leave_out: set[str]) -> int:
    """The most files one partition of ``table`` holds, ``leave_out`` not counted."""
    from collections import Counter

    partitions = Counter(uri.rsplit("/", 1)[0] for uri in spark.table(table).inputFiles() if uri not in leave_out)
    return max(partitions.values(), default=0)


def _physical_types(spark: Any, table: str) -> list[str]:
    """The physical types of ``loaded_at`` in the table's files (a check of the layout)."""
    from urllib.parse import unquote, urlparse

    import pyarrow.parquet as pq

    types = set()
    for uri in spark.table(table).inputFiles():
        schema = pq.ParquetFile(unquote(urlparse(uri).path)).schema
        types.add(
            next(schema.column(i).physical_type for i in range(len(schema)) if schema.column(i).path == "loaded_at")
        )
    return sorted(types)


def _reads(table: str, watermark: str, audit: str, latest: int, compacted: bool) -> dict[str, str]:
    key = "concat_ws('|', source_file, cast(record_index as string), cast(row_index as string))"
    processed = f"(select coalesce(max(processed_at), timestamp '1970-01-01') from {audit})"
    scope = f"(loaded_at >= {processed} or run_id = 'run-{latest:05d}')"
    accepted = "('insert', 'update', 'delete', 'snapshot', 'truncate')"

    def op_values(where: str) -> str:  # dbt's accepted_values test, its failing rows counted
        return (
            "select coalesce(sum(n_records), 0) from (select op as value_field, count(*) as n_records "
            f"from (select * from {table} where {where}) dbt_subquery group by op) "
            f"where value_field not in {accepted}"
        )

    counted = " or ".join(f"extras['{c}_count'] is not null" for c in ("insert", "update", "delete", "replace"))
    return {
        "pending": (
            f"select count(key_text) from {table} where loaded_at > (select max(merged_through) from {watermark})"
        ),
        "tested": (
            f"select count(*) from (select unique_field, count(*) as n_records from (select {key} as unique_field "
            f"from (select * from {table} where {scope}) dbt_subquery where {key} is not null) "
            "group by unique_field having count(*) > 1)"
        ),
        "op values all": op_values("true"),
        "op values run": op_values(scope),
        "files counted": (
            f"select coalesce(max(files), 0) from (select count(distinct _metadata.file_path) as files from {table} "
            + (f"where loaded_at > {_loaded_at(latest - 1)} " if compacted else "")
            + "group by table_id, bucket)"
        ),
        "present": (
            f"select count(*) from (select source_file, record_index, row_index from {table} as this_table "
            f"left semi join (select 'landing/f/file-{latest:05d}.jsonl' as source_file) as batch_files "
            "on this_table.source_file = batch_files.source_file)"
        ),
        "arcion before": f"select count(*) from {table} where {counted}",
        "arcion after": f"select count(*) from {table} where format like 'arcion%' and ({counted})",
    }


def measure(sizes: list[int], rows: int, rounds: int, tasks: int = 2) -> dict[str, Any]:
    from udfs.session import build_session

    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="cdc-changelog-scan-") as tmp:
        spark = build_session(Path(tmp))
        tables = {layout: f"default.changelog_{layout.lower().replace(' ', '_')}" for layout in LAYOUTS}
        files: dict[str, dict[str, int]] = {}
        compactions: dict[str, float] = {}
        compacted_files: set[str] = set()
        written = 0
        for size in sizes:
            for run in range(written, size):
                for layout, table in tables.items():
                    if LAYOUTS[layout][2] and run == size - 1 and run > 0:
                        compactions[str(size)] = round(_compact(spark, table), 3)
                        compacted_files = set(spark.table(table).inputFiles())
                    _append_run(spark, table, layout, run, rows, tasks)
            written = size
            files[str(size)] = {layout: len(spark.table(table).inputFiles()) for layout, table in tables.items()}
            # the last merge took every run but the latest
            spark.sql("drop table if exists default.merge_log")
            spark.sql(
                "create table default.merge_log using parquet as "
                f"select {_loaded_at(size - 1)} - interval 1 millisecond as merged_through"
            )
            # the tests' scope starts at the latest run (cdc_run_rows)
            spark.sql("drop table if exists default.audit_files")
            spark.sql(
                f"create table default.audit_files using parquet as select {_loaded_at(size - 1)} as processed_at"
            )
            arcion_rows = size * len(range(0, rows, ARCION_EVERY))
            want = {
                "pending": rows,
                "tested": 0,
                "op values all": size,
                "op values run": 1,
                "present": rows,
                "arcion before": arcion_rows,
                "arcion after": arcion_rows,
            }
            best: dict[str, dict[str, float]] = {layout: {} for layout in LAYOUTS}
            for _ in range(rounds):
                for layout, table in tables.items():
                    compacted = LAYOUTS[layout][2] and size > 1
                    counted = _most_files_per_partition(spark, table, compacted_files if compacted else set())
                    reads = _reads(table, "default.merge_log", "default.audit_files", size - 1, compacted)
                    for read, sql in reads.items():
                        t0 = time.perf_counter()
                        got = spark.sql(sql).first()[0]
                        took = time.perf_counter() - t0
                        expected = counted if read == "files counted" else want[read]
                        if got != expected:
                            raise SystemExit(f"{layout} {read} at {size} runs: {got}, expected {expected}")
                        best[layout][read] = min(best[layout].get(read, took), took)
            results[str(size)] = {layout: {read: round(s, 3) for read, s in best[layout].items()} for layout in LAYOUTS}
            print(f"{size} runs: {results[str(size)]}", file=sys.stderr)
        layouts = {layout: _physical_types(spark, table) for layout, table in tables.items()}
        spark.stop()
    return {
        "rows_per_run": rows,
        "write_tasks": tasks,
        "files": files,
        "compaction_s": compactions,
        "loaded_at_physical_types": layouts,
        "rounds": rounds,
        "machine": {"cpus": os.cpu_count(), "load_avg_at_end": os.getloadavg()},
        "seconds": results,
    }


def table(res: dict[str, Any]) -> str:
    sizes = list(res["seconds"])
    first, last = res["seconds"][sizes[0]], res["seconds"][sizes[-1]]
    growth = int(sizes[-1]) / int(sizes[0])
    others = [layout for layout in LAYOUTS if layout != "INT96"]
    lines = [
        f"a run's reads of changelog, {res['rows_per_run']:,} rows a run written by {res['write_tasks']} task(s), "
        f"best of {res['rounds']} round(s), seconds (ratio to INT96)",
        f"{'runs':>6}  {'read':<14}" + "".join(f" {layout:>22}" for layout in LAYOUTS),
    ]
    for size in sizes:
        got = res["seconds"][size]
        lines.append(f"{int(size):>6}  {'files':<14}" + "".join(f" {res['files'][size][lay]:>22,}" for lay in LAYOUTS))
        for read in READS:
            base = got["INT96"][read]
            cells = [f"{base:22.2f}"] + [f"{got[lay][read]:14.2f} ({got[lay][read] / base:4.2f}x)" for lay in others]
            lines.append(f"{int(size):>6}  {read:<14} " + " ".join(cells))
    lines.append(f"growth {sizes[0]} -> {sizes[-1]} runs ({growth:g}x the rows):")
    for read in READS:
        lines.append(
            f"        {read:<14}" + "".join(f" {last[lay][read] / first[lay][read]:21.2f}x" for lay in LAYOUTS)
        )
    lines.append("compaction (every partition, before the latest run's append), seconds: " + str(res["compaction_s"]))
    lines.append(f"arcion after / before at {sizes[-1]} runs:")
    lines.append(
        " " * 22 + "".join(f" {last[lay]['arcion after'] / last[lay]['arcion before']:21.2f}x" for lay in LAYOUTS)
    )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.changelog_scan", description=__doc__.splitlines()[0])
    p.add_argument("--runs", default="10,40", help="changelog sizes in runs, ascending (default %(default)s)")
    p.add_argument("--rows-per-run", type=int, default=250_000, help="rows each run appends (default %(default)s)")
    p.add_argument("--write-tasks", type=int, default=2, help="tasks writing each run's rows (default %(default)s)")
    p.add_argument("--rounds", type=int, default=3, help="rounds, best kept (default %(default)s)")
    p.add_argument("--out", help="also write the figures to this JSON file")
    args = p.parse_args(argv)
    sizes = [int(n) for n in args.runs.split(",")]
    if sizes != sorted(set(sizes)) or sizes[0] < 1:
        p.error("--runs: ascending sizes of at least 1")
    res = measure(sizes, args.rows_per_run, args.rounds, args.write_tasks)
    print(table(res))
    if args.out:
        Path(args.out).write_text(json.dumps(res, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
