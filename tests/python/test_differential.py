"""Differential test: the pipeline against the plain-Python reference model.

For each seed, :mod:`workload` generates a random Debezium change stream over
``inventory.customers`` (PostgreSQL, TOAST placeholders) and ``inventory.orders``
(MySQL, composite key) and delivers it as landing files over three pipeline runs, with
late events, duplicates, tombstones, shuffled files and two framings (JSON lines and
``kcat -C -J``) read by two feeds. After every run the marts (through
:func:`udfs.export.export_rows`) and the ``history`` table must equal what the
reference model computes from the events delivered so far.

Seeds: ``[1, 2]`` by default; set ``CDC_DIFF_SEEDS="1,2,3,..."`` for more and
``CDC_DIFF_EVENTS`` for another stream length (default 450).
"""

from __future__ import annotations

import os
from decimal import Context, Decimal
from pathlib import Path
from typing import Any

import pytest
import yaml

try:  # tests/python as a package or as a rootdir-relative folder
    from . import workload as wl
except ImportError:
    import workload as wl

SEEDS = [int(s) for s in os.environ.get("CDC_DIFF_SEEDS", "1,2").split(",") if s.strip()]
N_EVENTS = int(os.environ.get("CDC_DIFF_EVENTS", "450"))
N_RUNS = 3
TABLES = wl.DEFAULT_TABLES
_SCALE = Decimal(1).scaleb(-wl.DECIMAL_SCALE)
_EXACT = Context(prec=100)  # 38 digits and more: the default 28-digit context would round


def write_config(root: Path, seed: int) -> Path:
    """``cdc.yml`` with one feed per framing and typed columns for both tables."""
    schema = f"diff_s{seed}"
    cfg = {
        "warehouse": ".cdc",
        "schema": schema,
        "marts_schema": f"{schema}_marts",
        "feeds": [
            {"name": "lines_feed", "format": "debezium_json", "path": "landing/lines", "framing": "lines"},
            {"name": "kcat_feed", "format": "debezium_json", "path": "landing/kcat", "framing": "kcat"},
        ],
        "tables": {t.name: {"key": list(t.key), "columns": t.column_types()} for t in TABLES},
    }
    for feed in cfg["feeds"]:
        (root / feed["path"]).mkdir(parents=True, exist_ok=True)
    path = root / "cdc.yml"
    path.write_text(yaml.safe_dump(cfg, sort_keys=False, allow_unicode=True), encoding="utf-8")
    return path


# --------------------------------------------------------------------------- normalization


def _typed(col: wl.Column, value: Any) -> Any:
    """A mart value or a reference text as the comparable Python value of its column type."""
    if value is None:
        return None
    if col.type in ("bigint", "int"):
        assert not isinstance(value, (bool, float)), f"{col.name}: {value!r} is not an exact integer"
        return int(value)
    if col.type.startswith("decimal"):
        assert not isinstance(value, float), f"{col.name}: {value!r} went through a float"
        return format(_EXACT.quantize(Decimal(str(value)), _SCALE), "f")
    return value


def _key_of(spec: wl.TableSpec, row: dict[str, Any]) -> tuple:
    return tuple(None if row.get(k) is None else str(row[k]) for k in spec.key)


def expected_rows(spec: wl.TableSpec, state: dict[str, dict[tuple, dict]]) -> dict[tuple, dict[str, Any]]:
    """Reference rows of ``spec``, typed like the mart (a column never provided is None)."""
    rows = state.get(spec.name, {})
    return {k: {c.name: _typed(c, r.get(c.name)) for c in spec.columns} for k, r in rows.items()}


def actual_rows(spark: Any, config_path: Path, spec: wl.TableSpec) -> dict[tuple, dict[str, Any]]:
    """The mart's current rows of ``spec`` by key (declared columns only)."""
    from udfs.export import export_rows

    out: dict[tuple, dict[str, Any]] = {}
    for row in export_rows(spark, config_path, spec.name):
        lower = {str(k).lower(): v for k, v in row.items()}
        key = _key_of(spec, lower)
        assert key not in out, f"{spec.name}: key {key} twice in the mart"
        out[key] = {c.name: _typed(c, lower.get(c.name)) for c in spec.columns}
    return out


def expected_history(events: list[wl.SourceEvent]) -> dict[tuple[str, str], list[tuple]]:
    """(table_id, key_text) -> [(op, is_deleted, full row or None)] in source order."""
    out: dict[tuple[str, str], list[tuple]] = {}
    specs = {t.name: t for t in TABLES}
    for table, keys in wl.reference_history(events).items():
        spec = specs[table]
        for key, versions in keys.items():
            out[(table.lower(), wl.key_text(spec, key))] = [
                (v.op, v.is_deleted, wl.full_row(spec, v.row)) for v in versions
            ]
    return out


def actual_history(spark: Any, schema: str) -> dict[tuple[str, str], list[tuple]]:
    """The pipeline's ``history`` in the same shape as :func:`expected_history`."""
    specs = {t.name.lower(): t for t in TABLES}
    rows = spark.sql(f"select table_id, key_text, seq, op, is_deleted, row from {schema}.history").collect()
    grouped: dict[tuple[str, str], list[tuple]] = {}
    for r in rows:
        grouped.setdefault((r["table_id"], r["key_text"]), []).append(
            (r["seq"], r["op"], bool(r["is_deleted"]), r["row"])
        )
    out: dict[tuple[str, str], list[tuple]] = {}
    for (table_id, key_txt), versions in grouped.items():
        spec = specs.get(table_id)
        assert spec is not None, f"history has a table {table_id!r} the workload never wrote"
        seqs = [v[0] for v in versions]
        assert len(set(seqs)) == len(seqs), f"{table_id} {key_txt}: a seq appears twice in history"
        out[(table_id, key_txt)] = [
            (op, deleted, None if deleted or not row else wl.full_row(spec, dict(row)))
            for _, op, deleted, row in sorted(versions, key=lambda v: v[0])
        ]
    return out


def _diff(name: str, expected: dict, actual: dict, limit: int = 5) -> str:
    """Readable summary of the first differences between two dicts."""
    lines = [f"{name}: {len(expected)} expected, {len(actual)} actual"]
    missing = [k for k in expected if k not in actual]
    extra = [k for k in actual if k not in expected]
    wrong = [k for k in expected if k in actual and expected[k] != actual[k]]
    for label, keys in (("missing", missing), ("unexpected", extra), ("different", wrong)):
        if keys:
            lines.append(f"  {len(keys)} {label}:")
            for k in keys[:limit]:
                lines.append(f"    {k!r}\n      expected {expected.get(k)!r}\n      actual   {actual.get(k)!r}")
    return "\n".join(lines)


def _summary_dict(summary: Any) -> dict[str, Any]:
    if isinstance(summary, dict):
        return summary
    if hasattr(summary, "as_dict"):
        return summary.as_dict()
    return dict(vars(summary))


# --------------------------------------------------------------------------- the test


@pytest.mark.parametrize("seed", SEEDS)
def test_pipeline_matches_reference(spark, tmp_path, seed):
    from udfs.pipeline import run_pipeline

    config_path = write_config(tmp_path, seed)
    schema = f"diff_s{seed}"
    for s in (schema, f"{schema}_marts"):
        spark.sql(f"drop database if exists {s} cascade")

    events = wl.generate(seed, N_EVENTS)
    runs = wl.deliver(events, seed, N_RUNS)
    delivered: list[wl.SourceEvent] = []
    for k, files in enumerate(runs):
        wl.write_files(tmp_path / "landing", files)
        delivered.extend(wl.delivered_events([files]))

        summary = _summary_dict(run_pipeline(config_path, spark=spark))
        n_records = sum(f.n_records for f in files)
        where = f"seed {seed} run {k}"
        assert summary["quarantined"] == 0, f"{where}: quarantined records {summary}"
        assert summary["files"] == len(files), f"{where}: {summary}"
        assert summary["records"] == n_records, f"{where}: {summary}"
        assert summary["records"] == summary["changes"] + summary["quarantined"] + summary["skipped"], where
        assert summary["skipped"] >= sum(f.n_tombstones for f in files), f"{where}: tombstones not skipped"

        state = wl.reference_state(delivered)
        for spec in TABLES:
            expected = expected_rows(spec, state)
            actual = actual_rows(spark, config_path, spec)
            assert actual == expected, f"{where}\n" + _diff(spec.name, expected, actual)
            assert expected, f"{where}: {spec.name} has no rows: the workload compares nothing"

        exp_hist = expected_history(delivered)
        act_hist = actual_history(spark, schema)
        assert act_hist == exp_hist, f"{where}\n" + _diff("history", exp_hist, act_hist)
        assert sum(map(len, exp_hist.values())) == len({e.position for e in delivered}), where

    # every event was delivered by the end
    assert {e.position for e in delivered} == {e.position for e in events}
