"""Keys with long histories: ``int_row_versions_refolded`` refolds a key with more than
``long_history_versions`` versions by a path linear in its cells instead of the window
of its changes so far (whose cost is the square of the key's versions). Both paths must
give the same state and history, and the right ones.

One landing folder, read by two configurations: threshold 64 (the hot key takes the
long path, the others the window path) and threshold 100,000 (every key the window
path). The hot key has 150 changes: PostgreSQL updates with TOAST placeholders (columns
not provided), a column set to NULL, deletes and re-inserts, a duplicate delivery, a
late file, and a truncate of the table.
"""

from __future__ import annotations

import json
import random

import yaml

from udfs.pipeline import run_pipeline

TOAST = "__debezium_unavailable_value"
COLUMNS = ("a", "b", "c")


def _event(lsn: int, op: str, key: int, after: dict | None, before: dict | None = None) -> str:
    source = {"connector": "postgresql", "db": "d", "schema": "s", "table": "hot", "lsn": lsn, "ts_ms": lsn}
    return json.dumps({"before": before, "after": after, "source": source, "op": op, "ts_ms": lsn})


def _truncate(lsn: int) -> str:
    source = {"connector": "postgresql", "db": "d", "schema": "s", "table": "hot", "lsn": lsn, "ts_ms": lsn}
    return json.dumps({"before": None, "after": None, "source": source, "op": "t", "ts_ms": lsn})


def _history(seed: int = 7) -> tuple[list[tuple[int, str]], dict[int, dict | None]]:
    """(lsn, event line) in source order, and the expected final row per key."""
    rng = random.Random(seed)
    events: list[tuple[int, str]] = []
    rows: dict[int, dict | None] = {}
    lsn = 0

    def emit(op: str, key: int, after: dict | None) -> None:
        nonlocal lsn
        lsn += 10
        before = {"id": key} if op == "d" else None
        events.append((lsn, _event(lsn, op, key, after, before)))

    for key in (1, 2):
        rows[key] = {"id": key, "a": "a0", "b": "b0", "c": "c0"}
        emit("c", key, dict(rows[key]))
    for step in range(148):
        key = 1 if step % 10 else 2  # key 1: the hot key; key 2: a short history
        if step == 70:  # a truncate of the table deletes every key
            lsn += 10
            events.append((lsn, _truncate(lsn)))
            rows = {k: None for k in rows}
            continue
        if rows[key] is None or rng.random() < 0.05:
            if rows[key] is not None and rng.random() < 0.5:
                emit("d", key, None)
                rows[key] = None
                continue
            rows[key] = {"id": key, **{c: f"{c}{step}" for c in COLUMNS}}
            emit("c", key, dict(rows[key]))
            continue
        after = {"id": key}
        for c in COLUMNS:
            roll = rng.random()
            if roll < 0.4:  # TOAST: not provided, the column keeps its value
                after[c] = TOAST
            elif roll < 0.45:
                after[c] = None
                rows[key][c] = None
            else:
                after[c] = f"{c}{step}"
                rows[key][c] = after[c]
        emit("u", key, after)
    return events, rows


def _config(folder, landing, threshold: int, name: str):
    folder.mkdir()
    cfg = {
        "warehouse": ".cdc",
        "schema": f"long_{name}",
        "marts_schema": f"long_{name}_marts",
        "long_history_versions": threshold,
        "feeds": [{"name": "hot", "format": "debezium_json", "path": str(landing)}],
        "tables": {"hot": {"key": ["id"], "columns": {"id": "bigint", "a": "string", "b": "string", "c": "string"}}},
    }
    (folder / "cdc.yml").write_text(yaml.safe_dump(cfg))
    return folder / "cdc.yml", cfg["schema"]


def _rows(spark, sql: str) -> list[dict]:
    return sorted(
        (json.dumps(r.asDict(recursive=True), sort_keys=True, default=str) for r in spark.sql(sql).collect()),
    )


def test_long_and_short_paths_give_the_same_state_and_history(spark, tmp_path):
    events, expected = _history()
    landing = tmp_path / "landing"
    landing.mkdir()
    long_cfg, long_schema = _config(tmp_path / "long", landing, 64, "path")
    window_cfg, window_schema = _config(tmp_path / "window", landing, 100_000, "window")

    # run 1: most events; run 2: every 13th event, late, in a file delivered twice
    on_time = [line for i, (_, line) in enumerate(events) if i % 13 != 5]
    late = [line for i, (_, line) in enumerate(events) if i % 13 == 5]
    batches = [{"1-main.jsonl": on_time}, {"2-late.jsonl": late, "3-late-again.jsonl": late}]
    for batch in batches:
        for name, lines in batch.items():
            (landing / name).write_text("\n".join(lines) + "\n")
        for cfg in (long_cfg, window_cfg):
            assert run_pipeline(cfg, spark=spark).quarantined == 0
        for table in ("state", "history", "int_row_versions_refolded"):
            columns = "* except (merge_run_id)" if table == "int_row_versions_refolded" else "*"
            long_rows = _rows(spark, f"select {columns} from {long_schema}.{table}")
            assert long_rows == _rows(spark, f"select {columns} from {window_schema}.{table}"), table

    versions = spark.sql(f"select key_text, count(*) as n from {long_schema}.history group by key_text").collect()
    assert max(r.n for r in versions) > 64 > min(r.n for r in versions), "both paths must be taken"

    live = {
        int(r.key["id"]): r.row
        for r in spark.sql(f"select key, row from {long_schema}.state where not is_deleted").collect()
    }
    want = {
        k: {c: None if v is None else str(v) for c, v in row.items()} for k, row in expected.items() if row is not None
    }
    assert want and live == want
