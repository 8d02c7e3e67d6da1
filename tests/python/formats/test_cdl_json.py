"""Huawei CDL JSON decoder: the spec's samples and the cases around them.

The two samples of ``specs/huawei-cdl-json-and-debezium-json.txt`` are in
``spec_samples.py`` (shared with the pipeline test).
"""

from __future__ import annotations

import base64
import copy
import json

import pytest
from spec_samples import CDL_V1_INSERT, CDL_V2_INSERT

from udfs.contract import Change, QuarantineError, Record, SkipRecord, seq_of
from udfs.decode import normalize
from udfs.formats.cdl_json import CdlJsonDecoder, parse_position

V1_TYPES = {"count1": "bigint", "id": "int", "time1": "timestamp", "decimalNum": "string"}
# CDL 2.0 names its time column ``com.xxx.cdc.data.timestamp`` with type string
V2_TYPES = {"count1": "bigint", "id": "int", "time1": "string", "decimalNum": "string"}
PLACEHOLDER = "__debezium_unavailable_value"


def decode(text: str | None, **options) -> list[Change]:
    return CdlJsonDecoder(options).decode(Record(text=text))


def variant(sample: str, **payload_changes) -> dict:
    """The sample as a dict with payload fields replaced."""
    doc = json.loads(sample)
    doc["payload"].update(copy.deepcopy(payload_changes))
    return doc


def test_decoder_identity() -> None:
    assert CdlJsonDecoder.identifier == "cdl_json"
    assert CdlJsonDecoder.default_framing == "lines"
    assert CdlJsonDecoder.framings == ("lines", "kcat", "documents")


def test_carries_key_in_every_framing(tmp_path) -> None:
    # `unique` names the key in every message: a configured CDL table needs no `key:`
    # (the config check used to demand one for the lines and documents framings)
    from udfs.config import load_config

    assert all(CdlJsonDecoder.carries_key(framing) for framing in CdlJsonDecoder.framings)
    (tmp_path / "landing").mkdir()
    (tmp_path / "cdc.yml").write_text(
        "feeds: [{name: cdl, format: cdl_json, path: landing}]\ntables: {public.ct_pg2hudi: {}}\n"
    )
    assert load_config(tmp_path / "cdc.yml").tables["public.ct_pg2hudi"].key == []


def test_spec_v1_insert() -> None:
    assert decode(CDL_V1_INSERT) == [
        Change(
            op="insert",
            source_table="ct_pg2hudi",
            source_db=None,
            source_schema="public",
            key={"id": "34"},
            before=None,
            after={"count1": "13", "id": "34", "time1": None, "decimalNum": None},
            col_types=V1_TYPES,
            seq=seq_of(163955221008, 57227595),
            commit_ts_us=1707047996013000,
            capture_ts_us=None,
            tx_id="57227595",
            extras={
                "message_version": "1.0",
                "message_type": "0",
                "lob_columns": None,
                "data_store": "POSTGRESQL",
                "database": None,
            },
        )
    ]


def test_spec_v2_insert() -> None:
    assert decode(CDL_V2_INSERT) == [
        Change(
            op="insert",
            source_table="ct_pg2hudi",
            # source.db is not the table's name: 1.0 names no database (see below)
            source_db=None,
            source_schema="public",
            key={"id": "35"},
            before=None,
            after={"count1": "14", "id": "35", "time1": None, "decimalNum": None},
            col_types=V2_TYPES,
            seq=seq_of(163955586912, 57227663),
            commit_ts_us=1707048891235000,
            capture_ts_us=1707048984208000,
            tx_id="57227663",
            extras={
                "message_version": "2.0",
                "message_type": "0",
                "lob_columns": None,
                "data_store": "postgresql",
                "database": "cdl",
            },
        )
    ]


def test_both_versions_in_one_decoder_and_seq_order() -> None:
    decoder = CdlJsonDecoder()
    first = decoder.decode(Record(text=CDL_V1_INSERT))[0]
    second = decoder.decode(Record(text=CDL_V2_INSERT))[0]
    assert first.seq < second.seq


def same_table_pair(db: str, schema: str, table: str) -> tuple[str, str]:
    """The spec's 1.0 and 2.0 samples, adapted to name one table (``schema.table``; the
    2.0 message also names its database, which 1.0 cannot)."""
    v1 = variant(CDL_V1_INSERT, SEG_OWNER=schema, TABLE_NAME=table)
    v2 = json.loads(CDL_V2_INSERT)
    v2["payload"]["source"].update(db=db, schema=schema, table=table)
    return json.dumps(v1), json.dumps(v2)


@pytest.mark.parametrize(
    ("samples", "name"),
    [
        ((CDL_V1_INSERT, CDL_V2_INSERT), ("public", "ct_pg2hudi")),  # the spec's two samples
        (same_table_pair("shop", "sales", "Orders"), ("sales", "Orders")),
    ],
)
def test_both_versions_name_a_table_alike(samples: tuple[str, str], name: tuple[str, str]) -> None:
    """1.0 (SEG_OWNER, TABLE_NAME) and 2.0 (source.db, source.schema, source.table) of one
    table: one (source_db, source_schema, source_table), hence one table_id. 2.0 used to
    emit source.db as source_db, so an unconfigured table had two ids."""
    decoder = CdlJsonDecoder()
    v1, v2 = (decoder.decode(Record(text=text))[0] for text in samples)
    assert [(c.extras["message_version"], c.source_db, c.source_schema, c.source_table) for c in (v1, v2)] == [
        ("1.0", None, *name),
        ("2.0", None, *name),
    ]
    assert v2.extras["database"] == json.loads(samples[1])["payload"]["source"]["db"]
    assert v1.extras["database"] is None
    table_id = ".".join(name).lower()
    assert [normalize(c, {})[0]["table_id"] for c in (v1, v2)] == [table_id, table_id]


@pytest.mark.parametrize(
    ("configured", "options", "table_id"),
    [
        # schema.table or table: matches both versions (with or without the option)
        ("sales.orders", {}, "sales.orders"),
        ("orders", {}, "orders"),
        ("sales.orders", {"database": "shop"}, "sales.orders"),
        # database-qualified names need the feed's database: option `database`
        ("shop.sales.orders", {"database": "shop"}, "shop.sales.orders"),
        ("shop.orders", {"database": "Shop"}, "shop.orders"),
        # without it, no version names the database: the table is schema.table
        ("shop.sales.orders", {}, "sales.orders"),
    ],
)
def test_configured_tables_match_both_versions(configured: str, options: dict, table_id: str) -> None:
    decoder = CdlJsonDecoder(options)
    tables = {configured: {"key": [], "columns": {}}}
    changes = [decoder.decode(Record(text=text))[0] for text in same_table_pair("shop", "sales", "Orders")]
    assert [normalize(c, tables)[0]["table_id"] for c in changes] == [table_id, table_id]


def test_database_option_names_both_versions() -> None:
    decoder = CdlJsonDecoder({"database": "Shop"})
    v1, v2 = (decoder.decode(Record(text=text))[0] for text in same_table_pair("shop", "sales", "Orders"))
    assert (v1.source_db, v1.source_schema, v1.source_table) == ("Shop", "sales", "Orders")
    assert (v2.source_db, v2.source_schema, v2.source_table) == ("Shop", "sales", "Orders")
    assert (v1.extras["database"], v2.extras["database"]) == (None, "shop")  # the event's own name
    for bad in ("", "  ", 7):
        with pytest.raises(ValueError, match="database"):
            CdlJsonDecoder({"database": bad})


def test_v1_update_with_logical_time_and_toast() -> None:
    doc = variant(
        CDL_V1_INSERT,
        OPERATION="UPDATE",
        TIMESTAMP=-1,
        data={"count1": 14, "id": 34, "time1": 1709164800123, "decimalNum": PLACEHOLDER},
        before={"count1": 13, "id": 34, "time1": None, "decimalNum": "1.50"},
        LOB_COLUMNS="decimalNum",
    )
    (change,) = decode(json.dumps(doc))
    assert change.op == "update"
    assert change.after == {"count1": "14", "id": "34", "time1": "2024-02-29T00:00:00.123000Z"}
    # the unavailable (TOAST) column is not provided: it keeps its previous value
    assert change.after_cols == ["count1", "id", "time1"]
    assert change.before == {"count1": "13", "id": "34", "time1": None, "decimalNum": "1.50"}
    assert change.before_cols is None
    assert change.commit_ts_us == -1000
    assert change.extras["lob_columns"] == "decimalNum"


def test_v1_delete() -> None:
    doc = variant(
        CDL_V1_INSERT,
        OPERATION="DELETE",
        data=None,
        before={"count1": 13, "id": 34, "time1": None, "decimalNum": None},
    )
    (change,) = decode(json.dumps(doc))
    assert change.op == "delete"
    assert change.after is None
    assert change.before == {"count1": "13", "id": "34", "time1": None, "decimalNum": None}
    assert change.key == {"id": "34"}


def test_v1_delete_with_only_unique_is_applied_by_key() -> None:
    doc = variant(CDL_V1_INSERT, OPERATION="DELETE", data=None, before=None)
    (change,) = decode(json.dumps(doc))
    assert (change.op, change.before, change.key) == ("delete", None, {"id": "34"})


def test_v1_delete_without_any_row_quarantines() -> None:
    doc = variant(CDL_V1_INSERT, OPERATION="DELETE", data=None, before=None, unique=None)
    with pytest.raises(QuarantineError, match="delete"):
        decode(json.dumps(doc))


def test_payload_only_messages() -> None:
    v1 = json.loads(CDL_V1_INSERT)["payload"]
    (change,) = decode(json.dumps(v1))
    # no schema: no types, values keep their JSON text
    assert change.col_types == {}
    assert change.after == {"count1": "13", "id": "34", "time1": None, "decimalNum": None}
    v2 = json.loads(CDL_V2_INSERT)["payload"]
    del v2["message_version"]  # told apart by its `op` field
    (change,) = decode(json.dumps(v2))
    assert change.op == "insert"
    assert (change.source_db, change.source_schema, change.source_table) == (None, "public", "ct_pg2hudi")
    assert change.extras["database"] == "cdl"


def test_v2_with_connect_decimal_and_timestamps() -> None:
    doc = json.loads(CDL_V2_INSERT)
    after_schema = doc["schema"]["fields"][1]
    after_schema["fields"][3] = {
        "type": "bytes",
        "optional": True,
        "name": "org.apache.kafka.connect.data.Decimal",
        "parameters": {"scale": "3", "connect.decimal.precision": "12"},
        "field": "decimalNum",
    }
    after_schema["fields"][2] = {
        "type": "int64",
        "optional": True,
        "name": "io.debezium.time.MicroTimestamp",
        "field": "time1",
    }
    unscaled = (-12340).to_bytes(2, "big", signed=True)
    doc["payload"]["after"].update(decimalNum=base64.b64encode(unscaled).decode(), time1=-1)
    (change,) = decode(json.dumps(doc))
    assert change.after["decimalNum"] == "-12.340"
    assert change.after["time1"] == "1969-12-31T23:59:59.999999Z"
    assert change.col_types["decimalNum"] == "decimal(12,3)"
    assert change.col_types["time1"] == "timestamp"


def test_v2_bad_base64_quarantines_with_column() -> None:
    doc = json.loads(CDL_V2_INSERT)
    doc["schema"]["fields"][1]["fields"][3] = {
        "type": "bytes",
        "name": "org.apache.kafka.connect.data.Decimal",
        "parameters": {"scale": "2"},
        "field": "decimalNum",
    }
    doc["payload"]["after"]["decimalNum"] = "not*base64"
    with pytest.raises(QuarantineError, match="decimalNum"):
        decode(json.dumps(doc))


@pytest.mark.parametrize(
    ("code", "op"),
    [("c", "insert"), ("r", "snapshot"), ("u", "update")],
)
def test_v2_ops(code: str, op: str) -> None:
    doc = variant(CDL_V2_INSERT, op=code)
    assert decode(json.dumps(doc))[0].op == op


def test_v2_delete_and_truncate() -> None:
    row = {"count1": 14, "id": 35, "time1": None, "decimalNum": None}
    (change,) = decode(json.dumps(variant(CDL_V2_INSERT, op="d", before=row, after=None)))
    assert (change.op, change.after, change.before["id"]) == ("delete", None, "35")
    (change,) = decode(json.dumps(variant(CDL_V2_INSERT, op="t", before=None, after=None, unique=None)))
    assert (change.op, change.source_table, change.key) == ("truncate", "ct_pg2hudi", None)


def test_v2_update_with_toast_before_null() -> None:
    row = {"count1": 15, "id": 35, "time1": None, "decimalNum": PLACEHOLDER}
    (change,) = decode(json.dumps(variant(CDL_V2_INSERT, op="u", before=None, after=row)))
    assert change.before is None
    assert change.after == {"count1": "15", "id": "35", "time1": None}
    assert change.after_cols == ["count1", "id", "time1"]


def test_v2_message_is_skipped() -> None:
    with pytest.raises(SkipRecord, match="message"):
        decode(json.dumps(variant(CDL_V2_INSERT, op="m", after=None)))


@pytest.mark.parametrize("text", [None, "", "null", '{"schema":{"type":"struct"},"payload":null}'])
def test_tombstones_are_skipped(text) -> None:
    with pytest.raises(SkipRecord, match="tombstone"):
        decode(text)


def test_heartbeats_are_skipped() -> None:
    # the heartbeat table CDL documents
    doc = variant(CDL_V1_INSERT, SEG_OWNER="CDC_CDL", TABLE_NAME="CDC_HEARTBEAT")
    with pytest.raises(SkipRecord, match="heartbeat"):
        decode(json.dumps(doc))
    doc = json.loads(CDL_V2_INSERT)
    doc["payload"]["source"].update(schema="cdc_cdl", table="cdc_heartbeat")
    with pytest.raises(SkipRecord, match="heartbeat"):
        decode(json.dumps(doc))
    # a message_type saying so
    with pytest.raises(SkipRecord, match="heartbeat"):
        decode(json.dumps(variant(CDL_V1_INSERT, message_type="HEARTBEAT")))
    # no operation and no row image
    bare = {"HEARTBEAT_IDENTIFIER": "279fb050-0143-45c1-b184-50bc48c2461c", "TIMESTAMP": 1707047996013}
    with pytest.raises(SkipRecord, match="heartbeat"):
        decode(json.dumps(bare))
    bare_v1 = variant(CDL_V1_INSERT, OPERATION=None, data=None, before=None)
    with pytest.raises(SkipRecord, match="heartbeat"):
        decode(json.dumps(bare_v1))
    # configured heartbeat tables
    with pytest.raises(SkipRecord, match="heartbeat"):
        decode(CDL_V1_INSERT, heartbeat_tables=["PUBLIC.CT_PG2HUDI"])


def test_heartbeat_identifier_alone_is_not_a_heartbeat() -> None:
    # the spec's INSERT sample carries a HEARTBEAT_IDENTIFIER and is a data message
    assert decode(CDL_V1_INSERT)[0].op == "insert"


@pytest.mark.parametrize(
    ("lsn", "expected"),
    [
        (163955221008, 163955221008),
        ("163955221008", 163955221008),
        ("26/2C09E510", (0x26 << 32) | 0x2C09E510),
        ("0x1A", 26),
        ("00AB", 0xAB),
    ],
)
def test_lsn_forms(lsn, expected: int) -> None:
    doc = variant(
        CDL_V1_INSERT,
        transaction={"properties": [{"name": "lsn", "value": lsn}, {"name": "txId", "value": "7"}]},
    )
    (change,) = decode(json.dumps(doc))
    assert change.seq == seq_of(expected, 7)
    assert change.tx_id == "7"


def test_lsn_hex_option_and_missing_positions() -> None:
    assert parse_position("1000", "lsn", "hex") == 0x1000
    assert parse_position("1000", "lsn") == 1000
    doc = variant(CDL_V1_INSERT, transaction={"properties": [{"name": "lsn", "value": 5}]})
    assert decode(json.dumps(doc))[0].seq == seq_of(5)
    doc = variant(CDL_V1_INSERT, transaction=None)
    change = decode(json.dumps(doc))[0]
    assert (change.seq, change.tx_id) == (None, None)


@pytest.mark.parametrize("lsn", ["abc/xyz", -1, True, 1.5, "lsn-1"])
def test_bad_lsn_quarantines(lsn) -> None:
    doc = variant(CDL_V1_INSERT, transaction={"properties": [{"name": "lsn", "value": lsn}]})
    with pytest.raises(QuarantineError, match="lsn"):
        decode(json.dumps(doc))


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("{not json", "not JSON"),
        ("[1, 2]", "not a JSON object"),
        (json.dumps(variant(CDL_V1_INSERT, OPERATION="MERGE")), "OPERATION"),
        (json.dumps(variant(CDL_V1_INSERT, message_version="3.0")), "message_version"),
        (json.dumps(variant(CDL_V1_INSERT, TABLE_NAME=None)), "TABLE_NAME"),
        (json.dumps(variant(CDL_V1_INSERT, data=None)), "after image"),
        (json.dumps(variant(CDL_V1_INSERT, TIMESTAMP="yesterday")), "TIMESTAMP"),
        (json.dumps(variant(CDL_V2_INSERT, op="x")), "op"),
        (json.dumps(variant(CDL_V2_INSERT, source=None)), "source"),
        (json.dumps(variant(CDL_V1_INSERT, data={"count1": "x", "id": 34})), "count1"),
    ],
)
def test_malformed_messages_quarantine(text: str, reason: str) -> None:
    with pytest.raises(QuarantineError, match=reason):
        decode(text)


def test_bad_option() -> None:
    with pytest.raises(ValueError, match="lsn_format"):
        CdlJsonDecoder({"lsn_format": "octal"})
