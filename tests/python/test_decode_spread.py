"""The landing files of a run are read and decoded by several Spark tasks
(``macros/sql/cdc_decode_tasks.sql``): one task per ``decode_task_bytes`` of files, at
least 8 when there are that many files, never more tasks than files. Each task writes
its own part file of ``stg_landing__records``, so the part files count the tasks."""

from __future__ import annotations

import re

import yaml

from udfs.pipeline import run_pipeline

EVENT = (
    '{"before":null,"after":{"id":%d,"name":"n%d"},"source":{"connector":"postgresql","db":"d","schema":"s",'
    '"table":"items","lsn":%d},"op":"c"}'
)
EVENTS_PER_FILE = 3


def _landing_texts(files: int) -> list[str]:
    return [
        "".join(EVENT % (i, i, i + 1) + "\n" for i in range(f * EVENTS_PER_FILE, (f + 1) * EVENTS_PER_FILE))
        for f in range(files)
    ]


def _run(spark, make_config, tmp_path, files: int, **settings) -> tuple[int, int]:
    """Run over ``files`` landing files; return (decoding tasks, live state rows)."""
    config = make_config(
        [{"name": "f", "format": "debezium_json", "path": "landing/f"}], {"items": {"key": ["id"]}}, **settings
    )
    landing = tmp_path / "landing" / "f"
    for f, text in enumerate(_landing_texts(files)):
        (landing / f"{f:03d}.jsonl").write_text(text)
    summary = run_pipeline(config, spark=spark)
    assert (summary.files, summary.records, summary.changes) == (files, files * 3, files * 3)
    schema = yaml.safe_load(config.read_text())["schema"]
    part_files = spark.table(f"{schema}.stg_landing__records").inputFiles()
    state_rows = spark.sql(f"select count(*) from {schema}.state where not is_deleted").first()[0]
    return len(part_files), state_rows


def test_few_files_get_a_task_each(spark, make_config, tmp_path):
    assert _run(spark, make_config, tmp_path, files=3) == (3, 9)


def test_many_small_files_share_at_least_eight_tasks(spark, make_config, tmp_path):
    assert _run(spark, make_config, tmp_path, files=12) == (8, 36)


def test_task_bytes_sets_the_tasks_above_eight(spark, make_config, tmp_path):
    total = sum(len(t.encode()) for t in _landing_texts(12))
    task_bytes = -(-total // 10)  # ceil: ten tasks' worth of bytes
    assert _run(spark, make_config, tmp_path, files=12, decode_task_bytes=task_bytes) == (10, 36)


def test_files_are_read_once_after_the_spread(spark, make_config, tmp_path):
    """The physical plan of ``stg_landing__records`` calls ``cdc_decode_records`` once,
    above the repartition (so each task decodes its own files), and no other decoding
    UDF: a record is read and decoded in that call. The records are joined to their
    files' feed by broadcasting the file list: the decoded records (Spark cannot size a
    table function's output) are never the side sent to every task through the driver."""
    _run(spark, make_config, tmp_path, files=3)
    (compiled,) = tmp_path.rglob("compiled/**/stg_landing__records.sql")
    plan = spark.sql("explain " + compiled.read_text()).first()[0]
    lines = plan.splitlines()
    reads = [i for i, line in enumerate(lines) if "cdc_decode_records(" in line]
    assert not [line for line in lines if re.search(r"cdc_(read_records|decode|decode_files)\(", line)], plan
    exchanges = [i for i, line in enumerate(lines) if "Exchange RoundRobinPartitioning" in line]
    assert len(reads) == 1, plan
    assert len(exchanges) == 1 and reads[0] < exchanges[0], plan  # the UDTF sits above the exchange
    broadcasts = [i for i, line in enumerate(lines) if "BroadcastExchange" in line]
    assert len(broadcasts) == 1, plan
    # what is broadcast is a scan of the file list, not the table function's output
    below = lines[broadcasts[0] + 1 :]
    assert "stg_landing__files" in below[1] and "ArrowEvalPythonUDTF" not in "".join(below), plan
