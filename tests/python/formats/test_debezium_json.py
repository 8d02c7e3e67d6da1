"""Debezium JSON decoder: envelopes of the MySQL and PostgreSQL connectors and the cases
around them (pure decoder and shared normalization, no Spark).

``MYSQL_INSERT`` is the payload of Debezium's ``SerdeTest`` envelope
(``corpora/debezium/serde-without-schema.json``, the tutorial's ``inventory.customers``);
``MYSQL_SCHEMA`` is the ``schema`` of ``serde-with-schema.json`` for the same event.
``PG_UPDATE`` is a line of Flink's ``debezium-postgres-data-replica-identity.txt``.
"""

from __future__ import annotations

import base64
import copy
import dataclasses
import json

import pytest

from udfs.contract import Change, QuarantineError, Record, SkipRecord, seq_of
from udfs.decode import decode_records
from udfs.formats.debezium_json import DebeziumJsonDecoder, debezium_seq, file_number, parse_kafka_key

MYSQL_INSERT = """
{
    "op": "c",
    "ts_ms": 1465491411815,
    "before": null,
    "after": {
      "id": 1004,
      "first_name": "Anne",
      "last_name": "Kretchmar",
      "email": "annek@noanswer.org"
    },
    "source": {
      "version": "0.10.0.Final",
      "connector": "mysql",
      "name": "mysql-server-1",
      "ts_ms": 0,
      "snapshot": false,
      "db": "inventory",
      "table": "customers",
      "server_id": 0,
      "gtid": null,
      "file": "mysql-bin.000003",
      "pos": 154,
      "row": 0,
      "thread": 7,
      "query": "INSERT INTO customers (first_name, last_name, email) VALUES ('Anne', 'Kretchmar', 'annek@noanswer.org')"
    }
}
"""

_ROW_FIELDS = [
    {"type": "int32", "optional": False, "field": "id"},
    {"type": "string", "optional": False, "field": "first_name"},
    {"type": "string", "optional": False, "field": "last_name"},
    {"type": "string", "optional": False, "field": "email"},
]
MYSQL_SCHEMA = {
    "type": "struct",
    "fields": [
        {
            "type": "struct",
            "fields": _ROW_FIELDS,
            "optional": True,
            "name": "mysql-server-1.inventory.customers.Value",
            "field": "before",
        },
        {
            "type": "struct",
            "fields": _ROW_FIELDS,
            "optional": True,
            "name": "mysql-server-1.inventory.customers.Value",
            "field": "after",
        },
        {
            "type": "struct",
            "fields": [
                {"type": "string", "optional": False, "field": "version"},
                {"type": "string", "optional": False, "field": "connector"},
                {"type": "string", "optional": False, "field": "name"},
                {"type": "int64", "optional": False, "field": "ts_ms"},
                {"type": "boolean", "optional": True, "default": False, "field": "snapshot"},
                {"type": "string", "optional": False, "field": "db"},
                {"type": "string", "optional": True, "field": "table"},
                {"type": "int64", "optional": False, "field": "server_id"},
                {"type": "string", "optional": True, "field": "gtid"},
                {"type": "string", "optional": False, "field": "file"},
                {"type": "int64", "optional": False, "field": "pos"},
                {"type": "int32", "optional": False, "field": "row"},
                {"type": "int64", "optional": True, "field": "thread"},
                {"type": "string", "optional": True, "field": "query"},
            ],
            "optional": False,
            "name": "io.debezium.connector.mysql.Source",
            "field": "source",
        },
        {"type": "string", "optional": False, "field": "op"},
        {"type": "int64", "optional": True, "field": "ts_ms"},
    ],
    "optional": False,
    "name": "mysql-server-1.inventory.customers.Envelope",
}

PG_UPDATE = (
    '{"before":null,"after":{"id":110,"name":"jacket","description":"new water resistent white wind breaker",'
    '"weight":0.5},"source":{"version":"1.2.1.Final","connector":"postgresql","name":"fullfillment",'
    '"ts_ms":1596010982228,"snapshot":"false","db":"postgres","schema":"inventory","table":"products",'
    '"txId":606,"lsn":34133344,"xmin":null},"op":"u","ts_ms":1596010982481,"transaction":null}'
)

ROW = {"id": "1004", "first_name": "Anne", "last_name": "Kretchmar", "email": "annek@noanswer.org"}
ROW_COLS = ["id", "first_name", "last_name", "email"]
ROW_TYPES = {"id": "int", "first_name": "string", "last_name": "string", "email": "string"}
MYSQL_EXTRAS = {
    "connector": "mysql",
    "snapshot": "false",
    "server": "mysql-server-1",
    "version": "0.10.0.Final",
    "server_id": "0",
    "file": "mysql-bin.000003",
    "pos": "154",
    "row": "0",
}
PLACEHOLDER = "__debezium_unavailable_value"

#: the decoder options JSON of a feed, as ``Config.decoder_options`` builds it
OPTIONS = {
    "format": "debezium_json",
    "framing": "lines",
    "options": {},
    "tables": {
        "inventory.customers": {"key": ["id"], "columns": {}, "name": "inventory.customers"},
        "inventory.products": {"key": ["id"], "columns": {}, "name": "inventory.products"},
    },
}


def decode(text: str | None, kafka_key: str | None = None, **options) -> list[Change]:
    return DebeziumJsonDecoder(options).decode(Record(text=text, kafka_key=kafka_key))


def payload(sample: str = MYSQL_INSERT, **fields) -> dict:
    """The sample's payload with top-level fields replaced (``source`` is merged)."""
    doc = json.loads(sample)
    source = fields.pop("source", None)
    doc.update(fields)
    if source is not None:
        doc["source"].update(source)
    return doc


def with_schema(body: dict, schema: dict | None = None) -> dict:
    return {"schema": copy.deepcopy(MYSQL_SCHEMA if schema is None else schema), "payload": body}


def batch(texts: list[str | None], kafka_keys: list[str | None] | None = None, **feed_options) -> list[dict]:
    opts = dict(OPTIONS, options=feed_options)
    return decode_records(json.dumps(opts), texts, kafka_keys)


def only_row(result: dict) -> dict:
    assert result["status"] == "ok", result["reason"]
    (row,) = result["changes"]
    return row


# --------------------------------------------------------------------------- envelopes


def test_decoder_identity() -> None:
    assert DebeziumJsonDecoder.identifier == "debezium_json"
    assert DebeziumJsonDecoder.default_framing == "lines"
    assert DebeziumJsonDecoder.framings == ("lines", "documents", "kcat", "kafka_parquet")
    assert DebeziumJsonDecoder.option_names == ("table", "columnar")


def test_payload_only_insert() -> None:
    assert decode(MYSQL_INSERT) == [
        Change(
            op="insert",
            source_table="customers",
            source_db="inventory",
            source_schema=None,
            key=None,
            before=None,
            after=ROW,
            before_cols=None,
            after_cols=ROW_COLS,
            col_types={},
            seq=seq_of(3, 154, 0),
            commit_ts_us=0,
            capture_ts_us=1465491411815000,
            tx_id=None,
            extras=MYSQL_EXTRAS,
        )
    ]


def test_schema_and_payload_gives_the_same_change() -> None:
    (plain,) = decode(MYSQL_INSERT)
    (typed,) = decode(json.dumps(with_schema(payload())))
    # the schema only adds the column types; every value is the same text
    assert typed.col_types == ROW_TYPES
    assert dataclasses.replace(typed, col_types={}) == plain
    assert typed.after["id"] == "1004"


def test_one_feed_mixes_both_envelope_shapes() -> None:
    texts = [MYSQL_INSERT, json.dumps(with_schema(payload())), json.dumps(payload(), indent=None)]
    results = batch(texts)
    rows = [only_row(r) for r in results]
    assert [r["op"] for r in rows] == ["insert"] * 3
    assert [r["key"] for r in rows] == [{"id": "1004"}] * 3
    # the same event has the same id however it was wrapped
    assert len({r["event_id"] for r in rows}) == 1
    assert rows[0]["col_types"] == {} and rows[1]["col_types"] == ROW_TYPES


def test_schema_with_empty_or_null_schema_decodes_untyped() -> None:
    for schema in ({}, None):
        (change,) = decode(json.dumps({"schema": schema, "payload": payload()}))
        assert (change.after, change.col_types) == (ROW, {})


# --------------------------------------------------------------------------- ops


@pytest.mark.parametrize(
    ("code", "op"),
    [("c", "insert"), ("r", "snapshot"), ("u", "update"), ("d", "delete"), ("t", "truncate")],
)
@pytest.mark.parametrize("schema", [False, True])
def test_ops(code: str, op: str, schema: bool) -> None:
    before = None if code in ("c", "r", "t") else {**json.loads(MYSQL_INSERT)["after"], "first_name": "Anne Marie"}
    after = None if code in ("d", "t") else json.loads(MYSQL_INSERT)["after"]
    body = payload(op=code, before=before, after=after)
    (change,) = decode(json.dumps(with_schema(body) if schema else body))
    assert change.op == op
    assert change.source_table == "customers"
    assert change.after == (None if after is None else ROW)
    assert change.before == (None if before is None else {**ROW, "first_name": "Anne Marie"})
    assert change.seq == seq_of(3, 154, 0)


def test_truncate_through_normalization_has_no_key_and_no_images() -> None:
    row = only_row(batch([json.dumps(payload(op="t", before=None, after=None))])[0])
    assert (row["op"], row["table_id"], row["key"], row["before"], row["after"]) == (
        "truncate",
        "inventory.customers",
        None,
        None,
        None,
    )


@pytest.mark.parametrize(
    "flag", [True, "true", "last", "TRUE", "first", "first_in_data_collection", "last_in_data_collection"]
)
def test_create_read_during_a_snapshot_is_a_snapshot(flag) -> None:
    (change,) = decode(json.dumps(payload(source={"snapshot": flag})))
    assert change.op == "snapshot"
    assert change.extras["snapshot"] == ("true" if flag is True else flag)


@pytest.mark.parametrize("flag", [False, "false", None, "incremental"])
def test_create_outside_a_snapshot_stays_an_insert(flag) -> None:
    (change,) = decode(json.dumps(payload(source={"snapshot": flag})))
    assert change.op == "insert"


def test_message_is_skipped_with_its_reason() -> None:
    message = {
        "op": "m",
        "ts_ms": 1559033904863,
        "source": {"connector": "postgresql", "db": "postgres", "lsn": 46178912, "table": None},
        "message": {"prefix": "foo", "content": "Ymfy"},
    }
    with pytest.raises(SkipRecord, match="^message$"):
        decode(json.dumps(message))
    assert batch([json.dumps(message)]) == [{"status": "skipped", "reason": "message", "changes": []}]


@pytest.mark.parametrize(
    "text",
    [None, "null", " null\n", '{"schema": {"type": "struct"}, "payload": null}', '{"payload": null}'],
)
def test_tombstones_are_skipped(text) -> None:
    with pytest.raises(SkipRecord, match="^tombstone$"):
        decode(text)
    # a kcat tombstone carries the key of the deleted row: still skipped (the delete came before)
    with pytest.raises(SkipRecord, match="^tombstone$"):
        decode(text, kafka_key='{"id": 1004}')


# --------------------------------------------------------------------------- seq


def test_mysql_seq_is_file_number_pos_row() -> None:
    assert file_number("mysql-bin.000003") == 3
    assert file_number("binlog.123456") == 123456
    assert file_number("no-digits") is None
    assert file_number(None) is None
    (change,) = decode(json.dumps(payload(source={"file": "mysql-bin.000010", "pos": 4, "row": 2})))
    assert change.seq == "00000000000000000010.00000000000000000004.00000000000000000002"
    # a missing row counts as row 0
    assert debezium_seq({"connector": "mysql", "file": "mysql-bin.000002", "pos": 7}) == seq_of(2, 7, 0)
    # no binlog file: no seq (the order falls back to the Kafka offset)
    assert debezium_seq({"connector": "mysql", "pos": 7}) is None


def test_mysql_seq_orders_across_binlog_files() -> None:
    (early,) = decode(json.dumps(payload(source={"file": "mysql-bin.000002", "pos": 999, "row": 0})))
    (late,) = decode(json.dumps(payload(source={"file": "mysql-bin.000010", "pos": 4, "row": 0})))
    assert early.seq < late.seq
    # as plain text the file names sort the same way only thanks to the zero padding
    assert seq_of(2, 999, 0) < seq_of(10, 4, 0)


def test_postgresql_seq_is_the_lsn() -> None:
    (change,) = decode(PG_UPDATE)
    assert change.seq == seq_of(34133344)
    assert change.tx_id == "606"
    assert (change.source_db, change.source_schema, change.source_table) == ("postgres", "inventory", "products")
    assert change.commit_ts_us == 1596010982228000
    assert change.capture_ts_us == 1596010982481000
    assert change.extras["lsn"] == "34133344" and change.extras["txId"] == "606"
    # lsn as a string (some converters quote int64) is the same position
    assert debezium_seq({"connector": "postgresql", "lsn": "34133344"}) == change.seq


def test_sqlserver_and_oracle_seq() -> None:
    sqlserver = {"connector": "sqlserver", "change_lsn": "00000025:00000d98:0002", "event_serial_no": 2}
    assert debezium_seq(sqlserver) == seq_of(0x25, 0xD98, 2, 2)
    snapshot = {"connector": "sqlserver", "change_lsn": None, "commit_lsn": "00000025:00000d98:0001"}
    assert debezium_seq(snapshot) == seq_of(0x25, 0xD98, 1, 0)
    with pytest.raises(QuarantineError, match="SQL Server lsn"):
        debezium_seq({"connector": "sqlserver", "change_lsn": "zz:00"})
    assert debezium_seq({"connector": "oracle", "scn": "2122184"}) == seq_of(2122184)
    assert debezium_seq({"connector": "mongodb", "ord": 1}) is None


def test_seq_strings_compare_in_source_order() -> None:
    mysql_positions = [
        ("mysql-bin.000002", 4, 0),
        ("mysql-bin.000002", 999, 0),
        ("mysql-bin.000002", 999, 1),
        ("mysql-bin.000002", 1000, 0),
        ("mysql-bin.000009", 4, 0),
        ("mysql-bin.000010", 4, 0),
        ("mysql-bin.000100", 4, 0),
    ]
    seqs = [decode(json.dumps(payload(source={"file": f, "pos": p, "row": r})))[0].seq for f, p, r in mysql_positions]
    assert sorted(seqs) == seqs and len(set(seqs)) == len(seqs)
    lsns = [9, 10, 99, 100, 34133344, 2**63]
    pg = [decode(json.dumps(payload(PG_UPDATE, source={"lsn": lsn})))[0].seq for lsn in lsns]
    assert sorted(pg) == pg and len(set(pg)) == len(pg)


def test_timestamps_prefer_the_finest_field() -> None:
    body = payload(ts_ms=1465491411815, ts_us=1465491411815123, ts_ns=1465491411815123456)
    assert decode(json.dumps(body))[0].capture_ts_us == 1465491411815123
    del body["ts_us"]
    assert decode(json.dumps(body))[0].capture_ts_us == 1465491411815123
    body = payload(source={"ts_ms": 1465491411000})
    assert decode(json.dumps(body))[0].commit_ts_us == 1465491411000000


def test_transaction_id_sources() -> None:
    body = payload(transaction={"id": "571:53195829", "total_order": 1, "data_collection_order": 1})
    assert decode(json.dumps(body))[0].tx_id == "571:53195829"
    gtid = "3E11FA47-71CA-11E1-9E33-C80AA9429562:23"
    (change,) = decode(json.dumps(payload(source={"gtid": gtid})))
    assert (change.tx_id, change.extras["gtid"]) == (gtid, gtid)
    assert decode(MYSQL_INSERT)[0].tx_id is None


# --------------------------------------------------------------------------- keys


@pytest.mark.parametrize(
    "kafka_key",
    [
        '{"id": 1004}',
        json.dumps(
            {
                "schema": {
                    "type": "struct",
                    "fields": [{"type": "int32", "optional": False, "field": "id"}],
                    "optional": False,
                    "name": "mysql-server-1.inventory.customers.Key",
                },
                "payload": {"id": 1004},
            }
        ),
    ],
)
def test_kafka_key_supplies_the_key(kafka_key: str) -> None:
    (change,) = decode(MYSQL_INSERT, kafka_key=kafka_key)
    assert change.key == {"id": "1004"}
    # a delete with neither image is applied by the Kafka key alone
    bare_delete = json.dumps(payload(op="d", before=None, after=None))
    (change,) = decode(bare_delete, kafka_key=kafka_key)
    assert (change.op, change.key, change.before, change.after) == ("delete", {"id": "1004"}, None, None)
    # an unconfigured table works too: the key comes from the event
    opts = dict(OPTIONS, tables={})
    (result,) = decode_records(json.dumps(opts), [bare_delete], [kafka_key])
    row = only_row(result)
    assert (row["op"], row["table_id"], row["key"], row["key_text"]) == (
        "delete",
        "inventory.customers",
        {"id": "1004"},
        '{"id":"1004"}',
    )


def test_kafka_key_names_columns_in_any_case() -> None:
    row = only_row(batch([MYSQL_INSERT], ['{"ID": 1004}'])[0])
    assert row["key"] == {"id": "1004"}


def test_without_kafka_key_the_configured_key_is_used() -> None:
    (change,) = decode(MYSQL_INSERT)
    assert change.key is None
    row = only_row(batch([MYSQL_INSERT])[0])
    assert (row["table_id"], row["key"], row["key_text"]) == ("inventory.customers", {"id": "1004"}, '{"id":"1004"}')
    # a scalar key does not name its column: the configured key is used
    assert parse_kafka_key("1004") is None
    assert only_row(batch([MYSQL_INSERT], ["1004"])[0])["key"] == {"id": "1004"}
    # no Kafka key and no configured key: quarantined with the reason
    (result,) = decode_records(json.dumps(dict(OPTIONS, tables={})), [MYSQL_INSERT])
    assert result["status"] == "quarantined"
    assert "no key for table 'inventory.customers'" in result["reason"]


def test_parse_kafka_key_forms() -> None:
    assert parse_kafka_key(None) is None
    assert parse_kafka_key("null") is None
    assert parse_kafka_key('{"schema": null, "payload": null}') is None
    assert parse_kafka_key('{"a": 1, "b": "x", "c": null, "d": 1.50}') == {"a": "1", "b": "x", "c": None, "d": "1.50"}
    with pytest.raises(QuarantineError, match="not JSON"):
        parse_kafka_key("{id:")


def decimal_b64(unscaled: int) -> str:
    return base64.b64encode(unscaled.to_bytes(16, "big", signed=True)).decode()


DECIMAL_ID = {"type": "bytes", "name": "org.apache.kafka.connect.data.Decimal", "parameters": {"scale": "2"}}


@pytest.mark.parametrize("key_has_schema", [True, False])
def test_kafka_key_decodes_logical_types_like_the_images(key_has_schema: bool) -> None:
    """A DECIMAL primary key is base64 on the wire: the delete's key (from the Kafka
    key) must be the same text as the insert's key (from the after image)."""
    schema = copy.deepcopy(MYSQL_SCHEMA)
    for image in schema["fields"][:2]:
        image["fields"][0] = {**DECIMAL_ID, "optional": False, "field": "id"}
    wire = decimal_b64(1234)
    after = {**json.loads(MYSQL_INSERT)["after"], "id": wire}
    insert = json.dumps(with_schema(payload(after=after), schema))
    delete = json.dumps(with_schema(payload(op="d", before=after, after=None), schema))
    key_payload = {"id": wire}
    if key_has_schema:
        key_schema = {"type": "struct", "fields": [{**DECIMAL_ID, "optional": False, "field": "id"}]}
        kafka_key = json.dumps({"schema": key_schema, "payload": key_payload})
    else:
        kafka_key = json.dumps(key_payload)
    rows = [only_row(r) for r in batch([insert, delete], [kafka_key, kafka_key])]
    assert [(r["op"], r["key"]) for r in rows] == [("insert", {"id": "12.34"}), ("delete", {"id": "12.34"})]
    assert rows[0]["after"]["id"] == "12.34"
    assert rows[0]["col_types"]["id"] == "decimal(38,2)"


def test_bad_kafka_key_value_quarantines_naming_the_key() -> None:
    key_schema = {"type": "struct", "fields": [{**DECIMAL_ID, "field": "id"}]}
    kafka_key = json.dumps({"schema": key_schema, "payload": {"id": "not*base64"}})
    with pytest.raises(QuarantineError, match="Kafka key: column id"):
        decode(MYSQL_INSERT, kafka_key=kafka_key)


# --------------------------------------------------------------------------- TOAST, partial images


def test_toast_placeholder_is_not_provided_and_nulls_stay_null() -> None:
    after = {"id": 110, "name": None, "description": PLACEHOLDER, "weight": 0.5}
    (change,) = decode(json.dumps(payload(PG_UPDATE, after=after)))
    assert change.after == {"id": "110", "name": None, "weight": "0.5"}
    # `name` was set to NULL (provided), `description` was not provided (keeps its value)
    assert change.after_cols == ["id", "name", "weight"]
    row = only_row(batch([json.dumps(payload(PG_UPDATE, after=after))])[0])
    assert row["after"] == {"id": "110", "name": None, "weight": "0.5"}
    assert row["after_cols"] == ["id", "name", "weight"]
    assert "description" not in row["after"]


def test_toast_placeholder_by_schema_type() -> None:
    """With a schema, bytes carry the placeholder as base64; a string column holds it as text."""
    fields = [
        {"type": "int32", "optional": False, "field": "id"},
        {"type": "string", "optional": True, "field": "doc"},
        {"type": "bytes", "optional": True, "field": "blob"},
        {"type": "array", "items": {"type": "string"}, "optional": True, "field": "tags"},
    ]
    schema = {"type": "struct", "fields": [{"type": "struct", "fields": fields, "optional": True, "field": "after"}]}
    placeholder_b64 = base64.b64encode(PLACEHOLDER.encode()).decode()
    after = {"id": 1, "doc": PLACEHOLDER, "blob": placeholder_b64, "tags": [PLACEHOLDER]}
    (change,) = decode(json.dumps({"schema": schema, "payload": payload(PG_UPDATE, after=after)}))
    assert change.after == {"id": "1"}
    assert change.after_cols == ["id"]
    # a string column whose text merely is base64 of the placeholder is data
    after = {"id": 1, "doc": placeholder_b64, "blob": None, "tags": None}
    (change,) = decode(json.dumps({"schema": schema, "payload": payload(PG_UPDATE, after=after)}))
    assert change.after == {"id": "1", "doc": placeholder_b64, "blob": None, "tags": None}
    assert change.after_cols == ["id", "doc", "blob", "tags"]


def test_update_without_before_is_applied_by_key() -> None:
    (change,) = decode(PG_UPDATE)
    assert (change.op, change.before, change.before_cols) == ("update", None, None)
    row = only_row(batch([PG_UPDATE])[0])
    assert (row["op"], row["table_id"], row["key"], row["before"]) == (
        "update",
        "inventory.products",
        {"id": "110"},
        None,
    )
    assert row["after"]["description"] == "new water resistent white wind breaker"


def test_delete_with_only_key_columns_in_before() -> None:
    body = payload(PG_UPDATE, op="d", before={"id": 111, "name": None, "description": None, "weight": None}, after=None)
    # REPLICA IDENTITY DEFAULT: non-key columns are null in the before image
    (change,) = decode(json.dumps(body))
    assert (change.op, change.before["id"], change.after) == ("delete", "111", None)
    body = payload(PG_UPDATE, op="d", before={"id": 111}, after=None)
    (change,) = decode(json.dumps(body))
    assert (change.before, change.before_cols, change.key) == ({"id": "111"}, ["id"], None)
    row = only_row(batch([json.dumps(body)])[0])
    assert (row["op"], row["key"], row["after"]) == ("delete", {"id": "111"}, None)


def test_delete_without_any_key_is_quarantined() -> None:
    bare = json.dumps(payload(PG_UPDATE, op="d", before=None, after=None))
    with pytest.raises(
        QuarantineError, match="delete without key: before and after are null and there is no Kafka key"
    ):
        decode(bare)
    # a scalar or null Kafka key does not help
    for kafka_key in ("null", "111"):
        with pytest.raises(QuarantineError, match="delete without key"):
            decode(bare, kafka_key=kafka_key)
    (result,) = batch([bare])
    assert result["status"] == "quarantined" and "delete without key" in result["reason"]


# --------------------------------------------------------------------------- flattened rows


def test_flattened_row_is_an_upsert_of_the_feed_table() -> None:
    row = json.loads(MYSQL_INSERT)["after"]
    assert decode(json.dumps(row), table="inventory.customers") == [
        Change(op="update", source_table="inventory.customers", after=ROW, after_cols=ROW_COLS)
    ]
    (change,) = decode(json.dumps(row), kafka_key='{"id": 1004}', table="customers")
    assert change.key == {"id": "1004"}
    result = only_row(batch([json.dumps(row)], table="inventory.customers")[0])
    assert (result["op"], result["table_id"], result["key"], result["after"]) == (
        "update",
        "inventory.customers",
        {"id": "1004"},
        ROW,
    )


def test_flattened_row_without_table_option_quarantines() -> None:
    with pytest.raises(QuarantineError, match="feed option `table`"):
        decode(json.dumps(json.loads(MYSQL_INSERT)["after"]))


def test_flattened_row_with_schema_decodes_types_and_toast() -> None:
    schema = {
        "type": "struct",
        "fields": [
            {**DECIMAL_ID, "optional": False, "field": "id"},
            {"type": "string", "optional": True, "field": "doc"},
            {"type": "int64", "optional": True, "name": "io.debezium.time.MicroTimestamp", "field": "at"},
        ],
        "name": "fullfillment.inventory.products.Value",
    }
    row = {"id": decimal_b64(-5), "doc": PLACEHOLDER, "at": 1}
    (change,) = decode(json.dumps({"schema": schema, "payload": row}), table="products")
    assert change.after == {"id": "-0.05", "at": "1970-01-01T00:00:00.000001Z"}
    assert change.after_cols == ["id", "at"]
    # as in an envelope's images, a column not provided gets no type either
    assert change.col_types == {"id": "decimal(38,2)", "at": "timestamp"}


# --------------------------------------------------------------------------- malformed records


def mutate(**fields) -> str:
    body = json.loads(MYSQL_INSERT)
    body.update(fields)
    return json.dumps(body)


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("{oops", "^not JSON: "),
        ("", "^not JSON: "),
        ('{"op": "c", "after": {"id": 1}', "^not JSON: "),
        ("[1, 2]", "^envelope is a JSON list, not an object$"),
        ('"text"', "^envelope is a JSON str, not an object$"),
        ("42", "^envelope is a JSON int, not an object$"),
        (mutate(op="x"), "^unknown op 'x'$"),
        (mutate(op="C"), "^unknown op 'C'$"),
        (mutate(op=None), "^unknown op None$"),
        (json.dumps({"schema": {}, "payload": [1]}), "^payload is not an object$"),
        (mutate(source="mysql"), "^source is not an object$"),
        (mutate(source={"connector": "mysql"}), "^no table name"),
        (mutate(after=[1004, "Anne"]), "^after is not an object$"),
        (mutate(op="u", before="x"), "^before is not an object$"),
    ],
)
def test_malformed_records_quarantine_with_a_clear_reason(text: str, reason: str) -> None:
    with pytest.raises(QuarantineError, match=reason):
        decode(text)


def test_value_of_the_wrong_kind_for_its_schema_names_the_column() -> None:
    body = payload()
    body["after"]["id"] = "1004x"
    with pytest.raises(QuarantineError, match="^after.id: column id: int32 must be an integer"):
        decode(json.dumps(with_schema(body)))


def test_feed_table_option_names_a_table_the_source_does_not() -> None:
    body = payload()
    del body["source"]
    (change,) = decode(json.dumps(body), table="customers")
    assert (change.source_table, change.seq, change.extras) == ("customers", None, {})


def test_one_bad_record_does_not_affect_its_neighbours() -> None:
    good = [
        MYSQL_INSERT,
        json.dumps(payload(op="u", before=json.loads(MYSQL_INSERT)["after"], source={"pos": 200})),
        PG_UPDATE,
    ]
    texts = [good[0], "{oops", good[1], None, mutate(op="x"), json.dumps([1]), good[2]]
    results = batch(texts)
    assert [r["status"] for r in results] == ["ok", "quarantined", "ok", "skipped", "quarantined", "quarantined", "ok"]
    assert results[1]["reason"].startswith("not JSON")
    assert results[3]["reason"] == "tombstone"
    assert results[4]["reason"] == "unknown op 'x'"
    assert results[5]["reason"] == "envelope is a JSON list, not an object"
    assert [results[i]["changes"] for i in (1, 4, 5)] == [None, None, None]
    # each good record decodes exactly as it does alone
    alone = [batch([t])[0] for t in good]
    assert [results[i] for i in (0, 2, 6)] == alone
    assert [only_row(r)["op"] for r in alone] == ["insert", "update", "update"]


# --------------------------------------------------------------------------- values


def test_numbers_keep_every_digit() -> None:
    after = (
        '{"id": 9007199254740993, "big": 18446744073709551615, "neg": -9223372036854775809,'
        ' "dec": 12345678901234567890.123456789012345678, "small": -0.000000000000000000000000000000000001,'
        ' "exp": 1.0E+400, "trail": 1.50}'
    )
    text = MYSQL_INSERT.replace(
        '"after": {\n      "id": 1004,\n      "first_name": "Anne",\n'
        '      "last_name": "Kretchmar",\n      "email": "annek@noanswer.org"\n    }',
        f'"after": {after}',
    )
    assert text != MYSQL_INSERT
    (change,) = decode(text)
    assert change.after == {
        "id": "9007199254740993",
        "big": "18446744073709551615",
        "neg": "-9223372036854775809",
        "dec": "12345678901234567890.123456789012345678",
        "small": "-0.000000000000000000000000000000000001",
        "exp": "1.0E+400",
        "trail": "1.50",
    }
    # also through the shared normalization and the key
    row = only_row(batch([text])[0])
    assert row["key"] == {"id": "9007199254740993"}
    assert row["after"]["dec"] == "12345678901234567890.123456789012345678"


def test_big_values_with_a_schema_keep_every_digit() -> None:
    schema = copy.deepcopy(MYSQL_SCHEMA)
    extra = [
        {"type": "int64", "optional": True, "field": "big"},
        {"type": "double", "optional": True, "field": "ratio"},
    ]
    schema["fields"][1]["fields"] = _ROW_FIELDS + extra
    body = payload()
    body["after"].update(big=9223372036854775807, ratio=0.1)
    text = json.dumps(with_schema(body, schema)).replace("0.1}", "0.10000000000000000555}")
    (change,) = decode(text)
    assert (change.after["big"], change.after["ratio"]) == ("9223372036854775807", "0.10000000000000000555")
    assert (change.col_types["big"], change.col_types["ratio"]) == ("bigint", "double")


def test_text_is_kept_intact() -> None:
    name = 'Zoë "Z" O\'Brien\n\tline 2 \\ 雪 😀 \u00a0'
    body = payload()
    body["after"]["first_name"] = name
    body["after"]["email"] = ""
    body["after"]["last_name"] = "null"
    for text in (json.dumps(body), json.dumps(body, ensure_ascii=False)):
        (change,) = decode(text)
        assert change.after["first_name"] == name
        # the empty string and the text "null" are values, not NULL
        assert change.after["email"] == ""
        assert change.after["last_name"] == "null"
    row = only_row(batch([json.dumps(body)], [json.dumps({"id": 1004, "tag": "雪"})])[0])
    assert row["key_text"] == '{"id":"1004","tag":"雪"}'


def test_null_and_non_null_of_every_json_type() -> None:
    values = {
        "s": "x",
        "i": 0,
        "f": 0.0,
        "b": False,
        "o": {"z": 1, "a": [1, 2.50, None, "é"]},
        "a": [],
        "t": True,
    }
    (change,) = decode(json.dumps(payload(after={"id": 1, **values})).replace("2.5,", "2.50,"))
    assert change.after == {
        "id": "1",
        "s": "x",
        "i": "0",
        "f": "0.0",
        "b": "false",
        "o": '{"a":[1,2.50,null,"é"],"z":1}',
        "a": "[]",
        "t": "true",
    }
    nulls = dict.fromkeys(values)
    (change,) = decode(json.dumps(payload(after={"id": 1, **nulls})))
    assert change.after == {"id": "1", **dict.fromkeys(values)}
    # every null column is provided: it sets the column to NULL
    assert change.after_cols == ["id", *values]


def test_null_values_with_a_schema_keep_their_type() -> None:
    fields = [
        {"type": "int32", "optional": False, "field": "id"},
        {"type": "string", "optional": True, "field": "s"},
        {"type": "int64", "optional": True, "field": "i"},
        {"type": "double", "optional": True, "field": "f"},
        {"type": "boolean", "optional": True, "field": "b"},
        {"type": "struct", "fields": [], "optional": True, "field": "o"},
        {"type": "array", "items": {"type": "int32"}, "optional": True, "field": "a"},
        {**DECIMAL_ID, "optional": True, "field": "d"},
    ]
    schema = {"type": "struct", "fields": [{"type": "struct", "fields": fields, "optional": True, "field": "after"}]}
    after = {"id": 1, "s": None, "i": None, "f": None, "b": None, "o": None, "a": None, "d": None}
    (change,) = decode(json.dumps({"schema": schema, "payload": payload(after=after)}))
    assert change.after == {"id": "1", **dict.fromkeys(["s", "i", "f", "b", "o", "a", "d"])}
    assert change.after_cols == ["id", "s", "i", "f", "b", "o", "a", "d"]
    assert change.col_types == {
        "id": "int",
        "s": "string",
        "i": "bigint",
        "f": "double",
        "b": "boolean",
        "o": "string",
        "a": "string",
        "d": "decimal(38,2)",
    }
    after = {"id": 1, "s": "", "i": 0, "f": 0.0, "b": False, "o": {"k": None}, "a": [0], "d": decimal_b64(0)}
    (change,) = decode(json.dumps({"schema": schema, "payload": payload(after=after)}))
    assert change.after == {
        "id": "1",
        "s": "",
        "i": "0",
        "f": "0.0",
        "b": "false",
        "o": '{"k":null}',
        "a": "[0]",
        "d": "0.00",
    }
