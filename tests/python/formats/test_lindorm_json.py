"""Lindorm (Debezium format V2.0) decoder: the spec's samples and the cases around them.

The samples of ``specs/lindorm-debezium-format.txt`` are in ``spec_samples.py`` (shared
with the pipeline test).
"""

from __future__ import annotations

import base64
import json

import pytest
from spec_samples import (
    LINDORM_FORMAT_UPDATE,
    LINDORM_HBASE_PUT,
    LINDORM_SQL_COLUMN_DELETE,
    LINDORM_SQL_DELETE,
    LINDORM_SQL_INSERT,
    LINDORM_SQL_UPDATE,
)

from udfs.contract import Change, QuarantineError, Record, SkipRecord, seq_of
from udfs.formats.lindorm_json import LindormJsonDecoder, looks_like_hbase

SEQ = seq_of(1465491411807)
EXTRAS = {"namespace": "default", "table_kind": "sql", "lindorm_version": "v1.0"}


def decode(text: str | None, **options) -> list[Change]:
    return LindormJsonDecoder(options).decode(Record(text=text))


def sql_change(**fields) -> Change:
    """A change with the fields every SQL sample shares."""
    base = {
        "source_table": "customers",
        "source_db": "ld-xxxx",
        "source_schema": "default",
        "seq": SEQ,
        "commit_ts_us": 1465491411807000,
        "capture_ts_us": 1465491411815000,
        "extras": EXTRAS,
    }
    return Change(**{**base, **fields})


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def test_decoder_identity() -> None:
    assert LindormJsonDecoder.identifier == "lindorm_json"
    assert LindormJsonDecoder.default_framing == "lines"
    assert LindormJsonDecoder.framings == ("lines", "kcat", "documents")
    assert LindormJsonDecoder.option_names == ("table_kind", "columnar")


def test_spec_format_sample_with_schema() -> None:
    assert decode(LINDORM_FORMAT_UPDATE) == [
        sql_change(
            op="update",
            before={"id": "1004", "name": "Jane"},
            after={"id": "1004", "name": "Anne"},
            after_cols=["id", "name"],
            col_types={"id": "int", "name": "string"},
        )
    ]


ANNE = {"id": "1004", "first_name": "Anne", "last_name": "Kretchmar"}
ANNE_MARIE = {"id": "1004", "first_name": "Anne Marie", "last_name": "Kretchmar"}
ANNE_MARIE_LAST_NAME_NULL = {"id": "1004", "first_name": "Anne Marie", "last_name": None}
ALL_COLS = ["id", "first_name", "last_name"]


# the four SQL samples of the spec's "Sample data" (table customers, row 1004): each
# decodes to one change; only op, the images and after_cols differ
@pytest.mark.parametrize(
    ("sample", "op", "before", "after", "after_cols"),
    [
        pytest.param(LINDORM_SQL_INSERT, "insert", None, ANNE, None, id="insert"),
        pytest.param(LINDORM_SQL_UPDATE, "update", ANNE_MARIE, ANNE, ALL_COLS, id="update"),
        pytest.param(LINDORM_SQL_DELETE, "delete", ANNE_MARIE, None, None, id="delete"),
        # the column deletion's after lacks last_name: the column is set NULL
        pytest.param(
            LINDORM_SQL_COLUMN_DELETE,
            "update",
            ANNE_MARIE,
            ANNE_MARIE_LAST_NAME_NULL,
            ALL_COLS,
            id="column_delete_sets_the_column_null",
        ),
    ],
)
def test_spec_sql_sample(
    sample: str, op: str, before: dict | None, after: dict | None, after_cols: list[str] | None
) -> None:
    assert decode(sample) == [sql_change(op=op, before=before, after=after, after_cols=after_cols)]


def test_spec_hbase_put() -> None:
    # the spec's Java put: row "user1", cell f:name = "lucky"
    assert b64("user1") == "dXNlcjE=" and b64("lucky") == "bHVja3k="
    assert decode(LINDORM_HBASE_PUT) == [
        Change(
            op="update",  # a put (the spec's "update" sample): only the given cells
            source_table="customers",
            source_db="ld-xxxx",
            source_schema="default",
            key={"ROW": "dXNlcjE="},
            before=None,
            after={"ROW": "dXNlcjE=", "f_name": "bHVja3k="},
            after_cols=["ROW", "f_name"],
            col_types={"f_name": "binary"},
            seq=seq_of(1725258833727),
            commit_ts_us=1725258833727000,
            capture_ts_us=1725258859839000,
            extras={"namespace": "default", "table_kind": "hbase", "lindorm_version": "v2.0"},
        )
    ]


def hbase_message(op: str, before: dict | None, after: dict | None) -> str:
    doc = json.loads(LINDORM_HBASE_PUT)
    doc["payload"].update(op=op, before=before, after=after)
    return json.dumps(doc)


def test_hbase_put_writes_only_given_cells() -> None:
    after = {"ROW": b64("user1"), "f_age": b64("\x00\x00\x00\x2a")}
    (change,) = decode(hbase_message("u", None, after))
    assert change.op == "update"
    assert change.after_cols == ["ROW", "f_age"]
    assert change.key == {"ROW": b64("user1")}


def test_hbase_put_c_keeps_the_cells_it_does_not_name() -> None:
    # Lindorm sends every put as `c` (the spec's update sample). Decoded as an insert, the
    # merge would start the row afresh and drop f_age written by an earlier put.
    first = {"ROW": b64("user1"), "f_age": b64("42")}
    second = {"ROW": b64("user1"), "f_name": b64("lucky")}
    changes = [decode(hbase_message("c", None, image))[0] for image in (first, second)]
    assert [c.op for c in changes] == ["update", "update"]
    row: dict = {}
    for c in changes:  # the merge's fold: an update sets the provided cells only
        row.update({col: c.after[col] for col in c.after_cols})
    assert row == {"ROW": b64("user1"), "f_age": b64("42"), "f_name": b64("lucky")}


def test_sql_update_sets_configured_columns_it_lacks_to_null() -> None:
    """``after`` is the whole row. A column that is NULL before and after the update is in
    neither image (Lindorm stores no cell for NULL): it must still read NULL, or a stale
    value stays when an earlier update (that set it NULL) arrives late (found by the
    differential test). The configured columns name it."""
    doc = json.loads(LINDORM_SQL_COLUMN_DELETE)
    del doc["payload"]["before"]["last_name"]
    tables = {"default.customers": {"key": ["id"], "columns": {"id": "string", "first_name": "string",
                                                                "last_name": "string", "email": "string"}}}  # fmt: skip
    (change,) = LindormJsonDecoder({"tables": tables}).decode(Record(json.dumps(doc)))
    assert change.after == {"id": "1004", "first_name": "Anne Marie", "last_name": None, "email": None}
    assert change.after_cols == ["id", "first_name", "last_name", "email"]
    # without configured columns only the before image's columns are known
    (change,) = LindormJsonDecoder({}).decode(Record(json.dumps(doc)))
    assert change.after_cols == ["id", "first_name"]
    # a configured column the event spells in another case is not added twice
    tables["default.customers"]["columns"] = {"ID": "string", "FIRST_NAME": "string", "last_name": "string"}
    (change,) = LindormJsonDecoder({"tables": tables}).decode(Record(json.dumps(doc)))
    assert change.after_cols == ["id", "first_name", "last_name"]


def test_hbase_delete() -> None:
    before = {"ROW": b64("user1"), "f_name": b64("lucky")}
    (change,) = decode(hbase_message("d", before, None))
    assert (change.op, change.after, change.after_cols) == ("delete", None, None)
    assert change.before == before
    assert change.key == {"ROW": b64("user1")}
    assert change.col_types == {"f_name": "binary"}


def test_hbase_forced_bad_base64_quarantines_with_column() -> None:
    after = {"ROW": b64("user1"), "f_name": "lucky!"}
    with pytest.raises(QuarantineError, match="f_name"):
        decode(hbase_message("c", None, after), table_kind="hbase")
    # in auto mode the same message is not HBase-shaped: it decodes as an SQL row
    assert decode(hbase_message("c", None, after))[0].extras["table_kind"] == "sql"


def test_hbase_without_row_key_quarantines() -> None:
    with pytest.raises(QuarantineError, match="ROW"):
        decode(hbase_message("c", None, {"f_name": b64("x")}), table_kind="hbase")


def test_table_kind_option() -> None:
    # a SQL table with a ROW column whose values happen to be base64: force sql
    (change,) = decode(hbase_message("c", None, {"ROW": "abcd", "f_name": "Anne"}), table_kind="sql")
    assert change.extras["table_kind"] == "sql"
    assert change.key is None and change.after_cols is None
    (change,) = decode(LINDORM_HBASE_PUT, table_kind="HBASE")
    assert change.extras["table_kind"] == "hbase"
    # an SQL row forced to HBase: "Kretchmar" is not base64
    with pytest.raises(QuarantineError, match="last_name"):
        decode(LINDORM_SQL_INSERT, table_kind="hbase")
    with pytest.raises(ValueError, match="table_kind"):
        LindormJsonDecoder({"table_kind": "kudu"})


def test_looks_like_hbase() -> None:
    assert looks_like_hbase({"ROW": "dXNlcjE=", "f_name": "bHVja3k="})
    assert not looks_like_hbase({"ROW": "dXNlcjE=", "f_name": None})
    assert not looks_like_hbase({"id": "1004"})
    assert not looks_like_hbase({"ROW": 1})
    assert not looks_like_hbase(None)


def test_sql_update_without_before_keeps_after_as_given() -> None:
    doc = json.loads(LINDORM_SQL_UPDATE)
    doc["payload"]["before"] = None
    doc["payload"]["after"] = {"id": "1004", "first_name": "Anne"}
    (change,) = decode(json.dumps(doc))
    assert change.after == {"id": "1004", "first_name": "Anne"}
    assert change.after_cols is None


def test_sql_values_keep_exact_json_text() -> None:
    doc = json.loads(LINDORM_SQL_INSERT)
    text = json.dumps(doc).replace('"Kretchmar"', "12345678901234567890.123456789012345678")
    text = text.replace('"Anne"', "null")
    (change,) = decode(text)
    assert change.after["last_name"] == "12345678901234567890.123456789012345678"
    assert change.after["first_name"] is None


def test_payload_without_schema_wrapper() -> None:
    payload = json.loads(LINDORM_SQL_INSERT)["payload"]
    (change,) = decode(json.dumps(payload))
    assert change.after == {"id": "1004", "first_name": "Anne", "last_name": "Kretchmar"}


def test_snapshot_op_r() -> None:
    doc = json.loads(LINDORM_SQL_INSERT)
    doc["payload"]["op"] = "r"
    assert decode(json.dumps(doc))[0].op == "snapshot"


@pytest.mark.parametrize("text", [None, " ", "null", '{"schema": {}, "payload": null}'])
def test_tombstones_are_skipped(text) -> None:
    with pytest.raises(SkipRecord, match="tombstone"):
        decode(text)


def mutate(sample: str, path: tuple[str, ...], value) -> str:
    doc = json.loads(sample)
    node = doc
    for part in path[:-1]:
        node = node[part]
    node[path[-1]] = value
    return json.dumps(doc)


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("{oops", "not JSON"),
        ('"text"', "not a JSON object"),
        (mutate(LINDORM_SQL_INSERT, ("payload", "op"), "x"), "op"),
        (mutate(LINDORM_SQL_INSERT, ("payload", "source", "table"), None), "source.table"),
        (mutate(LINDORM_SQL_INSERT, ("payload", "source"), None), "source.table"),
        (mutate(LINDORM_SQL_INSERT, ("payload", "after"), None), "after image"),
        (mutate(LINDORM_SQL_INSERT, ("payload", "after"), [1]), "after is not an object"),
        (mutate(LINDORM_SQL_DELETE, ("payload", "before"), None), "before image"),
        (mutate(LINDORM_SQL_INSERT, ("payload", "source", "ts_ms"), "soon"), "source.ts_ms"),
        (mutate(LINDORM_SQL_INSERT, ("payload", "ts_ms"), 1.5), "ts_ms"),
    ],
)
def test_malformed_messages_quarantine(text: str, reason: str) -> None:
    with pytest.raises(QuarantineError, match=reason):
        decode(text)


def test_typed_schema_values_are_checked() -> None:
    doc = json.loads(LINDORM_FORMAT_UPDATE)
    doc["payload"]["after"]["id"] = "not an int"
    with pytest.raises(QuarantineError, match="id"):
        decode(json.dumps(doc))


def test_seq_orders_by_change_time() -> None:
    earlier = decode(mutate(LINDORM_SQL_INSERT, ("payload", "source", "ts_ms"), 999))[0]
    later = decode(LINDORM_SQL_INSERT)[0]
    assert earlier.seq < later.seq


def test_debezium_placeholder_is_plain_data_in_lindorm() -> None:
    doc = json.loads(LINDORM_SQL_UPDATE)
    doc["payload"]["after"]["last_name"] = "__debezium_unavailable_value"
    (change,) = decode(json.dumps(doc))
    assert change.after["last_name"] == "__debezium_unavailable_value"
