"""Debezium JSON (open source), format identifier ``debezium_json``.

Envelopes with ``schema`` + ``payload`` (``schemas.enable=true``) and payload-only
envelopes may be mixed in one feed. Logical types are decoded from the Kafka Connect
schema when the envelope carries one (``udfs.formats.connect_types``).

Decisions:

* ops: ``c`` insert, ``r`` snapshot, ``u`` update, ``d`` delete, ``t`` truncate,
  ``m`` (message) skipped; ``c`` read during a snapshot (``source.snapshot`` true or
  ``"true"``/``"last"``, as Debezium 1.1 MySQL emits) is a snapshot too.
* a null value (Kafka tombstone) and ``{"schema":..,"payload":null}`` are skipped as
  ``tombstone``.
* ``__debezium_unavailable_value`` (PostgreSQL TOAST) means "not provided": the column
  is left out of ``after_cols`` so the merge keeps its previous value.
* ``seq``: MySQL binlog file number, ``pos``, ``row``; PostgreSQL ``lsn``; SQL Server
  ``change_lsn`` then ``event_serial_no``; Oracle ``scn``; other connectors have none
  (the order then falls back to the Kafka offset and the file order).
* a flattened row without envelope (ExtractNewRecordState) is an upsert (``update``)
  of the table named by the feed option ``table``.
* Kafka key values are decoded like image values (by the key's schema, else the image
  field of the same name), so a delete's key matches the key its insert had.

Feed options: ``table`` (above) and ``columnar`` (true by default): ``cdc_decode``
decodes a batch of this feed's records column-wise with
:mod:`udfs.formats.debezium_json_columnar`, which gives the very result of this decoder
(the records it cannot do exactly are decoded here); ``columnar: false`` decodes every
record here.
"""

from __future__ import annotations

import re
from typing import Any, ClassVar

from udfs.contract import Change, Decoder, QuarantineError, Record, SkipRecord, canonical_text, loads_exact, seq_of
from udfs.formats import connect_types

UNAVAILABLE = "__debezium_unavailable_value"

OPS = {"c": "insert", "r": "snapshot", "u": "update", "d": "delete", "t": "truncate"}
ENVELOPE_FIELDS = {"before", "after", "source", "op", "ts_ms", "ts_us", "ts_ns", "transaction"}

_TRAILING_DIGITS = re.compile(r"(\d+)$")


def file_number(name: Any) -> int | None:
    """The number at the end of a binlog file name (``mysql-bin.000003`` -> 3)."""
    if not isinstance(name, str):
        return None
    m = _TRAILING_DIGITS.search(name)
    return int(m.group(1)) if m else None


def _as_int(value: Any) -> int | None:
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    try:
        return int(str(value))
    except ValueError:
        return None


def debezium_seq(source: dict[str, Any]) -> str | None:
    """Ordering key from a Debezium ``source`` block (see the module docstring)."""
    connector = str(source.get("connector") or "").lower()
    if connector == "mysql" or ("file" in source and "pos" in source):
        return seq_of(file_number(source.get("file")), _as_int(source.get("pos")), _as_int(source.get("row")) or 0)
    if connector == "postgresql" or "lsn" in source:
        return seq_of(_as_int(source.get("lsn")))
    if connector == "sqlserver" or "change_lsn" in source:
        lsn = source.get("change_lsn") or source.get("commit_lsn")
        if not isinstance(lsn, str):
            return None
        try:
            parts = [int(p, 16) for p in lsn.split(":")]
        except ValueError:
            raise QuarantineError(f"bad SQL Server lsn {lsn!r}") from None
        return seq_of(*parts, _as_int(source.get("event_serial_no")) or 0)
    if connector == "oracle" or "scn" in source:
        return seq_of(_as_int(source.get("scn")))
    return None


def ts_us(obj: dict[str, Any]) -> int | None:
    """Microseconds from ``ts_us`` / ``ts_ns`` / ``ts_ms`` (whichever is present, finest first)."""
    for name, factor, div in (("ts_us", 1, 1), ("ts_ns", 1, 1000), ("ts_ms", 1000, 1)):
        v = _as_int(obj.get(name))
        if v is not None:
            return v * factor // div
    return None


def parse_kafka_key(text: str | None, image_fields: dict[str, Any] | None = None) -> dict[str, str | None] | None:
    """Key columns from a Kafka key in JSON (with or without ``schema``).

    Key values are decoded like the image values (a ``Decimal`` key is base64 on the
    wire): by the key's own schema, else by the image's field schema of the same name,
    so the key of a delete matches the key its insert got from the after image.
    """
    if text is None or text == "null":
        return None
    key = loads_exact(text)
    fields: dict[str, Any] = dict(image_fields or {})
    if isinstance(key, dict) and "payload" in key and set(key) <= {"schema", "payload"}:
        fields.update(connect_types.field_schemas(key.get("schema")))
        key = key["payload"]
    if not isinstance(key, dict):
        return None  # a scalar key does not name its column: use the configured key
    out: dict[str, str | None] = {}
    for col, raw in key.items():
        try:
            out[col], _ = connect_types.decode_value(raw, fields.get(col), col)
        except QuarantineError as exc:
            raise QuarantineError(f"Kafka key: {exc}") from None
    return out


class DebeziumJsonDecoder(Decoder):
    identifier: ClassVar[str] = "debezium_json"
    default_framing: ClassVar[str] = "lines"
    framings: ClassVar[tuple[str, ...]] = ("lines", "documents", "kcat", "kafka_parquet")
    option_names: ClassVar[tuple[str, ...]] = ("table", "columnar")
    columnar_decoder: ClassVar[str | None] = "udfs.formats.debezium_json_columnar:decode_debezium_columnar"

    def decode(self, record: Record) -> list[Change]:
        if record.text is None or record.text.strip() == "null":
            raise SkipRecord("tombstone")
        obj = loads_exact(record.text)
        if not isinstance(obj, dict):
            raise QuarantineError(f"envelope is a JSON {type(obj).__name__}, not an object")
        schema = None
        if "payload" in obj and set(obj) <= {"schema", "payload"}:
            schema, payload = obj.get("schema"), obj["payload"]
            if payload is None:
                raise SkipRecord("tombstone")
            if not isinstance(payload, dict):
                raise QuarantineError("payload is not an object")
        else:
            payload = obj
        return [self._change(payload, schema, record)]

    # ------------------------------------------------------------------ internals

    def _change(self, payload: dict[str, Any], schema: Any, record: Record) -> Change:
        if "op" not in payload and not (set(payload) & {"before", "after", "source"}):
            return self._unwrapped(payload, schema, record)
        raw_op = payload.get("op")
        if raw_op == "m":
            raise SkipRecord("message")
        if raw_op not in OPS:
            raise QuarantineError(f"unknown op {raw_op!r}")
        source = payload.get("source") or {}
        if not isinstance(source, dict):
            raise QuarantineError("source is not an object")
        op = OPS[raw_op]
        if op == "insert" and str(source.get("snapshot")).lower() in (
            "true",
            "last",
            "first",
            "first_in_data_collection",
            "last_in_data_collection",
        ):
            op = "snapshot"

        fields = envelope_fields(schema)
        # field_schemas is pure and never raises: each image's map is built once
        before_fields = connect_types.field_schemas(fields.get("before"))
        after_fields = connect_types.field_schemas(fields.get("after"))
        before, before_cols, before_types = self._image(payload.get("before"), None, "before", before_fields)
        after, after_cols, after_types = self._image(payload.get("after"), None, "after", after_fields)
        table = source.get("table") or source.get("collection") or self.options.get("table")
        if not table and op != "truncate":
            raise QuarantineError("no table name: source.table is missing and the feed sets no table")
        image_fields = {**before_fields, **after_fields}
        key = parse_kafka_key(record.kafka_key, image_fields)
        if op == "delete" and before is None and after is None and key is None:
            raise QuarantineError("delete without key: before and after are null and there is no Kafka key")
        extras = {
            "connector": canonical_text(source.get("connector")),
            "snapshot": canonical_text(source.get("snapshot")),
            "server": canonical_text(source.get("name")),
            "version": canonical_text(source.get("version")),
        }
        for name in ("gtid", "server_id", "file", "pos", "row", "lsn", "txId", "scn", "change_lsn"):
            if source.get(name) is not None:
                extras[name] = canonical_text(source.get(name))
        tx = payload.get("transaction")
        tx_id = None
        if isinstance(tx, dict) and tx.get("id") is not None:
            tx_id = canonical_text(tx.get("id"))
        elif source.get("txId") is not None:
            tx_id = canonical_text(source.get("txId"))
        elif source.get("gtid") is not None:
            tx_id = canonical_text(source.get("gtid"))
        return Change(
            op=op,
            source_db=canonical_text(source.get("db")),
            source_schema=canonical_text(source.get("schema")),
            source_table=canonical_text(table),
            key=key,
            before=before,
            after=after,
            before_cols=before_cols,
            after_cols=after_cols,
            col_types={**before_types, **after_types},
            seq=debezium_seq(source),
            commit_ts_us=ts_us(source),
            capture_ts_us=ts_us(payload),
            tx_id=tx_id,
            extras={k: v for k, v in extras.items() if v is not None},
        )

    def _image(
        self, image: Any, struct_schema: Any, name: str, fields: dict[str, Any] | None = None
    ) -> tuple[dict[str, str | None] | None, list[str] | None, dict[str, str]]:
        """``fields``: ``field_schemas(struct_schema)`` when the caller has it already."""
        if image is None:
            return None, None, {}
        if not isinstance(image, dict):
            raise QuarantineError(f"{name} is not an object")
        if fields is None:
            fields = connect_types.field_schemas(struct_schema) if isinstance(struct_schema, dict) else {}
        values: dict[str, str | None] = {}
        provided: list[str] = []
        types: dict[str, str] = {}
        for col, raw in image.items():
            field_schema = fields.get(col)
            if connect_types.is_unavailable(raw, field_schema):
                continue  # TOAST: not provided, keep the previous value
            try:
                text, logical = connect_types.decode_value(raw, field_schema)
            except QuarantineError as exc:
                raise QuarantineError(f"{name}.{col}: {exc}") from None
            values[col] = text
            provided.append(col)
            if logical:
                types[col] = logical
        return values, provided, types

    def _unwrapped(self, row: dict[str, Any], schema: Any, record: Record) -> Change:
        table = self.options.get("table")
        if not table:
            raise QuarantineError("flattened row without envelope: set the feed option `table`")
        # the envelope schema, when present, is the row's own struct schema
        after, after_cols, types = self._image(row, schema, "after")
        key = parse_kafka_key(record.kafka_key, connect_types.field_schemas(schema))
        return Change(op="update", source_table=table, key=key, after=after, after_cols=after_cols, col_types=types)


def envelope_fields(schema: Any) -> dict[str, Any]:
    """``before`` / ``after`` struct schemas of an envelope schema, by field name."""
    if not isinstance(schema, dict):
        return {}
    return {f.get("field"): f for f in schema.get("fields") or [] if isinstance(f, dict)}
