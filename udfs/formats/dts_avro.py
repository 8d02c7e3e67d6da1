"""Alibaba Cloud DTS Avro (``dts_avro``): one binary Avro ``Record`` per Kafka message.

The writer schema is ``udfs/formats/schemas/dts_record.avsc``, written from the facts
in ``corpora/alibaba-dts/RECORD-SCHEMA.md`` (field and union-branch order as listed
there); values are read with fastavro's schemaless reader.

Decisions
---------
* ``operation``: ``INSERT`` insert, ``UPDATE`` update, ``DELETE`` delete, ``INIT``
  snapshot; ``DDL`` is skipped as ``ddl`` with the statement (``afterImages``, string
  branch) in ``ddl_log``; every other operation (BEGIN, COMMIT, HEARTBEAT, ...) is
  skipped with its name in lower case as the reason.
* ``objectName`` ``db.table`` (``db.schema.table`` for three parts) names the table.
* ``fields[i]`` names the i-th value of ``beforeImages``/``afterImages``. Values become
  canonical text: ``Integer``/``Decimal``/``TextObject``/``TextGeometry`` their text;
  ``Character`` its bytes decoded with its charset (base64 when the charset is
  ``binary`` or unknown); ``Float`` the shortest text of the double (the wire holds a
  double); ``Timestamp`` (epoch seconds + millis) as ``yyyy-MM-dd HH:mm:ss.SSS`` UTC;
  ``DateTime`` as its parts (a date without time parts as ``yyyy-MM-dd``);
  ``TimestampWithTimeZone`` as the date-time followed by the zone; binary objects
  and geometries as base64; ``EmptyObject`` ``NULL`` is SQL NULL, ``NONE`` means "not
  provided" (the column is left out of the image's provided columns).
* ``col_types`` from the value kind: Integer ``bigint`` (``decimal(p,0)`` beyond 18
  digits), Decimal ``decimal(p,s)`` (``string`` beyond 38 digits), Float ``double``,
  Timestamp/DateTime ``timestamp``, binary kinds ``binary``, others ``string``.
* ``seq`` = ``seq_of(id)`` (the record's unique, increasing id in the stream);
  ``commit_ts`` = ``sourceTimestamp`` (seconds); ``tx_id`` = ``sourceTxid``;
  ``sourcePosition``, the source type and version go to ``extras``.
* The key is not in the record: ``tables.<t>.key`` gives it.
* Input: the raw Kafka value bytes (:meth:`DtsAvroDecoder.decode_value`). The format
  is binary (``binary_values``), so the ``kafka_parquet`` and ``length_prefixed``
  framings hand :meth:`decode` the value as base64 text.

Feed option ``columnar`` (true by default): ``cdc_decode`` decodes a batch of this feed's
records column-wise with :mod:`udfs.formats.dts_avro_columnar`, which gives the very
result of this decoder (the records it cannot do exactly are decoded here);
``columnar: false`` decodes every record here.
"""

from __future__ import annotations

import base64
import binascii
import io
import json
import re
from datetime import UTC, datetime, timedelta
from functools import lru_cache
from pathlib import Path
from typing import Any, ClassVar

from udfs.contract import Change, Ddl, Decoder, QuarantineError, Record, SkipRecord, seq_of

SCHEMA_PATH = Path(__file__).with_name("schemas") / "dts_record.avsc"
OPS = {"INSERT": "insert", "UPDATE": "update", "DELETE": "delete", "INIT": "snapshot"}
_CHARSETS = {"utf8": "utf-8", "utf8mb4": "utf-8", "utf-8": "utf-8", "latin1": "latin-1", "gbk": "gbk", "ascii": "ascii"}
_NONE = object()  # EmptyObject NONE: not provided
#: a Python object's default repr, which holds its memory address
_OBJECT_REPR = re.compile(r"<[\w.]+ object at 0x[0-9a-fA-F]+>")


@lru_cache(maxsize=1)
def writer_schema() -> Any:
    import fastavro

    return fastavro.parse_schema(json.loads(SCHEMA_PATH.read_text(encoding="utf-8")))


NAMESPACE = "com.alibaba.dts.formats.avro"


def typed(kind: str, value: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """An image value of union branch ``kind`` (``Integer``, ``Decimal``...) for :func:`encode_record`."""
    return f"{NAMESPACE}.{kind}", value


def encode_record(record: dict[str, Any]) -> bytes:
    """Avro binary of one DTS record (used by tests and fixtures)."""
    import fastavro

    out = io.BytesIO()
    fastavro.schemaless_writer(out, writer_schema(), record)
    return out.getvalue()


def _datetime_text(dt: dict[str, Any]) -> str:
    y, mo, d = dt.get("year"), dt.get("month"), dt.get("day")
    h, mi, s, ms = dt.get("hour"), dt.get("minute"), dt.get("second"), dt.get("millis")
    date = f"{y:04d}-{mo:02d}-{d:02d}" if None not in (y, mo, d) else None
    time = None
    if h is not None:
        time = f"{h:02d}:{mi or 0:02d}:{s or 0:02d}" + (f".{ms:03d}" if ms else "")
    return " ".join(p for p in (date, time) if p) or ""


def value_text(kind: str, value: Any) -> tuple[Any, str]:
    """(canonical text, Spark type) of one image value of union branch ``kind``."""
    if kind == "Integer":
        p = value["precision"]
        return value["value"], ("bigint" if p <= 18 else f"decimal({min(p, 38)},0)")
    if kind == "Character":
        charset = _CHARSETS.get(value["charset"].lower())
        if charset is None:
            return base64.b64encode(value["value"]).decode(), "binary"
        try:
            return value["value"].decode(charset), "string"
        except UnicodeDecodeError:
            raise QuarantineError(f"Character value is not {value['charset']}") from None
    if kind == "Decimal":
        p, s = value["precision"], value["scale"]
        return value["value"], (f"decimal({p},{s})" if 0 < p <= 38 and 0 <= s <= p else "string")
    if kind == "Float":
        return repr(value["value"]), "double"
    if kind == "Timestamp":
        moment = datetime(1970, 1, 1, tzinfo=UTC) + timedelta(seconds=value["timestamp"], milliseconds=value["millis"])
        return moment.strftime("%Y-%m-%d %H:%M:%S.") + f"{value['millis']:03d}", "timestamp"
    if kind == "DateTime":
        return _datetime_text(value), "timestamp"
    if kind == "TimestampWithTimeZone":
        return f"{_datetime_text(value['value'])} {value['timezone']}", "string"
    if kind in ("BinaryGeometry", "BinaryObject"):
        return base64.b64encode(value["value"]).decode(), "binary"
    if kind in ("TextGeometry", "TextObject"):
        return value["value"], "string"
    raise QuarantineError(f"unknown DTS value type {kind!r}")


class DtsAvroDecoder(Decoder):
    """Decoder for DTS Avro records (see the module docstring)."""

    identifier: ClassVar[str] = "dts_avro"
    default_framing: ClassVar[str] = "kafka_parquet"
    framings: ClassVar[tuple[str, ...]] = ("kafka_parquet", "length_prefixed")
    option_names: ClassVar[tuple[str, ...]] = ("columnar",)
    binary_values: ClassVar[bool] = True
    columnar_decoder: ClassVar[str | None] = "udfs.formats.dts_avro_columnar:decode_dts_avro_columnar"

    @classmethod
    def carries_key(cls, framing: str, options: dict[str, Any] | None = None) -> bool:
        return False

    def decode(self, record: Record) -> list[Change]:
        if record.text is None:
            raise SkipRecord("tombstone")
        try:
            raw = base64.b64decode(record.text, validate=True)
        except (binascii.Error, ValueError):
            raise QuarantineError("value is not base64") from None
        return self.decode_value(raw)

    def decode_value(self, raw: bytes) -> list[Change]:
        import fastavro

        try:
            rec = fastavro.schemaless_reader(io.BytesIO(raw), writer_schema(), None, return_record_name=True)
        except Exception as exc:  # noqa: BLE001 - any reader failure is a malformed record
            # fastavro names its reader object (a memory address): the reason says "the record"
            message = _OBJECT_REPR.sub("the record", str(exc))
            raise QuarantineError(f"not a DTS Avro record: {type(exc).__name__}: {message}") from None
        operation = rec["operation"]
        db, schema, table = self._names(rec.get("objectName"))
        commit_us = rec["sourceTimestamp"] * 1_000_000
        if operation == "DDL":
            sql = rec.get("afterImages")
            raise SkipRecord(
                "ddl",
                ddl=Ddl(
                    sql=sql if isinstance(sql, str) else None,
                    source_db=db,
                    source_schema=schema,
                    source_table=table,
                    commit_ts_us=commit_us,
                ),
            )
        op = OPS.get(operation)
        if op is None:
            raise SkipRecord(operation.lower())
        if not table:
            raise QuarantineError(f"DTS {operation} record without objectName")
        fields = rec.get("fields")
        if not isinstance(fields, list):
            raise QuarantineError(f"DTS {operation} record without fields")
        names = [f["name"] for f in fields]
        col_types: dict[str, str] = {}
        before = self._image(rec.get("beforeImages"), names, col_types, "beforeImages")
        after = self._image(rec.get("afterImages"), names, col_types, "afterImages")
        if op in ("insert", "snapshot", "update") and after is None:
            raise QuarantineError(f"DTS {operation} without afterImages")
        if op == "delete" and before is None:
            raise QuarantineError("DTS DELETE without beforeImages")
        source = rec["source"]
        return [
            Change(
                op=op,
                source_db=db,
                source_schema=schema,
                source_table=table,
                before=None if op != "update" and op != "delete" else before[0] if before else None,
                before_cols=before[1] if before and op in ("update", "delete") else None,
                after=after[0] if after and op != "delete" else None,
                after_cols=after[1] if after and op != "delete" else None,
                col_types=col_types,
                seq=seq_of(rec["id"]),
                commit_ts_us=commit_us,
                tx_id=rec.get("sourceTxid") or None,
                extras={
                    "source_position": rec.get("sourcePosition"),
                    "source_type": source.get("sourceType"),
                    "source_version": source.get("version"),
                },
            )
        ]

    @staticmethod
    def _names(object_name: str | None) -> tuple[str | None, str | None, str | None]:
        if not object_name:
            return None, None, None
        parts = object_name.split(".")
        if len(parts) == 3:
            return parts[0], parts[1], parts[2]
        if len(parts) == 2:
            return parts[0], None, parts[1]
        return None, None, object_name

    @staticmethod
    def _image(
        values: Any, names: list[str], col_types: dict[str, str], what: str
    ) -> tuple[dict[str, Any], list[str]] | None:
        if values is None:
            return None
        if not isinstance(values, list):
            raise QuarantineError(f"{what} is not an array of values")
        if len(values) != len(names):
            raise QuarantineError(f"{what} has {len(values)} values for {len(names)} fields")
        image: dict[str, Any] = {}
        provided: list[str] = []
        for name, item in zip(names, values, strict=True):
            kind, value = item if isinstance(item, tuple) else ("EmptyObject", item)
            kind = kind.rsplit(".", 1)[-1]
            if kind == "EmptyObject" and value == "NONE":
                continue  # not provided
            if value is None or kind == "EmptyObject":
                image[name] = None
                provided.append(name)
                continue
            text, spark = value_text(kind, value)
            image[name] = text
            col_types.setdefault(name, spark)
            provided.append(name)
        return image, provided
