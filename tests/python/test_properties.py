"""Property tests: mutated records never crash the decoding, never lose a record and
never disturb their valid neighbours.

One property test per format family, at the pure level (``framing.split_file`` +
``decode.decode_records``, no Spark, so they run many examples fast):

* Debezium JSON family (``debezium_json``, ``cdl_json``, ``lindorm_json``), ``lines``;
* Arcion internal JSON, ``documents`` (pretty-printed documents);
* Arcion internal CSV, ``csv``;
* Arcion Kafka JSON, ``kcat``;
* Alibaba Cloud DTS: Canal JSON and Shareplex JSON in ``lines``, DTS Avro values in
  ``length_prefixed`` (byte flips, truncations, insertions inside a value whose length
  prefix is kept right, and a last record whose announced length runs past the end).

Each example builds valid records, mutates one or two of them (structurally: drop or
duplicate a field, change a value's JSON type, rename a key; and/or byte-wise: truncate,
flip a byte, insert invalid UTF-8, a NUL byte, a quote, a newline...), frames them into
one file between valid neighbours and asserts, as the pipeline would see it
(``stg_landing__records``: a framing error quarantines the record whatever the
decoder says):

* no exception escapes, including the Arrow conversion the Spark UDFs do on the
  framing output and on the decode results;
* every record the framing produced gets exactly one result, and
  records read == ok + quarantined + skipped;
* every quarantined record has a non-empty reason; a record whose bytes are not UTF-8
  keeps them as base64;
* the valid neighbours decode to exactly the changes (``event_id``, op, key, images)
  they decode to in a file without the bad records. Where a framing cannot resynchronise
  after a broken record, only what is documented is asserted: ``documents`` makes the
  rest of the file one quarantined record (its end cannot be found), and a ``csv`` row
  with an unbalanced quote runs into the following rows (RFC 4180), so there the
  neighbours *before* the bad record are compared, and those after it only when the
  bad record's quotes are balanced.

Plus one pipeline test (real Spark + dbt, ``run_pipeline``) over a deterministic
(fixed seed) batch of mutated records in two formats: the per-file audit balances,
every record is in the changelog, the quarantine or the skipped count exactly as the
pure decoding predicts, and the state of the valid neighbours equals the state of a
run over the valid records alone.
"""

from __future__ import annotations

import base64
import copy
import json
import random
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import yaml
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from udfs.decode import DECODE_RESULT_DDL, decode_records
from udfs.framing import RawRecord, split_file
from udfs.spark_udfs import RECORDS_DDL, file_records_struct

# ----------------------------------------------------------------------------- Arrow

_SIMPLE_TYPES = {"string": pa.string(), "int": pa.int32(), "bigint": pa.int64(), "boolean": pa.bool_()}


def arrow_type(ddl: str) -> pa.DataType:
    """The Arrow type Spark exchanges a DDL type as (string, int, bigint, struct, array, map).

    pyspark's own parser needs a running JVM; this one keeps the pure tests Spark-free.
    """
    parsed, rest = _parse_ddl(ddl)
    assert not rest.strip(), rest
    return parsed


def _parse_ddl(s: str) -> tuple[pa.DataType, str]:
    s = s.lstrip()
    if s.startswith("struct<"):
        s, fields = s[len("struct<") :], []
        while True:
            name, s = s.split(":", 1)
            field_type, s = _parse_ddl(s)
            fields.append(pa.field(name.strip(), field_type))
            s = s.lstrip()
            if s[0] == ">":
                return pa.struct(fields), s[1:]
            s = s[1:].lstrip()  # ","
    if s.startswith("array<"):
        item, s = _parse_ddl(s[len("array<") :])
        return pa.list_(item), s.lstrip()[1:]
    if s.startswith("map<"):
        key, s = _parse_ddl(s[len("map<") :])
        value, s = _parse_ddl(s.lstrip()[1:])
        return pa.map_(key, value), s.lstrip()[1:]
    end = 0
    while end < len(s) and (s[end].isalnum() or s[end] == "_"):
        end += 1
    return _SIMPLE_TYPES[s[:end].lower()], s[end:]


RECORDS_TYPE = arrow_type(RECORDS_DDL)
DECODE_TYPE = arrow_type(DECODE_RESULT_DDL)

# ----------------------------------------------------------------------------- choices


class Chooser:
    """Where the random choices come from: hypothesis (``data.draw``) or a seeded
    ``random.Random`` (the pipeline test: deterministic, no hypothesis inside Spark)."""

    def __init__(self, data: Any = None, rng: random.Random | None = None) -> None:
        self.data, self.rng = data, rng

    def integer(self, lo: int, hi: int) -> int:
        return self.data.draw(st.integers(lo, hi)) if self.data is not None else self.rng.randint(lo, hi)

    def choice(self, options: Sequence[Any]) -> Any:
        return self.data.draw(st.sampled_from(options)) if self.data is not None else self.rng.choice(options)

    def text(self) -> str:
        if self.data is not None:
            return self.data.draw(st.text(st.characters(codec="utf-8"), max_size=8))
        return self.rng.choice(NAMES)


#: values for text columns: unicode, quotes, separators, NUL, "null" spelled out
NAMES = ("", "a", "Zoë", "日本", "😀", "q\"uo'te", "a,b", "line\nbreak", "cr\r\n", "nul\x00", "NULL", "null", " sp ")


class Raw(str):
    """JSON text pasted verbatim by :func:`dump` (a value ``json.dumps`` cannot write)."""


class Pairs(list):
    """A JSON object as a list of (key, value) pairs: it can hold a key twice."""


def dump(value: Any) -> str:
    """JSON text of ``value``; :class:`Raw` verbatim, :class:`Pairs` as an object."""
    if isinstance(value, Raw):
        return str(value)
    if isinstance(value, (dict, Pairs)):
        items = value.items() if isinstance(value, dict) else value
        return "{" + ",".join(f"{json.dumps(k, ensure_ascii=False)}:{dump(v)}" for k, v in items) + "}"
    if isinstance(value, list):
        return "[" + ",".join(dump(v) for v in value) + "]"
    return json.dumps(value, ensure_ascii=False)


#: replacement values of another JSON type (or no valid type at all)
JUNK: tuple[Any, ...] = (
    None,
    True,
    0,
    -1,
    2**70,
    10**25,
    "",
    "x",
    "null",
    [],
    {},
    [1, "a"],
    {"a": None},
    Raw("1.5"),
    Raw("1e999999"),
    Raw("-0.0"),
    Raw('"\\ud800"'),  # a lone surrogate escape: valid JSON syntax, not Unicode text
    Raw('"a\\u0000b"'),
    Raw("[" * 3000 + "]" * 3000),  # deeper than the JSON parser's recursion limit
    Raw('{"a":' * 600 + "1" + "}" * 600),  # parses, but deep for the decoders
    Raw("9" * 5000),  # more digits than int() converts
)

#: bytes a byte mutation inserts: invalid UTF-8, NUL, structure characters, a BOM
INSERTS = (
    b"\xff",
    b"\xc3",
    b"\xed\xa0\x80",
    b"\x80\x80",
    b"\x00",
    b'"',
    b"\n",
    b"\r",
    b"{",
    b"}",
    b"]",
    b",",
    b"\\",
    b"\\ud800",
    b"\xef\xbb\xbf",
    b"NULL",
)


def mutate_bytes(ch: Chooser, data: bytes) -> bytes:
    kind = ch.choice(("truncate", "flip", "insert", "delete"))
    pos = ch.integer(0, len(data))
    if kind == "truncate":
        return data[:pos]
    if kind == "flip" and pos < len(data):
        return data[:pos] + bytes([data[pos] ^ ch.integer(1, 255)]) + data[pos + 1 :]
    if kind == "delete":
        return data[:pos] + data[pos + ch.integer(1, 8) :]
    return data[:pos] + ch.choice(INSERTS) + data[pos:]


def _paths(value: Any, prefix: tuple = ()) -> list[tuple]:
    """Every path to a value inside nested dicts and lists."""
    out = []
    if isinstance(value, dict):
        items: Any = value.items()
    elif isinstance(value, list) and not isinstance(value, Pairs):  # a Pairs object is a leaf
        items = enumerate(value)
    else:
        items = ()
    for k, v in items:
        out.append((*prefix, k))
        out.extend(_paths(v, (*prefix, k)))
    return out


#: integers no bigint (or int) column holds
HUGE = (2**31, 2**63, 2**70, -(2**63) - 1, 10**25)
#: JSON strings that parse but are not Unicode text (lone UTF-16 surrogates)
SURROGATES = (Raw('"\\ud800"'), Raw('"a\\udfff"'), Raw('"\\udc00\\ud800"'))


def mutate_json(ch: Chooser, obj: Any) -> Any:
    """One to three structural mutations: drop or duplicate a field, give a value another
    JSON type, an integer beyond bigint or a lone surrogate, rename a key."""
    for _ in range(ch.integer(1, 3)):
        obj = _mutate_json_once(ch, obj)
        if isinstance(obj, (Pairs, Raw)) or not isinstance(obj, (dict, list)):
            break  # a duplicated top-level key or a replaced document: nothing to walk into
    return obj


def _mutate_json_once(ch: Chooser, obj: Any) -> Any:
    obj = copy.deepcopy(obj)
    kind = ch.choice(("drop", "duplicate", "retype", "retype", "rename", "huge", "surrogate"))
    paths = _paths(obj)
    if kind == "huge":
        paths = [p for p in paths if isinstance(_at(obj, p), int) and not isinstance(_at(obj, p), bool)] or paths
    elif kind == "surrogate":
        paths = [p for p in paths if isinstance(_at(obj, p), str)] or paths
    if not paths:
        return ch.choice(JUNK)
    path = ch.choice(paths)
    parent = _at(obj, path[:-1])
    last = path[-1]
    if kind in ("huge", "surrogate", "retype"):
        parent[last] = ch.choice({"huge": HUGE, "surrogate": SURROGATES, "retype": JUNK}[kind])
    elif isinstance(parent, list) or kind == "drop":
        del parent[last]
    elif kind == "rename":
        parent[ch.choice((last.upper(), last + " ", "", "\x00" + last))] = parent.pop(last)
    else:
        pairs = Pairs(parent.items())
        pairs.append((last, ch.choice((parent[last], *JUNK))))
        if not path[:-1]:
            return pairs
        _at(obj, path[:-2])[path[-2]] = pairs
    return obj


def _at(value: Any, path: tuple) -> Any:
    for step in path:
        value = value[step]
    return value


# ----------------------------------------------------------------------------- valid records

TABLES = {"items": {"key": ["id"], "columns": {"id": "bigint", "name": "string"}, "column_order": ["id", "name"]}}


def options_json(fmt: str, framing: str, **options: Any) -> str:
    return json.dumps(
        {"format": fmt, "framing": framing, "options": options, "tables": TABLES}, sort_keys=True, ensure_ascii=False
    )


def debezium_obj(ch: Chooser, n: int) -> dict[str, Any]:
    op = ch.choice("curd")
    row = {"id": ch.integer(0, 50), "name": ch.text()}
    old = {"id": row["id"], "name": ch.text()}
    source = {"connector": "postgresql", "db": "d", "schema": "s", "table": "items", "lsn": 1000 + n, "ts_ms": 1700}
    return {
        "before": old if op in "ud" else None,
        "after": row if op != "d" else None,
        "source": source,
        "op": op,
        "ts_ms": 1700 + n,
    }


def cdl_obj(ch: Chooser, n: int) -> dict[str, Any]:
    op = ch.choice(("INSERT", "UPDATE", "DELETE"))
    row = {"id": ch.integer(0, 50), "name": ch.text()}
    props = [{"name": "lsn", "value": 5000 + n}, {"name": "txId", "value": 77}]
    return {
        "DATA_STORE": "POSTGRESQL",
        "SEG_OWNER": "s",
        "TABLE_NAME": "items",
        "TIMESTAMP": 1707047996013,
        "OPERATION": op,
        "transaction": {"properties": props},
        "unique": {"id": row["id"]},
        "data": row if op != "DELETE" else None,
        "before": {"id": row["id"], "name": ch.text()} if op != "INSERT" else None,
        "message_version": "1.0",
        "message_type": "0",
    }


def lindorm_obj(ch: Chooser, n: int) -> dict[str, Any]:
    op = ch.choice("cud")
    row = {"id": ch.integer(0, 50), "name": ch.text()}
    source = {"db": "ld-1", "namespace": "default", "table": "items", "ts_ms": 1700 + n, "version": "2.0"}
    payload = {
        "op": op,
        "ts_ms": 1800 + n,
        "before": {"id": row["id"], "name": ch.text()} if op != "c" else None,
        "after": row if op != "d" else None,
        "source": source,
    }
    return {"schema": {}, "payload": payload}


JSON_FAMILY = {"debezium_json": debezium_obj, "cdl_json": cdl_obj, "lindorm_json": lindorm_obj}


def arcion_cursor(n: int) -> str:
    cursor = {"extractorId": 0, "nodeID": "node1", "timestamp": 1620788088431 + n}
    cursor.update({"extractionTimestamp": 1620788088431 + n, "dscId": 1620787053905, "mutId": 326118 + n, "v": 2})
    return json.dumps(cursor)


def arcion_counts(n: int) -> str:
    return json.dumps({"insertCount": n, "updateCount": 0, "deleteCount": 0, "replaceCount": 0})


def arcion_doc(ch: Chooser, n: int) -> dict[str, Any]:
    op = ch.choice("IUD")
    key, name = str(ch.integer(0, 50)), ch.text()
    exists = {"I": {"id": "1", "name": "1"}, "U": {"id": "3", "name": "1"}, "D": {"id": "2", "name": "0"}}[op]
    return {
        "tableName": {"namespace": {"catalog": None, "schema": "io_blitzz", "hash": 696406511}, "name": "items"},
        "opType": op,
        "cursor": arcion_cursor(n),
        "before": {"id": key if op != "I" else "null", "name": "null"},
        "after": {"id": key if op != "D" else "null", "name": name if op != "D" else "null"},
        "exists": exists,
        "operationcount": arcion_counts(n),
    }


#: a CSV field: (text, quoted)
Field = tuple[str, bool]


def csv_fields(ch: Chooser, n: int) -> list[Field]:
    """A snapshot row (X=2 values) or a realtime row (3X+3 fields) of table ``items``."""
    key, name = str(ch.integer(0, 50)), ch.text()
    op = ch.choice("SIUD")
    if op == "S":
        return [(key, False), (name, True)]
    exists = {"I": ("1", "1"), "U": ("3", "1"), "D": ("2", "0")}[op]
    return [
        (key if op != "D" else "NULL", False),
        (key if op != "I" else "NULL", False),
        (exists[0], False),
        (name if op != "D" else "NULL", op != "D"),
        ("NULL", False),
        (exists[1], False),
        (op, False),
        (arcion_cursor(n), True),
        (arcion_counts(n), True),
    ]


def csv_row(fields: list[Field]) -> str:
    return ",".join('"' + v.replace('"', '""') + '"' if quoted else v for v, quoted in fields)


def mutate_csv(ch: Chooser, fields: list[Field]) -> list[Field]:
    fields = list(fields)
    i = ch.integer(0, len(fields) - 1)
    kind = ch.choice(("drop", "duplicate", "replace", "requote"))
    if kind == "drop":
        del fields[i]
    elif kind == "duplicate":
        fields.insert(i, fields[i])
    elif kind == "requote":
        fields[i] = (fields[i][0], not fields[i][1])
    else:
        junk = ("", "NULL", "9" * 30, "-1", "4", "X", "I", '"', "{", "\x00", "[" * 3000, '{"timestamp":1e999}')
        fields[i] = (ch.choice(junk), ch.choice((True, False)))
    return fields


def kcat_message(ch: Chooser, n: int) -> dict[str, Any]:
    """A ``kcat -C -J`` message of Arcion's Kafka JSON; ``payload`` still an object
    (or ``None``: the tombstone after a delete)."""
    op = ch.choice("cudr")
    key = ch.integer(0, 50)
    if op == "d" and ch.integer(0, 3) == 0:
        value = None
    else:
        row = {"id": key, "name": ch.text()}
        source = {"version": "20.05.12.3", "connector": "mysql", "name": "tpch", "ts_ms": 1627000000000 + n}
        if op == "r":
            source.update({"db": "tpch", "table": "items", "snapshot": "true", "file": None, "pos": None})
        else:
            source.update({"db": "tpch", "table": "items", "file": "binlog.000003", "pos": 1000 + n, "row": 0})
        payload = {
            "before": {"id": key, "name": ch.text()} if op in "ud" else {},
            "after": row if op != "d" else {},
            "op": op,
            "ts_ms": 1627000000100 + n,
            "source": source,
        }
        value = {"payload": payload} if ch.integer(0, 1) else payload
    return {
        "topic": "items",
        "partition": 0,
        "offset": n,
        "tstype": "create",
        "ts": 1,
        "key": {"id": key},
        "payload": value,
    }


def kcat_line(message: dict[str, Any]) -> dict[str, Any]:
    """The kcat line as a JSON object: key and payload as text (``None`` stays null)."""
    outer = dict(message)
    for name in ("key", "payload"):
        if outer[name] is not None:
            outer[name] = dump(outer[name])
    return outer


def mutate_kcat(ch: Chooser, message: dict[str, Any]) -> Any:
    """A mutated kcat line (a JSON value for :func:`dump`): the payload's JSON, the key's
    JSON, or the line itself (e.g. a payload or partition of another type)."""
    message = copy.deepcopy(message)
    target = ch.choice(("line", "payload", "key"))
    if target == "payload" and message["payload"] is not None:
        message["payload"] = mutate_json(ch, message["payload"])
        return kcat_line(message)
    if target == "key":
        message["key"] = mutate_json(ch, message["key"])
        return kcat_line(message)
    return mutate_json(ch, kcat_line(message))


# ----------------------------------------------------------------------------- the property


def decode_file(content: bytes, framing: str, opts: str) -> tuple[list[RawRecord], list[dict[str, Any]]]:
    """Frame and decode one file as the pipeline does (``stg_landing__records``): the
    Arrow conversions of both UDFs included, a framing error overriding the decoder."""
    records = split_file(content, framing, json.loads(opts).get("options"))
    reference = pa.array([[r.__dict__ for r in records]], type=RECORDS_TYPE)
    # cdc_read_records builds the same records column by column (and `lines` in Arrow)
    built = file_records_struct(content, framing, opts, RECORDS_TYPE.value_type)
    assert built.equals(reference.values), "cdc_read_records differs from split_file"
    results = decode_records(opts, [r.text for r in records], [r.kafka_key for r in records])
    pa.array(results, type=DECODE_TYPE)  # cdc_decode
    assert len(results) == len(records), "every record gets exactly one result"
    out = []
    for rec, res in zip(records, results, strict=True):
        assert res["status"] in ("ok", "skipped", "quarantined")
        if rec.error is not None:
            res = {"status": "quarantined", "reason": rec.error, "changes": None}
        out.append(res)
    return records, out


def signature(result: dict[str, Any]) -> Any:
    """What a record decoded to: status and, per change, its identity and images."""
    changes = [
        (c["event_id"], c["op"], c["table_id"], c["key"], c["before"], c["after"], c["before_cols"], c["after_cols"])
        for c in result["changes"] or []
    ]
    return result["status"], changes


def check_file(
    before: list[bytes],
    bad: list[bytes],
    after: list[bytes],
    framing: str,
    opts: str,
    sep: bytes = b"\n",
    tail: str = "exact",
) -> None:
    """The property for one file ``before + bad + after`` (records joined by ``sep``).

    ``tail``: ``exact`` (the framing resynchronises after the bad records: the neighbours
    after them are compared too), ``documents`` (either resynchronised or the rest of
    the file is one quarantined record) or ``prefix`` (only the neighbours before).
    """
    baseline_records, baseline = decode_file(sep.join(before + after) + sep, framing, opts)
    assert len(baseline_records) == len(before) + len(after)
    assert all(r["status"] in ("ok", "skipped") for r in baseline), [r["reason"] for r in baseline]

    content = sep.join(before + bad + after) + sep
    records, results = decode_file(content, framing, opts)
    counts = {s: sum(r["status"] == s for r in results) for s in ("ok", "quarantined", "skipped")}
    event(f"a bad record quarantined: {counts['quarantined'] > 0}")
    assert len(records) == counts["ok"] + counts["quarantined"] + counts["skipped"]
    for rec, res in zip(records, results, strict=True):
        if res["status"] == "quarantined":
            assert isinstance(res["reason"], str) and res["reason"].strip(), "a quarantined record has a reason"
            assert res["changes"] is None
            assert rec.text is not None or rec.raw_b64 is not None, "the raw record is kept"
        elif res["status"] == "skipped":
            assert res["changes"] == [] and res["reason"]
        else:
            assert isinstance(res["changes"], list) and res["reason"] is None
        if rec.text is None and rec.raw_b64 is not None:
            assert rec.error, "a framing error keeps the raw bytes as base64"
            raw = base64.b64decode(rec.raw_b64)
            assert raw and raw in content, "the base64 raw is the record's own bytes"

    nb = len(before)
    assert [r.text for r in records[:nb]] == [r.text for r in baseline_records[:nb]]
    assert [signature(r) for r in results[:nb]] == [signature(r) for r in baseline[:nb]]
    na = len(after)
    if not na or tail == "prefix":
        return
    aligned = [r.text for r in records[-na:]] == [r.text for r in baseline_records[nb:]]
    if tail == "exact":
        assert aligned, "the framing resynchronises after the bad record"
    event(f"neighbours after the bad records resynchronised: {aligned}")
    if aligned:
        assert [signature(r) for r in results[-na:]] == [signature(r) for r in baseline[nb:]]
    else:
        # documents: the broken document's end cannot be found, the rest of the file
        # (the neighbours after it included) is one quarantined record with the reason
        last, result = records[-1], results[-1]
        assert result["status"] == "quarantined" and last.error and "not JSON" in last.error
        rest = last.text if last.text is not None else base64.b64decode(last.raw_b64).decode("utf-8", "replace")
        assert rest.rstrip().endswith(after[-1].decode().rstrip())


PROPERTY = settings(
    max_examples=150,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def _neighbours(ch: Chooser, make: Callable[[Chooser, int], Any], start: int) -> list[Any]:
    return [make(ch, start + i) for i in range(ch.integer(0, 3))]


def _check_json_lines(ch: Chooser, fmt: str, make: Callable[[Chooser, int], Any]) -> None:
    """One JSON envelope per line (``lines``): valid neighbours around 1-2 broken
    envelopes (a structural mutation, a byte mutation, or both). For the JSON family and
    the DTS JSON formats alike."""
    before = [dump(o).encode() for o in _neighbours(ch, make, 0)]
    after = [dump(o).encode() for o in _neighbours(ch, make, 10)]
    bad = []
    for i in range(ch.integer(1, 2)):
        obj = make(ch, 20 + i)
        structural = ch.integer(0, 2) > 0
        text = dump(mutate_json(ch, obj) if structural else obj).encode()
        bad.append(mutate_bytes(ch, text) if not structural or ch.integer(0, 1) else text)
    check_file(before, bad, after, "lines", options_json(fmt, "lines"))


@PROPERTY
@given(st.data())
def test_json_family_lines(data: st.DataObject) -> None:
    """debezium_json, cdl_json and lindorm_json in ``lines``: one envelope per line."""
    ch = Chooser(data)
    fmt = ch.choice(sorted(JSON_FAMILY))
    _check_json_lines(ch, fmt, JSON_FAMILY[fmt])


@PROPERTY
@given(st.data())
def test_arcion_internal_json_documents(data: st.DataObject) -> None:
    """arcion_internal_json in ``documents``: pretty-printed documents one after another."""
    ch = Chooser(data)
    before = [json.dumps(arcion_doc(ch, i), indent=2).encode() for i in range(ch.integer(0, 3))]
    after = [json.dumps(arcion_doc(ch, 10 + i), indent=2).encode() for i in range(ch.integer(0, 3))]
    bad = []
    for i in range(ch.integer(1, 2)):
        doc = arcion_doc(ch, 20 + i)
        structural = ch.integer(0, 2) > 0
        text = dump(mutate_json(ch, doc)).encode() if structural else json.dumps(doc, indent=2).encode()
        bad.append(mutate_bytes(ch, text) if not structural or ch.integer(0, 1) else text)
    check_file(before, bad, after, "documents", options_json("arcion_internal_json", "documents"), tail="documents")


@PROPERTY
@given(st.data())
def test_arcion_internal_csv(data: st.DataObject) -> None:
    """arcion_internal_csv in ``csv``: snapshot (X fields) and realtime (3X+3) rows."""
    ch = Chooser(data)
    before = [csv_row(csv_fields(ch, i)).encode() for i in range(ch.integer(0, 3))]
    after = [csv_row(csv_fields(ch, 10 + i)).encode() for i in range(ch.integer(0, 3))]
    bad = []
    for i in range(ch.integer(1, 2)):
        fields = csv_fields(ch, 20 + i)
        structural = ch.integer(0, 2) > 0
        row = csv_row(mutate_csv(ch, fields) if structural else fields).encode()
        bad.append(mutate_bytes(ch, row) if not structural or ch.integer(0, 1) else row)
    balanced = b"\n".join(bad).count(b'"') % 2 == 0
    opts = options_json("arcion_internal_csv", "csv", table="items")
    check_file(before, bad, after, "csv", opts, tail="exact" if balanced else "prefix")


@PROPERTY
@given(st.data())
def test_arcion_kafka_json_kcat(data: st.DataObject) -> None:
    """arcion_kafka_json in ``kcat``: ``kcat -C -J`` lines with key and payload as text."""
    ch = Chooser(data)
    before = [dump(kcat_line(m)).encode() for m in _neighbours(ch, kcat_message, 0)]
    after = [dump(kcat_line(m)).encode() for m in _neighbours(ch, kcat_message, 10)]
    bad = []
    for i in range(ch.integer(1, 2)):
        message = kcat_message(ch, 20 + i)
        structural = ch.integer(0, 2) > 0
        line = dump(mutate_kcat(ch, message) if structural else kcat_line(message)).encode()
        bad.append(mutate_bytes(ch, line) if not structural or ch.integer(0, 1) else line)
    check_file(before, bad, after, "kcat", options_json("arcion_kafka_json", "kcat"))


# ----------------------------------------------------------------------------- Alibaba Cloud DTS


def dts_canal_obj(ch: Chooser, n: int) -> dict[str, Any]:
    """A valid DTS Canal JSON message: 1-2 rows, an UPDATE's ``old`` with the changed
    columns, a DELETE in either layout, now and then a DDL message."""
    kind = ch.choice(("INSERT", "UPDATE", "DELETE", "DELETE", "INIT", "DDL"))
    common = {"database": "d", "table": "items", "es": 1600161894000 + n, "id": 58 + n, "ts": 1600161894771 + n}
    if kind == "DDL":
        return common | {"isDdl": True, "sql": "ALTER TABLE items ADD COLUMN x int", "type": "DDL"}
    rows = [{"id": str(ch.integer(0, 50)), "name": ch.text()} for _ in range(ch.integer(1, 2))]
    msg: dict[str, Any] = {"data": rows, "old": None}
    if kind == "UPDATE":
        msg["old"] = [{"name": ch.text()} for _ in rows]
    elif kind == "DELETE" and ch.integer(0, 1):
        msg = {"data": None, "old": rows}
    return (
        msg
        | common
        | {
            "isDdl": False,
            "mysqlType": {"id": "bigint(20)", "name": "varchar(50)"},
            "sqlType": {"id": -5, "name": 12},
            "pkNames": ["id"],
            "sql": "",
            "type": kind,
        }
    )


def dts_shareplex_obj(ch: Chooser, n: int) -> dict[str, Any]:
    """A valid DTS Shareplex JSON message (both op spellings; UPDATE BEFORE is skipped)."""
    op = ch.choice(("ins", "INSERT", "upd", "UPDATE", "del", "DELETE", "UPDATE BEFORE"))
    meta = {
        "time": "2017-06-16T14:24:34",
        "userid": 84,
        "op": op,
        "scn": str(14589063118712 + n),
        "rowid": "AAATGpAAIAAItcIAAA",
        "trans": "7.0.411499",
        "seq": 1,
        "size": 1,
        "table": "S.ITEMS",
        "idx": "1/1",
        "posttime": "2017-06-16T14:33:52",
    }
    row = {"ID": str(ch.integer(0, 50)), "NAME": ch.text()}
    msg: dict[str, Any] = {"meta": meta, "data": row}
    if op in ("upd", "UPDATE", "UPDATE BEFORE"):
        msg["data"], msg["key"] = {"NAME": ch.text()}, row
    return msg


DTS_JSON = {"dts_canal_json": dts_canal_obj, "dts_shareplex_json": dts_shareplex_obj}


def dts_avro_value(ch: Chooser, n: int) -> bytes:
    """A valid DTS Avro value: a row change or a transaction marker."""
    from udfs.formats.dts_avro import encode_record, typed

    operation = ch.choice(("INSERT", "UPDATE", "DELETE", "INIT", "BEGIN", "COMMIT"))

    def image() -> list[Any]:
        name = ch.text()
        return [
            typed("Integer", {"precision": 19, "value": str(ch.integer(0, 50))}),
            typed("Character", {"charset": "utf8mb4", "value": name.encode()}) if ch.integer(0, 3) else None,
        ]

    row_change = operation not in ("BEGIN", "COMMIT")
    return encode_record(
        {
            "version": 1,
            "id": 1000 + n,
            "sourceTimestamp": 1600161894,
            "sourcePosition": f"{n}@mysql-bin.000003",
            "safeSourcePosition": f"{n}@mysql-bin.000003",
            "sourceTxid": "77",
            "source": {"sourceType": "MySQL", "version": "5.7"},
            "operation": operation,
            "objectName": "d.items" if row_change else None,
            "processTimestamps": None,
            "tags": {},
            "fields": [{"name": "id", "dataTypeNumber": 8}, {"name": "name", "dataTypeNumber": 253}]
            if row_change
            else None,
            "beforeImages": image() if operation in ("UPDATE", "DELETE") else None,
            "afterImages": image() if operation in ("INSERT", "UPDATE", "INIT") else None,
            "bornTimestamp": 1600161895,
        }
    )


def length_prefixed(value: bytes) -> bytes:
    return len(value).to_bytes(4, "big") + value


@PROPERTY
@given(st.data())
def test_dts_family(data: st.DataObject) -> None:
    """dts_canal_json and dts_shareplex_json in ``lines`` (structural and byte mutations),
    dts_avro values in ``length_prefixed`` (byte mutations inside a correctly framed
    value, or a last record cut short)."""
    ch = Chooser(data)
    fmt = ch.choice(("dts_canal_json", "dts_shareplex_json", "dts_avro"))
    if fmt == "dts_avro":
        before = [length_prefixed(dts_avro_value(ch, i)) for i in range(ch.integer(0, 3))]
        after = [length_prefixed(dts_avro_value(ch, 10 + i)) for i in range(ch.integer(0, 3))]
        bad = [length_prefixed(mutate_bytes(ch, dts_avro_value(ch, 20 + i))) for i in range(ch.integer(1, 2))]
        tail = "exact"
        if ch.integer(0, 3) == 0:  # the last record announces more bytes than the file has
            frame = length_prefixed(dts_avro_value(ch, 30))
            bad.append(frame[: ch.integer(0, len(frame) - 1)])
            after, tail = [], "prefix"
        check_file(before, bad, after, "length_prefixed", options_json(fmt, "length_prefixed"), sep=b"", tail=tail)
        return
    _check_json_lines(ch, fmt, DTS_JSON[fmt])


# ----------------------------------------------------------------------------- the pipeline


def _pipeline_batch(seed: int) -> dict[str, tuple[list[bytes], list[bool]]]:
    """Deterministic files: name -> (records, is_valid). Valid neighbours use keys 0..50,
    the mutated records keys from 1000 on (a mutation that still decodes rarely reaches a
    neighbour's key; the test excludes any key a decodable mutation touches)."""
    rng = random.Random(seed)
    ch = Chooser(rng=rng)
    files: dict[str, tuple[list[bytes], list[bool]]] = {}
    for f in range(3):
        recs, valid = [], []
        for i in range(14):
            n = f * 100 + i
            if rng.random() < 0.35:
                obj = debezium_obj(ch, n)
                for image in (obj["before"], obj["after"]):
                    if image:
                        image["id"] += 1000
                text = dump(mutate_json(ch, obj)).encode()
                recs.append(mutate_bytes(ch, text) if rng.random() < 0.5 else text)
                valid.append(False)
            else:
                recs.append(dump(debezium_obj(ch, n)).encode())
                valid.append(True)
        files[f"dbz/part-{f}.jsonl"] = (recs, valid)
    for f in range(2):
        recs, valid = [], []
        for i in range(14):
            n = f * 100 + i
            fields = csv_fields(ch, n)
            if rng.random() < 0.35:
                fields = [
                    ((str(int(v) + 1000), q) if v.isdigit() and j in (0, 1) else (v, q))
                    for j, (v, q) in enumerate(fields)
                ]
                row = csv_row(mutate_csv(ch, fields)).encode()
                if rng.random() < 0.5:
                    row = mutate_bytes(ch, row)
                if row.count(b'"') % 2:  # an open quote runs into the next rows (RFC 4180)
                    row = row.replace(b'"', b"'")
                recs.append(row)
                valid.append(False)
            else:
                recs.append(csv_row(fields).encode())
                valid.append(True)
        files[f"csv/part-{f}.csv"] = (recs, valid)
    return files


def _write_files(root: Path, files: dict[str, tuple[list[bytes], list[bool]]], only_valid: bool) -> None:
    for name, (recs, valid) in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        kept = [r for r, v in zip(recs, valid, strict=True) if v or not only_valid]
        path.write_bytes(b"\n".join(kept) + b"\n")


def _feeds(prefix: str) -> list[dict[str, Any]]:
    return [
        {"name": "dbz", "format": "debezium_json", "path": f"{prefix}/dbz"},
        {"name": "csv", "format": "arcion_internal_csv", "path": f"{prefix}/csv", "options": {"table": "items_csv"}},
    ]


PIPELINE_TABLES = {
    "items": {"key": ["id"]},
    "items_csv": {"key": ["id"], "columns": {"id": "bigint", "name": "string"}},
}


def _state(spark: Any, schema: str) -> dict[tuple[str, str], tuple[dict[str, str], bool]]:
    rows = spark.sql(f"select table_id, key_text, row, is_deleted from `{schema}`.state").collect()
    return {(r.table_id, r.key_text): (dict(r.row or {}), r.is_deleted) for r in rows}


def test_pipeline_mutated_batch(spark, make_config, tmp_path):
    """Two formats (debezium_json lines, arcion_internal_csv), mutated records among valid
    ones, through Spark + dbt: the audit balances per file, every record is exactly where
    the pure decoding says (changelog, quarantine or skipped), the raw of invalid UTF-8 is
    base64, and the state of the neighbours equals a run over the valid records alone."""
    from udfs.pipeline import run_pipeline

    files = _pipeline_batch(seed=20240611)
    _write_files(tmp_path / "mixed", files, only_valid=False)
    _write_files(tmp_path / "valid", files, only_valid=True)

    valid_config = make_config(_feeds("valid"), PIPELINE_TABLES)
    valid_schema = yaml.safe_load(valid_config.read_text())["schema"]
    run_pipeline(valid_config, spark=spark)
    mixed_config = make_config(_feeds("mixed"), PIPELINE_TABLES)  # rewrites cdc.yml: new schemas
    schema = yaml.safe_load(mixed_config.read_text())["schema"]
    summary = run_pipeline(mixed_config, spark=spark)

    # what the pure functions predict, per file
    opts = {
        "dbz": options_json("debezium_json", "lines"),
        "csv": json.dumps(
            {
                "format": "arcion_internal_csv",
                "framing": "csv",
                "options": {"table": "items_csv"},
                "tables": {"items": {"key": ["id"], "columns": {}, "column_order": []}, "items_csv": TABLES["items"]},
            },
            sort_keys=True,
        ),
    }
    expected: dict[str, dict[int, dict[str, Any]]] = {}
    bad_keys: set[tuple[str, str]] = set()
    for name, (recs, valid) in files.items():
        framing = "csv" if name.startswith("csv") else "lines"
        path = str((tmp_path / "mixed" / name).resolve())
        records, results = decode_file((tmp_path / "mixed" / name).read_bytes(), framing, opts[name.split("/")[0]])
        expected[path] = {rec.record_index: res for rec, res in zip(records, results, strict=True)}
        valid_texts = {r.decode() for r, v in zip(recs, valid, strict=True) if v}
        for rec, res in zip(records, results, strict=True):
            if rec.text not in valid_texts and res["status"] == "ok":
                bad_keys.update((c["table_id"], c["key_text"]) for c in res["changes"])

    n_records = sum(len(v) for v in expected.values())
    n_quarantined = sum(r["status"] == "quarantined" for v in expected.values() for r in v.values())
    assert (summary.files, summary.records, summary.quarantined) == (len(files), n_records, n_quarantined)
    assert n_quarantined >= 10, "the batch really holds broken records"

    audit = spark.sql(f"select * from `{schema}`.audit_files where run_id = '{summary.run_id}'").collect()
    assert sorted(r.source_file for r in audit) == sorted(expected)
    for row in audit:
        exp = expected[row.source_file].values()
        assert row.records_read == row.change_records + row.quarantined + row.skipped
        assert row.records_read == len(exp)
        assert row.quarantined == sum(r["status"] == "quarantined" for r in exp)
        assert row.skipped == sum(r["status"] == "skipped" for r in exp)
        assert row.changes_emitted == sum(len(r["changes"] or []) for r in exp)

    in_changelog = {
        (r.source_file, r.record_index)
        for r in spark.sql(f"select distinct source_file, record_index from `{schema}`.changelog").collect()
    }
    quarantine = {
        (r.source_file, r.record_index): r
        for r in spark.sql(f"select * from `{schema}`.quarantine where run_id = '{summary.run_id}'").collect()
    }
    assert not in_changelog & set(quarantine)
    for path, by_index in expected.items():
        for index, res in by_index.items():
            where = (path, index)
            assert (where in in_changelog) == (res["status"] == "ok"), (where, res)
            assert (where in quarantine) == (res["status"] == "quarantined"), (where, res)
            if where in quarantine:
                q = quarantine[where]
                assert q.reason == res["reason"] and q.reason
                if q.raw_is_base64:
                    assert base64.b64decode(q.raw_record) in Path(path).read_bytes()
                else:
                    assert q.raw_record.encode() in Path(path).read_bytes()
    assert any(q.raw_is_base64 for q in quarantine.values()), "invalid UTF-8 is in the batch"

    mixed_state, valid_state = _state(spark, schema), _state(spark, valid_schema)
    neighbour_keys = set(valid_state) - bad_keys
    assert len(neighbour_keys) >= 30 and {t for t, _ in neighbour_keys} == {"items", "items_csv"}
    assert {k: mixed_state.get(k) for k in neighbour_keys} == {k: valid_state[k] for k in neighbour_keys}
    assert set(mixed_state) - set(valid_state) <= bad_keys, "only decodable mutations add keys"
