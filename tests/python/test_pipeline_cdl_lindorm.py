"""Huawei CDL JSON (1.0 and 2.0) and Lindorm (SQL and HBase tables) through the real
pipeline (Spark + dbt via ``run_pipeline``).

Every sample message of ``specs/huawei-cdl-json-and-debezium-json.txt`` and
``specs/lindorm-debezium-format.txt`` is used (verbatim copies in ``spec_samples.py``,
shared with the decoder unit tests; the Lindorm samples landed with the ``documents``
framing). Further messages are built from them by changing the payload only. The
expected changelog rows and final states are written out here, derived from the spec
text.

Two pipeline runs (module fixtures):

* ``cdl_lindorm``: a CDL feed with 1.0 and 2.0 messages and three heartbeats (its
  table configured), a second CDL feed mixing 1.0 and 2.0 messages of a table that
  ``cdc.yml`` does not name (``sales.orders``: one table whatever the version), and a
  Lindorm SQL feed (table ``customers``).
* ``hbase``: a Lindorm HBase feed. The HBase sample names the same table
  (``ld-xxxx``/``default``/``customers``) as the SQL samples, so it needs its own
  warehouse schemas.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest
import yaml
from spec_samples import (
    CDL_V1_INSERT,
    CDL_V2_INSERT,
    LINDORM_FORMAT_UPDATE,
    LINDORM_HBASE_PUT,
    LINDORM_SQL_COLUMN_DELETE,
    LINDORM_SQL_DELETE,
    LINDORM_SQL_INSERT,
    LINDORM_SQL_UPDATE,
)

from udfs.export import export_lines, export_rows
from udfs.pipeline import run_pipeline


def pos(*parts: int) -> str:
    """The ``seq`` text of integer positions: 20-digit zero-padded parts joined by '.'."""
    return ".".join(str(p).zfill(20) for p in parts)


def b64(raw: bytes | str) -> str:
    return base64.b64encode(raw.encode() if isinstance(raw, str) else raw).decode()


def write_config(root: Path, name: str, feeds: list[dict], tables: dict) -> Path:
    for feed in feeds:
        (root / feed["path"]).mkdir(parents=True, exist_ok=True)
    config = root / "cdc.yml"
    cfg = {"warehouse": ".cdc", "schema": f"{name}_cdc", "marts_schema": f"{name}_marts", "feeds": feeds}
    config.write_text(yaml.safe_dump({**cfg, "tables": tables}, sort_keys=False))
    return config


CHANGELOG_COLUMNS = (
    "record_index, row_index, op, source_db, source_schema, source_table, table_id, key, before, after, "
    "before_cols, after_cols, col_types, seq, tx_id, unix_micros(commit_ts) as commit_us, "
    "unix_micros(capture_ts) as capture_us, extras"
)


def changelog(spark, config: Path, feed: str) -> list[dict]:
    """The feed's changelog rows in merge order (``order_key``)."""
    schema = yaml.safe_load(config.read_text())["schema"]
    rows = spark.sql(
        f"select {CHANGELOG_COLUMNS} from {schema}.changelog where feed = '{feed}' order by order_key"
    ).collect()
    return [r.asDict() for r in rows]


def assert_changelog(spark, config: Path, feed: str, expected: list[dict]) -> None:
    """The feed's changelog is ``expected``: the order (record_index) first, then row by
    row, so that a failure names the record that differs."""
    rows = changelog(spark, config, feed)
    assert [r["record_index"] for r in rows] == [r["record_index"] for r in expected]
    for got, want in zip(rows, expected, strict=True):
        assert got == want, f"record {want['record_index']}"


def mart_types(spark, config: Path, view: str) -> dict[str, str]:
    marts = yaml.safe_load(config.read_text())["marts_schema"]
    fields = spark.table(f"`{marts}`.`{view}`").schema.fields
    return {f.name: f.dataType.simpleString() for f in fields if not f.name.startswith("_cdc_")}


# ======================================================================== CDL messages

HEARTBEAT_ID = "279fb050-0143-45c1-b184-50bc48c2461c"
PLACEHOLDER = "__debezium_unavailable_value"


def cdl_row(n: int, count1: int | None, time1: int | None = None, decimal: str | None = None) -> dict:
    return {"count1": count1, "id": n, "time1": time1, "decimalNum": decimal}


def cdl_v1(operation: str, lsn: int, tx: int, ts: int, data: dict | None, before: dict | None) -> str:
    """A 1.0 message: the spec's sample with another payload."""
    doc = json.loads(CDL_V1_INSERT)
    doc["payload"].update(
        OPERATION=operation,
        TIMESTAMP=ts,
        data=data,
        before=before,
        unique={"id": (data or before)["id"]},
        transaction={"properties": [{"name": "lsn", "value": lsn}, {"name": "txId", "value": tx}]},
    )
    return json.dumps(doc, separators=(",", ":"))


def cdl_v2(op: str, lsn: int, tx: int, ts: int, after: dict | None, before: dict | None, lob: str | None = None) -> str:
    """A 2.0 message: the spec's sample with another payload."""
    doc = json.loads(CDL_V2_INSERT)
    payload = doc["payload"]
    payload.update(op=op, ts_ms=ts + 900, after=after, before=before, unique={"id": (after or before)["id"]})
    payload["LOB_COLUMNS"] = lob
    payload["source"].update(ts_ms=ts, txId=tx, lsn=lsn)
    return json.dumps(doc, separators=(",", ":"))


def heartbeat_table_v1() -> str:
    """A row of CDL's heartbeat table ``cdc_cdl.cdc_heartbeat``, in 1.0."""
    doc = json.loads(CDL_V1_INSERT)
    doc["payload"].update(SEG_OWNER="cdc_cdl", TABLE_NAME="cdc_heartbeat")
    return json.dumps(doc, separators=(",", ":"))


def heartbeat_table_v2() -> str:
    doc = json.loads(CDL_V2_INSERT)
    doc["payload"]["source"].update(schema="cdc_cdl", table="cdc_heartbeat")
    return json.dumps(doc, separators=(",", ":"))


#: the CDL landing file, in this order (record_index = place in the list)
CDL_FILE = [
    CDL_V1_INSERT,  # 0: id 34, lsn 163955221008
    CDL_V2_INSERT,  # 1: id 35, lsn 163955586912
    heartbeat_table_v1(),  # 2: skipped (heartbeat)
    # 3: a later LSN than record 4, written first: the LSN orders, not the file
    cdl_v1("UPDATE", 163955700000, 57227700, 1707049000000, cdl_row(34, 20, 1707047996013, "12.50"), cdl_row(34, 13)),
    cdl_v1("UPDATE", 163955600000, 57227690, 1707048999000, cdl_row(34, 15, None, "1.00"), cdl_row(34, 13)),  # 4
    json.dumps({"HEARTBEAT_IDENTIFIER": HEARTBEAT_ID, "TIMESTAMP": 1707049001000}),  # 5: bare heartbeat, skipped
    # 6 and 7: one LSN, two transactions: txId orders (57227800 before 57227801)
    cdl_v2("u", 163955800000, 57227801, 1707049100000, cdl_row(35, 31, None, "7.77"), None),
    cdl_v2("u", 163955800000, 57227800, 1707049100000, cdl_row(35, 30, None, "3.33"), None),
    # 8: a LOB column PostgreSQL did not log (TOAST placeholder): not provided, keeps 7.77
    cdl_v2("u", 163955900000, 57227900, 1707049200000, cdl_row(35, 32, None, PLACEHOLDER), None, lob="decimalNum"),
    heartbeat_table_v2(),  # 9: skipped (heartbeat)
    # 10 and 11: the delete arrives before the insert it follows (late arrival)
    cdl_v1("DELETE", 163955660000, 57227660, 1707048999500, None, cdl_row(36, 1)),
    cdl_v1("INSERT", 163955650000, 57227650, 1707048999400, cdl_row(36, 1), None),
]

V1_TYPES = {"count1": "bigint", "id": "int", "time1": "timestamp", "decimalnum": "string"}
# 2.0 declares time1 as a string named com.xxx.cdc.data.timestamp (the spec's sample)
V2_TYPES = {**V1_TYPES, "time1": "string"}
V1_EXTRAS = {
    "message_version": "1.0",
    "message_type": "0",
    "lob_columns": None,
    "data_store": "POSTGRESQL",
    "database": None,
}
# 2.0's source.db is kept here, not as source_db: 1.0 names no database
V2_EXTRAS = {**V1_EXTRAS, "message_version": "2.0", "data_store": "postgresql", "database": "cdl"}
CDL_COLS = ["count1", "id", "time1", "decimalnum"]
CDL_BASE = {"row_index": 0, "source_table": "ct_pg2hudi", "table_id": "public.ct_pg2hudi", "source_schema": "public"}
CDL_V1_BASE = {**CDL_BASE, "source_db": None, "col_types": V1_TYPES, "extras": V1_EXTRAS, "capture_us": None}
CDL_V2_BASE = {**CDL_BASE, "source_db": None, "col_types": V2_TYPES, "extras": V2_EXTRAS}


def image(n: int, count1: str, time1: str | None = None, decimal: str | None = None) -> dict:
    return {"count1": count1, "id": n, "time1": time1, "decimalnum": decimal}


#: the expected changelog of the CDL feed, in merge order
CDL_CHANGELOG = [
    {  # the spec's 1.0 sample
        **CDL_V1_BASE,
        "record_index": 0,
        "op": "insert",
        "key": {"id": "34"},
        "before": None,
        "after": image("34", "13"),
        "before_cols": None,
        "after_cols": CDL_COLS,
        "seq": pos(163955221008, 57227595),
        "tx_id": "57227595",
        "commit_us": 1707047996013000,
    },
    {  # the spec's 2.0 sample
        **CDL_V2_BASE,
        "record_index": 1,
        "op": "insert",
        "key": {"id": "35"},
        "before": None,
        "after": image("35", "14"),
        "before_cols": None,
        "after_cols": CDL_COLS,
        "seq": pos(163955586912, 57227663),
        "tx_id": "57227663",
        "commit_us": 1707048891235000,
        "capture_us": 1707048984208000,
    },
    {
        **CDL_V1_BASE,
        "record_index": 4,
        "op": "update",
        "key": {"id": "34"},
        "before": image("34", "13"),
        "after": image("34", "15", None, "1.00"),
        "before_cols": CDL_COLS,
        "after_cols": CDL_COLS,
        "seq": pos(163955600000, 57227690),
        "tx_id": "57227690",
        "commit_us": 1707048999000000,
    },
    {
        **CDL_V1_BASE,
        "record_index": 11,
        "op": "insert",
        "key": {"id": "36"},
        "before": None,
        "after": image("36", "1"),
        "before_cols": None,
        "after_cols": CDL_COLS,
        "seq": pos(163955650000, 57227650),
        "tx_id": "57227650",
        "commit_us": 1707048999400000,
    },
    {
        **CDL_V1_BASE,
        "record_index": 10,
        "op": "delete",
        "key": {"id": "36"},
        "before": image("36", "1"),
        "after": None,
        "before_cols": CDL_COLS,
        "after_cols": None,
        "seq": pos(163955660000, 57227660),
        "tx_id": "57227660",
        "commit_us": 1707048999500000,
    },
    {
        **CDL_V1_BASE,
        "record_index": 3,
        "op": "update",
        "key": {"id": "34"},
        "before": image("34", "13"),
        # Connect Timestamp 1707047996013 ms
        "after": image("34", "20", "2024-02-04T11:59:56.013000Z", "12.50"),
        "before_cols": CDL_COLS,
        "after_cols": CDL_COLS,
        "seq": pos(163955700000, 57227700),
        "tx_id": "57227700",
        "commit_us": 1707049000000000,
    },
    {
        **CDL_V2_BASE,
        "record_index": 7,
        "op": "update",
        "key": {"id": "35"},
        "before": None,
        "after": image("35", "30", None, "3.33"),
        "before_cols": None,
        "after_cols": CDL_COLS,
        "seq": pos(163955800000, 57227800),
        "tx_id": "57227800",
        "commit_us": 1707049100000000,
        "capture_us": 1707049100900000,
    },
    {
        **CDL_V2_BASE,
        "record_index": 6,
        "op": "update",
        "key": {"id": "35"},
        "before": None,
        "after": image("35", "31", None, "7.77"),
        "before_cols": None,
        "after_cols": CDL_COLS,
        "seq": pos(163955800000, 57227801),
        "tx_id": "57227801",
        "commit_us": 1707049100000000,
        "capture_us": 1707049100900000,
    },
    {
        **CDL_V2_BASE,
        "record_index": 8,
        "op": "update",
        "key": {"id": "35"},
        "before": None,
        "after": {"count1": "32", "id": "35", "time1": None},  # decimalnum: not provided
        "before_cols": None,
        "after_cols": ["count1", "id", "time1"],
        "seq": pos(163955900000, 57227900),
        "tx_id": "57227900",
        "commit_us": 1707049200000000,
        "capture_us": 1707049200900000,
        "extras": {**V2_EXTRAS, "lob_columns": "decimalNum"},
    },
]


def on_table(message: str, db: str, schema: str, table: str) -> str:
    """A CDL message renamed to another table (1.0: SEG_OWNER/TABLE_NAME; 2.0: source)."""
    doc = json.loads(message)
    payload = doc["payload"]
    if payload["message_version"] == "1.0":
        payload.update(SEG_OWNER=schema, TABLE_NAME=table)
    else:
        payload["source"].update(db=db, schema=schema, table=table)
    return json.dumps(doc, separators=(",", ":"))


def orders(*args, **kwargs) -> str:
    return on_table(*args, **kwargs, db="shop", schema="sales", table="orders")


#: the mixed feed: table sales.orders (2.0 source.db "shop"), not in cdc.yml; each key is
#: changed by both versions, so the state is right only if both versions meet in one table
CDL_MIXED_FILE = [
    orders(cdl_v1("INSERT", 1000, 1, 1707050000000, cdl_row(1, 10), None)),  # 0
    orders(cdl_v2("u", 2000, 2, 1707050001000, cdl_row(1, 11), None)),  # 1: 2.0 updates a 1.0 row
    orders(cdl_v1("INSERT", 1500, 3, 1707050000500, cdl_row(2, 20), None)),  # 2
    orders(cdl_v2("d", 2500, 4, 1707050002000, None, cdl_row(2, 20))),  # 3: 2.0 deletes a 1.0 row
    orders(cdl_v2("c", 3000, 5, 1707050003000, cdl_row(3, 30), None)),  # 4
    orders(cdl_v1("UPDATE", 3500, 6, 1707050004000, cdl_row(3, 31, None, "0.50"), cdl_row(3, 30))),  # 5
]

# ===================================================================== Lindorm messages


def lindorm_doc(sample: str, op: str, ts_ms: int, before: dict | None, after: dict | None) -> str:
    """A spec sample with another payload, pretty-printed like the spec's."""
    doc = json.loads(sample)
    doc["payload"].update(op=op, ts_ms=ts_ms + 8, before=before, after=after)
    doc["payload"]["source"]["ts_ms"] = ts_ms
    return json.dumps(doc, indent=2, ensure_ascii=False)


def person(n: str, first: str, last: str | None = None) -> dict:
    row = {"id": n, "first_name": first}
    if last is not None:
        row["last_name"] = last
    return row


SPEC_TS = 1465491411807  # every SQL sample of the spec has this source.ts_ms
T1005, T1006 = 1465491412000, 1465491414000

#: the Lindorm SQL landing file (documents), record_index = place in the list
LINDORM_SQL_FILE = [
    LINDORM_FORMAT_UPDATE,  # 0
    LINDORM_SQL_INSERT,  # 1
    LINDORM_SQL_UPDATE,  # 2
    LINDORM_SQL_DELETE,  # 3
    LINDORM_SQL_COLUMN_DELETE,  # 4: after lacks last_name: it becomes NULL
    lindorm_doc(LINDORM_SQL_INSERT, "c", T1005, None, person("1005", "Jane", "Doe")),  # 5
    # 6: column deletion at T+1000, written before 7 (T+500): source.ts_ms orders
    lindorm_doc(LINDORM_SQL_UPDATE, "u", T1005 + 1000, person("1005", "Janine", "Doe"), person("1005", "Janet")),
    lindorm_doc(LINDORM_SQL_UPDATE, "u", T1005 + 500, person("1005", "Jane", "Doe"), person("1005", "Janine", "Doe")),
    # 8, 9, 10: one key, one source.ts_ms: the file order decides (Cy is last)
    lindorm_doc(LINDORM_SQL_INSERT, "c", T1006, None, person("1006", "Ann", "Lee")),
    lindorm_doc(LINDORM_SQL_UPDATE, "u", T1006, person("1006", "Ann", "Lee"), person("1006", "Bo", "Lee")),
    lindorm_doc(LINDORM_SQL_UPDATE, "u", T1006, person("1006", "Bo", "Lee"), person("1006", "Cy", "Lee")),
]

SQL_EXTRAS = {"namespace": "default", "table_kind": "sql", "lindorm_version": "v1.0"}
SQL_BASE = {
    "row_index": 0,
    "source_db": "ld-xxxx",
    "source_schema": "default",
    "source_table": "customers",
    "table_id": "customers",
    "col_types": {},  # "schema": {} declares no types
    "tx_id": None,
    "extras": SQL_EXTRAS,
}
NAMES = ["id", "first_name", "last_name"]


def sql_row(record_index: int, op: str, ts_ms: int, before: dict | None, after: dict | None, **more) -> dict:
    return {
        **SQL_BASE,
        "record_index": record_index,
        "op": op,
        "key": {"id": (after or before)["id"]},
        "before": before,
        "after": after,
        "before_cols": None if before is None else list(before),
        "after_cols": None if after is None else list(after),
        "seq": pos(ts_ms),
        "commit_us": ts_ms * 1000,
        "capture_us": (ts_ms + 8) * 1000,
        **more,
    }


ANNE_MARIE = {"id": "1004", "first_name": "Anne Marie", "last_name": "Kretchmar"}
ANNE = {"id": "1004", "first_name": "Anne", "last_name": "Kretchmar"}

#: the expected changelog of the Lindorm SQL feed, in merge order
LINDORM_SQL_CHANGELOG = [
    # the format description's sample: its schema declares id int32, name string
    sql_row(
        0,
        "update",
        SPEC_TS,
        {"id": "1004", "name": "Jane"},
        {"id": "1004", "name": "Anne"},
        col_types={"id": "int", "name": "string"},
    ),
    sql_row(1, "insert", SPEC_TS, None, ANNE),
    sql_row(2, "update", SPEC_TS, ANNE_MARIE, ANNE),
    sql_row(3, "delete", SPEC_TS, ANNE_MARIE, None),
    # column deletion: last_name is provided, as NULL
    sql_row(4, "update", SPEC_TS, ANNE_MARIE, {"id": "1004", "first_name": "Anne Marie", "last_name": None}),
    sql_row(5, "insert", T1005, None, {"id": "1005", "first_name": "Jane", "last_name": "Doe"}),
    sql_row(
        7,
        "update",
        T1005 + 500,
        {"id": "1005", "first_name": "Jane", "last_name": "Doe"},
        {"id": "1005", "first_name": "Janine", "last_name": "Doe"},
    ),
    sql_row(
        6,
        "update",
        T1005 + 1000,
        {"id": "1005", "first_name": "Janine", "last_name": "Doe"},
        {"id": "1005", "first_name": "Janet", "last_name": None},
    ),
    sql_row(8, "insert", T1006, None, {"id": "1006", "first_name": "Ann", "last_name": "Lee"}),
    sql_row(9, "update", T1006, person("1006", "Ann", "Lee"), person("1006", "Bo", "Lee")),
    sql_row(10, "update", T1006, person("1006", "Bo", "Lee"), person("1006", "Cy", "Lee")),
]


# =========================================================================== run 1


@pytest.fixture(scope="module")
def cdl_lindorm(spark, tmp_path_factory):
    root: Path = tmp_path_factory.mktemp("cdl_lindorm")
    feeds = [
        {"name": "cdl", "format": "cdl_json", "path": "landing/cdl"},
        {"name": "cdl_mixed", "format": "cdl_json", "path": "landing/cdl_mixed"},
        {"name": "lindorm_sql", "format": "lindorm_json", "path": "landing/lindorm_sql", "framing": "documents"},
    ]
    tables = {
        # CDL carries its key (`unique`). A configured CDL table is named schema.table
        # (or table): 1.0 names no database (DATA_STORE is the connector type), and 2.0's
        # source.db is not part of the name either. The feed cdl_mixed's table
        # (sales.orders) is not configured.
        "public.ct_pg2hudi": {},
        # Lindorm does not carry the key: it comes from here
        "customers": {"key": ["id"]},
    }
    config = write_config(root, "pcl", feeds, tables)
    (root / "landing/cdl/part-0.jsonl").write_text("\n".join(CDL_FILE) + "\n", encoding="utf-8")
    (root / "landing/cdl_mixed/part-0.jsonl").write_text("\n".join(CDL_MIXED_FILE) + "\n", encoding="utf-8")
    (root / "landing/lindorm_sql/part-0.json").write_text("\n".join(LINDORM_SQL_FILE) + "\n", encoding="utf-8")
    summary = run_pipeline(config, spark=spark)
    return config, summary


def test_summary_counts_heartbeats_as_skipped(spark, cdl_lindorm) -> None:
    config, summary = cdl_lindorm
    assert (summary.files, summary.records, summary.changes, summary.quarantined, summary.skipped) == (
        3,
        len(CDL_FILE) + len(CDL_MIXED_FILE) + len(LINDORM_SQL_FILE),
        len(CDL_CHANGELOG) + len(CDL_MIXED_FILE) + len(LINDORM_SQL_CHANGELOG),
        0,
        3,
    )
    assert summary.tables == ["customers", "public.ct_pg2hudi", "sales.orders"]
    schema = yaml.safe_load(config.read_text())["schema"]
    audit = {
        r.feed: r.asDict()
        for r in spark.sql(
            f"select feed, records_read, changes_emitted, quarantined, skipped, skipped_by_reason "
            f"from {schema}.audit_files"
        ).collect()
    }
    assert audit["cdl"] == {
        "feed": "cdl",
        "records_read": 12,
        "changes_emitted": 9,
        "quarantined": 0,
        "skipped": 3,
        "skipped_by_reason": {"heartbeat": 3},
    }
    assert audit["lindorm_sql"]["skipped"] == 0


def test_cdl_changelog_rows(spark, cdl_lindorm) -> None:
    """1.0 and 2.0 in one feed; order by lsn, then txId; LOB_COLUMNS and message_version
    in extras; the TOAST placeholder is not provided."""
    config, _ = cdl_lindorm
    assert_changelog(spark, config, "cdl", CDL_CHANGELOG)


def test_cdl_state(spark, cdl_lindorm) -> None:
    config, _ = cdl_lindorm
    assert export_rows(spark, config, "public.ct_pg2hudi") == [
        # record 3 (the higher LSN) wins over record 4, written after it
        {"count1": 20, "decimalnum": "12.50", "id": 34, "time1": "2024-02-04T11:59:56.013000Z"},
        # txId 57227801 after 57227800 at one LSN; the placeholder kept 7.77
        {"count1": 32, "decimalnum": "7.77", "id": 35, "time1": None},
        # id 36: inserted then deleted (the delete was read first): gone
    ]
    # time1 is a Connect Timestamp in 1.0 but a string (com.xxx.cdc.data.timestamp) in
    # 2.0: the mart takes the type of the latest change of the table (a 2.0 message)
    assert mart_types(spark, config, "public__ct_pg2hudi") == {
        "count1": "bigint",
        "decimalnum": "string",
        "id": "int",
        "time1": "string",
    }


def test_cdl_unconfigured_table_is_one_table_in_both_versions(spark, cdl_lindorm) -> None:
    """1.0 and 2.0 messages of a table cdc.yml does not name: one table_id
    (schema.table), one table in the state, and each key's changes of both versions
    folded together (2.0 used to add source.db: "shop.sales.orders" beside "sales.orders")."""
    config, _ = cdl_lindorm
    rows = changelog(spark, config, "cdl_mixed")
    assert [(r["record_index"], r["extras"]["message_version"]) for r in rows] == [
        (0, "1.0"),
        (2, "1.0"),
        (1, "2.0"),
        (3, "2.0"),
        (4, "2.0"),
        (5, "1.0"),
    ]
    assert {(r["source_db"], r["source_schema"], r["source_table"], r["table_id"]) for r in rows} == {
        (None, "sales", "orders", "sales.orders")
    }
    assert {r["extras"]["database"] for r in rows if r["extras"]["message_version"] == "2.0"} == {"shop"}
    schema = yaml.safe_load(config.read_text())["schema"]
    state = spark.sql(
        f"select table_id, key_text, is_deleted, row from {schema}.state "
        "where table_id like '%orders%' order by table_id, key_text"
    ).collect()
    assert [(r.table_id, r.key_text, r.is_deleted) for r in state if not r.is_deleted] == [
        ("sales.orders", '{"id":"1"}', False),
        ("sales.orders", '{"id":"3"}', False),
    ]
    assert {r.table_id for r in state} == {"sales.orders"}
    assert export_rows(spark, config, "sales.orders") == [
        {"count1": 11, "decimalnum": None, "id": 1, "time1": None},  # 1.0 insert, 2.0 update
        # id 2: 1.0 insert, 2.0 delete: gone
        {"count1": 31, "decimalnum": "0.50", "id": 3, "time1": None},  # 2.0 insert, 1.0 update
    ]


def test_lindorm_sql_changelog_rows(spark, cdl_lindorm) -> None:
    """The spec's SQL samples (one source.ts_ms: file order decides), column deletion
    (the column is provided as NULL), and source.ts_ms ordering across the file."""
    config, _ = cdl_lindorm
    assert_changelog(spark, config, "lindorm_sql", LINDORM_SQL_CHANGELOG)


def test_lindorm_sql_state(spark, cdl_lindorm) -> None:
    config, _ = cdl_lindorm
    assert export_rows(spark, config, "customers") == [
        # insert, update, delete, then the column deletion (an update after a delete
        # starts the row from what it provides): last_name is NULL
        {"first_name": "Anne Marie", "id": 1004, "last_name": None},
        # the column deletion (later ts_ms, earlier in the file) is applied last
        {"first_name": "Janet", "id": 1005, "last_name": None},
        # three events with one ts_ms: the file order decides
        {"first_name": "Cy", "id": 1006, "last_name": "Lee"},
    ]
    # id is int: the format description's sample declares it int32 (types are kept
    # per key across versions); the samples with "schema": {} declare nothing
    assert mart_types(spark, config, "customers") == {"first_name": "string", "id": "int", "last_name": "string"}
    schema = yaml.safe_load(config.read_text())["schema"]
    history = spark.sql(
        f"select version_no, op, row, is_deleted from {schema}.history "
        f"""where table_id = 'customers' and key_text = '{{"id":"1004"}}' order by version_no"""
    ).collect()
    assert [(h.op, h.is_deleted, h.row) for h in history] == [
        ("update", False, {"id": "1004", "name": "Anne"}),
        ("insert", False, ANNE),
        ("update", False, ANNE),
        ("delete", True, None),
        ("update", False, {"id": "1004", "first_name": "Anne Marie", "last_name": None}),
    ]


# =========================================================================== run 2

USER1, USER2 = b64("user1"), b64("user2")
HBASE_TS = 1725258833727  # the spec's HBase sample

#: the Lindorm HBase landing file (documents)
HBASE_FILE = [
    LINDORM_HBASE_PUT,  # 0: user1 f:name = "lucky"
    # 1: a put of two other cells of user1 (Bytes.toBytes(42) and bytes that are not UTF-8)
    lindorm_doc(LINDORM_HBASE_PUT, "c", HBASE_TS + 1, None, {"ROW": USER1, "f_age": b64(b"\0\0\0*"), "f_bin": "//4="}),
    lindorm_doc(LINDORM_HBASE_PUT, "c", HBASE_TS + 2, None, {"ROW": USER2, "f_name": b64("bob")}),  # 2
    lindorm_doc(LINDORM_HBASE_PUT, "d", HBASE_TS + 3, {"ROW": USER2, "f_name": b64("bob")}, None),  # 3
    # 4 and 5: one ts_ms, the file order decides: f:name = "lücky" (UTF-8, two bytes for ü)
    lindorm_doc(LINDORM_HBASE_PUT, "c", HBASE_TS + 4, None, {"ROW": USER1, "f_name": b64("lucky")}),
    lindorm_doc(LINDORM_HBASE_PUT, "c", HBASE_TS + 4, None, {"ROW": USER1, "f_name": b64("lücky")}),
]


@pytest.fixture(scope="module")
def hbase(spark, tmp_path_factory):
    root: Path = tmp_path_factory.mktemp("lindorm_hbase")
    feeds = [{"name": "hbase", "format": "lindorm_json", "path": "landing/hbase", "framing": "documents"}]
    # The key (ROW) is in the events, but the table must be configured: unconfigured,
    # its table_id "ld-xxxx.default.customers" gives the mart view name
    # "ld-xxxx__default__customers", which Spark rejects (INVALID_SCHEMA_OR_RELATION_NAME,
    # the "-" of the instance id), and the whole dbt build fails. Lindorm's feed does
    # not "carry a key" for the config check (SQL tables have none), hence key: [ROW].
    config = write_config(root, "phb", feeds, {"customers": {"key": ["ROW"]}})
    (root / "landing/hbase/part-0.json").write_text("\n".join(HBASE_FILE) + "\n", encoding="utf-8")
    summary = run_pipeline(config, spark=spark)
    return config, summary


def test_hbase_changelog_rows(spark, hbase) -> None:
    config, summary = hbase
    assert (summary.records, summary.changes, summary.quarantined, summary.skipped) == (6, 6, 0, 0)
    rows = changelog(spark, config, "hbase")
    assert [r["record_index"] for r in rows] == [0, 1, 2, 3, 4, 5]
    binary = {"f_name": "binary"}
    base = {
        "row_index": 0,
        "source_db": "ld-xxxx",
        "source_schema": "default",
        "source_table": "customers",
        "table_id": "customers",
        "tx_id": None,
        "extras": {"namespace": "default", "table_kind": "hbase", "lindorm_version": "v2.0"},
        "before": None,
        "before_cols": None,
    }
    assert rows[0] == {
        **base,
        "record_index": 0,
        # a put is an upsert of the cells it carries, whatever its op letter
        "op": "update",
        "key": {"row": "dXNlcjE="},  # the ROW key stays base64 text
        "after": {"row": "dXNlcjE=", "f_name": "bHVja3k="},
        "after_cols": ["row", "f_name"],
        "col_types": binary,
        "seq": pos(1725258833727),
        "commit_us": 1725258833727000,
        "capture_us": 1725258859839000,
    }
    assert rows[1]["after_cols"] == ["row", "f_age", "f_bin"]
    assert rows[1]["col_types"] == {"f_age": "binary", "f_bin": "binary"}
    assert [(r["op"], r["key"]) for r in rows] == [
        ("update", {"row": USER1}),
        ("update", {"row": USER1}),
        ("update", {"row": USER2}),
        ("delete", {"row": USER2}),
        ("update", {"row": USER1}),
        ("update", {"row": USER1}),
    ]
    assert rows[3]["before"] == {"row": USER2, "f_name": "Ym9i"} and rows[3]["after"] is None


def test_hbase_put_leaves_other_cells_and_mart_keeps_bytes(spark, hbase) -> None:
    config, _ = hbase
    # user1: f_name from the last put, f_age and f_bin from an earlier put; user2 deleted
    expected = {"f_age": "AAAAKg==", "f_bin": "//4=", "f_name": "bMO8Y2t5", "row": "dXNlcjE="}
    assert export_rows(spark, config, "customers") == [expected]
    assert [json.loads(line) for line in export_lines(spark, config, "customers")] == [expected]
    # the mart view also has each binary cell as UTF-8 text where its bytes are valid UTF-8
    with_views = export_rows(spark, config, "customers", with_metadata=True)[0]
    assert {k: with_views[k] for k in ("f_age__text", "f_bin__text", "f_name__text")} == {
        "f_age__text": "\x00\x00\x00*",
        "f_bin__text": None,
        "f_name__text": "lücky",
    }
    # the cells are binary in the mart (export gives base64); ROW has no declared type
    assert mart_types(spark, config, "customers") == {
        "f_age": "binary",
        "f_bin": "binary",
        "f_name": "binary",
        "f_age__text": "string",
        "f_bin__text": "string",
        "f_name__text": "string",
        "row": "string",
    }
    marts = yaml.safe_load(config.read_text())["marts_schema"]
    row = spark.sql(f"select f_name, f_age, f_bin from `{marts}`.customers").collect()[0]
    assert bytes(row.f_name).decode("utf-8") == "lücky"
    assert int.from_bytes(bytes(row.f_age), "big") == 42
    assert bytes(row.f_bin) == b"\xff\xfe"
