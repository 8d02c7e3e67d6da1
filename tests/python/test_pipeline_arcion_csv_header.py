"""Arcion internal CSV through the pipeline with a header row and the table taken from
the file's path (``table_from_path``): no column list and no fixed table in cdc.yml."""

from __future__ import annotations

from udfs.export import export_rows
from udfs.pipeline import run_pipeline

CURSOR = (
    '"{""extractorId"":0,""timestamp"":1,""extractionTimestamp"":2,""log"":""log-bin.000010"",'
    '""position"":%d,""logSeqNum"":1,""v"":2}"'
)
COUNT = '"{""insertCount"":%d,""updateCount"":0,""deleteCount"":0,""replaceCount"":0}"'


def test_header_row_names_columns_and_path_names_table(spark, make_config, tmp_path):
    feed = {
        "name": "csv",
        "format": "arcion_internal_csv",
        "path": "landing/csv",
        "options": {"header": True, "table_from_path": r"/(?P<table>[a-z_]+)/[^/]+\.csv$"},
    }
    config = make_config([feed], {"region": {"key": ["r_regionkey"]}, "nation": {"key": ["n_nationkey"]}})
    region = tmp_path / "landing" / "csv" / "region"
    nation = tmp_path / "landing" / "csv" / "nation"
    region.mkdir(parents=True)
    nation.mkdir(parents=True)
    # snapshot files: a header of X names, then rows of X values (a snapshot insert each)
    (region / "part-0001.csv").write_text('r_regionkey,r_name,r_comment\n0,AFRICA,"lar, deposits"\n1,AMERICA,NULL\n')
    (nation / "part-0001.csv").write_text("n_nationkey,n_name\r\n7,GERMANY\r\n")
    # a realtime file: a header of 3X+3 names, then an update of region 1 (r_comment only)
    realtime = (
        "r_regionkey_NEW,r_regionkey_OLD,r_regionkey_EXISTS,r_name_NEW,r_name_OLD,r_name_EXISTS,"
        "r_comment_NEW,r_comment_OLD,r_comment_EXISTS,op,cursor,operationcount\n"
        f'NULL,1,2,NULL,NULL,0,"new ""comment""",NULL,1,U,{CURSOR % 500},{COUNT % 1}\n'
    )
    (region / "part-0002.csv").write_text(realtime)

    summary = run_pipeline(config, spark=spark)
    assert (summary.files, summary.records, summary.changes, summary.quarantined) == (3, 4, 4, 0), summary
    assert sorted(summary.tables) == ["nation", "region"]
    assert sorted(export_rows(spark, config, "region"), key=lambda r: r["r_regionkey"]) == [
        {"r_regionkey": "0", "r_name": "AFRICA", "r_comment": "lar, deposits"},
        {"r_regionkey": "1", "r_name": "AMERICA", "r_comment": 'new "comment"'},
    ]
    assert export_rows(spark, config, "nation") == [{"n_nationkey": "7", "n_name": "GERMANY"}]
