"""Per-node times of the last dbt invocation (``<warehouse>/dbt/target/run_results.json``),
grouped into the pipeline's stages by the model's folder (``manifest.json``).

With more than one dbt thread nodes overlap: a stage's seconds are its nodes' busy
seconds (they may add up to more than the run's wall time), and ``nodes_wall_s`` is the
time during which at least one node was running (the union of their intervals)."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any

#: stage of a node by its folder under models/ (the fqn's second part)
STAGE_OF_FOLDER = {
    "staging": "read+decode (stg)",
    "changelog": "changelog",
    "intermediate": "merge (state/history)",
    "state": "merge (state/history)",
    "marts": "marts",
    "audit": "audit",
}
STAGES = ("read+decode (stg)", "changelog", "merge (state/history)", "marts", "audit", "tests", "other")


def _stage(unique_id: str, fqn: list[str]) -> str:
    kind = unique_id.split(".", 1)[0]
    if kind == "test":
        return "tests"
    if kind == "model" and len(fqn) > 2:
        return STAGE_OF_FOLDER.get(fqn[1], "other")
    return "other"


def union_seconds(intervals: list[tuple[float, float]]) -> float:
    """The length of the union of ``(start, end)`` intervals."""
    total, reach = 0.0, float("-inf")
    for start, end in sorted(intervals):
        if end > reach:
            total += end - max(start, reach)
            reach = end
    return total


def _interval(result: dict[str, Any]) -> tuple[float, float] | None:
    """A node's (start, end) in seconds: its first timing step's start to its last's end."""
    steps = [t for t in result.get("timing") or [] if t.get("started_at") and t.get("completed_at")]
    if not steps:
        return None
    parse = datetime.fromisoformat
    return (
        parse(steps[0]["started_at"].replace("Z", "+00:00")).timestamp(),
        parse(steps[-1]["completed_at"].replace("Z", "+00:00")).timestamp(),
    )


def node_times(target: Path) -> dict[str, Any]:
    """``{"nodes": {name: seconds}, "tests": {name: seconds}, "stages": {stage: seconds},
    "nodes_wall_s", "threads", ...}`` of the last invocation (a test's name without the
    hash dbt appends to some)."""
    results = json.loads((target / "run_results.json").read_text())
    manifest = json.loads((target / "manifest.json").read_text())
    fqns = {uid: node.get("fqn", []) for uid, node in manifest.get("nodes", {}).items()}
    nodes: dict[str, float] = {}
    tests: dict[str, float] = {}
    stages = dict.fromkeys(STAGES, 0.0)
    for r in results["results"]:
        uid = r["unique_id"]
        seconds = float(r.get("execution_time") or 0.0)
        stage = _stage(uid, fqns.get(uid, []))
        stages[stage] += seconds
        if stage == "tests":
            tests[uid.split(".")[2]] = round(seconds, 3)
        else:
            nodes[uid.split(".")[-1]] = round(seconds, 3)
    intervals = [iv for iv in map(_interval, results["results"]) if iv is not None]
    return {
        "nodes": nodes,
        "tests": tests,
        "stages": {k: round(v, 3) for k, v in stages.items()},
        "nodes_wall_s": round(union_seconds(intervals), 3),
        "threads": (results.get("args") or {}).get("threads"),
        "dbt_elapsed_s": round(float(results.get("elapsed_time") or 0.0), 3),
        "n_tests": sum(1 for r in results["results"] if r["unique_id"].startswith("test.")),
    }
