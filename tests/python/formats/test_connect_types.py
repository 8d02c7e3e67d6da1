"""Kafka Connect / Debezium logical types: exact text and Spark types, edge values."""

from __future__ import annotations

import base64

import pytest

from udfs.contract import JsonNumber, QuarantineError, loads_exact
from udfs.formats.connect_types import (
    UNAVAILABLE,
    decode_row,
    decode_value,
    field_schemas,
    is_unavailable,
    logical_type,
    split_envelope,
)


def b64_int(n: int, length: int | None = None) -> str:
    """Base64 of the big-endian two's-complement bytes of ``n`` (as Connect writes it)."""
    length = length or max(1, (n.bit_length() + 8) // 8)
    return base64.b64encode(n.to_bytes(length, "big", signed=True)).decode()


def decimal_schema(scale: int, precision: int | None = None, field: str = "amount") -> dict:
    params = {"scale": str(scale)}
    if precision is not None:
        params["connect.decimal.precision"] = str(precision)
    return {
        "type": "bytes",
        "name": "org.apache.kafka.connect.data.Decimal",
        "version": 1,
        "parameters": params,
        "field": field,
    }


def named(type_: str, name: str, field: str = "c") -> dict:
    return {"type": type_, "name": name, "optional": True, "field": field}


# --------------------------------------------------------------------------- Decimal


@pytest.mark.parametrize(
    ("unscaled", "scale", "expected"),
    [
        (0, 0, "0"),
        (0, 3, "0.000"),
        (-12340, 3, "-12.340"),
        (12340, 3, "12.340"),
        (5, 3, "0.005"),
        (-5, 3, "-0.005"),
        (-1, 0, "-1"),
        (127, 0, "127"),
        (128, 0, "128"),  # needs a leading 0x00 byte: sign handling
        (-129, 2, "-1.29"),
        (10**38 - 1, 0, "9" * 38),
        (-(10**38 - 1), 10, "-" + "9" * 28 + "." + "9" * 10),
        (12345678901234567890123456789012345678, 18, "12345678901234567890.123456789012345678"),
    ],
)
def test_decimal_exact_text(unscaled: int, scale: int, expected: str) -> None:
    text, kind = decode_value(b64_int(unscaled), decimal_schema(scale))
    assert text == expected
    assert kind == f"decimal(38,{scale})"


def test_decimal_precision_from_schema() -> None:
    assert decode_value(b64_int(-12340), decimal_schema(3, 10)) == ("-12.340", "decimal(10,3)")
    # precision must hold the scale plus one integer digit
    assert logical_type(decimal_schema(5, 3)) == "decimal(6,5)"
    # wider than Spark's 38: keep the exact text as a string
    assert decode_value(b64_int(10**45), decimal_schema(2, 50)) == ("1" + "0" * 43 + ".00", "string")


def test_decimal_negative_scale_and_numeric_json() -> None:
    assert decode_value(b64_int(12), decimal_schema(-2, 5)) == ("1200", "decimal(7,0)")
    # decimal.format=NUMERIC writes a JSON number: re-scaled exactly, never via float
    assert decode_value(JsonNumber("12.34"), decimal_schema(3))[0] == "12.340"
    assert decode_value(JsonNumber("-0.1E+1"), decimal_schema(2))[0] == "-1.00"
    assert decode_value(7, decimal_schema(1))[0] == "7.0"
    with pytest.raises(QuarantineError, match="amount"):
        decode_value(JsonNumber("1.2345"), decimal_schema(2))


def test_decimal_leading_padding_bytes() -> None:
    # redundant sign-extension bytes do not change the value
    assert decode_value(b64_int(-5, 8), decimal_schema(1))[0] == "-0.5"
    assert decode_value(b64_int(5, 8), decimal_schema(1))[0] == "0.5"


@pytest.mark.parametrize("bad", ["not base64!", "AAA", "A===", 12.5, True, ["AA=="]])
def test_decimal_bad_value_quarantines_with_column(bad) -> None:
    if isinstance(bad, float):
        bad = JsonNumber("12.5x")
    with pytest.raises(QuarantineError, match="amount"):
        decode_value(bad, decimal_schema(2))


def test_decimal_bad_parameters() -> None:
    with pytest.raises(QuarantineError, match="price"):
        decode_value("AA==", {"type": "bytes", "name": "org.apache.kafka.connect.data.Decimal", "field": "price"})
    with pytest.raises(QuarantineError, match="price"):
        decode_value("AA==", decimal_schema("x", field="price"))  # type: ignore[arg-type]


def test_variable_scale_decimal() -> None:
    schema = named("struct", "io.debezium.data.VariableScaleDecimal", "n")
    assert decode_value({"scale": 4, "value": b64_int(-123456789)}, schema) == ("-12345.6789", "string")
    assert decode_value({"scale": 0, "value": b64_int(0)}, schema) == ("0", "string")
    assert decode_value({"scale": 40, "value": b64_int(1)}, schema)[0] == "0." + "0" * 39 + "1"
    with pytest.raises(QuarantineError, match="n"):
        decode_value({"scale": 1, "value": "%%%"}, schema)
    with pytest.raises(QuarantineError, match="n"):
        decode_value({"value": "AA=="}, schema)


# --------------------------------------------------------------------------- dates and times


@pytest.mark.parametrize("name", ["io.debezium.time.Date", "org.apache.kafka.connect.data.Date"])
@pytest.mark.parametrize(
    ("days", "expected"),
    [
        (0, "1970-01-01"),
        (-1, "1969-12-31"),
        (-719162, "0001-01-01"),
        (-25567, "1900-01-01"),
        (19782, "2024-02-29"),  # leap day
        (2932896, "9999-12-31"),
    ],
)
def test_dates(name: str, days: int, expected: str) -> None:
    assert decode_value(days, named("int32", name)) == (expected, "date")


def test_date_out_of_range_and_wrong_kind() -> None:
    with pytest.raises(QuarantineError, match="d1"):
        decode_value(10**9, named("int32", "io.debezium.time.Date", "d1"))
    with pytest.raises(QuarantineError, match="d1"):
        decode_value("2024-01-01", named("int32", "io.debezium.time.Date", "d1"))


@pytest.mark.parametrize(
    ("name", "value", "expected"),
    [
        ("io.debezium.time.Time", 0, "00:00:00.000000"),
        ("io.debezium.time.Time", 45296789, "12:34:56.789000"),
        ("org.apache.kafka.connect.data.Time", 86399999, "23:59:59.999000"),
        ("io.debezium.time.MicroTime", 45296789012, "12:34:56.789012"),
        ("io.debezium.time.MicroTime", -1, "-00:00:00.000001"),  # MySQL TIME may be negative
        ("io.debezium.time.MicroTime", 838 * 3600 * 10**6, "838:00:00.000000"),  # ... or > 24 h
        ("io.debezium.time.NanoTime", 45296789012345, "12:34:56.789012345"),
    ],
)
def test_times(name: str, value: int, expected: str) -> None:
    assert decode_value(value, named("int64", name)) == (expected, "string")


@pytest.mark.parametrize(
    ("name", "value", "expected"),
    [
        ("io.debezium.time.Timestamp", 0, "1970-01-01T00:00:00.000000Z"),
        ("org.apache.kafka.connect.data.Timestamp", 1707047996013, "2024-02-04T11:59:56.013000Z"),
        ("io.debezium.time.Timestamp", -1, "1969-12-31T23:59:59.999000Z"),
        ("io.debezium.time.Timestamp", -2208988800000, "1900-01-01T00:00:00.000000Z"),
        ("io.debezium.time.MicroTimestamp", 1709164800123456, "2024-02-29T00:00:00.123456Z"),
        ("io.debezium.time.MicroTimestamp", -1, "1969-12-31T23:59:59.999999Z"),
        ("io.debezium.time.MicroTimestamp", -86399999999, "1969-12-31T00:00:00.000001Z"),
        ("io.debezium.time.NanoTimestamp", 1709164800123456789, "2024-02-29T00:00:00.123456789Z"),
        ("io.debezium.time.NanoTimestamp", -1, "1969-12-31T23:59:59.999999999Z"),
        ("io.debezium.time.NanoTimestamp", 0, "1970-01-01T00:00:00.000000000Z"),
    ],
)
def test_timestamps(name: str, value: int, expected: str) -> None:
    assert decode_value(value, named("int64", name)) == (expected, "timestamp")


def test_timestamp_out_of_range_and_float() -> None:
    with pytest.raises(QuarantineError, match="ts"):
        decode_value(10**20, named("int64", "io.debezium.time.MicroTimestamp", "ts"))
    with pytest.raises(QuarantineError, match="ts"):
        decode_value(JsonNumber("1.5"), named("int64", "io.debezium.time.Timestamp", "ts"))


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("2021-03-04T05:06:07.123456+02:00", "2021-03-04T03:06:07.123456Z"),
        ("2021-03-04T05:06:07.123456+05:30", "2021-03-03T23:36:07.123456Z"),
        ("2021-03-04T20:06:07.5-08:00", "2021-03-05T04:06:07.500000Z"),
        ("2024-02-29T23:30:00-08:00", "2024-03-01T07:30:00.000000Z"),
        ("2024-03-01T03:00:00.000000001+05:30", "2024-02-29T21:30:00.000000001Z"),
        ("1969-12-31T23:59:59.999999Z", "1969-12-31T23:59:59.999999Z"),
        ("1900-01-01T00:00:00+0100", "1899-12-31T23:00:00.000000Z"),
    ],
)
def test_zoned_timestamp(value: str, expected: str) -> None:
    assert decode_value(value, named("string", "io.debezium.time.ZonedTimestamp")) == (expected, "timestamp")


@pytest.mark.parametrize("bad", ["2021-03-04 05:06:07", "2021-02-30T00:00:00Z", 12])
def test_zoned_timestamp_bad(bad) -> None:
    with pytest.raises(QuarantineError, match="zt"):
        decode_value(bad, named("string", "io.debezium.time.ZonedTimestamp", "zt"))


# --------------------------------------------------------------------------- plain types


@pytest.mark.parametrize(
    ("type_", "value", "expected"),
    [
        ("int8", -128, ("-128", "tinyint")),
        ("int16", 32767, ("32767", "smallint")),
        ("int32", 0, ("0", "int")),
        ("int64", -9223372036854775808, ("-9223372036854775808", "bigint")),
        ("float32", JsonNumber("1.5"), ("1.5", "float")),
        ("float64", JsonNumber("-0.1e-300"), ("-0.1e-300", "double")),
        ("float64", 3, ("3", "double")),
        ("float64", "NaN", ("NaN", "double")),
        ("boolean", True, ("true", "boolean")),
        ("boolean", False, ("false", "boolean")),
        ("string", "héllo", ("héllo", "string")),
        ("string", "", ("", "string")),
        ("bytes", "3q2+7w==", ("3q2+7w==", "binary")),
        ("bytes", "", ("", "binary")),
    ],
)
def test_plain_types(type_: str, value, expected) -> None:
    assert decode_value(value, {"type": type_, "field": "c"}) == expected


def test_json_and_nested_values() -> None:
    assert decode_value('{"a": 1}', named("string", "io.debezium.data.Json")) == ('{"a": 1}', "string")
    assert decode_value({"b": 1, "a": [1, 2]}, {"type": "struct", "field": "s"}) == (
        '{"a":[1,2],"b":1}',
        "string",
    )
    assert decode_value(["x"], {"type": "array", "items": {"type": "string"}}) == ('["x"]', "string")


@pytest.mark.parametrize(
    ("type_", "value"),
    [("int32", "1"), ("int64", True), ("int32", JsonNumber("1.0")), ("boolean", 1), ("float64", "abc")],
)
def test_plain_type_mismatch_quarantines(type_: str, value) -> None:
    with pytest.raises(QuarantineError, match="col_x"):
        decode_value(value, {"type": type_, "field": "col_x"})


@pytest.mark.parametrize("bad", ["@@@@", "AAA", "AA=A", 5])
def test_bytes_bad_base64(bad) -> None:
    with pytest.raises(QuarantineError, match="blob"):
        decode_value(bad, {"type": "bytes", "field": "blob"})


def test_column_argument_overrides_schema_field() -> None:
    with pytest.raises(QuarantineError, match="other"):
        decode_value("!!", {"type": "bytes", "field": "blob"}, column="other")


def test_unknown_logical_name_falls_back_to_primitive() -> None:
    assert decode_value("1.50", named("string", "com.xxx.cdc.data.Decimal")) == ("1.50", "string")
    assert decode_value(2024, named("int32", "io.debezium.time.Year")) == ("2024", "int")


def test_no_schema_keeps_canonical_text() -> None:
    assert decode_value(5, None) == ("5", None)
    assert decode_value(JsonNumber("1.10"), None) == ("1.10", None)
    assert decode_value(None, None) == (None, None)


# --------------------------------------------------------------------------- nulls

NULL_CASES = [
    (decimal_schema(2, 10), "decimal(10,2)"),
    (named("struct", "io.debezium.data.VariableScaleDecimal"), "string"),
    (named("int32", "io.debezium.time.Date"), "date"),
    (named("int32", "org.apache.kafka.connect.data.Date"), "date"),
    (named("int32", "io.debezium.time.Time"), "string"),
    (named("int64", "io.debezium.time.MicroTime"), "string"),
    (named("int64", "io.debezium.time.NanoTime"), "string"),
    (named("int32", "org.apache.kafka.connect.data.Time"), "string"),
    (named("int64", "io.debezium.time.Timestamp"), "timestamp"),
    (named("int64", "io.debezium.time.MicroTimestamp"), "timestamp"),
    (named("int64", "io.debezium.time.NanoTimestamp"), "timestamp"),
    (named("int64", "org.apache.kafka.connect.data.Timestamp"), "timestamp"),
    (named("string", "io.debezium.time.ZonedTimestamp"), "timestamp"),
    (named("string", "io.debezium.data.Json"), "string"),
    ({"type": "bytes"}, "binary"),
    ({"type": "int8"}, "tinyint"),
    ({"type": "int16"}, "smallint"),
    ({"type": "int32"}, "int"),
    ({"type": "int64"}, "bigint"),
    ({"type": "float32"}, "float"),
    ({"type": "float64"}, "double"),
    ({"type": "boolean"}, "boolean"),
    ({"type": "string"}, "string"),
]


@pytest.mark.parametrize(("schema", "kind"), NULL_CASES)
def test_null_for_every_type(schema: dict, kind: str) -> None:
    assert decode_value(None, schema) == (None, kind)


# --------------------------------------------------------------------------- unavailable

PLACEHOLDER_B64 = base64.b64encode(UNAVAILABLE.encode()).decode()


def test_is_unavailable() -> None:
    assert PLACEHOLDER_B64 == "X19kZWJleml1bV91bmF2YWlsYWJsZV92YWx1ZQ=="
    assert is_unavailable(UNAVAILABLE, {"type": "string"})
    assert is_unavailable(PLACEHOLDER_B64, {"type": "bytes"})
    assert is_unavailable(PLACEHOLDER_B64, decimal_schema(2))
    assert is_unavailable(
        {"scale": 0, "value": PLACEHOLDER_B64}, named("struct", "io.debezium.data.VariableScaleDecimal")
    )
    assert is_unavailable([UNAVAILABLE], {"type": "array", "items": {"type": "string"}})
    assert is_unavailable(UNAVAILABLE, None)
    assert is_unavailable(PLACEHOLDER_B64, None)
    # base64 text in a string column is data, not the placeholder
    assert not is_unavailable(PLACEHOLDER_B64, {"type": "string"})
    assert not is_unavailable("AA==", {"type": "bytes"})
    assert not is_unavailable("not base64!", {"type": "bytes"})
    assert not is_unavailable(None, {"type": "string"})
    assert not is_unavailable(5, {"type": "int32"})


# --------------------------------------------------------------------------- structs

STRUCT = loads_exact(
    '{"type":"struct","fields":['
    '{"type":"int32","optional":false,"field":"id"},'
    '{"type":"bytes","optional":true,"name":"org.apache.kafka.connect.data.Decimal",'
    '"parameters":{"scale":"2","connect.decimal.precision":"8"},"field":"price"},'
    '{"type":"string","optional":true,"field":"notes"}],"optional":true,"name":"t.Value"}'
)


def test_field_schemas() -> None:
    fields = field_schemas(STRUCT)
    assert list(fields) == ["id", "price", "notes"]
    assert fields["price"]["parameters"]["scale"] == "2"
    assert field_schemas({}) == {}
    assert field_schemas(None) == {}
    assert field_schemas({"type": "struct", "fields": "x"}) == {}


def test_decode_row() -> None:
    row = {"id": 7, "price": b64_int(-1999), "notes": UNAVAILABLE, "extra": JsonNumber("1.0")}
    values, types, gone = decode_row(row, STRUCT)
    assert values == {"id": "7", "price": "-19.99", "extra": "1.0"}
    assert types == {"id": "int", "price": "decimal(8,2)", "notes": "string"}
    assert gone == ["notes"]
    assert decode_row(None, STRUCT) == (None, types, [])
    # non-Debezium sources: the placeholder text is plain data
    values, _, gone = decode_row({"notes": UNAVAILABLE}, STRUCT, placeholders=False)
    assert (values, gone) == ({"notes": UNAVAILABLE}, [])
    with pytest.raises(QuarantineError):
        decode_row([1], STRUCT)  # type: ignore[arg-type]


def test_split_envelope() -> None:
    assert split_envelope({"schema": {}, "payload": {"op": "c"}}) == (None, {"op": "c"})
    assert split_envelope({"schema": STRUCT, "payload": None}) == (STRUCT, None)
    assert split_envelope({"op": "c", "payload": 1}) == (None, {"op": "c", "payload": 1})
    assert split_envelope({"op": "c"}) == (None, {"op": "c"})
