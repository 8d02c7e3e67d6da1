"""How a run's two reads of its own rows in ``changelog`` grow with the changelog, with
its timestamps written as INT96 (Spark's default) or as INT64 microseconds (the
project's session setting, ``udfs.session``).

``python -m bench.changelog_scan [--runs 10,40] [--rows-per-run 250000] [--rounds 3]``

One table per layout, shaped as ``changelog`` is for these reads (partitioned by
``table_id`` and 16 buckets; the test's key columns, ``loaded_at``, ``run_id`` and a
200-byte image), gets one append per run, each with its own ``loaded_at`` and
``run_id``, as a daily run's append does. At each size of ``--runs``, both reads, as dbt
compiles them, of the latest run's rows:

* *pending*: the rows loaded after the last merge (``int_pending_changes``:
  ``loaded_at > (select max(merged_through) from merge_log)``), counted;
* *tested*: the changelog's unique test over the run's rows (``cdc_run_rows``:
  ``loaded_at >= <run start> or run_id = <invocation>``), grouped by its key.

The layouts take turns round by round (the machine is shared and noisy); the best round
of each counts. Prints the seconds, the growth from the first size to the last (the
size ratio when a read scans every run's files, about 1 when it skips them by their
``loaded_at`` statistics) and INT64 over INT96 at each size; no assertion.
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

#: the session setting's values: Spark's default first
LAYOUTS = ("INT96", "TIMESTAMP_MICROS")
READS = ("pending", "tested")
#: one second a run apart, far from any epoch edge
_RUN_START_US = 1_700_000_000_000_000
_BUCKETS = 16


def _loaded_at(run: int) -> str:
    return f"timestamp_micros({_RUN_START_US + run * 1_000_000})"


def _append_run(spark: Any, table: str, layout: str, run: int, rows: int) -> None:
    spark.conf.set("spark.sql.parquet.outputTimestampType", layout)
    spark.range(rows).selectExpr(
        f"'landing/f/file-{run:05d}.jsonl' as source_file",
        "cast(id as int) as record_index",
        "0 as row_index",
        f"concat('{{\"id\":', cast(id + {run * rows} as string), '}}') as key_text",
        "repeat('x', 200) as after",
        f"{_loaded_at(run)} as loaded_at",
        f"'run-{run:05d}' as run_id",
        "'inventory.s.items' as table_id",
        f"cast(pmod(xxhash64(id), {_BUCKETS}) as int) as bucket",
    ).write.mode("append").format("parquet").partitionBy("table_id", "bucket").saveAsTable(table)


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


def _reads(table: str, watermark: str, latest: int) -> dict[str, str]:
    key = "concat_ws('|', source_file, cast(record_index as string), cast(row_index as string))"
    scope = f"(loaded_at >= {_loaded_at(latest)} or run_id = 'run-{latest:05d}')"
    return {
        "pending": f"select count(key_text) from {table} where loaded_at > (select max(merged_through) from {watermark})",
        "tested": (
            f"select count(*) from (select unique_field, count(*) as n_records from (select {key} as unique_field "
            f"from (select * from {table} where {scope}) dbt_subquery where {key} is not null) "
            "group by unique_field having count(*) > 1)"
        ),
    }


def measure(sizes: list[int], rows: int, rounds: int) -> dict[str, Any]:
    from udfs.session import build_session

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="cdc-changelog-scan-") as tmp:
        spark = build_session(Path(tmp))
        tables = {layout: f"default.changelog_{layout.lower()}" for layout in LAYOUTS}
        written = 0
        for size in sizes:
            for run in range(written, size):
                for layout, table in tables.items():
                    _append_run(spark, table, layout, run, rows)
            written = size
            # the last merge took every run but the latest
            spark.sql("drop table if exists default.merge_log")
            spark.sql(
                "create table default.merge_log using parquet as "
                f"select {_loaded_at(size - 1)} - interval 1 millisecond as merged_through"
            )
            best: dict[str, dict[str, float]] = {layout: {} for layout in LAYOUTS}
            for _ in range(rounds):
                for layout, table in tables.items():
                    for read, sql in _reads(table, "default.merge_log", size - 1).items():
                        t0 = time.perf_counter()
                        got = spark.sql(sql).first()[0]
                        took = time.perf_counter() - t0
                        want = rows if read == "pending" else 0
                        if got != want:
                            raise SystemExit(f"{layout} {read} at {size} runs: {got} rows, expected {want}")
                        best[layout][read] = min(best[layout].get(read, took), took)
            results[str(size)] = {layout: {read: round(s, 3) for read, s in best[layout].items()} for layout in LAYOUTS}
            print(f"{size} runs: {results[str(size)]}", file=sys.stderr)
        layouts = {layout: _physical_types(spark, table) for layout, table in tables.items()}
        spark.stop()
    return {
        "rows_per_run": rows,
        "loaded_at_physical_types": layouts,
        "rounds": rounds,
        "machine": {"cpus": os.cpu_count(), "load_avg_at_end": os.getloadavg()},
        "seconds": results,
    }


def table(res: dict[str, Any]) -> str:
    sizes = list(res["seconds"])
    first, last = res["seconds"][sizes[0]], res["seconds"][sizes[-1]]
    growth = int(sizes[-1]) / int(sizes[0])
    lines = [
        f"a run's reads of its {res['rows_per_run']:,} changelog rows, best of {res['rounds']} round(s), seconds",
        f"{'runs':>6}  {'read':<8} {'INT96':>7} {'INT64 micros':>13} {'INT64/INT96':>12}",
    ]
    for size in sizes:
        got = res["seconds"][size]
        for read in READS:
            old, new = got["INT96"][read], got["TIMESTAMP_MICROS"][read]
            lines.append(f"{int(size):>6}  {read:<8} {old:7.2f} {new:13.2f} {new / old:11.2f}x")
    lines.append(f"growth {sizes[0]} -> {sizes[-1]} runs ({growth:g}x the rows):")
    for read in READS:
        old = last["INT96"][read] / first["INT96"][read]
        new = last["TIMESTAMP_MICROS"][read] / first["TIMESTAMP_MICROS"][read]
        lines.append(f"        {read:<8} {old:6.2f}x {new:12.2f}x")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.changelog_scan", description=__doc__.splitlines()[0])
    p.add_argument("--runs", default="10,40", help="changelog sizes in runs, ascending (default %(default)s)")
    p.add_argument("--rows-per-run", type=int, default=250_000, help="rows each run appends (default %(default)s)")
    p.add_argument("--rounds", type=int, default=3, help="rounds, best kept (default %(default)s)")
    p.add_argument("--out", help="also write the figures to this JSON file")
    args = p.parse_args(argv)
    sizes = [int(n) for n in args.runs.split(",")]
    if sizes != sorted(set(sizes)) or sizes[0] < 1:
        p.error("--runs: ascending sizes of at least 1")
    res = measure(sizes, args.rows_per_run, args.rounds)
    print(table(res))
    if args.out:
        Path(args.out).write_text(json.dumps(res, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
