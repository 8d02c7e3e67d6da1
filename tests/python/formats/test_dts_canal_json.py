"""Canal JSON (Alibaba Cloud DTS ``dts_canal_json`` and open-source ``canal_json``):
every example message of ``specs/alibaba-dts-kafka-formats.txt`` and the cases around
them (multi-row messages, partial ``old``, both DELETE layouts, types, filters)."""

from __future__ import annotations

import base64
import json

import pytest

from udfs.contract import Change, QuarantineError, Record, SkipRecord, seq_of
from udfs.decode import decode_records
from udfs.formats import decoder_class
from udfs.formats.dts_canal_json import MYSQL_TYPES, CanalJsonDecoder, DtsCanalJsonDecoder, spark_type

# The spec's examples, as printed (the DDL example's inline annotations removed).
SPEC_DELETE_BEFORE_2022 = """{
    "old": [{"shipping_type": "aaa"}],
    "database": "dbname", "es": 1600161894000, "id": 58, "isDdl": false,
    "mysqlType": {"id": "bigint(20)", "shipping_type": "varchar(50)"},
    "pkNames": ["id"], "sql": "", "sqlType": {"id": -5, "shipping_type": 12},
    "table": "tablename", "ts": 1600161894771, "type": "DELETE"
}"""
SPEC_DELETE_SINCE_2022 = """{
    "data": [{"id": "500000287", "shipping_type": null}],
    "database": "dbname", "es": 1600161894000, "id": 58, "isDdl": false,
    "mysqlType": {"id": "bigint(20)", "shipping_type": "varchar(50)"},
    "pkNames": ["id"], "sql": "", "sqlType": {"id": -5, "shipping_type": 12},
    "table": "tablename", "ts": 1600161894771, "type": "DELETE"
}"""
SPEC_DDL = """{
    "database": "dbname", "es": 1600161894000, "id": 58, "isDdl": true,
    "sql": "eg: create xxx", "table": "tablename", "ts": 1600161894771, "type": "DDL"
}"""
SPEC_TYPES = {"id": "bigint", "shipping_type": "string"}


def decode(text: str | dict | None, fmt: str = "dts_canal_json", **options) -> list[Change]:
    if isinstance(text, dict):
        text = json.dumps(text)
    return decoder_class(fmt)(options).decode(Record(text=text))


def normalized(text: str | dict, fmt: str = "dts_canal_json", tables: dict | None = None, **options) -> dict:
    if isinstance(text, dict):
        text = json.dumps(text)
    opts = json.dumps({"format": fmt, "options": options, "tables": tables or {}})
    (result,) = decode_records(opts, [text])
    return result


def message(kind: str = "INSERT", data=None, old=None, **fields) -> dict:
    msg = {
        "data": data,
        "old": old,
        "database": "shop",
        "table": "orders",
        "es": 1700000000000,
        "ts": 1700000000123,
        "id": 7,
        "isDdl": False,
        "mysqlType": {"id": "int(11)", "amount": "decimal(12,2)", "note": "varchar(20)"},
        "sqlType": {"id": 4, "amount": 3, "note": 12},
        "pkNames": ["id"],
        "sql": "",
        "type": kind,
    }
    msg.update(fields)
    return msg


# --------------------------------------------------------------------------- registry


def test_registered_under_both_identifiers() -> None:
    assert decoder_class("dts_canal_json") is DtsCanalJsonDecoder
    assert decoder_class("canal_json") is CanalJsonDecoder
    for cls in (DtsCanalJsonDecoder, CanalJsonDecoder):
        assert {"database_include", "table_include", "table", "order"} <= set(cls.option_names)
        assert all(cls.carries_key(f) for f in cls.framings)


# --------------------------------------------------------------------------- spec examples


def test_spec_delete_since_2022_row_in_data() -> None:
    assert decode(SPEC_DELETE_SINCE_2022) == [
        Change(
            op="delete",
            source_table="tablename",
            source_db="dbname",
            key_columns=["id"],
            before={"id": "500000287", "shipping_type": None},
            col_types=SPEC_TYPES,
            seq=seq_of(58, 1600161894000, 0),
            commit_ts_us=1600161894000 * 1000,
            capture_ts_us=1600161894771 * 1000,
            extras={"canal_id": "58"},
        )
    ]
    result = normalized(SPEC_DELETE_SINCE_2022)
    assert result["status"] == "ok"
    (row,) = result["changes"]
    assert (row["op"], row["key"], row["table_id"]) == ("delete", {"id": "500000287"}, "dbname.tablename")
    assert row["before_cols"] == ["id", "shipping_type"]


def test_spec_delete_before_2022_row_in_old() -> None:
    (change,) = decode(SPEC_DELETE_BEFORE_2022)
    assert change.op == "delete"
    assert change.before == {"shipping_type": "aaa"}
    assert change.after is None
    # the printed sample's row lacks its key column: it cannot be applied by key
    result = normalized(SPEC_DELETE_BEFORE_2022)
    assert result["status"] == "quarantined"
    assert "missing key column(s) id" in result["reason"]


def test_both_delete_layouts_give_the_same_change() -> None:
    row = [{"id": "5", "amount": "1.50", "note": None}]
    new, old_layout = decode(message("DELETE", data=row)), decode(message("DELETE", data=None, old=row))
    assert new == old_layout
    assert new[0].before == {"id": "5", "amount": "1.50", "note": None}
    # data wins when both are present
    (both,) = decode(message("DELETE", data=row, old=[{"id": "9"}]))
    assert both.before["id"] == "5"


def test_spec_ddl_is_skipped_with_its_statement() -> None:
    with pytest.raises(SkipRecord) as info:
        decode(SPEC_DDL)
    assert str(info.value) == "ddl"
    ddl = info.value.ddl
    assert (ddl.sql, ddl.source_db, ddl.source_table, ddl.commit_ts_us) == (
        "eg: create xxx",
        "dbname",
        "tablename",
        1600161894000 * 1000,
    )
    result = normalized(SPEC_DDL)
    assert result["status"] == "skipped" and result["reason"] == "ddl"
    assert result["ddl"]["sql"] == "eg: create xxx"


@pytest.mark.parametrize(("field", "ddl"), [("es", True), ("es", False), ("ts", False)])
def test_times_beyond_bigint_microseconds_are_quarantined(field: str, ddl: bool) -> None:
    """Found by the DTS property test: a DDL message with ``es`` 2**70 gave a
    ``commit_ts_us`` no bigint holds, and the Arrow conversion of the decode UDF raised
    (failing the whole batch). ``es``/``ts`` whose microseconds do not fit are malformed
    (a DDL message's ``ts`` is not read)."""
    msg = json.loads(SPEC_DDL) if ddl else message(data=[{"id": "1"}])
    for value in (2**70, str(2**70), (2**63 - 1) // 1000 + 1):
        msg[field] = value
        with pytest.raises(QuarantineError, match=f"{field} out of range"):
            decode(msg)
        result = normalized(msg)
        assert result["status"] == "quarantined" and f"{field} out of range" in result["reason"]
    msg[field] = (2**63 - 1) // 1000  # the largest that fits still decodes
    assert normalized(msg)["status"] == ("skipped" if ddl else "ok")


def test_flink_style_ddl_without_type_ddl() -> None:
    # Canal names the statement kind (CREATE, ALTER...); isDdl decides
    msg = message("CREATE", data=None, isDdl=True, sql="CREATE TABLE t (id int)", mysqlType=None, pkNames=None)
    with pytest.raises(SkipRecord, match="ddl"):
        decode(msg)
    with pytest.raises(SkipRecord, match="ddl"):
        decode({k: v for k, v in msg.items() if k != "type"})


# --------------------------------------------------------------------------- ops and images


def test_multi_row_insert_gets_one_change_per_row() -> None:
    rows = [{"id": "1", "amount": "10.00", "note": "a"}, {"id": "2", "amount": None, "note": "b"}]
    changes = decode(message("INSERT", data=rows))
    assert [c.after for c in changes] == rows
    assert [c.seq for c in changes] == [seq_of(7, 1700000000000, 0), seq_of(7, 1700000000000, 1)]
    result = normalized(message("INSERT", data=rows))
    assert [r["row_index"] for r in result["changes"]] == [0, 1]
    assert [r["key"] for r in result["changes"]] == [{"id": "1"}, {"id": "2"}]
    assert len({r["event_id"] for r in result["changes"]}) == 2


def test_init_is_snapshot() -> None:
    (change,) = decode(message("INIT", data=[{"id": "1", "amount": "1.00", "note": None}]))
    assert change.op == "snapshot"


def test_update_before_is_data_overlaid_with_old() -> None:
    data = [{"id": "1", "amount": "2.00", "note": "x"}, {"id": "2", "amount": "3.00", "note": None}]
    # row 0: amount changed and note *was* NULL; row 1: note changed, amount absent = unchanged
    old = [{"amount": "1.00", "note": None}, {"note": "was"}]
    first, second = decode(message("UPDATE", data=data, old=old))
    assert first.before == {"id": "1", "amount": "1.00", "note": None}
    assert first.after == data[0]
    assert second.before == {"id": "2", "amount": "3.00", "note": "was"}
    assert second.after == data[1]
    assert first.before_cols is None and first.after_cols is None  # every column provided


def test_update_without_old_has_no_before_image() -> None:
    (change,) = decode(message("UPDATE", data=[{"id": "1", "amount": "2.00"}]))
    assert change.before is None
    assert change.after == {"id": "1", "amount": "2.00"}
    assert normalized(message("UPDATE", data=[{"id": "1", "amount": "2.00"}]))["changes"][0]["key"] == {"id": "1"}


def test_update_of_the_key_moves_the_row() -> None:
    result = normalized(message("UPDATE", data=[{"id": "2", "note": "n"}], old=[{"id": "1"}]))
    ops = [(r["op"], r["key"]) for r in result["changes"]]
    assert ops == [("delete", {"id": "1"}), ("insert", {"id": "2"})]


def test_truncate_empties_the_table() -> None:
    (change,) = decode(message("TRUNCATE", data=None, isDdl=True, sql="truncate table orders"))
    assert (change.op, change.source_table, change.seq) == ("truncate", "orders", seq_of(7, 1700000000000, 0))


def test_no_pk_names_takes_the_configured_key() -> None:
    msg = message("INSERT", data=[{"id": "1", "note": "a"}], pkNames=None)
    (change,) = decode(msg)
    assert change.key_columns is None
    assert normalized(msg, tables={"shop.orders": {"key": ["note"]}})["changes"][0]["key"] == {"note": "a"}
    assert "no key" in normalized(msg)["reason"]


def test_timestamps_and_order() -> None:
    msg = message("INSERT", data=[{"id": "1"}], id=3, es=2000, ts=2500)
    (dts,) = decode(msg)
    (canal,) = decode(msg, fmt="canal_json")
    assert (dts.commit_ts_us, dts.capture_ts_us) == (2_000_000, 2_500_000)
    assert dts.seq == seq_of(3, 2000, 0)
    assert canal.seq == seq_of(2000, 3, 0)  # open-source Canal: id is a client batch id
    (es_first,) = decode(msg, order="es")
    (id_first,) = decode(msg, fmt="canal_json", order="id")
    assert (es_first.seq, id_first.seq) == (canal.seq, dts.seq)
    # a later id wins over an earlier one whatever es says (DTS), es leads for canal_json
    (a,), (b,) = decode(message(data=[{"id": "1"}], id=10, es=5)), decode(message(data=[{"id": "1"}], id=11, es=4))
    assert a.seq < b.seq
    (a,), (b,) = (decode(message(data=[{"id": "1"}], id=i, es=e), fmt="canal_json") for i, e in ((10, 5), (11, 4)))
    assert a.seq > b.seq


def test_unknown_fields_and_undeclared_columns() -> None:
    # an extra envelope field is ignored; a row member mysqlType does not declare is dropped
    msg = message("UPDATE", data=[{"id": "1", "note": "b", "other": "x"}], old=[{"note": "a", "other": "y"}])
    msg["gtid"] = "abc"
    (change,) = decode(msg)
    assert change.after == {"id": "1", "note": "b"}
    assert change.before == {"id": "1", "note": "a"}
    assert change.extras["undeclared_columns"] == "other"
    # without declared types every member is a column
    (plain,) = decode(message("INSERT", data=[{"id": "1", "other": "x"}], mysqlType=None, sqlType=None))
    assert plain.after == {"id": "1", "other": "x"} and plain.col_types == {}


# --------------------------------------------------------------------------- types


@pytest.mark.parametrize(
    ("mysql_type", "spark"),
    [
        ("int(11)", "int"),
        ("INT", "int"),
        ("int(10) unsigned", "bigint"),
        ("bigint(20)", "bigint"),
        ("bigint(20) unsigned", "decimal(20,0)"),
        ("tinyint(1)", "tinyint"),
        ("tinyint unsigned", "smallint"),
        ("smallint(6)", "smallint"),
        ("mediumint(9)", "int"),
        ("decimal(12,2)", "decimal(12,2)"),
        ("NUMERIC(8,3)", "decimal(8,3)"),
        ("decimal(10,2) unsigned", "decimal(10,2)"),
        ("decimal", "decimal(10,0)"),
        ("decimal(65,30)", "string"),
        ("float", "float"),
        ("double", "double"),
        ("date", "date"),
        ("datetime(6)", "timestamp"),
        ("timestamp(3)", "timestamp"),
        ("time", "string"),
        ("year(4)", "int"),
        ("varchar(50)", "string"),
        ("longtext", "string"),
        ("enum('a','b')", "string"),
        ("json", "string"),
        ("VARBINARY(10)", "binary"),
        ("binary(16)", "binary"),
        ("longblob", "binary"),
        ("geometry", "string"),
        ("bit(1)", "decimal(20,0)"),
    ],
)
def test_mysql_type_mapping(mysql_type: str, spark: str) -> None:
    assert spark_type(mysql_type) == spark


def test_type_table_values_are_spark_types() -> None:
    from udfs.types import widest_type

    for signed, unsigned in MYSQL_TYPES.values():
        for t in (signed, unsigned):
            assert widest_type([t]) == (t, None)


def test_sql_type_is_the_fallback() -> None:
    msg = message(
        "INSERT",
        data=[{"id": "1", "amount": "1.5", "note": "a", "raw": "ab", "at": "2020-01-01 00:00:00"}],
        mysqlType={"id": "bigint(20)"},
        sqlType={"id": -5, "amount": 3, "note": 12, "raw": 2004, "at": 93},
    )
    (change,) = decode(msg)
    assert change.col_types == {
        "id": "bigint",
        "amount": "string",
        "note": "string",
        "raw": "binary",
        "at": "timestamp",
    }


def test_values_and_nulls_per_type() -> None:
    types = {
        "i": "int(11)",
        "b": "bigint(20) unsigned",
        "d": "decimal(38,10)",
        "f": "float",
        "ts": "datetime(6)",
        "dt": "date",
        "s": "varchar(10)",
        "bin": "varbinary(10)",
        "blob": "blob",
    }
    row = {
        "i": "-2147483648",
        "b": "18446744073709551615",
        "d": "1234567890123456789012345678.0123456789",
        "f": "9.9",
        "ts": "2020-05-13 12:38:35.123456",
        "dt": "2020-05-13",
        "s": 'héllo "q"',
        "bin": "nine.bin",
        "blob": "\x00\xff\x80",
    }
    (change,) = decode(message("INSERT", data=[row], mysqlType=types, sqlType=None, pkNames=["i"]))
    expected = dict(row)
    expected["bin"] = base64.b64encode(b"nine.bin").decode()
    expected["blob"] = base64.b64encode(b"\x00\xff\x80").decode()
    assert change.after == expected  # every value exact text; bytes as base64
    # numbers that are JSON numbers keep their digits
    (num,) = decode(
        '{"data":[{"i":12345678901234567890,"d":1.10}],"table":"t","id":1,"es":1,"type":"INSERT",'
        '"mysqlType":{"i":"bigint unsigned","d":"decimal(5,2)"}}'
    )
    assert num.after == {"i": "12345678901234567890", "d": "1.10"}
    # NULL stays NULL in every type
    (nulls,) = decode(message("INSERT", data=[dict.fromkeys(types)], mysqlType=types, sqlType=None))
    assert nulls.after == dict.fromkeys(types)
    # a binary value beyond ISO-8859-1 keeps its UTF-8 bytes
    (wide,) = decode(message("INSERT", data=[{"bin": "€"}], mysqlType={"bin": "blob"}, sqlType=None))
    assert base64.b64decode(wide.after["bin"]) == "€".encode()


# --------------------------------------------------------------------------- filters and options


def test_database_and_table_include_are_whole_name_regexes() -> None:
    opts = {"database_include": "^my.*", "table_include": "^prod.*"}
    assert decode(message(data=[{"id": "1"}], database="mydb", table="product"), **opts)
    for database, table in (("mydb", "project"), ("shop", "product"), ("mydb", "orders")):
        with pytest.raises(SkipRecord, match="filtered"):
            decode(message(data=[{"id": "1"}], database=database, table=table), **opts)
    # whole-name match: "prod" does not match "product"
    with pytest.raises(SkipRecord, match="filtered"):
        decode(message(data=[{"id": "1"}], table="product"), table_include="prod")
    # DDL of a filtered table is filtered too (as Flink does)
    with pytest.raises(SkipRecord, match="filtered"):
        decode(message("CREATE", isDdl=True, table="orders"), table_include="prod.*")


def test_bad_options_fail_the_decoder() -> None:
    with pytest.raises(ValueError, match="regular expression"):
        DtsCanalJsonDecoder({"table_include": "("})
    with pytest.raises(ValueError, match="order"):
        DtsCanalJsonDecoder({"order": "ts"})
    assert "bad decoder options" in normalized(message(data=[{"id": "1"}]), order="ts")["reason"]


def test_table_option_sends_every_message_to_one_table() -> None:
    (change,) = decode(message(data=[{"id": "1"}], table="schema_evolution_1"), table="event")
    assert change.source_table == "event"
    assert change.extras["event_table"] == "schema_evolution_1"


def test_tombstones_are_skipped() -> None:
    for text in (None, "", "null"):
        with pytest.raises(SkipRecord, match="tombstone"):
            decode(text)


# --------------------------------------------------------------------------- malformed


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("{not json", "not JSON"),
        ("[1,2]", "not an object"),
        (message(type=None, data=[{"id": "1"}]), "without type"),
        (message("UPSERT", data=[{"id": "1"}]), "unknown Canal type"),
        (message(data=[{"id": "1"}], table=None), "without table"),
        (message(data=[{"id": "1"}], table=5), "table is not a string"),
        (message(data=[{"id": "1"}], id=None), "without id"),
        (message(data=[{"id": "1"}], id=-1), "bad Canal id"),
        (message(data=[{"id": "1"}], id=True), "bad Canal id"),
        (message(data=[{"id": "1"}], es=None), "without es"),
        (message(data=[{"id": "1"}], es="soon"), "bad Canal es"),
        (message(data=[{"id": "1"}], isDdl="no"), "isDdl is not a boolean"),
        (message(data=None), "without rows"),
        (message(data=[]), "without rows"),
        (message(data={"id": "1"}), "not an array of row objects"),
        (message(data=["1"]), "not an array of row objects"),
        (message("DELETE", data=None, old=None), "without rows"),
        (message("UPDATE", data=[{"id": "1"}, {"id": "2"}], old=[{"id": "0"}]), "old has 1 rows, data has 2"),
        (message(data=[{"id": "1"}], pkNames="id"), "pkNames is not a list"),
        (message(data=[{"id": "1"}], mysqlType=["int"]), "mysqlType is not an object"),
        (message(data=[{"id": "1"}], mysqlType={"id": 4}), "mysqlType of 'id' is not a string"),
        (message(data=[{"id": "1"}], sqlType={"id": "4"}), "sqlType of 'id' is not an integer"),
    ],
)
def test_malformed_is_quarantined_with_reason(text, reason: str) -> None:
    with pytest.raises(QuarantineError, match=reason):
        decode(text)
    if not isinstance(text, str):
        assert reason in normalized(text)["reason"]
