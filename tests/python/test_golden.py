"""The seeded regression test: ``tests/golden`` run with the ``golden`` variable, so
``dbt build`` loads the expected rows (``seeds/golden``) and runs the dbt tests of
``tests/dbt/golden`` that compare the mart and the history with them."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from udfs.pipeline import PipelineError, run_pipeline

GOLDEN = Path(__file__).resolve().parents[1] / "golden"


def _golden_copy(tmp_path: Path, schema: str) -> Path:
    work = tmp_path / "golden"
    shutil.copytree(GOLDEN, work, ignore=shutil.ignore_patterns(".cdc"))
    config = work / "cdc.yml"
    cfg = yaml.safe_load(config.read_text())
    cfg.update(schema=schema, marts_schema=f"{schema}_marts")
    config.write_text(yaml.safe_dump(cfg, sort_keys=False))
    return config


def test_golden_run_passes_its_seeded_dbt_tests(spark, tmp_path):
    config = _golden_copy(tmp_path, "golden_ok")
    summary = run_pipeline(config, spark=spark, golden=True)
    # 13 records, one blank line (not a record), one duplicate delivery applied once
    assert (summary.files, summary.records, summary.changes, summary.quarantined) == (2, 13, 14, 0)
    n_tests = spark.sql("select count(*) from golden_ok.golden_expected_history").collect()[0][0]
    assert n_tests == 13


def test_golden_dbt_tests_fail_when_the_result_differs(spark, tmp_path):
    """Without the second file the mart and history differ from the seeds: the golden
    dbt tests must fail the build, naming themselves."""
    config = _golden_copy(tmp_path, "golden_bad")
    (config.parent / "landing" / "accounts" / "accounts-0002.jsonl").unlink()
    with pytest.raises(PipelineError) as failure:
        run_pipeline(config, spark=spark, golden=True)
    message = str(failure.value)
    assert "assert_golden_accounts_mart" in message
    assert "assert_golden_accounts_history" in message
