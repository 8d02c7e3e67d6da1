"""A run appends one changelog file per partition (``table_id``, ``bucket``) it touches,
whatever the number of tasks that read its decoded batch (the ``rebalance`` hint of
``models/changelog/changelog.sql``).

The changelog only grows, and every read of it opens every file's footer, so the files
a run adds are what its later reads pay for. What could go wrong: every task writing
its own file into every partition it has rows for (the eight landing files below are
decoded by eight tasks into eight files, and read back by several tasks), or rows lost
on the way.
"""

from __future__ import annotations

from table_files import files_per_changelog_partition

from udfs.config import load_config
from udfs.pipeline import run_pipeline

EVENT = (
    '{"before":null,"after":{"id":%d,"name":"n%d"},"source":{"connector":"postgresql","db":"d","schema":"s",'
    '"table":"items","lsn":%d,"ts_us":1700000000000000},"op":"c"}'
)
FILES, EVENTS_PER_FILE = 8, 12


def test_a_run_appends_one_changelog_file_per_partition(spark, make_config):
    path = make_config([{"name": "f", "format": "debezium_json", "path": "landing/f"}], {"items": {"key": ["id"]}})
    config = load_config(path)
    for f in range(FILES):
        ids = range(f * EVENTS_PER_FILE, (f + 1) * EVENTS_PER_FILE)
        lines = [EVENT % (i, i, 100 + i) for i in ids]
        (config.feeds[0].path / f"part-{f}.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")

    summary = run_pipeline(config, spark=spark)
    assert summary.changes == FILES * EVENTS_PER_FILE

    schema = config.schema
    # the decoded batch is spread over several files, each read by its own task
    assert len(spark.table(f"{schema}.stg_landing__records").inputFiles()) == FILES
    assert spark.table(f"{schema}.stg_landing__records").rdd.getNumPartitions() > 1

    files = files_per_changelog_partition(spark, f"{schema}.changelog")
    touched = {
        f"table_id={r[0]}/bucket={r[1]}"
        for r in spark.sql(f"select distinct table_id, bucket from {schema}.changelog").collect()
    }
    assert set(files) == touched and len(touched) > 1
    assert set(files.values()) == {1}, files
    assert spark.table(f"{schema}.changelog").count() == FILES * EVENTS_PER_FILE
