"""The fast paths of the decode hot loop give the bytes of the plain formulations.

``key_text`` goes through orjson when it can, ``loads_exact`` reuses one decoder,
``event_id`` one JSON encoder, ``normalize`` caches table ids per batch: each must give
exactly what the stdlib call it replaces gives (changelogs written before must dedupe
against new ones).
"""

from __future__ import annotations

import hashlib
import json
import random

import pytest

from udfs.contract import Change, JsonNumber, QuarantineError, canonical_text, loads_exact
from udfs.decode import _event_id, decode_records, key_text, normalize, partition_name_bytes
from udfs.formats import connect_types

CHARS = ["a", "Z", "é", "😀", "\uffff", "\U00010000", ",", ":", '"', "\\", "\n", "\x00", "\x1f", "\x7f", "\u2028", " "]


def _text(rng: random.Random) -> str:
    return "".join(rng.choice(CHARS) for _ in range(rng.randint(0, 6)))


def test_key_text_is_json_dumps_compact_sorted():
    rng = random.Random(3)
    for _ in range(5000):
        key = {_text(rng): (None if rng.random() < 0.2 else _text(rng)) for _ in range(rng.randint(0, 4))}
        assert key_text(key) == json.dumps(key, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


@pytest.mark.parametrize(
    "key",
    [{"id": "\ud800"}, {"id": 1}, {"id": 2**70}, {"id": 1.5}, {"id": True}, {"id": JsonNumber("1.50")}, {1: "x"}],
)
def test_key_text_odd_values_fall_back_to_json_dumps(key):
    assert key_text(key) == json.dumps(key, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def test_event_id_hashes_json_dumps_of_the_identity():
    row = {
        "table_id": "db.t",
        "key_text": '{"id":"1"}',
        "op": "update",
        "seq": "00000000000000000001",
        "before": {"id": "1", "b": 'x "q" \\ ü'},
        "before_cols": ["id", "b"],
        "after": {"id": "1", "b": None},
        "after_cols": ["id", "b"],
        "_part": 1,
    }
    ident = [row[k] for k in ("table_id", "key_text", "op", "seq", "before", "before_cols", "after", "after_cols")]
    ident.append(1)
    expected = hashlib.sha256(json.dumps(ident, sort_keys=True, ensure_ascii=False).encode()).hexdigest()[:32]
    assert _event_id(row) == expected


@pytest.mark.parametrize(
    "text",
    [
        '{"a": 1.50, "b": 1e400, "c": NaN, "d": 18446744073709551616, "a": -0}',
        '"\\ud83d\\ude00"',
        "\ufeff{}",
        b'{"a": 1}',
        b"\xef\xbb\xbf{}",
        "[1,]",
        "",
        "[" * 5000 + "]" * 5000,
    ],
)
def test_loads_exact_matches_json_loads(text):
    try:
        expected = json.loads(text, parse_float=JsonNumber, parse_constant=JsonNumber)
    except (ValueError, RecursionError):
        with pytest.raises(QuarantineError):
            loads_exact(text)
        return
    got = loads_exact(text)
    assert got == expected and type(got) is type(expected)


def test_canonical_text_of_str_and_subclass():
    assert canonical_text("x") == "x"
    value = canonical_text(JsonNumber("1.50"))
    assert value == "1.50" and type(value) is str


@pytest.mark.parametrize(
    ("value", "schema"),
    [
        ("x", {"type": "string", "field": "c"}),
        (JsonNumber("1.5"), {"type": "string", "field": "c"}),
        (5, {"type": "int64", "field": "c"}),
        (True, {"type": "int64", "field": "c"}),
        (None, {"type": "int32"}),
        ([1, 2], {"type": "array"}),
        ({"a": 1}, None),
        (None, None),
        ("AAE=", {"type": "bytes", "name": "org.apache.kafka.connect.data.Decimal", "parameters": {"scale": "2"}}),
    ],
)
def test_decode_value_plain_types(value, schema):
    try:
        text, kind = connect_types.decode_value(value, schema)
    except QuarantineError as exc:
        assert "column" in str(exc)
        return
    if schema is None:
        assert kind is None and text == (None if value is None else canonical_text(value))
    else:
        assert kind == connect_types.logical_type(schema)


def test_normalize_table_cache_gives_the_same_rows():
    tables = {"shop.items": {"key": ["id"]}, "t": {"key": ["id"]}}
    changes = [
        Change(op="insert", source_db="Shop", source_table="Items", after={"ID": "1"}),
        Change(op="insert", source_db="other", source_table="T", after={"id": "2"}),
        Change(op="insert", source_db="x", source_schema="Y", source_table="Z", key={"k": "3"}, after={"k": "3"}),
    ]
    cache: dict = {}
    for change in changes * 2:
        assert normalize(change, tables, cache) == normalize(change, tables)
    assert partition_name_bytes("a/b") == 5


def test_decode_records_duplicate_column_names_still_quarantined():
    opts = json.dumps({"format": "debezium_json", "options": {}, "tables": {"t": {"key": ["id"]}}})
    text = json.dumps({"op": "c", "after": {"id": 1, "ID": 2}, "source": {"table": "t"}})
    [result] = decode_records(opts, [text])
    assert result["status"] == "quarantined"
    assert result["reason"] == "column 'ID' appears twice (names are case-insensitive)"
