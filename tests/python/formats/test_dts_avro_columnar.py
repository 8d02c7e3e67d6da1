"""The columnar DTS Avro decoder gives ``decode_records``' very result, record by record.

Records are written with the project's own writer schema (``encode_record``) and, for
what fastavro's writer never writes (arrays in several blocks, negative block counts,
overlong varints, bytes that are not UTF-8), by :func:`avro_record` below. Every value
kind, the workload, hostile records and random byte mutations; most records stay on
the columnar path, the others go to ``decode_records``, and all agree.
"""

from __future__ import annotations

import base64
import json
import math
import random
import struct
from pathlib import Path
from typing import Any

import pytest
from formats import columnar_checks
from formats.test_dts_avro import record as unit_record

from udfs.formats import dts_avro_columnar as col
from udfs.formats.columnar import json_escaped
from udfs.formats.dts_avro import encode_record
from udfs.formats.dts_avro import typed as t
from udfs.spark_udfs import columnar_feed

TABLES = {"shop.orders": {"key": ["id"]}, "db.s.t": {"key": ["k", "id"]}, "orders": {"key": ["id"]}}
NAMES = ["id", "amount", "note", "at", "f", "blob", "gone"]


def _opts(tables: dict[str, Any] | None = None, **options: Any) -> str:
    return json.dumps(
        {"format": "dts_avro", "options": options, "tables": TABLES if tables is None else tables}, sort_keys=True
    )


def _b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode()


def compare(opts: str, texts: list[str | None]) -> tuple[int, int]:
    return columnar_checks.compare(col, col.decode_dts_avro_columnar, opts, texts)


def record(operation: str = "UPDATE", names: list[str] = NAMES, **changes: Any) -> dict[str, Any]:
    """The unit tests' record of table shop.orders, every optional field filled, a text
    value that needs JSON escapes, and the images its operation has."""
    rec = unit_record(
        operation,
        safeSourcePosition="120@mysql-bin.000003",
        processTimestamps=[1, 2, 3],
        tags={"a": "b", "é": "😀"},
        fields=[{"name": n, "dataTypeNumber": i} for i, n in enumerate(names)],
        bornTimestamp=1600161895,
    )
    rec["afterImages"][2] = t("Character", {"charset": "utf8mb4", "value": 'héllo "q" \\ \n\x01'.encode()})
    if operation in ("INSERT", "INIT"):
        rec["beforeImages"] = None
    if operation == "DELETE":
        rec["afterImages"] = None
    rec.update(changes)
    return rec


def text(rec: dict[str, Any]) -> str:
    return _b64(encode_record(rec))


# ----------------------------------------------------------------------------- values


def _random_value(rng: random.Random) -> Any:
    """A random image value of any kind, with the edges of each."""
    kind = rng.choice(
        [
            "null", "NULL", "NONE", "Integer", "Decimal", "Character", "Float", "Timestamp", "DateTime",
            "TimestampWithTimeZone", "BinaryGeometry", "TextGeometry", "BinaryObject", "TextObject",
        ]
    )  # fmt: skip
    texts = ["", "0", "-7", "12345678901234567890123", "x", "é😀", '"q"\\\n\t\x00\x1f', "NULL", " a ", "\u2028"]
    if kind == "null":
        return None
    if kind in ("NULL", "NONE"):
        return kind
    if kind == "Integer":
        return t("Integer", {"precision": rng.choice([0, 1, 18, 19, 38, 39, 65, -1]), "value": rng.choice(texts)})
    if kind == "Decimal":
        p, s = rng.choice([(12, 2), (38, 38), (39, 2), (0, 0), (10, 11), (5, -1), (1, 0)])
        return t("Decimal", {"value": rng.choice(texts), "precision": p, "scale": s})
    if kind == "Character":
        charset = rng.choice(["utf8mb4", "UTF8", "utf-8", "latin1", "gbk", "ascii", "binary", "koi8r", "Utf8Mb4"])
        value = rng.choice(["héllo", "", "\n\"'", "😀", "plain"]).encode("utf-8")
        if charset in ("latin1",):
            value = rng.choice([b"caf\xe9", b"plain", b"\xff\x00"])
        if charset == "gbk":
            value = rng.choice(["中文".encode("gbk"), b"\x81", b"ok"])
        if charset == "ascii":
            value = rng.choice([b"ascii", b"\xe9"])
        return t("Character", {"charset": charset, "value": value})
    if kind == "Float":
        value = rng.choice([0.1, -0.0, 1e16, 1.5e-7, math.inf, -math.inf, math.nan, 2.0**53 + 1, 123.0])
        return t("Float", {"value": value, "precision": 0, "scale": 0})
    if kind == "Timestamp":
        ts = rng.choice([0, 1600161894, -1, 253402300799, -62135596800, 32503680000])
        return t("Timestamp", {"timestamp": ts, "millis": rng.choice([0, 7, 999, 1000, -1])})
    if kind in ("DateTime", "TimestampWithTimeZone"):
        parts = {}
        for name, choices in (
            ("year", [None, 2020, 999, 10000, 0]),
            ("month", [None, 1, 12]),
            ("day", [None, 2, 31]),
            ("hour", [None, 0, 23]),
            ("minute", [None, 0, 59]),
            ("second", [None, 5]),
            ("millis", [None, 0, 6, 999, 1234]),
        ):
            parts[name] = rng.choice(choices)
        if kind == "DateTime":
            return t("DateTime", parts)
        return t("TimestampWithTimeZone", {"value": parts, "timezone": rng.choice(["+08:00", "UTC", "é"])})
    if kind.startswith("Binary"):
        return t(kind, {"type": "blob", "value": bytes(rng.randrange(256) for _ in range(rng.randint(0, 9)))})
    return t(kind, {"type": "text", "value": rng.choice(texts)})


def _random_record(rng: random.Random) -> dict[str, Any]:
    ncols = rng.randint(1, 6)
    names = rng.sample(["id", "k", "amount", "note", "Name", "x_y", "c1"], ncols)
    if "id" not in names and rng.random() < 0.9:
        names[0] = "id"
    operation = rng.choice(["INSERT", "INIT", "UPDATE", "UPDATE", "DELETE"])

    def image() -> list[Any]:
        values = [_random_value(rng) for _ in names]
        if "id" in names and rng.random() < 0.9:  # mostly a key that is there
            values[names.index("id")] = t("Integer", {"precision": 19, "value": str(rng.randint(0, 50))})
        return values

    rec = record(operation, names=names, beforeImages=image(), afterImages=image())
    rec["objectName"] = rng.choice(["shop.orders", "shop.orders", "orders", "db.s.t", "other.table"])
    rec["id"] = rng.randint(0, 2**62)
    rec["sourceTxid"] = rng.choice(["", "77", "é"])
    rec["source"] = {"sourceType": rng.choice(["MySQL", "Oracle", "OTHER"]), "version": rng.choice(["", "8.0"])}
    if operation in ("INSERT", "INIT"):
        rec["beforeImages"] = None
    elif operation == "DELETE":
        rec["afterImages"] = None
    elif rng.random() < 0.1:
        rec["beforeImages"] = None
    return rec


def test_every_value_kind_agrees() -> None:
    rng = random.Random(1)
    texts = [text(_random_record(rng)) for _ in range(1500)]
    n, fallbacks = compare(_opts(), texts)
    # every kind on the columnar path, but where the decoder quarantines or the key is missing
    assert fallbacks < n * 0.6, (fallbacks, n)


def test_plain_records_stay_columnar() -> None:
    rng = random.Random(2)
    texts = []
    for i in range(300):
        rec = record(rng.choice(["INSERT", "INIT", "UPDATE", "DELETE"]))
        rec["id"] = i
        texts.append(text(rec))
    n, fallbacks = compare(_opts(), texts)
    assert fallbacks == 0, col.LAST_STATS


def test_workload_agrees(tmp_path: Path) -> None:
    from bench.data import FORMAT_CASES, tables_config, write_dataset
    from udfs.framing import split_file

    case = FORMAT_CASES["dts_avro"]
    data = write_dataset(case, tmp_path / "avro", 3000, seed=3, per_file=1500)
    opts = json.dumps({"format": "dts_avro", "options": {}, "tables": tables_config([case])}, sort_keys=True)
    for path in data.files:
        texts = [r.text for r in split_file(path.read_bytes(), "kafka_parquet", {}, True)]
        n, fallbacks = compare(opts, texts)
        assert n == 1500 and fallbacks == 0, col.LAST_STATS


# ----------------------------------------------------------------------------- odd records


def _varint(n: int) -> bytes:
    n = (n << 1) ^ (n >> 63)
    out = bytearray()
    while n > 0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _raw(b: bytes) -> bytes:
    return _varint(len(b)) + b


def _array(items: list[bytes], blocks: int = 1, negative: bool = False) -> bytes:
    """An Avro array (or map) of encoded ``items`` in ``blocks`` blocks, each count
    negative with the block's size after it when ``negative``."""
    out = b""
    size = max(1, math.ceil(len(items) / blocks))
    for i in range(0, len(items), size):
        block = items[i : i + size]
        body = b"".join(block)
        out += _varint(-len(block)) + _varint(len(body)) + body if negative else _varint(len(block)) + body
    return out + _varint(0)


def avro_record(
    operation: int = 1,
    names: list[bytes] = (b"id", b"note"),
    before: list[bytes] | None = None,
    after: list[bytes] | None = None,
    object_name: bytes | None = b"shop.orders",
    blocks: int = 1,
    negative: bool = False,
    rid: bytes | None = None,
    trailing: bytes = b"",
) -> str:
    """A DTS record written by hand (see the module doc): ``operation`` the symbol index
    (0 INSERT, 1 UPDATE, 2 DELETE), image items already encoded (:func:`_item`)."""
    out = _varint(1) + (rid if rid is not None else _varint(42)) + _varint(1600161894)
    out += _raw(b"123@mysql-bin.000003") + _raw(b"1@x") + _raw(b"77")
    out += _varint(0) + _raw(b"5.7")  # source: MySQL, version
    out += _varint(operation)
    out += _varint(0) if object_name is None else _varint(1) + _raw(object_name)
    out += _varint(1) + _array([_varint(7), _varint(8)], blocks, negative)  # processTimestamps
    out += _array([_raw(b"k") + _raw(b"v"), _raw(b"k2") + _raw(b"\xc3\xa9")], blocks, negative)  # tags
    out += _varint(2) + _array([_raw(n) + _varint(0) for n in names], blocks, negative)
    for image in (before, after):
        out += _varint(0) if image is None else _varint(2) + _array(image, blocks, negative)
    return _b64(out + _varint(1600161895) + trailing)


def _item(kind: int, *fields: bytes) -> bytes:
    return _varint(kind) + b"".join(fields)


INT = _item(1, _varint(19), _raw(b"7"))  # Integer 7
CHAR = _item(2, _raw(b"utf8mb4"), _raw("é\n".encode()))
NONE = _item(12, _varint(1))
NULL_ITEM = _item(0)


def _odd_records() -> list[str | None]:
    rng = random.Random(4)
    odd: list[str | None] = [None, "null", "", "not base64!", "AAAA", _b64(b"\x02\x03"), "é"]
    odd += [text(record(op)) for op in ("DDL", "BEGIN", "COMMIT", "HEARTBEAT", "CHECKPOINT", "ROLLBACK")]
    odd.append(text(record("DDL", fields=None, beforeImages=None, afterImages="ALTER TABLE orders ADD c int")))
    odd += [
        text(record(objectName=None)),
        text(record(objectName="")),
        text(record(objectName=".")),
        text(record(objectName="a.")),
        text(record(objectName=".orders")),
        text(record(objectName="a.b.c.d")),
        text(record(objectName="x" * 300)),
        text(record(objectName="other.table")),  # no key configured
        text(record(fields=None)),
        text(record(fields="id,note")),
        text(record(afterImages="ALTER")),
        text(record(afterImages=[None])),  # fewer values than fields
        text(record("INSERT", beforeImages=record()["beforeImages"])),  # a before image on an insert
        text(record("DELETE", afterImages=record()["afterImages"])),
        text(record("DELETE", beforeImages=None)),
        text(record("INSERT", afterImages=None)),
        text(record(beforeImages=None)),
        text(record(id=-1)),
        text(record(sourceTimestamp=9223372036854)),
        text(record(sourceTimestamp=9223372036855)),
        text(record(sourceTimestamp=-9223372036855)),
        text(record(sourceTxid="")),
        text(record(names=["ID", "amount", "note", "at", "f", "blob", "id"])),  # a name twice, case aside
        text(record(names=["id", "amount", "note", "at", "f", "blob", "blob"])),
        text(record(names=["id", "amöunt", "note", "at", "f", "blob", "gone"])),
        text(record(names=["id", "AMÖUNT", "Note", "ÀT", "f", "blob", "gone"])),  # lower-cased beyond ASCII
        text(record(names=["id", "AMOUNT", "Note", "at", "f", "blob", "gone"])),
        text(record(names=["", "amount", "note", "at", "f", "blob", "gone"])),
        text(record(tags={})),
        text(record(processTimestamps=None)),
        text(record(fields=[], beforeImages=[], afterImages=[])),  # no columns: no key
        _b64(encode_record(record()) + b"trailing bytes"),  # fastavro reads what it needs
        _b64(encode_record(record())[:-3]),  # cut short
        _b64(encode_record(record())[:40]),
    ]
    # hand-written: blocks, negative counts, overlong varints, bytes that are not UTF-8
    for blocks in (1, 2, 3):
        for negative in (False, True):
            odd.append(avro_record(1, before=[INT, CHAR], after=[INT, NONE], blocks=blocks, negative=negative))
            odd.append(avro_record(0, after=[INT, NULL_ITEM], blocks=blocks, negative=negative))
    odd += [
        avro_record(2, before=[INT, CHAR]),
        avro_record(2, before=[INT, CHAR], trailing=b"\x00\xff"),
        avro_record(1, before=[INT, CHAR], after=[INT, CHAR], rid=b"\x80" * 9 + b"\x01"),  # 10-byte varint
        avro_record(1, before=[INT, CHAR], after=[INT, CHAR], rid=b"\xd4\x80\x80\x00"),  # overlong, 4 bytes
        avro_record(1, before=[INT, CHAR], after=[INT, CHAR], rid=b"\x80" * 9 + b"\x00"),  # overlong 0, 10 bytes
        avro_record(1, before=[INT, CHAR], after=[INT, CHAR], rid=b"\xff" * 12),  # never ends
        avro_record(9, before=[INT, CHAR], after=[INT, CHAR]),  # HEARTBEAT
        avro_record(99, before=[INT, CHAR], after=[INT, CHAR]),  # no such operation
        avro_record(0, after=[INT, _item(13)]),  # no such union branch
        avro_record(0, after=[INT, _item(12, _varint(2))]),  # no such EmptyObject symbol
        avro_record(0, after=[INT, _item(2, _raw(b"utf8mb4"), _raw(b"\xff"))]),  # a Character not UTF-8
        avro_record(0, after=[INT, _item(2, _raw(b"latin1"), _raw(b"\xff"))]),
        avro_record(0, after=[INT, _item(11, _raw(b"text"), _raw(b"\xed\xa0\x80"))]),  # a surrogate: not UTF-8
        avro_record(0, after=[INT, _item(11, _raw(b"\xff"), _raw(b"ok"))]),  # its unused type not UTF-8
        avro_record(0, names=[b"id", b"n\xffote"], after=[INT, CHAR]),
        avro_record(0, object_name=b"shop.\xff", after=[INT, CHAR]),
        avro_record(0, after=[INT, _item(4, struct.pack("<d", 1.25), _varint(0), _varint(0))]),  # Float
        avro_record(0, after=[INT, _item(4, b"\x00\x00", _varint(0))]),  # a double cut short
        avro_record(0, after=[INT, _item(1, _varint(19), _varint(-3) + b"")]),  # negative length
        avro_record(0, after=[INT, _item(1, _varint(19), _varint(1000) + b"7")]),  # length past the end
        avro_record(0, after=[INT, CHAR, INT]),  # more values than fields
        avro_record(0, after=[_item(1, _varint(19), _raw(b"7")), CHAR], names=[b"id", b"ID"]),
    ]
    # random byte mutations of valid records
    for _ in range(400):
        raw = bytearray(encode_record(_random_record(rng)))
        how = rng.choice(["flip", "insert", "delete", "cut"])
        at = rng.randrange(len(raw))
        if how == "flip":
            raw[at] = rng.randrange(256)
        elif how == "insert":
            raw[at:at] = bytes([rng.randrange(256)])
        elif how == "delete":
            del raw[at]
        else:
            del raw[at:]
        odd.append(_b64(bytes(raw)))
    return odd


def test_odd_records_fall_back_or_agree() -> None:
    texts = _odd_records()
    n, fallbacks = compare(_opts(), texts)
    assert 0 < fallbacks < n
    # and each alone, so one record's fallback never hides another's difference
    for one in texts[:120]:
        compare(_opts(), [one])


def test_hand_written_blocks_stay_columnar() -> None:
    texts = []
    for blocks in (1, 2, 3):
        for negative in (False, True):
            texts.append(avro_record(1, before=[INT, CHAR], after=[INT, NONE], blocks=blocks, negative=negative))
    n, fallbacks = compare(_opts(), texts)
    assert fallbacks == 0, col.LAST_STATS


def test_empty_batch_and_options() -> None:
    compare(_opts(), [])
    compare("{not json", [text(record())])
    compare(_opts(columnar="no"), [text(record())])  # bad option: quarantined with the reason
    assert columnar_feed(_opts()) is col.decode_dts_avro_columnar
    assert columnar_feed(_opts(columnar=False)) is None


def test_internal_error_falls_back_with_a_warning(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    texts = [text(record(id=i)) for i in range(20)]
    columnar_checks.check_internal_error_falls_back(
        monkeypatch, caplog, col, col.decode_dts_avro_columnar, _opts(), texts, "dts_avro"
    )


def test_spark_udf_columnar_true_and_false_agree(spark) -> None:
    """``cdc_decode`` in Spark SQL: the same results with ``columnar`` true and false,
    valid and malformed records alike."""
    rng = random.Random(9)
    texts = [text(_random_record(rng)) for _ in range(200)] + _odd_records()[:150]
    on = columnar_checks.spark_on_and_off(spark, texts, _opts(), _opts(columnar=False), "dts_avro_columnar_in")
    statuses = {json.loads(r)["status"] for r in on.values()}
    assert statuses == {"ok", "skipped", "quarantined"}, statuses


def test_json_escaped_is_what_json_dumps_writes() -> None:
    """The event id's escaped texts: every character up to U+00A0 and beyond, alone and
    mixed, as ``json.dumps(..., ensure_ascii=False)`` writes them."""
    import pyarrow as pa

    rng = random.Random(6)
    alphabet = [chr(c) for c in range(0xA1)] + ["é", "😀", "\u2028", "\ufeff"]
    texts = [*alphabet, None, ""] + ["".join(rng.choices(alphabet, k=rng.randint(1, 8))) for _ in range(3000)]
    got = json_escaped(pa.array(texts, pa.string())).to_pylist()
    assert got == [None if v is None else json.dumps(v, ensure_ascii=False)[1:-1] for v in texts]
