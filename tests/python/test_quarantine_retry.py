"""Re-processing quarantined records after a fix: ``--retry-quarantine`` decodes the
unresolved quarantined records again with the current configuration; records that now
decode are applied once, nothing already applied is duplicated, and the audit still
balances (its dbt test runs in every build)."""

from __future__ import annotations

import yaml

from udfs.cli import _quarantine_query
from udfs.export import export_rows
from udfs.pipeline import run_pipeline

EVENT = (
    '{"before":null,"after":{"id":%d,"v":"%s"},"source":{"connector":"postgresql","db":"d","schema":"s",'
    '"table":"%s","lsn":%d},"op":"c"}'
)


def test_retry_after_a_config_fix_applies_once(spark, make_config, tmp_path):
    feeds = [{"name": "f", "format": "debezium_json", "path": "landing/f"}]
    config = make_config(feeds, {"a": {"key": ["id"]}})
    cfg = yaml.safe_load(config.read_text())
    schema = cfg["schema"]
    (tmp_path / "landing" / "f" / "one.jsonl").write_text(
        "\n".join(
            [
                EVENT % (1, "a1", "a", 10),
                EVENT % (1, "b1", "b", 20),  # table b has no key anywhere yet: quarantined
                "{broken",  # never decodes
                EVENT % (2, "b2", "b", 30),
            ]
        )
        + "\n"
    )

    def count(table: str) -> int:
        return spark.sql(f"select count(*) from {schema}.{table}").collect()[0][0]

    first = run_pipeline(config, spark=spark)
    assert (first.records, first.changes, first.quarantined) == (4, 1, 3)
    reasons = {r.record_index: r.reason for r in spark.sql(_quarantine_query(schema, None)).collect()}
    assert set(reasons) == {1, 2, 3} and "no key for table 'd.s.b'" in reasons[1]

    # a retry before the fix resolves nothing and duplicates nothing
    same = run_pipeline(config, spark=spark, retry_quarantine=True)
    assert (same.files, same.retried, same.resolved) == (0, 3, 0)
    assert (count("changelog"), count("quarantine")) == (1, 3)

    # the fix: table b gets its key; the retry applies b's two records, once
    cfg["tables"]["b"] = {"key": ["id"]}
    config.write_text(yaml.safe_dump(cfg, sort_keys=False))
    fixed = run_pipeline(config, spark=spark, retry_quarantine=True)
    assert (fixed.retried, fixed.resolved) == (3, 2)
    assert "retried 3 quarantined record(s), 2 resolved" in str(fixed)
    assert sorted((r["id"], r["v"]) for r in export_rows(spark, config, "b")) == [("1", "b1"), ("2", "b2")]
    assert count("changelog") == 3
    unresolved = spark.sql(_quarantine_query(schema, None)).collect()
    assert [r.record_index for r in unresolved] == [2]
    resolved = spark.sql(_quarantine_query(schema, None, include_resolved=True)).collect()
    assert {r.record_index: r.resolved_run_id for r in resolved} == {1: fixed.run_id, 2: None, 3: fixed.run_id}

    # resolved records are never retried again; a plain run leaves everything as it is
    again = run_pipeline(config, spark=spark, retry_quarantine=True)
    assert (again.retried, again.resolved) == (1, 0)
    plain = run_pipeline(config, spark=spark)
    assert (plain.files, plain.retried) == (0, 0)
    assert (count("changelog"), count("quarantine"), count("audit_files")) == (3, 3, 1)
    assert sorted((r["id"], r["v"]) for r in export_rows(spark, config, "b")) == [("1", "b1"), ("2", "b2")]
