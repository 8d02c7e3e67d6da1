"""Alibaba Cloud Lindorm change tracking, Debezium format V2.0.

Spec: ``specs/lindorm-debezium-format.txt``. A message is ``{"schema", "payload"}``
with ``payload{op c/u/d, ts_ms, before, after, source{version, db, namespace, table,
ts_ms}}``; ``schema`` is often ``{}``.

Two kinds of tables share the format:

* **SQL tables** send whole rows. An update whose ``after`` lacks a column that
  ``before`` has means the column was deleted: it becomes NULL. So for an update with
  a before image, ``after_cols`` = every column of ``before`` and ``after``, the missing
  ones set to ``None``. The same holds for the columns ``cdc.yml`` configures for the
  table (``tables.<t>.columns``): ``after`` is the whole row, so a configured column it
  lacks is NULL, even when ``before`` lacks it too (Lindorm stores no cell for NULL, so
  a column that was NULL is in neither image; were it kept, a late update delivered
  after this one would leave a stale value until it arrives). Other columns named in
  neither image are unknown to the event and keep their value.
* **HBase tables** send cells: the row key column is ``ROW``, other columns are
  ``family_qualifier``, every value is base64 of raw bytes. The base64 text is kept as
  the value (type ``binary`` for the non-key columns; ``ROW`` stays base64 text with no
  declared type so it can be a plain string merge key). A put (``c`` or ``u``; the
  spec's "update" sample is a ``c``) writes only the given cells: it is an ``update``
  (an insert would start the row afresh in the merge) with ``after_cols`` = the given
  cells, so the merge leaves the others alone. ``d`` deletes the row.

Which kind: option ``table_kind`` ``sql``, ``hbase`` or ``auto`` (default). ``auto``
treats a message as HBase when its image has a ``ROW`` column and every value is a
valid base64 string. Short SQL strings can be valid base64 too (``"Anne"``), so an SQL
table with a ``ROW`` column needs ``table_kind: sql``.

Order: ``seq`` = ``seq_of(source.ts_ms)`` (the change time, ms). Many changes share a
millisecond; the shared layer breaks ties with the Kafka offset / file order.
``source.db`` is the instance id (``source_db``); ``source.namespace`` is the
Lindorm database, used as ``source_schema`` and also kept in ``extras["namespace"]``.
"""

from __future__ import annotations

import base64
import binascii
from typing import Any, ClassVar

from udfs.config import match_table
from udfs.contract import Change, Decoder, QuarantineError, Record, SkipRecord, loads_exact, seq_of
from udfs.formats.connect_types import decode_row, field_schemas, split_envelope

_OPS = {"c": "insert", "u": "update", "d": "delete", "r": "snapshot"}
TABLE_KINDS = ("sql", "hbase", "auto")
#: HBase row key column
ROW = "ROW"


def _is_base64(value: Any) -> bool:
    if not isinstance(value, str):
        return False
    try:
        base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        return False
    return True


def looks_like_hbase(image: dict[str, Any] | None) -> bool:
    """Whether a row image looks like an HBase table's: a ``ROW`` column, all base64.

    Parameters
    ----------
    image:
        The ``after`` (or ``before``) object.

    Returns
    -------
    bool
    """
    return isinstance(image, dict) and ROW in image and all(_is_base64(v) for v in image.values())


def _ms(value: Any, what: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise QuarantineError(f"bad {what}: {value!r} (epoch milliseconds expected)")
    return value


class LindormJsonDecoder(Decoder):
    """Decoder for Lindorm's Debezium-format change records (SQL and HBase tables).

    Options
    -------
    table_kind:
        ``sql``, ``hbase`` or ``auto`` (default), see the module docstring.
    """

    identifier: ClassVar[str] = "lindorm_json"
    default_framing: ClassVar[str] = "lines"
    framings: ClassVar[tuple[str, ...]] = ("lines", "kcat", "documents")
    option_names: ClassVar[tuple[str, ...]] = ("table_kind", "columnar")
    columnar_decoder: ClassVar[str | None] = "udfs.formats.lindorm_json_columnar:decode_lindorm_columnar"

    @classmethod
    def carries_key(cls, framing: str, options: dict[str, Any] | None = None) -> bool:
        """HBase tables carry their key (``ROW``); SQL tables need ``tables.<t>.key``."""
        kind = str((options or {}).get("table_kind") or "auto").lower()
        return kind == "hbase" or super().carries_key(framing, options)

    def __init__(self, options: dict[str, Any] | None = None) -> None:
        super().__init__(options)
        self.table_kind = str(self.options.get("table_kind") or "auto").lower()
        if self.table_kind not in TABLE_KINDS:
            raise ValueError(f"lindorm_json: table_kind must be one of {TABLE_KINDS}, not {self.table_kind!r}")

    def decode(self, record: Record) -> list[Change]:
        """Decode one Lindorm message into one change.

        Raises
        ------
        SkipRecord
            A tombstone (``null`` value).
        QuarantineError
            Malformed JSON, unknown op, missing table or images, bad base64 in an HBase
            table, undecodable typed values.
        """
        if record.text is None or not record.text.strip():
            raise SkipRecord("tombstone")
        schema, payload = split_envelope(loads_exact(record.text))
        if payload is None:
            raise SkipRecord("tombstone")
        if not isinstance(payload, dict):
            raise QuarantineError("Lindorm message is not a JSON object")
        code = payload.get("op")
        op = _OPS.get(code)
        if op is None:
            raise QuarantineError(f"unknown Lindorm op {code!r}")
        source = payload.get("source")
        if not isinstance(source, dict) or not source.get("table"):
            raise QuarantineError("Lindorm message without source.table")
        before, after = payload.get("before"), payload.get("after")
        for name, image in (("before", before), ("after", after)):
            if image is not None and not isinstance(image, dict):
                raise QuarantineError(f"{name} is not an object")
        if op == "delete" and not before:
            raise QuarantineError("delete without a before image")
        if op != "delete" and not after:
            raise QuarantineError(f"{op} without an after image")

        kind = self.table_kind
        if kind == "auto":
            kind = "hbase" if looks_like_hbase(after if op != "delete" else before) else "sql"
        if kind == "hbase":
            images = self._hbase(op, before, after)
            if op == "insert":
                op = "update"  # a put of some cells, not a new row: keep the other cells
        else:
            images = self._sql(op, before, after, field_schemas(schema), self.configured_columns(source))

        ts_ms = _ms(source.get("ts_ms"), "source.ts_ms")
        capture_ms = _ms(payload.get("ts_ms"), "ts_ms")
        namespace = None if source.get("namespace") is None else str(source["namespace"])
        return [
            Change(
                op=op,
                source_table=str(source["table"]),
                source_db=None if source.get("db") is None else str(source["db"]),
                source_schema=namespace,
                seq=seq_of(ts_ms),
                commit_ts_us=None if ts_ms is None else ts_ms * 1000,
                capture_ts_us=None if capture_ms is None else capture_ms * 1000,
                extras={
                    "namespace": namespace,
                    "table_kind": kind,
                    "lindorm_version": None if source.get("version") is None else str(source["version"]),
                },
                **images,
            )
        ]

    def configured_columns(self, source: dict[str, Any]) -> list[str]:
        """The columns ``cdc.yml`` configures for the message's table (``[]`` if none)."""
        tables = self.options.get("tables") or {}
        db, namespace = source.get("db"), source.get("namespace")
        table_id = match_table(
            tables, None if db is None else str(db), None if namespace is None else str(namespace), str(source["table"])
        )
        entry = tables.get(table_id) if table_id else None
        if not isinstance(entry, dict):
            return []
        return [str(c) for c in entry.get("column_order") or entry.get("columns") or []]

    @staticmethod
    def _sql(
        op: str,
        before: dict[str, Any] | None,
        after: dict[str, Any] | None,
        fields: dict[str, dict[str, Any]],
        configured: list[str] | None = None,
    ) -> dict[str, Any]:
        # Lindorm is not Debezium-based: "__debezium_unavailable_value" is plain data here
        after_v, after_types, _ = decode_row(after, fields.get("after"), placeholders=False)
        before_v, before_types, _ = decode_row(before, fields.get("before"), placeholders=False)
        after_cols = None
        if op == "update" and after_v is not None and (before_v is not None or configured):
            # after is the whole row: a column before or the configuration knows and
            # after lacks was deleted (or is still NULL): it is NULL now
            present = {column.lower() for column in after_v}
            for column in [*(before_v or {}), *(configured or [])]:
                if column.lower() not in present:
                    after_v[column] = None
                    present.add(column.lower())
            after_cols = list(after_v)
        return {
            "before": before_v,
            "after": after_v,
            "after_cols": after_cols,
            "col_types": {**before_types, **after_types},
        }

    @staticmethod
    def _hbase(op: str, before: dict[str, Any] | None, after: dict[str, Any] | None) -> dict[str, Any]:
        for image in (before, after):
            for column, value in (image or {}).items():
                if not _is_base64(value):
                    raise QuarantineError(f"column {column}: bad base64 in HBase cell {str(value)[:40]!r}")
        image = after if op != "delete" else before
        if ROW not in image:
            raise QuarantineError("HBase change without a ROW key")
        after_v = None if after is None else dict(after)
        return {
            "before": None if before is None else dict(before),
            "after": after_v if op != "delete" else None,
            # a put writes only the given cells; the others keep their value
            "after_cols": list(after_v) if op != "delete" and after_v is not None else None,
            "col_types": {c: "binary" for c in {**(before or {}), **(after or {})} if c != ROW},
            "key": {ROW: image[ROW]},
        }
