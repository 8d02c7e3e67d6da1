"""Arcion "JSON CDC format" for the Kafka target (Debezium-like).

A message has a key (the primary key; ``null`` when the table has none) and a value::

    {"schema": {...Envelope...},
     "payload": {"before": {...} | {}, "after": {...} | {}, "op": "c|u|d|r", "ts_ms": ...,
                 "source": {"version", "connector", "name", "ts_ms", "db", "schema",
                            "table", "query", "snapshot", "server_id", "gtid",
                            "file", "pos", "row", "thread"}}}

The value may also be the payload alone (``schemas.enable`` off). Decisions:

* ``before: {}`` / ``after: {}`` mean "no image" (``None``), not a row of nulls (unlike
  Debezium, Arcion writes empty objects for the missing image).
* A null value (``record.text`` ``None`` or the JSON ``null``) is the tombstone that
  follows each delete: ``SkipRecord("tombstone")``.
* ``op``: ``c`` insert, ``u`` update, ``d`` delete, ``r`` snapshot; others are quarantined.
  An update of a key column arrives as a ``d`` and a ``c``: nothing special to do.
* ``key``: the Kafka key JSON (its ``payload`` when it has ``schema`` + ``payload``) as
  column -> canonical text; ``None`` without a key (the configuration gives the key).
* ``seq``: realtime events ``seq_of(number at the end of source.file, pos, row)``.
  Snapshot rows (``r``) have null positions: they get the lowest position
  ``seq_of(0, 0, 0)``, so they order before every realtime change of their key, and
  among themselves by Kafka offset / file order.
* ``source_db``/``source_schema``/``source_table`` from ``source.db``/``.schema``/``.table``;
  ``commit_ts_us`` from ``source.ts_ms``, ``capture_ts_us`` from the payload ``ts_ms``;
  ``tx_id`` from ``source.gtid`` when present.
* ``col_types`` from the envelope schema's ``after``/``before`` struct (the field's
  logical ``name`` when it has one, else its ``type``).
* ``extras``: the other ``source`` fields as text (``query``, ``snapshot``,
  ``connector``, ``version``, ``name``, ``server_id``, ``thread``, ``file``, ``pos``,
  ``row``).
"""

from __future__ import annotations

from typing import Any, ClassVar

from udfs.contract import (
    Change,
    Decoder,
    QuarantineError,
    Record,
    SkipRecord,
    canonical_text,
    loads_exact,
    seq_of,
)
from udfs.formats.arcion_cursor import log_file_number

OPS = {"c": "insert", "u": "update", "d": "delete", "r": "snapshot"}

#: source fields mapped to Change attributes rather than extras
_MAPPED_SOURCE = frozenset({"db", "schema", "table", "ts_ms", "gtid"})


def _payload(doc: Any) -> Any:
    """Return the payload of a ``{"schema", "payload"}`` envelope, else the document itself."""
    if isinstance(doc, dict) and "payload" in doc and set(doc) <= {"schema", "payload"}:
        return doc["payload"]
    return doc


def _image(payload: dict[str, Any], name: str) -> dict[str, str | None] | None:
    image = payload.get(name)
    if image is None or image == {}:
        return None  # Arcion's "{}" is "no image", as Debezium's null
    if not isinstance(image, dict):
        raise QuarantineError(f"{name} is not an object")
    return {col: canonical_text(value) for col, value in image.items()}


def col_types_of(doc: Any) -> dict[str, str]:
    """Each image column's declared type, from a wrapped message's Connect schema."""
    schema = doc.get("schema") if isinstance(doc, dict) else None
    types: dict[str, str] = {}
    if not isinstance(schema, dict):
        return types
    for part in schema.get("fields") or []:
        if isinstance(part, dict) and part.get("field") in ("before", "after"):
            for col in part.get("fields") or []:
                if isinstance(col, dict) and isinstance(col.get("field"), str):
                    kind = col.get("name") or col.get("type")
                    if isinstance(kind, str):
                        types.setdefault(col["field"], kind)
    return types


def _ms_to_us(value: Any, what: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise QuarantineError(f"{what} is not an integer: {value!r}")
    return value * 1000


def _position(value: Any, what: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, str) and value.isdigit():
        return int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise QuarantineError(f"{what} is not an integer: {value!r}")
    return value


def decode_key(text: str | None) -> dict[str, str | None] | None:
    """Column -> canonical text of a Kafka key JSON (``None`` for no key or ``null``)."""
    if text is None:
        return None
    doc = loads_exact(text)
    if doc is None:
        return None
    key = _payload(doc)
    if key is None:
        return None
    if not isinstance(key, dict):
        raise QuarantineError("Kafka key is not a JSON object")
    return {col: canonical_text(value) for col, value in key.items()}


class ArcionKafkaJsonDecoder(Decoder):
    """Decoder of Arcion's JSON CDC format for Kafka (see the module docstring)."""

    identifier: ClassVar[str] = "arcion_kafka_json"
    default_framing: ClassVar[str] = "kcat"
    framings: ClassVar[tuple[str, ...]] = ("kcat", "kafka_parquet", "lines")
    option_names: ClassVar[tuple[str, ...]] = ("columnar",)
    columnar_decoder: ClassVar[str | None] = "udfs.formats.arcion_kafka_json_columnar:decode_arcion_kafka_columnar"

    def decode(self, record: Record) -> list[Change]:
        """Decode one Kafka message into one :class:`~udfs.contract.Change`."""
        if record.text is None or record.text.strip() == "null":
            raise SkipRecord("tombstone")
        doc = loads_exact(record.text)
        payload = _payload(doc)
        if payload is None:
            raise SkipRecord("tombstone")
        if not isinstance(payload, dict):
            raise QuarantineError("value payload is not a JSON object")
        op = payload.get("op")
        if op not in OPS:
            raise QuarantineError(f"unknown op {op!r}")
        source = payload.get("source") or {}
        if not isinstance(source, dict):
            raise QuarantineError("source is not an object")
        table = source.get("table")
        if not isinstance(table, str) or not table:
            raise QuarantineError("source.table is missing")

        file_no = log_file_number(source.get("file")) if isinstance(source.get("file"), str) else None
        seq = seq_of(file_no, _position(source.get("pos"), "pos"), _position(source.get("row"), "row"))
        if seq is None and op == "r":
            # a snapshot row precedes every realtime change: the lowest position (its
            # snapshot rows among themselves keep Kafka offset / file order)
            seq = seq_of(0, 0, 0)
        extras = {name: canonical_text(v) for name, v in source.items() if name not in _MAPPED_SOURCE}
        return [
            Change(
                op=OPS[op],
                source_table=table,
                source_db=canonical_text(source.get("db")),
                source_schema=canonical_text(source.get("schema")),
                key=decode_key(record.kafka_key),
                before=_image(payload, "before"),
                after=_image(payload, "after"),
                col_types=col_types_of(doc),
                seq=seq,
                commit_ts_us=_ms_to_us(source.get("ts_ms"), "source.ts_ms"),
                capture_ts_us=_ms_to_us(payload.get("ts_ms"), "ts_ms"),
                tx_id=canonical_text(source.get("gtid")),
                extras=extras,
            )
        ]
