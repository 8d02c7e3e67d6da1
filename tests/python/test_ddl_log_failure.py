"""A run in which ``ddl_log`` failed reads its files again.

``audit_files`` marks a landing file as processed, and a file so marked is never read
again. It waited for the changelog and the quarantine, but not for ``ddl_log``, the
third model that keeps a share of the batch's records: a run whose ``ddl_log`` failed
(here a table of another shape in its place) marked its files processed all the same,
and no later run logged their DDL. Now ``audit_files`` waits for ``ddl_log`` too: the
failed run marks nothing, and the next run logs the DDL while the changelog keeps each
record once (its own guard against a record appended twice).
"""

from __future__ import annotations

import json

import pytest
import yaml
from debezium_lines import land

from udfs.config import load_config
from udfs.pipeline import PipelineError, run_pipeline

ALTER = "ALTER TABLE items ADD COLUMN x int"


def _canal(n: int, **fields) -> str:
    common = {"database": "d", "table": "items", "es": 1600161894000 + n, "id": n, "ts": 1600161894771 + n}
    return json.dumps(common | fields)


def _insert(n: int, key: int) -> str:
    return _canal(
        n,
        data=[{"id": str(key), "name": f"row {key}"}],
        old=None,
        isDdl=False,
        mysqlType={"id": "bigint(20)", "name": "varchar(50)"},
        sqlType={"id": -5, "name": 12},
        pkNames=["id"],
        sql="",
        type="INSERT",
    )


def test_a_run_whose_ddl_log_failed_reads_its_files_again(spark, make_config, tmp_path):
    path = make_config([{"name": "c", "format": "dts_canal_json", "path": "landing/c"}], {"items": {"key": ["id"]}})
    schema = yaml.safe_load(path.read_text())["schema"]
    config = load_config(path)
    landing = tmp_path / "landing" / "c"
    land(landing, "1.jsonl", [_insert(1, 1)])
    run_pipeline(config, spark=spark)

    spark.sql(f"drop table {schema}.ddl_log")
    spark.sql(f"create table {schema}.ddl_log (unrelated int) using parquet")
    land(landing, "2.jsonl", [_insert(2, 2), _canal(3, isDdl=True, sql=ALTER, type="DDL")])
    with pytest.raises(PipelineError, match="ddl_log"):
        run_pipeline(config, spark=spark)
    processed = {r.source_file.rsplit("/", 1)[-1] for r in spark.table(f"{schema}.audit_files").collect()}
    assert processed == {"1.jsonl"}

    spark.sql(f"drop table {schema}.ddl_log")
    summary = run_pipeline(config, spark=spark)
    assert (summary.files, summary.records) == (1, 2)
    assert [r.sql_text for r in spark.table(f"{schema}.ddl_log").collect()] == [ALTER]
    keys = [r.key_text for r in spark.table(f"{schema}.changelog").collect()]
    assert sorted(keys) == sorted(set(keys)) and len(keys) == 2
