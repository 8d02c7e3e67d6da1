"""End to end: ``run_pipeline`` (``dbt build``) over a landing folder of mixed operations,
timed per dbt node and stage, against the native baseline over the same files:
``from_json`` of the envelope fields written as parquet (no merge, no state)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from bench.data import FORMAT_CASES, DataSet
from bench.dbt_nodes import node_times
from bench.decode import native_frame


def run_e2e(spark: Any, config: Any, data: DataSet, work: Path, sampler: Any) -> dict[str, Any]:
    from udfs.pipeline import run_pipeline

    with sampler.section("e2e:project"):
        t0 = time.perf_counter()
        summary = run_pipeline(config, spark=spark)
        wall = time.perf_counter() - t0
    timing = node_times(config.warehouse / "dbt" / "target")
    s = config.schema
    state_rows, history_rows, changelog_rows = spark.sql(
        f"select (select count(*) from `{s}`.state where not is_deleted), (select count(*) from `{s}`.history), "
        f"(select count(*) from `{s}`.changelog)"
    ).collect()[0]

    # the tasks that read and decoded the landing files: each wrote one part file of the records
    decode_tasks = len(spark.table(f"`{s}`.`stg_landing__records`").inputFiles())

    with sampler.section("e2e:native"):
        t0 = time.perf_counter()
        frame = native_frame(spark, FORMAT_CASES["debezium_json"], data.folder)
        frame.write.mode("overwrite").parquet(str(work / "e2e_native_parquet"))
        native = time.perf_counter() - t0

    stages = timing["stages"]
    measured = sum(v for k, v in stages.items() if k != "tests")
    return {
        "data": data.as_dict(),
        "summary": summary.as_dict(),
        "rows": {"changelog": changelog_rows, "state_live": state_rows, "history": history_rows},
        "decode_tasks": decode_tasks,
        "project_wall_s": round(wall, 3),
        "project_records_per_s": round(data.records / wall, 1),
        # busy seconds of each stage's nodes: with more than one dbt thread they overlap
        "stages_s": stages,
        "nodes_s": timing["nodes"],
        "dbt_tests": timing["n_tests"],
        "dbt_threads": timing["threads"],
        # the time during which at least one node ran
        "nodes_wall_s": timing["nodes_wall_s"],
        # dbt's parse, adapter calls and metastore look-ups while no node ran
        "dbt_overhead_s": round(wall - timing["nodes_wall_s"], 3),
        "native_decode_parquet_s": round(native, 3),
        "native_records_per_s": round(data.records / native, 1),
        "ratio_project_over_native": round(wall / native, 2),
        # the models' busy seconds (no tests, no overhead) over the native baseline
        "ratio_models_only_over_native": round((measured) / native, 2),
    }
