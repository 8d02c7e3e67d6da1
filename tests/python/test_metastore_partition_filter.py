"""A partition filter the Hive metastore fails on does not fail the query
(``udfs.session.PARTITION_FILTER_FALLBACK``).

The changelog is partitioned by ``table_id`` (text) and ``bucket`` (an integer), and a
compaction copies the partitions it takes with a filter on both. The embedded
metastore answers a filter on an integer partition column only through its direct SQL;
when that fails, its fallback refuses the filter, and Spark's query failed with
``INTERNAL_ERROR_HIVE_METASTORE_PARTITION_FILTER`` (a compaction's copy did so once, in
a loaded run of ``test_changelog_compaction.py``). Here the direct SQL is off from the
start, in a session of its own: the metastore's settings are read when the session
starts, and the shared one has started already.
"""

from __future__ import annotations

from own_session import run_script

#: the session of ``cdc run`` with the metastore's direct SQL off; the copy of two
#: partitions as ``cdc_changelog_compaction_stage`` writes it, with Spark's fallback on
#: (the session's), then off
SCRIPT = r"""
import json, re, sys
from udfs.session import PARTITION_FILTER_FALLBACK, build_session

no_direct_sql = {"spark.hadoop.hive.metastore.try.direct.sql": "false"}
spark = build_session(sys.argv[1], master="local[1]", extra_conf=no_direct_sql)
spark.sql("create database d")
spark.sql(
    "create table d.changelog (v string, table_id string, bucket int) using parquet partitioned by (table_id, bucket)"
)
spark.sql(
    "insert into d.changelog"
    " select cast(id as string), if(id < 12, 'items', 'orders'), cast(id % 4 as int) from range(16)"
)
copy = (
    "insert into d.staged select * from d.changelog"
    " where ((table_id = 'items' and bucket = 0) or (table_id = 'items' and bucket = 3))"
)
result = {"fallback": spark.conf.get(PARTITION_FILTER_FALLBACK)}
spark.sql("create table d.staged like d.changelog")
spark.sql(copy)
result["copied"] = sorted(int(r.v) for r in spark.table("d.staged").collect())
spark.conf.set(PARTITION_FILTER_FALLBACK, "false")
try:
    spark.sql(copy)
    result["without_fallback"] = "copied"
except Exception as error:
    result["without_fallback"] = re.search(r"\[([A-Z_]+)\]", str(error)).group(1)
print("RESULT " + json.dumps(result))
"""


def test_a_partition_filter_the_metastore_refuses_is_applied_by_spark(tmp_path):
    result = run_script(SCRIPT, str(tmp_path / "warehouse"), cwd=tmp_path)
    assert result["fallback"] == "true"
    # the two partitions' rows, no more: the filter is applied, by Spark
    assert result["copied"] == [0, 3, 4, 7, 8, 11]
    # and the failure it saves the query from (the metastore still refuses the filter)
    assert result["without_fallback"] == "INTERNAL_ERROR_HIVE_METASTORE_PARTITION_FILTER"
