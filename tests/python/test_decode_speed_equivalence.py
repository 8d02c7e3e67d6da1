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

import pyarrow as pa
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


# ------------------------------------------------- cdc_read_records: lines cut by Arrow

LINE_BYTES = [
    b"a",
    b"{}",
    b" ",
    b"\t",
    b"\x0b",
    b"\x0c",
    b"\x00",
    b"\n",
    b"\r",
    b"\r\n",
    "é".encode(),
    "😀".encode(),
    "\u2028".encode(),
    b"\xef\xbb\xbf",  # a BOM, also in the middle of a file
    b"\xff",  # never valid UTF-8
    b"\xc0\x80",  # overlong NUL
    b"\xed\xa0\x80",  # an encoded surrogate: not UTF-8
    b"\xf4\x90\x80\x80",  # above U+10FFFF
    b"\xe2\x82",  # a truncated sequence
]


def test_read_records_lines_fast_path_equals_split_lines():
    """``file_records_struct`` (Arrow cuts the lines) gives exactly the records of
    ``split_file`` turned into Arrow one dict at a time, for hostile bytes too."""
    from test_properties import RECORDS_TYPE

    from udfs.framing import split_file
    from udfs.spark_udfs import file_records_struct, valid_lines_struct

    struct_type = RECORDS_TYPE.value_type
    rng = random.Random(11)
    contents = [b"", b"\n", b"\xef\xbb\xbf", b"\xef\xbb\xbf{}\n{}", b"{}\n\n \n{}", b"{}\r\n{}\r\r\n"]
    contents += [b"".join(rng.choice(LINE_BYTES) for _ in range(rng.randint(0, 30))) for _ in range(3000)]
    fast = 0
    for content in contents:
        reference = pa.array([r.__dict__ for r in split_file(content, "lines")], type=struct_type)
        built = file_records_struct(content, "lines", None, struct_type)
        assert built.equals(reference), content
        fast += valid_lines_struct(content, struct_type) is not None
    assert fast > 200, "the Arrow path must be taken by many of the contents"


KCAT_LINES = [
    b'{"topic":"t","partition":0,"offset":7,"ts":1700000000000,"key":"{\\"id\\":1}","payload":"{\\"op\\":\\"c\\"}"}',
    b'{"payload":"\\u00e9\\ud83d\\ude00 \\n \\" \\\\","key":null,"topic":null,"partition":null,"offset":null}',
    b'{"payload":null,"key":"k","partition":2147483647,"offset":9223372036854775807,"ts":-9223372036854775808}',
    b'{"payload":"x","partition":-2147483648,"offset":-1,"extra":[1,{"a":NaN}]}',  # NaN: stdlib only
    b'{"payload":"x","extra":{"nested":[1,2,{"b":null}]},"headers":["h","v"]}',
    b'{"payload":"first","payload":"second"}',  # the last of a repeated field, as json.loads
    b'{"payload":"x","key":{"id":1}}',  # a key that is not text: written back as JSON
    b'{"payload":"x","key":12}',
    b'{"payload":"x","partition":2147483648}',  # out of int range
    b'{"payload":"x","partition":true}',
    b'{"payload":"x","offset":1.0}',
    b'{"payload":"x","offset":9223372036854775808}',  # out of bigint range
    b'{"payload":"x","ts":-9223372036854775809}',
    b'{"payload":"x","ts":18446744073709551615}',
    b'{"payload":"x","topic":3}',
    b'{"payload":5}',
    b'{"key":"k"}',  # no payload
    b"[1,2]",
    b'"text"',
    b"{",
    b'{"payload":"a\\ud800"}',  # a lone surrogate escape
    b'{"payload":"\xff"}',  # not UTF-8
    b'{"payload":"\xc3\xa9"}',
    b'{"payload":"x"} {"payload":"y"}',  # two values on one line
    b'{"payload":"x",',
    b'"payload":"y"}',
    b"[" * 3000 + b"]" * 3000,  # nested too deeply for the stdlib
    b"",
    b" \t",
    b"\r",
    b"\xef\xbb\xbf",
]


def test_read_records_kcat_fast_path_equals_split_kcat():
    """``file_records_struct`` of a ``kcat`` file (each line parsed straight into its
    fields by msgspec) gives exactly the records of ``split_kcat`` turned into Arrow one
    dict at a time, for hostile lines too: any line the fast path cannot take exactly
    sends the whole file to ``split_kcat``."""
    from test_properties import RECORDS_TYPE

    from udfs.framing import split_file
    from udfs.spark_udfs import file_records_struct, kcat_struct

    struct_type = RECORDS_TYPE.value_type
    rng = random.Random(12)
    good = KCAT_LINES[:3] + KCAT_LINES[4:6] + [b"", b" \t"]
    contents = [b"", b"\n", b"\xef\xbb\xbf" + KCAT_LINES[0], KCAT_LINES[0] + b"\r\n" + KCAT_LINES[1]]
    contents += [b"\n".join(rng.choice(good) for _ in range(rng.randint(0, 8))) for _ in range(300)]
    contents += [b"\n".join(rng.choice(KCAT_LINES) for _ in range(rng.randint(1, 6))) for _ in range(1500)]
    fast = slow = 0
    for content in contents:
        reference = pa.array([r.__dict__ for r in split_file(content, "kcat")], type=struct_type)
        built = file_records_struct(content, "kcat", None, struct_type)
        assert built.equals(reference), content[:300]
        taken = kcat_struct(content, struct_type) is not None
        fast += taken
        slow += not taken
    assert fast > 300 and slow > 1000, (fast, slow)


# --------------------------------------------------- loads_exact: msgspec, then stdlib

JSON_TOKENS = [
    "{", "}", "[", "]", ",", ":", " ", "\n", "\t", '"a"', '"é😀"', '"\\u00e9"', '"\\ud83d\\ude00"',
    '"\\ud800"', '"\\n\\"\\\\"', '"\x01"', "0", "-0", "12", "-7", "1.50", "1e5", "-2.5E-3", "1e400",
    "18446744073709551616", "-9223372036854775809", "NaN", "Infinity", "true", "false", "null",
    "01", ".5", "1.", "tru", "\u00a0", "\u2028",
]  # fmt: skip


def _typed(value):
    """``value`` with every type spelled out (JsonNumber and str compare equal)."""
    if isinstance(value, dict):
        return ("dict", [(k, _typed(v)) for k, v in value.items()])
    if isinstance(value, list):
        return ("list", [_typed(v) for v in value])
    return (type(value).__name__, value)


def _valid_doc(rng: random.Random, depth: int = 0) -> str:
    scalars = ['"a"', '"é😀\\n"', "0", "-0", "12", "1.50", "1e5", "-2.5E-3", "18446744073709551616", "null", "true"]
    if depth > 3 or rng.random() < 0.3:
        return rng.choice(scalars)
    if rng.random() < 0.5:
        return "[" + ",".join(_valid_doc(rng, depth + 1) for _ in range(rng.randint(0, 3))) + "]"
    keys = ['"a"', '"b"', '"a"', '"é"']  # duplicate keys: the last value wins, in the first place
    return "{" + ",".join(f"{rng.choice(keys)}:{_valid_doc(rng, depth + 1)}" for _ in range(rng.randint(0, 3))) + "}"


def _outcome(text: str):
    try:
        return ("ok", _typed(loads_exact(text)))
    except QuarantineError as exc:
        return ("quarantined", str(exc))


def test_loads_exact_fast_parser_gives_the_stdlib_values_and_errors(monkeypatch):
    """Whatever msgspec parses, it parses to the values (and types) of the stdlib
    parser; whatever it rejects ends in the stdlib's value or quarantine reason: the
    outcome of ``loads_exact`` with msgspec is the outcome without it, text by text."""
    from udfs import contract

    fast = contract._FAST_JSON
    assert fast is not None, "msgspec is a pinned dependency"
    rng = random.Random(5)
    texts = [_valid_doc(rng) for _ in range(3000)]
    texts += ["".join(rng.choice(JSON_TOKENS) for _ in range(rng.randint(1, 12))) for _ in range(5000)]
    texts += ["1" * 4301, "[" * 2000 + "]" * 2000, '{"a": "\\ud800"}']
    with_fast = [_outcome(t) for t in texts]
    monkeypatch.setattr(contract, "_FAST_JSON", None)
    stdlib_only = [_outcome(t) for t in texts]
    for text, got, expected in zip(texts, with_fast, stdlib_only, strict=True):
        assert got == expected, text
    kinds = [o[0] for o in with_fast]
    assert kinds.count("ok") > 3000 and kinds.count("quarantined") > 1000, "both outcomes must be exercised"
    taken = 0
    for text in texts[:3000]:
        try:
            fast.decode(text)
            taken += 1
        except Exception:  # noqa: BLE001, S112 - counting the documents msgspec takes
            continue
    assert taken > 2900, "the valid documents must take the msgspec path"


def test_split_kcat_fast_parser_gives_the_stdlib_records(monkeypatch):
    """msgspec reads the ``kcat -J`` wrapper into the records ``json.loads`` gives,
    quarantine reasons included, line by line."""
    from udfs import framing

    assert framing._FAST_JSON is not None, "msgspec is a pinned dependency"
    rng = random.Random(13)
    values = [
        '"t"', '"\\ud800"', '"é\\n"', "null", "0", "-1", "2147483648", "9223372036854775808", "1.5", "NaN",
        "1e400", "true", "{}", "[]", '{"a":1}', '"{\\"op\\":\\"c\\"}"', "1" * 4301,
    ]  # fmt: skip
    fields = ["topic", "partition", "offset", "ts", "key", "payload", "payload", "extra"]
    lines = []
    for _ in range(4000):
        parts = [f'"{rng.choice(fields)}":{rng.choice(values)}' for _ in range(rng.randint(0, 6))]
        if rng.random() < 0.6:  # a well-formed message, perhaps with odd fields before it
            parts += ['"topic":"t"', '"partition":0', f'"offset":{rng.randint(0, 2**63 - 1)}', '"payload":"{}"']
        line = "{" + ",".join(parts) + "}"
        if rng.random() < 0.1:  # broken JSON too
            line = line[: rng.randint(0, len(line))]
        lines.append(line)
    content = "\n".join(lines).encode()
    with_fast = framing.split_file(content, "kcat")
    monkeypatch.setattr(framing, "_FAST_JSON", None)
    stdlib_only = framing.split_file(content, "kcat")
    assert with_fast == stdlib_only
    errors = sum(r.error is not None for r in with_fast)
    assert 200 < errors < len(with_fast) - 200, "good and bad lines must both be exercised"
