"""Per-node times of the last dbt invocation (``<warehouse>/dbt/target/run_results.json``),
grouped into the pipeline's stages by the model's folder (``manifest.json``)."""

from __future__ import annotations

import json
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


def node_times(target: Path) -> dict[str, Any]:
    """``{"nodes": {name: seconds}, "stages": {stage: seconds}}`` of the last invocation."""
    results = json.loads((target / "run_results.json").read_text())
    manifest = json.loads((target / "manifest.json").read_text())
    fqns = {uid: node.get("fqn", []) for uid, node in manifest.get("nodes", {}).items()}
    nodes: dict[str, float] = {}
    stages = dict.fromkeys(STAGES, 0.0)
    for r in results["results"]:
        uid = r["unique_id"]
        seconds = float(r.get("execution_time") or 0.0)
        stage = _stage(uid, fqns.get(uid, []))
        stages[stage] += seconds
        if stage != "tests":
            nodes[uid.split(".")[-1]] = round(seconds, 3)
    return {
        "nodes": nodes,
        "stages": {k: round(v, 3) for k, v in stages.items()},
        "dbt_elapsed_s": round(float(results.get("elapsed_time") or 0.0), 3),
        "n_tests": sum(1 for r in results["results"] if r["unique_id"].startswith("test.")),
    }
