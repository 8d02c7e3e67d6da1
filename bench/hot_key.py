"""Hot keys: the merge of one key with many versions (a counter row updated all day),
refolded by the long-history path (``long_history_versions`` 64, the default) against
the window path of short histories (a threshold above the key's versions), side by side
in one run over the same landing file.

The file holds one insert and ``n - 1`` PostgreSQL updates of the same key; every third
update leaves a column out (TOAST placeholder), so the fold must carry it. One pipeline
run per path; *merge s* is the time of ``bench.merge.MERGE_NODES`` (the refold and its input, the
segments, the views, merge_log) from
``run_results.json``. Both runs must end with the same row, and the row the events say.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from bench.dbt_nodes import node_times
from bench.merge import MERGE_NODES

TOAST = "__debezium_unavailable_value"
#: the threshold that sends every key of these runs through the window path
WINDOW_ONLY = 1_000_000_000


def _events(n: int) -> tuple[list[str], dict[str, str]]:
    """One key's ``n`` changes as Debezium JSON lines, and its final row."""
    source = {"connector": "postgresql", "db": "bench", "schema": "public", "table": "counter"}
    lines, row = [], {}
    for i in range(n):
        after = {"id": 1, "hits": i, "label": f"label {i}" if i % 3 else TOAST}
        if i == 0:
            after["label"] = "first"
        row = {"id": "1", "hits": str(i), "label": row.get("label") if after["label"] == TOAST else after["label"]}
        event = {
            "before": None,
            "after": after,
            "source": dict(source, lsn=i + 1, ts_ms=i),
            "op": "c" if i == 0 else "u",
        }
        lines.append(json.dumps(event))
    return lines, row


def _config(folder: Path, warehouse: Path, landing: Path, schema: str, threshold: int) -> Path:
    cfg = {
        "warehouse": str(warehouse),
        "schema": schema,
        "marts_schema": f"{schema}_marts",
        "long_history_versions": threshold,
        "feeds": [{"name": "counter", "format": "debezium_json", "path": str(landing)}],
        "tables": {"counter": {"key": ["id"]}},
    }
    path = folder / f"{schema}.yml"
    path.write_text(yaml.safe_dump(cfg, sort_keys=False))
    return path


def run_hot_key(spark: Any, work: Path, warehouse: Path, versions: list[int], sampler: Any) -> dict[str, Any]:
    from udfs.config import load_config
    from udfs.pipeline import run_pipeline

    steps = []
    for n in versions:
        landing = work / "hot_key" / f"v{n}"
        landing.mkdir(parents=True)
        lines, expected = _events(n)
        (landing / "counter.jsonl").write_text("\n".join(lines) + "\n")
        step: dict[str, Any] = {"versions": n}
        for path, threshold in (("long", 64), ("window", WINDOW_ONLY)):
            config = load_config(_config(work / "hot_key", warehouse, landing, f"bench_hot_{path}_{n}", threshold))
            with sampler.section(f"hot_key:{n}:{path}"):
                run_pipeline(config, spark=spark)
            nodes = node_times(config.warehouse / "dbt" / "target")["nodes"]
            step[f"{path}_merge_s"] = round(sum(nodes.get(m, 0.0) for m in MERGE_NODES), 2)
            (row,) = spark.sql(f"select row from `{config.schema}`.state").collect()
            step[f"{path}_row_ok"] = dict(row.row) == expected
        step["window_over_long"] = round(step["window_merge_s"] / step["long_merge_s"], 2)
        steps.append(step)
    return {"steps": steps}
