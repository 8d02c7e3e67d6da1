"""The merge refolds only the keys its pending changes touch; the other keys of the
touched buckets are copied from the state and the history as the last merge left them
(``int_row_versions_refolded``). When the last merge may not have finished, the whole
buckets are refolded from the changelog instead, which restores what a crash lost.

One landing folder, read by two configurations: *copy* (the default) and *whole*,
where the previous refold table is dropped before every run, which makes each merge
refold whole buckets (the model's safe path). Both must give the same state and
history, and the rows the events say, over runs with partial updates (TOAST
placeholders), late events, deletes, re-inserts and a file delivered twice.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import yaml

from udfs.pipeline import run_pipeline

TOAST = "__debezium_unavailable_value"
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
    for run in (2, 3):
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


def _config(folder: Path, landing: Path, name: str) -> Path:
    folder.mkdir()
    cfg = {
        "warehouse": ".cdc",
        "schema": f"merge_{name}",
        "marts_schema": f"merge_{name}_marts",
        "buckets": 4,
        "feeds": [{"name": "t", "format": "debezium_json", "path": str(landing)}],
        "tables": {"t": {"key": ["id"], "columns": {"id": "bigint", "a": "string", "b": "string"}}},
    }
    (folder / "cdc.yml").write_text(yaml.safe_dump(cfg))
    return folder / "cdc.yml"


def _rows(spark, sql: str) -> list[str]:
    return sorted(json.dumps(r.asDict(recursive=True), sort_keys=True, default=str) for r in spark.sql(sql).collect())


def _took_copy_path(folder: Path) -> bool:
    compiled = next((folder / ".cdc" / "dbt" / "target" / "compiled").rglob("int_row_versions_refolded.sql"))
    return "untouched_current_versions" in compiled.read_text()


def _live(spark, schema: str) -> dict[int, dict]:
    rows = spark.sql(f"select key, row from {schema}.state where not is_deleted").collect()
    return {int(r.key["id"]): r.row for r in rows}


def test_copied_keys_equal_a_whole_bucket_refold_and_a_lost_bucket_is_restored(spark, tmp_path):
    runs, expected = _runs()
    landing = tmp_path / "landing"
    landing.mkdir()
    copy_cfg = _config(tmp_path / "copy", landing, "copy")
    whole_cfg = _config(tmp_path / "whole", landing, "whole")
    for schema in ("merge_copy", "merge_whole"):
        spark.sql(f"drop database if exists {schema} cascade")
        spark.sql(f"drop database if exists {schema}_marts cascade")

    for number, (files, live) in enumerate(zip(runs, expected, strict=True), start=1):
        for name, lines in files.items():
            (landing / name).write_text("\n".join(lines) + "\n")
        assert run_pipeline(copy_cfg, spark=spark).quarantined == 0
        spark.sql("drop table if exists merge_whole.int_row_versions_refolded")
        assert run_pipeline(whole_cfg, spark=spark).quarantined == 0

        # the first merge has nothing to copy; later ones copy the untouched keys
        assert _took_copy_path(copy_cfg.parent) == (number > 1), number
        assert not _took_copy_path(whole_cfg.parent), number
        if number > 1:
            touched = spark.sql(
                "select count(distinct key_text) from merge_copy.changelog where run_id = "
                "(select run_id from merge_copy.merge_log order by merged_through desc limit 1)"
            )
            copied = spark.sql("select count(distinct key_text) from merge_copy.int_row_versions_refolded")
            assert copied.first()[0] > touched.first()[0], "no untouched key was copied: the test shows nothing"

        for table in ("state", "history"):
            copy_rows = _rows(spark, f"select * from merge_copy.{table}")
            assert copy_rows == _rows(spark, f"select * from merge_whole.{table}"), (number, table)
        want = {k: {c: None if v is None else str(v) for c, v in row.items()} for k, row in live.items() if row}
        assert _live(spark, "merge_copy") == want, number

    # The third merge "dies" after the history lost a bucket: its merge_log row is
    # gone and one bucket it touched (holding keys it did not touch) is dropped.
    log = spark.table("merge_copy.merge_log")
    last_run = log.orderBy(log.merged_through.desc()).first().run_id
    kept = log.where(log.run_id != last_run).collect()
    spark.createDataFrame(kept, log.schema).write.insertInto("merge_copy.merge_log", overwrite=True)
    lost = spark.sql(
        """
        select history.bucket, history.table_id
        from merge_copy.history as history
        where history.bucket in (select bucket from merge_copy.int_row_versions_refolded)
        group by history.bucket, history.table_id
        having count(distinct history.key_text) > 1
        limit 1
        """
    ).first()
    spark.sql(f"alter table merge_copy.history drop partition (table_id = '{lost.table_id}', bucket = {lost.bucket})")
    assert _rows(spark, "select * from merge_copy.history") != _rows(spark, "select * from merge_whole.history")

    assert run_pipeline(copy_cfg, spark=spark).quarantined == 0
    assert not _took_copy_path(copy_cfg.parent), "an unfinished merge must refold whole buckets"
    for table in ("state", "history"):
        assert _rows(spark, f"select * from merge_copy.{table}") == _rows(spark, f"select * from merge_whole.{table}")
