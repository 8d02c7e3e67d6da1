"""Key moves: the merge of a late change that a chain of primary-key changes carries.

One row moves back and forth between two keys ``n`` times (``1 -> 2``, ``2 -> 1``, ...),
each move and each update between moves leaving column ``b`` out (TOAST placeholder).
The first run merges it all; the second brings one late update of ``b``, from before the
first move, which every move must carry to the row's final key. *read s* and *refold s*
are the second run's ``int_changes_read`` (with ``int_key_move_links`` since it exists)
and ``int_changes_to_refold`` (the models that follow the moves), *merge s* all of
``bench.merge.MERGE_NODES``, from ``run_results.json``;
*recursion rows* the rows of ``int_changes_read``'s recursive CTEs in that run. The final
row must hold the late value.

Before 2026-11-29 the keys to refold and read followed every later (earlier) move of a
key: the paths through two keys that swap a row grow as the Fibonacci numbers (about
1.6x per move; 5.7 million rows at 32 moves). Each move now links to one next and one
previous move.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

import yaml

from bench.dbt_nodes import node_times
from bench.merge import MERGE_NODES

TOAST = "__debezium_unavailable_value"
LATE_LSN = 15  # after the insert (10), before the first move (30)


def _event(lsn: int, op: str, key: int, a: str, b: str, moved_from: int | None = None) -> str:
    source = {"connector": "postgresql", "db": "bench", "schema": "public", "table": "swapped", "lsn": lsn}
    before = {"id": moved_from} if moved_from is not None else None
    return json.dumps(
        {"before": before, "after": {"id": key, "a": a, "b": b}, "source": source, "op": op, "ts_ms": lsn}
    )


def chain_lines(moves: int) -> tuple[list[str], str]:
    """The on-time events (an insert, then ``moves`` moves with an update after each)
    and the late update."""
    lines = [_event(10, "c", 1, "a0", "b0")]
    key, lsn = 1, 20
    for i in range(moves):
        lsn += 10
        new_key = 3 - key
        lines.append(_event(lsn, "u", new_key, f"moved {i}", TOAST, moved_from=key))
        lsn += 10
        lines.append(_event(lsn, "u", new_key, f"updated {i}", TOAST))
        key = new_key
    return lines, _event(LATE_LSN, "u", 1, "late", "late b")


def _config(folder: Path, warehouse: Path, landing: Path, schema: str) -> Path:
    cfg = {
        "warehouse": str(warehouse),
        "schema": schema,
        "marts_schema": f"{schema}_marts",
        "feeds": [{"name": "swapped", "format": "debezium_json", "path": str(landing)}],
        "tables": {"swapped": {"key": ["id"], "columns": {"id": "bigint", "a": "string", "b": "string"}}},
    }
    path = folder / f"{schema}.yml"
    path.write_text(yaml.safe_dump(cfg, sort_keys=False))
    return path


#: the recursive CTEs of ``int_changes_read`` that follow the moves (before: moved_to_keys,
#: moved_from_keys)
RECURSIONS = ("carrying_moves", "inherited_moves", "moved_to_keys", "moved_from_keys")


def recursion_rows(spark: Any, target: Path) -> dict[str, int]:
    """The rows of each recursion of the last compiled ``int_changes_read``, counted by
    running its CTEs again (they read the pending changes and ``key_moves``, which the
    run left as they were)."""
    (compiled,) = (target / "compiled").rglob("int_changes_read.sql")
    sql = compiled.read_text()
    body, _, _ = sql.rpartition("select * from final")
    counts = {}
    spark.sql("set spark.sql.optimizer.dynamicPartitionPruning.enabled = false")
    spark.sql("set spark.sql.cteRecursionLevelLimit = -1")
    try:
        for name in RECURSIONS:
            if f"{name} as (" in body:
                counts[name] = spark.sql(f"{body} select count(*) from {name}").first()[0]
    finally:
        spark.sql("set spark.sql.optimizer.dynamicPartitionPruning.enabled = true")
    return counts


def measure(sizes: list[int]) -> list[dict[str, Any]]:
    from udfs.config import load_config
    from udfs.pipeline import run_pipeline
    from udfs.session import build_session

    steps = []
    with tempfile.TemporaryDirectory(prefix="cdc-key-moves-") as tmp:
        work = Path(tmp)
        warehouse = work / "warehouse"
        spark = build_session(warehouse)
        for n in sizes:
            landing = work / f"moves{n}"
            landing.mkdir()
            lines, late = chain_lines(n)
            config = load_config(_config(work, warehouse, landing, f"bench_moves_{n}"))
            (landing / "1-chain.jsonl").write_text("\n".join(lines) + "\n")
            run_pipeline(config, spark=spark)
            (landing / "2-late.jsonl").write_text(late + "\n")
            run_pipeline(config, spark=spark)
            nodes = node_times(config.warehouse / "dbt" / "target")["nodes"]
            rows = spark.sql(f"select row from `{config.schema}`.state where not is_deleted").collect()
            final_key = 1 + n % 2
            want = {"id": str(final_key), "a": f"updated {n - 1}", "b": "late b"}
            step = {
                "moves": n,
                "read_s": round(nodes.get("int_changes_read", 0.0) + nodes.get("int_key_move_links", 0.0), 2),
                "refold_s": round(nodes.get("int_changes_to_refold", 0.0), 2),
                "merge_s": round(sum(nodes.get(m, 0.0) for m in MERGE_NODES), 2),
                "row_ok": [dict(r.row) for r in rows] == [want],
                "recursion_rows": recursion_rows(spark, config.warehouse / "dbt" / "target"),
            }
            print(f"{n} moves: {step}", file=sys.stderr)
            steps.append(step)
    return steps


def table(steps: list[dict[str, Any]]) -> str:
    out = ["| moves | read s | refold s | merge s | recursion rows | row ok |", "|---|---|---|---|---|---|"]
    for s in steps:
        rows = ", ".join(f"{name} {n:,}" for name, n in s["recursion_rows"].items())
        out.append(f"| {s['moves']} | {s['read_s']} | {s['refold_s']} | {s['merge_s']} | {rows} | {s['row_ok']} |")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.key_move_chain", description=__doc__.splitlines()[0])
    p.add_argument("--moves", default="8,16,32,64", help="moves in the chain, ascending (default %(default)s)")
    p.add_argument("--out", help="also write the figures to this JSON file")
    args = p.parse_args(argv)
    sizes = [int(n) for n in args.moves.split(",")]
    if sizes != sorted(set(sizes)) or sizes[0] < 1:
        p.error("--moves: ascending sizes of at least 1")
    steps = measure(sizes)
    print(table(steps))
    if args.out:
        Path(args.out).write_text(json.dumps(steps, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
