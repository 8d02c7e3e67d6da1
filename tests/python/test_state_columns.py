"""The mart views' columns come from ``state_columns``: the columns the rows each merge
wrote hold, added to run by run, instead of a read of the whole state every run.

One Debezium feed over four runs in one warehouse:

1. keys 1 and 2 (key 2 also has ``b``);
2. a row put into the state by hand (key 99, with a column ``zzz``) is not read: the
   run's merge refolds key 1 only (it gains ``c``), so ``c`` reaches the view and
   ``zzz`` does not;
3. a run that stops after its merge is committed (``+merge_log``, before the marts)
   inserts key 3 with ``d``; the next run, which touches key 1 only, shows ``d``;
4. key 2, the only row with ``b``, is deleted: ``b`` stays in the view (a column, once
   seen, stays; see README, "Schema evolution");

then a ``--full-refresh`` of ``state_columns`` reads every committed row of the state:
the hand-made one's ``zzz`` appears, and ``b`` (no live row holds it) goes.
"""

from __future__ import annotations

from debezium_lines import items_view_columns, items_view_rows, land, one_feed_of_items, row_event

from udfs.pipeline import run_dbt, run_pipeline


def _put_row_by_hand(spark, schema: str) -> None:
    """Key 99 in key 1's segment, as a copy of key 1's row with ``zzz``."""
    table = f"{schema}.state_segments"
    columns = spark.table(table).columns
    replaced = {
        "key_text": "replace(key_text, '1', '99')",
        "key": "map('id', '99')",
        "row": "map_concat(map_filter(row, (k, v) -> k != 'id'), map('id', '99', 'zzz', 'by hand'))",
    }
    projection = ", ".join(f"{replaced.get(c, c)} as {c}" for c in columns)
    spark.sql(f"insert into {table} select {projection} from {table} where key['id'] = '1'")


def test_mart_columns_follow_the_rows_each_merge_wrote(spark, make_config, tmp_path):
    config, schema, marts, landing = one_feed_of_items(make_config, tmp_path)

    land(
        landing,
        "1.jsonl",
        [row_event(10, "c", {"id": 1, "a": "x"}), row_event(20, "c", {"id": 2, "a": "y", "b": "only 2"})],
    )
    run_pipeline(config, spark=spark)
    assert items_view_columns(spark, marts) == {"id", "a", "b"}

    _put_row_by_hand(spark, schema)
    assert 99 in items_view_rows(spark, marts)
    land(landing, "2.jsonl", [row_event(30, "u", {"id": 1, "a": "x2", "c": "new"})])
    run_pipeline(config, spark=spark)
    assert items_view_columns(spark, marts) == {"id", "a", "b", "c"}  # not zzz: the state was not read

    land(landing, "3.jsonl", [row_event(40, "c", {"id": 3, "a": "z", "d": "from a run that stopped"})])
    run_dbt(config, "run", extra=["--select", "+merge_log"])
    assert items_view_columns(spark, marts) == {"id", "a", "b", "c"}  # the marts were not rebuilt
    land(landing, "4.jsonl", [row_event(50, "u", {"id": 1, "a": "x3", "c": "newer"})])
    run_pipeline(config, spark=spark)
    assert items_view_columns(spark, marts) == {"id", "a", "b", "c", "d"}
    assert items_view_rows(spark, marts)[3]["d"] == "from a run that stopped"

    land(landing, "5.jsonl", [row_event(60, "d", {"id": 2, "a": "y", "b": "only 2"})])
    run_pipeline(config, spark=spark)
    rows = items_view_rows(spark, marts)
    assert items_view_columns(spark, marts) == {"id", "a", "b", "c", "d"}  # b outlives its last row
    assert sorted(rows) == [1, 3, 99] and {r["b"] for r in rows.values()} == {None}
    assert rows[1] == {"id": "1", "a": "x3", "b": None, "c": "newer", "d": None}

    run_dbt(config, "run", extra=["--select", "state_columns", "mart_columns", "--full-refresh"])
    assert items_view_columns(spark, marts) == {"id", "a", "c", "d", "zzz"}
    assert items_view_rows(spark, marts)[99]["zzz"] == "by hand"
