"""Canal JSON flat messages: Alibaba Cloud DTS (``dts_canal_json``) and open-source
Canal (``canal_json``), one envelope.

Spec: ``specs/alibaba-dts-kafka-formats.txt`` (section "Canal JSON"); the open-source
Canal ``FlatMessage`` has the same fields. A message::

    {"data": [{col: text, ...}, ...], "old": [{col: text, ...}, ...] | null,
     "database", "table", "pkNames": [...], "isDdl": bool, "sql",
     "mysqlType": {col: "varchar(50)", ...}, "sqlType": {col: 12, ...},
     "type": "INSERT" | "UPDATE" | "DELETE" | "INIT" | DDL types, "id", "es", "ts"}

Decisions
---------
* **Rows.** ``data`` holds one row per element; each becomes its own :class:`Change`
  (and changelog ``row_index``). ``old[i]`` pairs with ``data[i]``; ``old`` of another
  length than ``data`` is malformed (quarantined).
* **Ops.** ``INSERT`` insert, ``INIT`` (DTS full-load row) snapshot, ``UPDATE``
  update, ``DELETE`` delete. ``TRUNCATE`` (a DDL message in Canal) is op ``truncate``:
  the merge empties the table. Any other message with ``isDdl`` true (``CREATE``,
  ``ALTER``, ``DDL``, ``QUERY``...) is skipped as ``ddl`` with its statement
  (``sql``), database, table and ``es`` as a :class:`~udfs.contract.Ddl`, so it lands in
  ``ddl_log``. Another ``type`` on a non-DDL message is quarantined.
* **UPDATE images.** ``data[i]`` is the after image; ``old[i]`` holds only the changed
  columns with their previous values. The before image is ``data[i]`` overlaid with
  ``old[i]``: a column present in ``old[i]`` with ``null`` *was* NULL, a column absent
  from it was unchanged. Both images provide every column they hold. An UPDATE without
  ``old`` has no before image (the key is read from ``data``). A key column in
  ``old`` means the key changed: the shared normalization turns it into a delete of
  the old key and an insert of the new one.
* **DELETE layouts.** The row is in ``data`` (DTS instances created or restarted from
  2022-03-20, open-source Canal), or in ``old`` with ``data`` null (older DTS
  instances). ``data`` wins when both are present.
* **Key.** ``pkNames`` gives the key columns (values read from the images); a message
  without ``pkNames`` takes ``tables.<t>.key`` from the configuration.
* **Types.** ``mysqlType`` (else ``sqlType``, the ``java.sql.Types`` code) becomes
  ``col_types`` as Spark SQL types by :data:`MYSQL_TYPES` / :data:`SQL_TYPES`. Values
  stay text. Binary columns (``binary``, ``varbinary``, ``*blob``) carry their bytes as
  Canal does, one character per byte (ISO-8859-1); the changelog holds them as base64
  (the project's convention for binary text), so ``"nine.bin"`` is the 8 bytes
  ``nine.bin``. A binary value with a character beyond U+00FF did not come from bytes:
  its UTF-8 bytes are kept. ``null`` is SQL NULL in every type.
* **Undeclared columns.** When the message declares types, ``mysqlType`` lists every
  column of the table: a ``data``/``old`` member it does not declare is not a column
  (Flink's schema-driven decoder ignores it) and is dropped; its name goes to
  ``extras["undeclared_columns"]``. A message without type maps keeps every member.
* **Order.** ``seq`` = ``seq_of(id, es, row)`` for ``dts_canal_json``: the DTS ``id`` is
  the record's offset in the DTS cache (a stream position); ``es`` (binlog time, ms)
  and the row index within the message break ties. For ``canal_json`` the default is
  ``seq_of(es, id, row)``: open-source Canal's ``id`` is the client's batch id, which
  starts again with every client connection (Paimon's sample files go 92, 94, 18, 42),
  so the binlog time leads. Option ``order: id | es`` overrides. Messages sharing
  ``id`` and ``es`` fall back to file order (the changelog ``order_key``).
* **Timestamps.** ``es`` is ``commit_ts`` and ``ts`` (the time DTS/Canal wrote the
  message) is ``capture_ts``, both epoch milliseconds.
* **Filters.** Options ``database_include`` / ``table_include`` are regular
  expressions that must match the whole name (as Flink's canal-json ``database.include``
  / ``table.include``). A message of another database or table, DDL included, is
  skipped as ``filtered``.
* **One target table.** Option ``table`` sends every message to that table whatever its
  ``table`` field says (as Paimon's Kafka sync-table action does); the event's own
  table name is kept in ``extras["event_table"]``.
* A message is one JSON object; an empty or ``null`` value (Kafka tombstone) is skipped.
"""

from __future__ import annotations

import base64
import re
from functools import lru_cache
from typing import Any, ClassVar

from udfs.contract import Change, Ddl, Decoder, QuarantineError, Record, SkipRecord, canonical_text, loads_exact, seq_of

#: Canal ``type`` -> changelog op (``TRUNCATE`` is a DDL message but empties the table)
OPS = {"INSERT": "insert", "INIT": "snapshot", "UPDATE": "update", "DELETE": "delete", "TRUNCATE": "truncate"}

#: MySQL type name (``mysqlType`` without length and attributes) -> Spark SQL type,
#: as ``(signed, unsigned)``. ``decimal``-like types are handled by :func:`spark_type`
#: (they keep their precision and scale). Anything not listed is ``string``.
MYSQL_TYPES: dict[str, tuple[str, str]] = {
    # integers: an unsigned type needs the next wider one
    "tinyint": ("tinyint", "smallint"),
    "bool": ("tinyint", "tinyint"),
    "boolean": ("tinyint", "tinyint"),
    "smallint": ("smallint", "int"),
    "mediumint": ("int", "int"),
    "int": ("int", "bigint"),
    "integer": ("int", "bigint"),
    "bigint": ("bigint", "decimal(20,0)"),
    "bit": ("decimal(20,0)", "decimal(20,0)"),
    "year": ("int", "int"),
    # approximate numbers
    "float": ("float", "float"),
    "double": ("double", "double"),
    "double precision": ("double", "double"),
    "real": ("double", "double"),
    # date and time (DATETIME/TIMESTAMP text is read in the session time zone, UTC)
    "date": ("date", "date"),
    "datetime": ("timestamp", "timestamp"),
    "timestamp": ("timestamp", "timestamp"),
    "time": ("string", "string"),
    # text
    "char": ("string", "string"),
    "varchar": ("string", "string"),
    "tinytext": ("string", "string"),
    "text": ("string", "string"),
    "mediumtext": ("string", "string"),
    "longtext": ("string", "string"),
    "enum": ("string", "string"),
    "set": ("string", "string"),
    "json": ("string", "string"),
    # bytes
    "binary": ("binary", "binary"),
    "varbinary": ("binary", "binary"),
    "tinyblob": ("binary", "binary"),
    "blob": ("binary", "binary"),
    "mediumblob": ("binary", "binary"),
    "longblob": ("binary", "binary"),
}
#: MySQL exact-number types: ``decimal(p,s)`` (default ``(10,0)``; beyond 38 digits ``string``)
DECIMAL_TYPES = frozenset({"decimal", "numeric", "dec", "fixed"})

#: ``sqlType`` (``java.sql.Types`` code) -> Spark SQL type, used when ``mysqlType`` does
#: not name the column. A DECIMAL/NUMERIC code carries no precision: ``string``.
SQL_TYPES: dict[int, str] = {
    -7: "decimal(20,0)",  # BIT
    -6: "tinyint",
    5: "smallint",
    4: "int",
    -5: "bigint",
    6: "double",  # JDBC FLOAT is a double
    7: "float",  # REAL
    8: "double",
    2: "string",  # NUMERIC, precision unknown
    3: "string",  # DECIMAL, precision unknown
    16: "boolean",
    91: "date",
    92: "string",  # TIME
    93: "timestamp",
    1: "string",
    12: "string",
    -1: "string",
    -15: "string",
    -9: "string",
    -16: "string",
    2005: "string",  # CLOB
    -2: "binary",
    -3: "binary",
    -4: "binary",
    2004: "binary",  # BLOB
}

_MYSQL_TYPE = re.compile(r"^\s*([a-z]+(?: precision)?)\s*(?:\(\s*(\d+)\s*(?:,\s*(\d+)\s*)?\))?(.*)$", re.I)


@lru_cache(maxsize=1024)  # every message repeats its table's types: parse each text once
def spark_type(mysql_type: str) -> str:
    """The Spark SQL type of a ``mysqlType`` text (``bigint(20) unsigned``, ``NUMERIC(8,3)``).

    >>> spark_type("decimal(12,2)"), spark_type("bigint(20) unsigned"), spark_type("VARBINARY(10)")
    ('decimal(12,2)', 'decimal(20,0)', 'binary')
    """
    m = _MYSQL_TYPE.match(mysql_type)
    if not m:
        return "string"
    name = m.group(1).lower()
    unsigned = "unsigned" in m.group(4).lower()
    if name in DECIMAL_TYPES:
        precision = int(m.group(2)) if m.group(2) else 10
        scale = int(m.group(3)) if m.group(3) else 0
        if precision > 38 or scale > precision:
            return "string"
        return f"decimal({precision},{scale})"
    signed_type, unsigned_type = MYSQL_TYPES.get(name, ("string", "string"))
    return unsigned_type if unsigned else signed_type


#: largest epoch milliseconds whose microseconds fit a bigint (``commit_ts_us``, ``capture_ts_us``)
MAX_MS = (2**63 - 1) // 1000


def _int(value: Any, what: str, required: bool = True, limit: int | None = None) -> int | None:
    if value is None:
        if required:
            raise QuarantineError(f"Canal message without {what}")
        return None
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value.strip())
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise QuarantineError(f"bad Canal {what}: {value!r}")
    if limit is not None and value > limit:
        raise QuarantineError(f"Canal {what} out of range: {value}")
    return value


def binary_text(value: str) -> str:
    try:
        raw = value.encode("latin-1")
    except UnicodeEncodeError:
        raw = value.encode("utf-8")
    return base64.b64encode(raw).decode("ascii")


class DtsCanalJsonDecoder(Decoder):
    """Decoder for Canal JSON as Alibaba Cloud DTS writes it (see the module docstring).

    Options
    -------
    database_include, table_include:
        Regular expressions (whole-name match); other messages are skipped as ``filtered``.
    table:
        Send every message to this table (the event's name goes to ``extras``).
    order:
        ``id`` (``seq`` = id, es, row) or ``es`` (es, id, row).
    columnar:
        ``cdc_decode`` decodes batches column-wise (:mod:`udfs.formats.dts_canal_json_columnar`,
        the very result of this decoder; true by default); false: record by record here.
    """

    identifier: ClassVar[str] = "dts_canal_json"
    default_framing: ClassVar[str] = "lines"
    framings: ClassVar[tuple[str, ...]] = ("lines", "kcat", "kafka_parquet", "documents")
    option_names: ClassVar[tuple[str, ...]] = ("database_include", "table_include", "table", "order", "columnar")
    columnar_decoder: ClassVar[str | None] = "udfs.formats.dts_canal_json_columnar:decode_canal_columnar"
    default_order: ClassVar[str] = "id"

    def __init__(self, options: dict[str, Any] | None = None) -> None:
        super().__init__(options)
        self._include: dict[str, re.Pattern[str] | None] = {}
        for name in ("database_include", "table_include"):
            pattern = self.options.get(name)
            try:
                self._include[name] = re.compile(str(pattern)) if pattern is not None else None
            except re.error as exc:
                raise ValueError(f"{self.identifier}: {name} is not a regular expression: {exc}") from None
        self._table = self.options.get("table")
        self._order = str(self.options.get("order", self.default_order)).lower()
        if self._order not in ("id", "es"):
            raise ValueError(f"{self.identifier}: order must be id or es, not {self._order!r}")

    @classmethod
    def carries_key(cls, framing: str, options: dict[str, Any] | None = None) -> bool:
        """Canal messages name their key (``pkNames``) in every framing."""
        return True

    # ------------------------------------------------------------------ entry point

    def decode(self, record: Record) -> list[Change]:
        if record.text is None or record.text.strip() in ("", "null"):
            raise SkipRecord("tombstone")
        msg = loads_exact(record.text)
        if not isinstance(msg, dict):
            raise QuarantineError(f"Canal message is a JSON {type(msg).__name__}, not an object")
        database, table = msg.get("database"), msg.get("table")
        for name, value in (("database", database), ("table", table)):
            if value is not None and not isinstance(value, str):
                raise QuarantineError(f"Canal {name} is not a string: {value!r}")
        self._filter(database, table)
        is_ddl = msg.get("isDdl")
        if is_ddl is not None and not isinstance(is_ddl, bool):
            raise QuarantineError(f"Canal isDdl is not a boolean: {is_ddl!r}")
        kind = msg.get("type")
        kind = kind.upper() if isinstance(kind, str) else None
        es = _int(msg.get("es"), "es", required=False, limit=MAX_MS)
        if is_ddl and kind != "TRUNCATE":
            sql = msg.get("sql")
            raise SkipRecord(
                "ddl",
                ddl=Ddl(
                    sql=None if sql is None else str(sql),
                    source_db=database,
                    source_table=table,
                    commit_ts_us=None if es is None else es * 1000,
                ),
            )
        if kind is None:
            raise QuarantineError("Canal message without type")
        op = OPS.get(kind)
        if op is None:
            raise QuarantineError(f"unknown Canal type {msg.get('type')!r}")
        if not table:
            raise QuarantineError("Canal message without table")
        canal_id = _int(msg.get("id"), "id")
        if es is None:
            raise QuarantineError("Canal message without es")
        ts = _int(msg.get("ts"), "ts", required=False, limit=MAX_MS)
        col_types = self.col_types_of(msg)
        pk_names = msg.get("pkNames")
        if pk_names is not None and (
            not isinstance(pk_names, list) or not all(isinstance(p, str) and p for p in pk_names)
        ):
            raise QuarantineError(f"Canal pkNames is not a list of names: {pk_names!r}")
        common: dict[str, Any] = {
            "source_db": database,
            "source_table": self._table or table,
            "key_columns": list(pk_names) if pk_names else None,
            "col_types": col_types,
            "commit_ts_us": es * 1000,
            "capture_ts_us": None if ts is None else ts * 1000,
        }
        extras: dict[str, str | None] = {"canal_id": str(canal_id)}
        if self._table:
            extras["event_table"] = table

        def seq(row: int) -> str | None:
            return seq_of(canal_id, es, row) if self._order == "id" else seq_of(es, canal_id, row)

        if op == "truncate":
            return [Change(op="truncate", seq=seq(0), extras=extras, **common)]

        data, old = self._rows(msg.get("data"), "data"), self._rows(msg.get("old"), "old")
        if op == "delete" and data is None:
            data, old = old, None  # DTS instances created before 2022-03-20
        if not data:
            raise QuarantineError(f"Canal {kind} without rows in data")
        if op == "update" and old is not None and len(old) != len(data):
            raise QuarantineError(f"Canal UPDATE: old has {len(old)} rows, data has {len(data)}")
        undeclared: set[str] = set()
        changes = []
        for i, raw_row in enumerate(data):
            row = self._image(raw_row, col_types, undeclared)
            row_extras = dict(extras)
            if op == "delete":
                images: dict[str, Any] = {"before": row}
            elif op == "update":
                before = None
                if old is not None:
                    before = dict(row)
                    before.update(self._image(old[i], col_types, undeclared))
                images = {"before": before, "after": row}
            else:
                images = {"after": row}
            changes.append(Change(op=op, seq=seq(i), extras=row_extras, **common, **images))
        if undeclared:
            for change in changes:
                change.extras["undeclared_columns"] = ",".join(sorted(undeclared))
        return changes

    # ------------------------------------------------------------------ helpers

    def _filter(self, database: str | None, table: str | None) -> None:
        for name, value in (("database_include", database), ("table_include", table)):
            pattern = self._include[name]
            if pattern is not None and (value is None or not pattern.fullmatch(value)):
                raise SkipRecord("filtered")

    @staticmethod
    def _rows(value: Any, what: str) -> list[dict[str, Any]] | None:
        if value is None:
            return None
        if not isinstance(value, list) or not all(isinstance(r, dict) for r in value):
            raise QuarantineError(f"Canal {what} is not an array of row objects")
        return value

    @staticmethod
    def col_types_of(msg: dict[str, Any]) -> dict[str, str]:
        """Each column's source type, from the message's ``mysqlType`` and ``sqlType``."""
        mysql_types, sql_types = msg.get("mysqlType"), msg.get("sqlType")
        if mysql_types is not None and not isinstance(mysql_types, dict):
            raise QuarantineError("Canal mysqlType is not an object")
        if sql_types is not None and not isinstance(sql_types, dict):
            raise QuarantineError("Canal sqlType is not an object")
        out: dict[str, str] = {}
        for col, code in (sql_types or {}).items():
            if isinstance(code, int) and not isinstance(code, bool):
                out[col] = SQL_TYPES.get(code, "string")
            else:
                raise QuarantineError(f"Canal sqlType of {col!r} is not an integer: {code!r}")
        for col, name in (mysql_types or {}).items():
            if not isinstance(name, str):
                raise QuarantineError(f"Canal mysqlType of {col!r} is not a string: {name!r}")
            out[col] = spark_type(name)
        return out

    @staticmethod
    def _image(row: dict[str, Any], col_types: dict[str, str], undeclared: set[str]) -> dict[str, str | None]:
        out: dict[str, str | None] = {}
        for col, value in row.items():
            if col_types and col not in col_types:
                undeclared.add(col)
                continue
            text = canonical_text(value)
            if text is not None and col_types.get(col) == "binary":
                text = binary_text(text)
            out[col] = text
        return out


class CanalJsonDecoder(DtsCanalJsonDecoder):
    """Open-source Canal flat messages (``canal_json``): the same envelope, ordered by
    ``es`` first (Canal's ``id`` is a client batch id, not a stream position)."""

    identifier: ClassVar[str] = "canal_json"
    default_order: ClassVar[str] = "es"
