"""The state and the history are merge-on-read: each merge appends a segment (a
partition per table) with every version of the keys it refolded, and the views
``state`` and ``history`` read, per key, its latest committed segment
(``macros/sql/cdc_resolve_segments.sql``). Past ``compact_after_segments`` a merge
compacts: it copies every other key into a new base and the older segments are dropped,
but for the previous base and its segments (``keep_previous_bases``, default 1): a
query planned before the compaction still reads them.

One landing folder, read by two configurations: *segments* (compaction after 2
segments) and *cow*, where every merge compacts (``compact_after_segments: 0``: copy
on write, the design before segments). Both must give the same state and history, and
the rows the events say, over runs with partial updates (TOAST placeholders), late
events, deletes, re-inserts and a file delivered twice; then a merge that dies before
its commit leaves a segment nobody reads, and the next run redoes it.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import yaml

from udfs.config import load_config
from udfs.pipeline import run_dbt, run_pipeline

TOAST = "__debezium_unavailable_value"
TABLES = ("state", "history")
KEYS = 60


def _event(lsn: int, op: str, key: int, after: dict | None) -> str:
    source = {"connector": "postgresql", "db": "d", "schema": "s", "table": "t", "lsn": lsn, "ts_ms": lsn}
    before = {"id": key} if op == "d" else None
    return json.dumps({"before": before, "after": after, "source": source, "op": op, "ts_ms": lsn})


def _runs(seed: int = 11) -> tuple[list[dict[str, list[str]]], list[dict[int, dict | None]]]:
    """Landing files per run and the expected live rows after each run."""
    rng = random.Random(seed)
    lsn = 100_000
    runs: list[dict[str, list[str]]] = []
    expected: list[dict[int, dict | None]] = []
    # (lsn, line, key, after-or-None) of every event, to compute the rows in lsn order
    events: list[tuple[int, str, int, dict | None, str]] = []

    def emit(op: str, key: int, after: dict | None, at: int | None = None) -> str:
        nonlocal lsn
        if at is None:
            lsn += 10
            at = lsn
        line = _event(at, op, key, after)
        events.append((at, line, key, after, op))
        return line

    runs.append({"1-snapshot.jsonl": [emit("r", k, {"id": k, "a": f"a{k}", "b": f"b{k}"}) for k in range(KEYS)]})
    for run in (2, 3, 4, 5):
        lines = []
        for key in rng.sample(range(KEYS), 10):
            roll = rng.random()
            if roll < 0.15:
                lines.append(emit("d", key, None))
            elif roll < 0.3:
                lines.append(emit("c", key, {"id": key, "a": f"new{run}", "b": None}))
            else:
                lines.append(emit("u", key, {"id": key, "a": f"a{key}.{run}", "b": TOAST}))
        # a late update, older than the key's snapshot row: history only, never the state
        late_key = rng.randrange(KEYS)
        lines.append(emit("u", late_key, {"id": late_key, "a": "late", "b": "late"}, at=lsn - 10_000))
        files = {f"{run}-changes.jsonl": lines}
        if run == 3:
            files["3-changes-again.jsonl"] = lines  # the same events delivered twice
        runs.append(files)

    seen = 0
    for files in runs:
        seen += len(next(iter(files.values())))
        live: dict[int, dict | None] = {}
        for _, _, key, after, op in sorted(events[:seen], key=lambda e: e[0]):
            if op == "d":
                live[key] = None
            elif op == "u" and live.get(key) is not None:
                live[key] = {**live[key], **{c: v for c, v in after.items() if v != TOAST}}
            else:  # a reset (or an update of no row): the provided columns only
                live[key] = {c: v for c, v in after.items() if v != TOAST}
        expected.append(live)
    return runs, expected


def _config(folder: Path, landing: Path, name: str, compact_after_segments: int, keep_previous_bases: int = 1) -> Path:
    folder.mkdir()
    cfg = {
        "warehouse": ".cdc",
        "schema": f"merge_{name}",
        "marts_schema": f"merge_{name}_marts",
        "buckets": 4,
        "compact_after_segments": compact_after_segments,
        "compact_after_fraction": 100,
        "keep_previous_bases": keep_previous_bases,
        "feeds": [{"name": "t", "format": "debezium_json", "path": str(landing)}],
        "tables": {"t": {"key": ["id"], "columns": {"id": "bigint", "a": "string", "b": "string"}}},
    }
    (folder / "cdc.yml").write_text(yaml.safe_dump(cfg))
    return folder / "cdc.yml"


def _rows(spark, sql: str) -> list[str]:
    return sorted(json.dumps(r.asDict(recursive=True), sort_keys=True, default=str) for r in spark.sql(sql).collect())


def _plan(spark, schema: str) -> str:
    """The plan of the last merge, from its refold table."""
    return spark.sql(f"select distinct merge_plan from {schema}.int_row_versions_refolded").first()[0]


def _segments(spark, schema: str) -> set[str]:
    return {r.segment for r in spark.sql(f"select distinct segment from {schema}.history_segments").collect()}


def _run_ids(spark, schema: str) -> list[str]:
    """The committed merges that wrote a segment, oldest first."""
    log = spark.sql(f"select run_id from {schema}.merge_log where versions_rewritten > 0 order by merged_through")
    return [r.run_id for r in log.collect()]


def _frame_rows(frame) -> list[str]:
    return sorted(json.dumps(r.asDict(recursive=True), sort_keys=True, default=str) for r in frame.collect())


def _live(spark, schema: str) -> dict[int, dict]:
    rows = spark.sql(f"select key, row from {schema}.state where not is_deleted").collect()
    return {int(r.key["id"]): r.row for r in rows}


def _same_state_and_history(spark) -> None:
    for table in ("state", "history"):
        rows = _rows(spark, f"select * from merge_segments.{table}")
        assert rows == _rows(spark, f"select * from merge_cow.{table}"), table


def test_segments_equal_copy_on_write_and_a_merge_that_died_is_never_read(spark, tmp_path):
    runs, expected = _runs()
    landing = tmp_path / "landing"
    landing.mkdir()
    segments_cfg = _config(tmp_path / "segments", landing, "segments", compact_after_segments=2, keep_previous_bases=0)
    cow_cfg = _config(tmp_path / "cow", landing, "cow", compact_after_segments=0)
    for schema in ("merge_segments", "merge_cow"):
        spark.sql(f"drop database if exists {schema} cascade")
        spark.sql(f"drop database if exists {schema}_marts cascade")

    # full: the first base; append, append: a segment each; compact: a new base
    plans = ["full", "append", "append", "compact"]
    held: dict[str, object] = {}
    for number, (files, live) in enumerate(zip(runs[:4], expected[:4], strict=True), start=1):
        if number == 3:
            # a reader's queries planned before the third merge (copy on write: a compaction)
            held = {t: (spark.table(f"merge_cow.{t}"), _rows(spark, f"select * from merge_cow.{t}")) for t in TABLES}
        for name, lines in files.items():
            (landing / name).write_text("\n".join(lines) + "\n")
        assert run_pipeline(segments_cfg, spark=spark).quarantined == 0
        assert run_pipeline(cow_cfg, spark=spark).quarantined == 0

        assert _plan(spark, "merge_segments") == plans[number - 1], number
        assert _plan(spark, "merge_cow") == ("full" if number == 1 else "compact"), number
        # copy on write keeps its base and the previous one (keep_previous_bases: 1) ...
        assert _segments(spark, "merge_cow") == set(_run_ids(spark, "merge_cow")[-2:]), number
        # ... so a query planned before the compaction still reads its rows, unchanged
        for table, (frame, rows_then) in held.items():
            assert _rows(spark, f"select * from merge_cow.{table}") != rows_then, "the merge changed nothing"
            assert _frame_rows(frame) == rows_then, (number, table)
        held = {}
        # appended segments stay until a compaction, which drops them at once (keep_previous_bases: 0)
        assert len(_segments(spark, "merge_segments")) == {1: 1, 2: 2, 3: 3, 4: 1}[number], number
        if plans[number - 1] == "append":
            written = spark.sql("select count(distinct key_text) from merge_segments.int_row_versions_refolded")
            assert written.first()[0] < KEYS, "an appended segment holds only the keys the merge touched"

        _same_state_and_history(spark)
        want = {k: {c: None if v is None else str(v) for c, v in row.items()} for k, row in live.items() if row}
        assert _live(spark, "merge_segments") == want, number

    # The fifth merge dies after writing its segments, before its commit (merge_log) and
    # the views. Nobody reads its segment: the views show the fourth merge's rows.
    before = {table: _rows(spark, f"select * from merge_segments.{table}") for table in ("state", "history")}
    for name, lines in runs[4].items():
        (landing / name).write_text("\n".join(lines) + "\n")
    segments_before = _segments(spark, "merge_segments")
    run_dbt(load_config(segments_cfg), "run", extra=["--select", "+state_segments", "+history_segments"])
    (dead_run,) = _segments(spark, "merge_segments") - segments_before
    assert dead_run not in {r.run_id for r in spark.table("merge_segments.merge_log").collect()}
    for table in ("state", "history"):
        assert _rows(spark, f"select * from merge_segments.{table}") == before[table], table

    # The next run redoes the merge's changes in a segment of its own, and drops the dead one.
    assert run_pipeline(segments_cfg, spark=spark).quarantined == 0
    assert run_pipeline(cow_cfg, spark=spark).quarantined == 0
    assert _plan(spark, "merge_segments") == "append"
    assert dead_run not in _segments(spark, "merge_segments")
    _same_state_and_history(spark)
    want = {k: {c: None if v is None else str(v) for c, v in row.items()} for k, row in expected[4].items() if row}
    assert _live(spark, "merge_segments") == want


def test_a_warehouse_from_before_segments_is_refolded_into_a_base(spark, tmp_path):
    """A warehouse written before segments has `state` and `history` tables and a
    `merge_log` without `compacted`: the next merge refolds every key into a base, the
    tables become views, and the rows are the events' rows."""
    runs, expected = _runs(seed=5)
    landing = tmp_path / "landing"
    landing.mkdir()
    cfg = _config(tmp_path / "old", landing, "old", compact_after_segments=8)
    spark.sql("drop database if exists merge_old cascade")
    spark.sql("drop database if exists merge_old_marts cascade")
    for name, lines in runs[0].items():
        (landing / name).write_text("\n".join(lines) + "\n")
    assert run_pipeline(cfg, spark=spark).quarantined == 0

    # the layout before segments: state and history tables, merge_log without `compacted`
    for table in ("state", "history"):
        spark.sql(f"create table merge_old.{table}_old using parquet as select * from merge_old.{table}")
        spark.sql(f"drop view merge_old.{table}")
        spark.sql(f"alter table merge_old.{table}_old rename to merge_old.{table}")
        spark.sql(f"drop table merge_old.{table}_segments")
    spark.sql(
        "create table merge_old.merge_log_old using parquet as select * except (compacted) from merge_old.merge_log"
    )
    spark.sql("drop table merge_old.merge_log")
    spark.sql("alter table merge_old.merge_log_old rename to merge_old.merge_log")

    for name, lines in runs[1].items():
        (landing / name).write_text("\n".join(lines) + "\n")
    assert run_pipeline(cfg, spark=spark).quarantined == 0
    assert _plan(spark, "merge_old") == "full"
    assert "compacted" in spark.table("merge_old.merge_log").columns
    for table in ("state", "history"):
        assert spark.catalog.getTable(f"merge_old.{table}").tableType == "VIEW", table
    want = {k: {c: None if v is None else str(v) for c, v in row.items()} for k, row in expected[1].items() if row}
    assert _live(spark, "merge_old") == want

    # and the merge after it appends
    for name, lines in runs[2].items():
        (landing / name).write_text("\n".join(lines) + "\n")
    assert run_pipeline(cfg, spark=spark).quarantined == 0
    assert _plan(spark, "merge_old") == "append"
    want = {k: {c: None if v is None else str(v) for c, v in row.items()} for k, row in expected[2].items() if row}
    assert _live(spark, "merge_old") == want
