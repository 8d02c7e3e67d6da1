"""Tests of the Arcion JSON CDC (Kafka) decoder, on the documentation samples."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from change_checks import check, fold

from udfs.contract import Change, QuarantineError, Record, SkipRecord
from udfs.formats.arcion_kafka_json import ArcionKafkaJsonDecoder, decode_key

ARCION = Path(__file__).resolve().parents[3].parent / "shared" / "corpora" / "arcion"
TYPES = {"r_regionkey": "int32", "r_name": "string", "r_comment": "string"}


def read(name: str) -> str:
    """A corpus file; a missing corpus is a failure, never a skip."""
    path = ARCION / "kafka-json-cdc" / name
    assert path.is_file(), f"missing shared corpus file {path}"
    return path.read_text(encoding="utf-8")


def update_key_and_value() -> tuple[str, str]:
    # realtime-update.value.txt is "KEY <key json> VALUE <value json>", not pure JSON
    text = read("realtime-update.value.txt")
    head, value = text.split("\nVALUE\n", 1)
    return head.split("\nKEY\n", 1)[1], value


def message(name: str) -> Record:
    if name == "realtime-update":
        key, value = update_key_and_value()
        return Record(value, kafka_key=key)
    return Record(read(f"{name}.value.json"), kafka_key=read(f"{name}.key.json"))


def decode(record: Record) -> Change:
    changes = ArcionKafkaJsonDecoder().decode(record)
    assert len(changes) == 1
    return changes[0]


def message_key(ch: Change) -> tuple:
    """The fold key: the message's Kafka key."""
    return (ch.key["r_regionkey"],)


COMMON = {"source_db": "tpch", "source_schema": None, "source_table": "region", "col_types": TYPES}


def test_decoder_identity() -> None:
    assert ArcionKafkaJsonDecoder.identifier == "arcion_kafka_json"
    assert ArcionKafkaJsonDecoder.default_framing == "kcat"
    assert ArcionKafkaJsonDecoder.framings == ("kcat", "kafka_parquet", "lines")


def test_snapshot_insert() -> None:
    ch = decode(message("snapshot-insert"))
    check(
        ch,
        op="snapshot",
        key={"r_regionkey": "3"},
        before=None,  # "before": {} is no image
        after={
            "r_regionkey": "3",
            "r_name": "EUROPE",
            "r_comment": "ly final courts cajole furiously final excuse",
        },
        before_cols=None,
        after_cols=None,
        seq="00000000000000000000.00000000000000000000.00000000000000000000",  # lowest: before realtime
        commit_ts_us=None,
        capture_ts_us=None,
        tx_id=None,
        **COMMON,
    )
    assert ch.extras["snapshot"] == "true"
    assert ch.extras["name"] == "KAFKA_snapshot_connector"
    assert ch.extras["file"] is None


def test_realtime_insert() -> None:
    ch = decode(message("realtime-insert"))
    check(
        ch,
        op="insert",
        key={"r_regionkey": "10"},
        before=None,
        after={"r_regionkey": "10", "r_name": "Test_nation", "r_comment": "ReplicationWorks"},
        seq="00000000000000000013.00000000000000030407.00000000000000000001",
        commit_ts_us=1680798995000000,
        capture_ts_us=1680779196386000,
        **COMMON,
    )
    assert ch.extras == {
        "version": "5.7.41",
        "connector": "MYSQL",
        "name": "KAFKA_Connector",
        "snapshot": "false",
        "server_id": "1",
        "file": "mysql-log.000013",
        "pos": "30407",
        "row": "1",
        "thread": "309",
        "query": "INSERT INTO tpch.region(r_regionkey, r_name, r_comment) VALUES(10, Test_nation, ReplicationWorks)",
    }


def test_realtime_update_and_delete() -> None:
    america = {"r_regionkey": "1", "r_name": "AMERICA"}
    upd = decode(message("realtime-update"))
    check(
        upd,
        op="update",
        key={"r_regionkey": "1"},
        before={**america, "r_comment": "hs use ironic, even requests. s"},
        after={**america, "r_comment": "TestReplication"},
        seq="00000000000000000013.00000000000000053709.00000000000000000001",
        commit_ts_us=1680799780000000,
        capture_ts_us=1680779981001000,
        **COMMON,
    )
    dele = decode(message("realtime-delete"))
    check(
        dele,
        op="delete",
        key={"r_regionkey": "1"},
        before={**america, "r_comment": "TestReplication"},
        after=None,  # "after": {} is no image
        seq="00000000000000000013.00000000000000059647.00000000000000000001",
        commit_ts_us=1680799967000000,
        capture_ts_us=1680780168069000,
        **COMMON,
    )
    # the key embedded in the .txt is the same as the separate key file
    assert decode_key(update_key_and_value()[0]) == decode_key(read("realtime-update.key.json"))


def test_tombstone_is_skipped() -> None:
    decoder = ArcionKafkaJsonDecoder()
    for text in (read("tombstone.value.json"), None, "null"):
        with pytest.raises(SkipRecord, match="tombstone"):
            decoder.decode(Record(text, kafka_key=read("tombstone.key.json")))


def test_seq_orders_realtime_events() -> None:
    names = ["realtime-delete", "realtime-insert", "realtime-update"]
    changes = sorted((decode(message(n)) for n in names), key=lambda c: c.seq)
    assert [c.op for c in changes] == ["insert", "update", "delete"]


def test_fold_reaches_expected_state() -> None:
    changes = []
    for name in ("snapshot-insert", "realtime-insert", "realtime-update", "realtime-delete", "tombstone"):
        try:
            changes.extend(ArcionKafkaJsonDecoder().decode(message(name)))
        except SkipRecord:
            assert name == "tombstone"
    assert fold(changes, message_key) == {
        ("3",): {
            "r_regionkey": "3",
            "r_name": "EUROPE",
            "r_comment": "ly final courts cajole furiously final excuse",
        },
        ("10",): {"r_regionkey": "10", "r_name": "Test_nation", "r_comment": "ReplicationWorks"},
    }


def test_payload_only_and_plain_key() -> None:
    full = json.loads(read("realtime-insert.value.json"))
    ch = decode(Record(json.dumps(full["payload"]), kafka_key='{"r_regionkey": 10}'))
    assert ch.key == {"r_regionkey": "10"}
    assert ch.after == {"r_regionkey": "10", "r_name": "Test_nation", "r_comment": "ReplicationWorks"}
    assert ch.col_types == {}  # no schema, no declared types
    assert ch.seq == decode(message("realtime-insert")).seq
    # no Kafka key (or a null one): the configuration gives the key
    assert decode(Record(read("realtime-insert.value.json"))).key is None
    assert decode(Record(read("realtime-insert.value.json"), kafka_key="null")).key is None


def test_value_types_and_gtid() -> None:
    payload = json.loads(read("realtime-insert.value.json"))["payload"]
    payload["after"] = {"r_regionkey": 12345678901234567890123, "price": 1.10, "flag": True, "n": None}
    payload["source"]["gtid"] = "3E11FA47-71CA-11E1-9E33-C80AA9429562:23"
    ch = decode(Record(json.dumps(payload).replace("1.1,", "1.10,")))
    assert ch.after == {"r_regionkey": "12345678901234567890123", "price": "1.10", "flag": "true", "n": None}
    assert ch.tx_id == "3E11FA47-71CA-11E1-9E33-C80AA9429562:23"
    assert "gtid" not in ch.extras


def variant(**changes: Any) -> str:
    doc = json.loads(read("realtime-insert.value.json"))
    doc["payload"].update(changes)
    return json.dumps(doc)


@pytest.mark.parametrize(
    ("text", "key", "reason"),
    [
        ('{"payload": {"op": "c", ', None, "not JSON"),
        ("[1]", None, "payload is not a JSON object"),
        ("OP", None, "unknown op 'x'"),
        ("TABLE", None, "source.table is missing"),
        ("POS", None, "pos is not an integer"),
        ("AFTER", None, "after is not an object"),
        ("OK", "{bad key", "not JSON"),
        ("OK", "[1]", "Kafka key is not a JSON object"),
    ],
)
def test_quarantine(text: str, key: str | None, reason: str) -> None:
    source = json.loads(read("realtime-insert.value.json"))["payload"]["source"]
    variants = {
        "OP": lambda: variant(op="x"),
        "TABLE": lambda: variant(source={**source, "table": None}),
        "POS": lambda: variant(source={**source, "pos": 1.5}),
        "AFTER": lambda: variant(after=[1]),
        "OK": lambda: read("realtime-insert.value.json"),
    }
    if text in variants:
        text = variants[text]()
    with pytest.raises(QuarantineError, match=reason):
        ArcionKafkaJsonDecoder().decode(Record(text, kafka_key=key))


def test_snapshot_row_orders_before_every_realtime_change_of_its_key():
    """A snapshot row has null positions; it must not sort after realtime changes."""
    snapshot = decode(message("snapshot-insert"))
    realtime = [decode(message(n)) for n in ("realtime-insert", "realtime-update", "realtime-delete")]
    assert all(snapshot.seq < r.seq for r in realtime)
