"""Conformance of ``debezium_json`` with the public corpora, read in place from
``../shared/corpora`` (a missing corpus fails, it never skips)."""

from __future__ import annotations

import shutil

import pytest
from conftest import corpus
from flink_expected import as_flink_rows, expected_changelog, final_rows, same_rows_float32

from udfs.export import export_rows
from udfs.pipeline import run_pipeline

PRODUCTS = {"products": {"key": ["id"], "columns": {"id": "int", "weight": "float"}}}


def _run_one_file(spark, make_config, tmp_path, source, framing="lines", tables=PRODUCTS, options=None):
    feed = {"name": "feed", "format": "debezium_json", "path": "landing/feed", "framing": framing}
    if options:
        feed["options"] = options
    config = make_config([feed], tables)
    shutil.copy(source, tmp_path / "landing" / "feed" / source.name)
    summary = run_pipeline(config, spark=spark)
    return config, summary


def _changelog(spark, config_path):
    import yaml

    schema = yaml.safe_load(config_path.read_text())["schema"]
    rows = spark.sql(f"select op, before, after from {schema}.changelog order by order_key").collect()
    return [r.asDict() for r in rows], schema


@pytest.mark.parametrize(
    ("data_file", "section", "final_file"),
    [
        ("debezium-data-schema-include.txt", 4, "debezium-data-schema-include.final.jsonl"),
        ("debezium-postgres-data-schema-include.txt", 5, "debezium-postgres-data-schema-include.final.jsonl"),
        ("debezium-postgres-data-schema-exclude.txt", 6, "debezium-postgres-data-schema-exclude.final.jsonl"),
    ],
)
def test_flink_debezium_corpus(spark, make_config, tmp_path, data_file, section, final_file):
    config, summary = _run_one_file(spark, make_config, tmp_path, corpus("flink", data_file))
    assert (summary.files, summary.records, summary.changes, summary.quarantined) == (1, 16, 16, 0)

    changes, _ = _changelog(spark, config)
    assert as_flink_rows(changes) == expected_changelog(section)

    same_rows_float32(export_rows(spark, config, "products"), final_rows(final_file))


def test_replica_identity_default_applies_by_key_and_quarantines_keyless_delete(spark, make_config, tmp_path):
    """PG without REPLICA IDENTITY FULL: updates without before image apply by key; the
    final delete has neither before nor after nor a Kafka key, so it cannot be applied:
    it is quarantined with its reason and 111 stays (EXPECTED.md section 7)."""
    config, summary = _run_one_file(
        spark, make_config, tmp_path, corpus("flink", "debezium-postgres-data-replica-identity.txt")
    )
    assert (summary.records, summary.changes, summary.quarantined, summary.skipped) == (16, 15, 1, 0)

    expected = final_rows("debezium-postgres-data-schema-exclude.final.jsonl") + [
        {"id": 111, "name": "scooter", "description": "Big 2-wheel scooter ", "weight": 5.17}
    ]
    same_rows_float32(export_rows(spark, config, "products"), expected)

    _, schema = _changelog(spark, config)
    quarantined = spark.sql(f"select record_index, reason, raw_record from {schema}.quarantine").collect()
    assert len(quarantined) == 1
    assert quarantined[0].record_index == 15
    assert "delete without key" in quarantined[0].reason
    assert '"op":"d"' in quarantined[0].raw_record


ANNE = {"id": 1004, "first_name": "Anne", "last_name": "Kretchmar", "email": "annek@noanswer.org"}


@pytest.mark.parametrize(
    ("serde_file", "expected"),
    [
        ("serde-with-schema.json", ANNE),
        ("serde-without-schema.json", ANNE),
        ("serde-update.json", ANNE),
        ("serde-unwrapped.json", ANNE),
        ("serde-unknown-property.json", {**ANNE, "middle_name": "L"}),
    ],
)
def test_debezium_serde_documents(spark, make_config, tmp_path, serde_file, expected):
    """Pretty-printed single documents (``documents`` framing); the flattened row has no
    envelope, so its feed names the table (option ``table``) and it is an upsert."""
    options = {"table": "customers"} if serde_file == "serde-unwrapped.json" else None
    tables = {"customers": {"key": ["id"], "columns": {"id": "int"}}}
    config, summary = _run_one_file(
        spark,
        make_config,
        tmp_path,
        corpus("debezium", serde_file),
        framing="documents",
        tables=tables,
        options=options,
    )
    assert (summary.records, summary.changes, summary.quarantined) == (1, 1, 0)
    assert export_rows(spark, config, "customers") == [expected]
