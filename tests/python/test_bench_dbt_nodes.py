"""``bench.dbt_nodes``: node times of a dbt run whose nodes overlap (more than one thread)."""

from __future__ import annotations

import json
from pathlib import Path

from bench.dbt_nodes import node_times, union_seconds


def test_union_counts_overlapping_time_once() -> None:
    assert union_seconds([]) == 0.0
    assert union_seconds([(0.0, 2.0), (1.0, 3.0), (5.0, 6.0)]) == 4.0
    assert union_seconds([(0.0, 10.0), (2.0, 3.0)]) == 10.0  # one inside another
    assert union_seconds([(4.0, 5.0), (0.0, 1.0), (1.0, 2.0)]) == 3.0  # unsorted, touching


def _result(uid: str, start: str, end: str) -> dict:
    steps = [{"name": "compile", "started_at": start, "completed_at": start}]
    steps.append({"name": "execute", "started_at": start, "completed_at": end})
    return {"unique_id": uid, "execution_time": 0.0, "timing": steps}


def test_stages_are_busy_seconds_and_nodes_wall_is_their_union(tmp_path: Path) -> None:
    t = "2026-11-26T08:00:{:02d}.000000Z"
    results = [
        _result("model.cdc.stg_landing__records", t.format(0), t.format(4)),
        _result("model.cdc.changelog", t.format(4), t.format(7)),
        _result("model.cdc.quarantine", t.format(4), t.format(6)),  # beside the changelog
        _result("test.cdc.not_null_changelog_event_id", t.format(9), t.format(10)),
        _result("test.cdc.unique_changelog_event_id.4f3a9c21d0", t.format(9), t.format(10)),
    ]
    for r, seconds in zip(results, (4.0, 3.0, 2.0, 1.0, 0.5), strict=True):
        r["execution_time"] = seconds
    (tmp_path / "run_results.json").write_text(
        json.dumps({"results": results, "elapsed_time": 11.0, "args": {"threads": 4}})
    )
    fqn = {"stg_landing__records": "staging", "changelog": "changelog", "quarantine": "changelog"}
    nodes = {f"model.cdc.{name}": {"fqn": ["cdc", folder, name]} for name, folder in fqn.items()}
    (tmp_path / "manifest.json").write_text(json.dumps({"nodes": nodes}))

    got = node_times(tmp_path)
    assert got["stages"]["read+decode (stg)"] == 4.0
    assert got["stages"]["changelog"] == 5.0  # 3 + 2 busy seconds in 3 s of wall time
    assert got["stages"]["tests"] == 1.5
    assert got["nodes_wall_s"] == 8.0  # 0-7 and 9-10
    assert got["threads"] == 4 and got["n_tests"] == 2
    # tests by name, the hash dbt appends to some left out; models apart from them
    assert got["tests"] == {"not_null_changelog_event_id": 1.0, "unique_changelog_event_id": 0.5}
    assert set(got["nodes"]) == {"stg_landing__records", "changelog", "quarantine"}
