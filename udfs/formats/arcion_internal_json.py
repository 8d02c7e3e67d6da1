"""Arcion internal CDC format, JSON flavour (files written to S3 and other file targets).

One record is one JSON object (the documentation pretty-prints it, hence the default
``documents`` framing; ``lines`` works for one object per line)::

    {"tableName": {"namespace": {"catalog", "schema", "hash"}, "name", "hash"},
     "opType": "I" | "U" | "D",
     "cursor": "<JSON text>", "operationcount": "<JSON text>",
     "before": {col: "text"}, "after": {col: "text"}, "exists": {col: "0".."3"}}

Decisions where the vendor document is silent or ambiguous:

* ``exists`` is authoritative: code 1 puts the column in ``after_cols``, 2 in
  ``before_cols``, 3 in both, 0 in neither. ``before``/``after`` hold only the provided
  columns, so a realtime UPDATE that names only ``r_comment`` leaves ``r_name`` alone in
  the merge. The text ``"null"`` is SQL NULL; a real JSON ``null`` is accepted too.
* Without any ``exists`` map (never seen in the docs) every column of the images the op
  implies is taken as provided: ``after`` for I, ``before`` for D, both for U.
* Snapshot vs CDC: the document's "snapshot mode" examples are I/U/D events with MySQL
  binlog cursors, indistinguishable from realtime ones, so there is no signal to tell a
  snapshot load from an insert: ``I`` is always ``insert`` (an upsert in the merge).
* ``key`` is ``None``: the format carries no primary-key information; keys come from the
  configuration.
* ``seq`` comes from the decoded cursor (:func:`~udfs.formats.arcion_cursor.cursor_seq`),
  ``commit_ts_us`` from the cursor ``timestamp`` and ``capture_ts_us`` from its
  ``extractionTimestamp``. Cursor keys with typos are not used (see ``arcion_cursor``).
* ``extras``: ``cursor`` and ``operationcount`` raw texts and ``insert_count``,
  ``update_count``, ``delete_count``, ``replace_count`` as text (cumulative counters: a
  jump between consecutive events is evidence of a missing one).
"""

from __future__ import annotations

from typing import Any, ClassVar

from udfs.contract import Change, Decoder, QuarantineError, Record, canonical_text, loads_exact
from udfs.formats.arcion_cursor import (
    OPERATIONCOUNT_FIELDS,
    cursor_seq,
    decode_cursor,
    decode_operationcount,
)

#: opType -> changelog op
OP_TYPES = {"I": "insert", "U": "update", "D": "delete"}

#: exists code -> (provided in after, provided in before)
EXISTS_CODES = {0: (False, False), 1: (True, False), 2: (False, True), 3: (True, True)}

#: exists code assumed for every column when an event has no ``exists`` map
_DEFAULT_EXISTS = {"I": 1, "U": 3, "D": 2}


def parse_exists(value: Any, column: str) -> int:
    """Parse and check an ``exists`` code (``"0"``..``"3"`` as text or int)."""
    code: Any = value
    if isinstance(value, str) and value.strip().isdigit():
        code = int(value.strip())
    if isinstance(code, bool) or code not in EXISTS_CODES:
        raise QuarantineError(f"exists code of {column!r} is not 0, 1, 2 or 3: {value!r}")
    return code


def images_from_exists(
    columns: list[str],
    new: dict[str, str | None],
    old: dict[str, str | None],
    exists: dict[str, int],
) -> tuple[dict[str, str | None] | None, list[str] | None, dict[str, str | None] | None, list[str] | None]:
    """Split values into ``(after, after_cols, before, before_cols)`` by exists code.

    Only provided columns enter an image; an image with no provided column is ``None``.
    """
    after: dict[str, str | None] = {}
    before: dict[str, str | None] = {}
    for col in columns:
        in_after, in_before = EXISTS_CODES[exists[col]]
        if in_after:
            after[col] = new.get(col)
        if in_before:
            before[col] = old.get(col)
    return (
        after or None,
        list(after) or None,
        before or None,
        list(before) or None,
    )


def metadata(cursor_text: str | None, operationcount_text: str | None) -> dict[str, Any]:
    """Decode the cursor and operationcount texts into ``Change`` keyword arguments.

    Returns ``seq``, ``commit_ts_us``, ``capture_ts_us`` and ``extras``.
    """
    cursor = decode_cursor(cursor_text)
    counts = decode_operationcount(operationcount_text) or dict.fromkeys(OPERATIONCOUNT_FIELDS)
    extras: dict[str, str | None] = {"cursor": cursor_text, "operationcount": operationcount_text}
    for name, value in counts.items():
        extras[name] = None if value is None else str(value)
    return {
        "seq": cursor_seq(cursor),
        "commit_ts_us": cursor["timestamp_us"] if cursor else None,
        "capture_ts_us": cursor["extraction_timestamp_us"] if cursor else None,
        "extras": extras,
    }


def _json_text(value: Any, what: str) -> str | None:
    """Return the cursor/operationcount JSON text (an inline object is dumped to text)."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, dict):
        return canonical_text(value)
    raise QuarantineError(f"{what} is neither JSON text nor an object: {value!r}")


def _value(value: Any) -> str | None:
    # Arcion writes every value as a string and SQL NULL as "null".
    if value == "null":
        return None
    return canonical_text(value)


def _image(doc: dict[str, Any], name: str) -> dict[str, Any]:
    image = doc.get(name)
    if image is None:
        return {}
    if not isinstance(image, dict):
        raise QuarantineError(f"{name} is not an object")
    return image


class ArcionInternalJsonDecoder(Decoder):
    """Decoder of the Arcion internal CDC JSON format (see the module docstring)."""

    identifier: ClassVar[str] = "arcion_internal_json"
    default_framing: ClassVar[str] = "documents"
    framings: ClassVar[tuple[str, ...]] = ("documents", "lines")
    option_names: ClassVar[tuple[str, ...]] = ("columnar",)
    columnar_decoder: ClassVar[str | None] = (
        "udfs.formats.arcion_internal_json_columnar:decode_arcion_internal_columnar"
    )

    def decode(self, record: Record) -> list[Change]:
        """Decode one JSON document into one :class:`~udfs.contract.Change`."""
        if record.text is None or not record.text.strip():
            raise QuarantineError("empty record")
        doc = loads_exact(record.text)
        if not isinstance(doc, dict):
            raise QuarantineError("record is not a JSON object")

        table = doc.get("tableName")
        if not isinstance(table, dict) or not isinstance(table.get("name"), str):
            raise QuarantineError("tableName.name is missing")
        namespace = table.get("namespace") or {}
        if not isinstance(namespace, dict):
            raise QuarantineError("tableName.namespace is not an object")

        op_type = doc.get("opType")
        if op_type not in OP_TYPES:
            raise QuarantineError(f"unknown opType {op_type!r}")

        before_raw = _image(doc, "before")
        after_raw = _image(doc, "after")
        exists_raw = doc.get("exists")
        if exists_raw is None:
            columns = list(dict.fromkeys([*after_raw, *before_raw]))
            exists = dict.fromkeys(columns, _DEFAULT_EXISTS[op_type])
        elif isinstance(exists_raw, dict):
            columns = list(exists_raw)
            exists = {col: parse_exists(code, col) for col, code in exists_raw.items()}
        else:
            raise QuarantineError("exists is not an object")

        for col in columns:
            in_after, in_before = EXISTS_CODES[exists[col]]
            if in_after and col not in after_raw:
                raise QuarantineError(f"exists says {col!r} is in after, but after lacks it")
            if in_before and col not in before_raw:
                raise QuarantineError(f"exists says {col!r} is in before, but before lacks it")
        new = {col: _value(v) for col, v in after_raw.items()}
        old = {col: _value(v) for col, v in before_raw.items()}
        after, after_cols, before, before_cols = images_from_exists(columns, new, old, exists)

        return [
            Change(
                op=OP_TYPES[op_type],
                source_table=table["name"],
                source_db=canonical_text(namespace.get("catalog")),
                source_schema=canonical_text(namespace.get("schema")),
                key=None,
                before=before,
                after=after,
                before_cols=before_cols,
                after_cols=after_cols,
                **metadata(
                    _json_text(doc.get("cursor"), "cursor"),
                    _json_text(doc.get("operationcount"), "operationcount"),
                ),
            )
        ]
