"""``dts_shareplex_json`` through the whole pipeline: the spec's three examples as
printed (pretty documents) plus messages built on them, in one run."""

from __future__ import annotations

import json

import yaml

from udfs.export import export_rows
from udfs.pipeline import run_pipeline

from formats.test_dts_shareplex_json import SPEC_DELETE, SPEC_INSERT, SPEC_UPDATE  # isort: skip


def _msg(op: str, table: str, scn: int, data=None, key=None, seq: int = 1, size: int = 1) -> str:
    meta = {
        "time": "2017-06-16T16:00:00",
        "userid": 84,
        "op": op,
        "scn": str(scn),
        "rowid": "AAATGpAAIAAItcIAAB",
        "trans": f"7.0.{scn}",
        "seq": seq,
        "size": size,
        "table": table,
        "idx": f"{seq}/{size}",
        "posttime": "2017-06-16T16:00:09",
    }
    doc: dict = {"meta": meta}
    if data is not None:
        doc["data"] = data
    if key is not None:
        doc["key"] = key
    return json.dumps(doc, indent=4)


ROW = {"MIO_LOG_ID": "32539739", "PLNMIO_REC_ID": "31557806", "POL_CODE": None, "CNTR_TYPE": None, "CG_NO": None}
LOG, TMP = "CL_BIZ1.MIO_LOG", "CL_BIZ1.TMP_LOG"
DOCUMENTS = [
    SPEC_INSERT,  # 32539737 inserted at scn 14589063118712
    SPEC_UPDATE,  # no scn (abbreviated sample): an update of a key never inserted
    SPEC_DELETE,  # no meta.table (abbreviated sample): quarantined
    _msg("ins", LOG, 14589063118800, data=ROW),
    _msg("UPDATE BEFORE", LOG, 14589063118900, data=ROW, seq=1, size=2),  # skipped
    _msg("UPDATE AFTER", LOG, 14589063118900, data={"CG_NO": "X1"}, key={"MIO_LOG_ID": "32539739"}, seq=2, size=2),
    _msg("del", LOG, 14589063119000, data={"MIO_LOG_ID": "32539737"}),
    _msg("INSERT", TMP, 100, data={"ID": "1", "V": "before truncate"}),
    _msg("TRUNCATE", TMP, 200),
    _msg("INSERT", TMP, 300, data={"ID": "2", "V": "after truncate"}),
]


def test_shareplex_spec_examples_through_the_pipeline(spark, make_config, tmp_path):
    feed = {"name": "splex", "format": "dts_shareplex_json", "path": "landing/splex", "framing": "documents"}
    tables = {
        "CL_BIZ1.MIO_LOG": {"key": ["MIO_LOG_ID"], "columns": {"MIO_LOG_ID": "bigint"}},
        "CL_BIZ1.TMP_LOG": {"key": ["ID"]},
    }
    config = make_config([feed], tables)
    (tmp_path / "landing" / "splex" / "shareplex.json").write_text("\n".join(DOCUMENTS) + "\n", encoding="utf-8")
    summary = run_pipeline(config, spark=spark)
    assert (summary.records, summary.changes, summary.quarantined, summary.skipped) == (10, 8, 1, 1)

    assert export_rows(spark, config, "cl_biz1.mio_log") == [
        # the spec's update of a key never inserted: the columns it names
        {
            "mio_log_id": 32537893,
            "plnmio_rec_id": "31557806",
            "pol_code": None,
            "cntr_type": None,
            "cntr_no": "1171201606",
            "cg_no": None,
        },
        # inserted, then UPDATE AFTER set CG_NO only
        {
            "mio_log_id": 32539739,
            "plnmio_rec_id": "31557806",
            "pol_code": None,
            "cntr_type": None,
            "cntr_no": None,
            "cg_no": "X1",
        },
    ]
    # TRUNCATE emptied the table; the later insert stays
    assert export_rows(spark, config, "cl_biz1.tmp_log") == [{"id": "2", "v": "after truncate"}]

    schema = yaml.safe_load(config.read_text())["schema"]
    # ... and closed every open version in the history: row 1 ends with a truncate version
    history = spark.sql(
        f"select key['id'] as id, version_no, op, is_deleted, is_current, valid_to_seq from {schema}.history "
        "where table_id = 'cl_biz1.tmp_log' order by id, version_no"
    ).collect()
    assert [(r.id, r.version_no, r.op, r.is_deleted, r.is_current) for r in history] == [
        ("1", 1, "insert", False, False),
        ("1", 2, "truncate", True, True),
        ("2", 1, "insert", False, True),
    ]
    assert history[0].valid_to_seq is not None
    rows = spark.sql(
        f"select source_schema, source_table, op, tx_id, extras, commit_ts, capture_ts from {schema}.changelog "
        "where source_table = 'MIO_LOG' order by order_key"
    ).collect()
    assert [r.op for r in rows] == ["insert", "insert", "update", "delete", "update"]
    first = rows[0]
    assert (first.source_schema, first.tx_id) == ("CL_BIZ1", "7.0.411499")
    assert (first.extras["rowid"], first.extras["idx"], first.extras["scn"]) == (
        "AAATGpAAIAAItcIAAA",
        "1/11",
        "14589063118712",
    )
    assert (str(first.commit_ts), str(first.capture_ts)) == ("2017-06-16 14:24:34", "2017-06-16 14:33:52")
    quarantined = spark.sql(f"select record_index, reason from {schema}.quarantine").collect()
    assert [(q.record_index, q.reason) for q in quarantined] == [(2, "Shareplex message without meta.table")]
