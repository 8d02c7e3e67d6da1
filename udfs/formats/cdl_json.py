"""Huawei MRS CDL JSON (``message_version`` 1.0) and its Debezium flavour (2.0).

Spec: ``specs/huawei-cdl-json-and-debezium-json.txt``. Both versions are Kafka Connect
JSON (``{"schema", "payload"}``, or the payload alone) and may be mixed in one feed:

* **1.0** (CDL JSON): ``DATA_STORE`` (source connector type, e.g. ``POSTGRESQL``),
  ``SEG_OWNER`` (schema), ``TABLE_NAME``, ``TIMESTAMP`` (change time, ms),
  ``OPERATION`` ``INSERT``/``UPDATE``/``DELETE``, ``data`` (after image), ``before``,
  ``unique`` (primary key values), ``transaction.properties`` (a list of
  ``{"name", "value"}`` pairs holding ``lsn`` and ``txId``), ``LOB_COLUMNS``,
  ``message_type``, ``HEARTBEAT_IDENTIFIER``.
* **2.0**: an open-source Debezium payload (``before``, ``after``, ``source{db, schema,
  table, lsn, txId, ts_ms}``, ``op``, ``ts_ms``) plus ``unique``, ``LOB_COLUMNS``,
  ``message_version`` and ``message_type``.

Decisions
---------
* Order: ``seq`` = ``seq_of(lsn, txId)`` (``seq_of(lsn)`` when the transaction id is
  missing). The LSN is the change's own log position; two changes of one row are
  serialised by the row lock, so per key the LSN order is the commit order.
  LSNs are read as integers, PostgreSQL/openGauss ``X/Y`` text, ``0x`` hex, or bare hex
  when they contain a letter; option ``lsn_format: hex`` forces bare text to hex (a hex
  LSN without letters would otherwise read as decimal).
* ``HEARTBEAT_IDENTIFIER`` is filled on ordinary data messages (see the spec's INSERT
  sample), so it does not mark a heartbeat. Heartbeats are: ``message_type``
  ``heartbeat``; rows of CDL's heartbeat table ``cdc_cdl.cdc_heartbeat`` (MRS
  "Configuring the Source Data Heartbeat Table"; more via option ``heartbeat_tables``);
  and messages with neither an operation nor a row image.
* Table naming, the same for both versions: ``source_schema`` = ``SEG_OWNER`` /
  ``source.schema``, ``source_table`` = ``TABLE_NAME`` / ``source.table`` (spelled as the
  message spells them), and ``source_db`` = ``None`` (or the feed option ``database``),
  so one source table has one ``table_id`` (``schema.table``, lower case) whatever the
  ``message_version`` of its messages. The spec's Table 1 maps ``SEG_OWNER`` to
  ``source.schema`` and ``TABLE_NAME`` to ``source.table``, and 1.0 has no database
  field: ``DATA_STORE`` (its counterpart is ``source.connector``) is a connector type,
  not a database name, and goes to ``extras["data_store"]``. 2.0's ``source.db`` is
  therefore kept in ``extras["database"]`` and not emitted as ``source_db``: emitted,
  it made the 2.0 messages of a table ``db.schema.table`` and the 1.0 messages of the
  same table ``schema.table``, two tables (an unconfigured table was split in two; a
  table configured as ``db.schema.table`` or ``db.table`` matched the 2.0 messages
  only). A ``cdc.yml`` table is named ``schema.table`` or ``table`` for CDL; to have
  database-qualified names, set the feed option ``database`` (one CDL task reads one
  database): it becomes ``source_db`` of every message of the feed, 1.0 and 2.0 alike.
* ``__debezium_unavailable_value`` (PostgreSQL TOAST) columns are left out of the image
  and of ``after_cols``/``before_cols`` so they keep their previous value.
* Values are decoded with their Connect schema when the message has one
  (:mod:`udfs.formats.connect_types`); CDL's own ``com.xxx.cdc.data.*`` names are plain
  strings, typed ``string``.
"""

from __future__ import annotations

import re
from typing import Any, ClassVar

from udfs.contract import Change, Decoder, QuarantineError, Record, SkipRecord, loads_exact, seq_of
from udfs.formats.connect_types import decode_row, field_schemas, split_envelope

_V1_OPS = {"INSERT": "insert", "UPDATE": "update", "DELETE": "delete"}
_V2_OPS = {"c": "insert", "r": "snapshot", "u": "update", "d": "delete", "t": "truncate"}
#: CDL's documented heartbeat table (schema.table, compared case-insensitively)
DEFAULT_HEARTBEAT_TABLES = ("cdc_cdl.cdc_heartbeat",)
_PG_LSN = re.compile(r"([0-9A-Fa-f]{1,8})/([0-9A-Fa-f]{1,8})")
_HEX = re.compile(r"(?:0[xX])?([0-9A-Fa-f]+)")


def parse_position(value: Any, what: str, lsn_format: str = "auto") -> int | None:
    """Read a log position (LSN, SCN, transaction id) as a non-negative integer.

    Parameters
    ----------
    value:
        JSON int, decimal text, PostgreSQL ``X/Y`` text or hex text; ``None`` passes.
    what:
        Name for error messages.
    lsn_format:
        ``auto`` (decimal digits are decimal) or ``hex`` (bare text is hex).

    Returns
    -------
    int or None

    Raises
    ------
    QuarantineError
        Anything else (booleans, fractions, negative numbers, other text).
    """
    if value is None:
        return None
    if isinstance(value, int) and not isinstance(value, bool):
        if value < 0:
            raise QuarantineError(f"negative {what}: {value}")
        return value
    if isinstance(value, str):
        text = value.strip()
        pg = _PG_LSN.fullmatch(text)
        if pg:
            return (int(pg.group(1), 16) << 32) | int(pg.group(2), 16)
        if text.isdigit() and lsn_format != "hex":
            return int(text)
        hexa = _HEX.fullmatch(text)
        if hexa and (lsn_format == "hex" or text[:2] in ("0x", "0X") or not text.isdigit()):
            return int(hexa.group(1), 16)
    raise QuarantineError(f"bad {what}: {value!r}")


def _ms_to_us(value: Any, what: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise QuarantineError(f"bad {what}: {value!r} (epoch milliseconds expected)")
    return value * 1000


def _text(value: Any) -> str | None:
    return None if value is None else str(value)


def _tx_properties(transaction: Any) -> dict[str, Any]:
    """``transaction.properties`` as a dict (a list of name/value pairs in the spec)."""
    if not isinstance(transaction, dict):
        return {}
    props = transaction.get("properties")
    if isinstance(props, dict):
        return props
    out: dict[str, Any] = {}
    if isinstance(props, list):
        for item in props:
            if isinstance(item, dict) and isinstance(item.get("name"), str):
                out[item["name"]] = item.get("value")
    return out


class CdlJsonDecoder(Decoder):
    """Decoder for Huawei CDL JSON, ``message_version`` 1.0 and 2.0.

    Options
    -------
    heartbeat_tables:
        ``schema.table`` names whose rows are heartbeats (default
        :data:`DEFAULT_HEARTBEAT_TABLES`).
    lsn_format:
        ``auto`` (default) or ``hex``, see :func:`parse_position`.
    database:
        The source database of the feed, emitted as ``source_db`` of every message
        (1.0 and 2.0). Default none: tables are ``schema.table`` (see the module notes).
    """

    identifier: ClassVar[str] = "cdl_json"
    default_framing: ClassVar[str] = "lines"
    framings: ClassVar[tuple[str, ...]] = ("lines", "kcat", "documents")
    option_names: ClassVar[tuple[str, ...]] = ("heartbeat_tables", "lsn_format", "database", "columnar")
    columnar_decoder: ClassVar[str | None] = "udfs.formats.cdl_json_columnar:decode_cdl_columnar"

    def __init__(self, options: dict[str, Any] | None = None) -> None:
        super().__init__(options)
        tables = self.options.get("heartbeat_tables", DEFAULT_HEARTBEAT_TABLES)
        if isinstance(tables, str):
            tables = [tables]
        self.heartbeat_tables = {str(t).lower() for t in tables}
        self.lsn_format = str(self.options.get("lsn_format", "auto")).lower()
        if self.lsn_format not in ("auto", "hex"):
            raise ValueError(f"cdl_json: lsn_format must be auto or hex, not {self.lsn_format!r}")
        database = self.options.get("database")
        if database is not None and (not isinstance(database, str) or not database.strip()):
            raise ValueError(f"cdl_json: database must be a database name, not {database!r}")
        #: ``source_db`` of every message (2.0's ``source.db`` goes to extras)
        self.database: str | None = database

    @classmethod
    def carries_key(cls, framing: str, options: dict[str, Any] | None = None) -> bool:
        """Every CDL message names its primary key (``unique``), whatever the framing,
        so a configured CDL table needs no ``key:``."""
        return True

    # ------------------------------------------------------------------ entry point

    def decode(self, record: Record) -> list[Change]:
        """Decode one CDL message (1.0 or 2.0) into one change.

        Raises
        ------
        SkipRecord
            Tombstones (``null`` value), heartbeats, Debezium ``m`` messages.
        QuarantineError
            Malformed JSON, unknown version or operation, undecodable values.
        """
        if record.text is None or not record.text.strip():
            raise SkipRecord("tombstone")
        schema, payload = split_envelope(loads_exact(record.text))
        if payload is None:
            raise SkipRecord("tombstone")
        if not isinstance(payload, dict):
            raise QuarantineError("CDL message is not a JSON object")
        fields = field_schemas(schema)
        version = _text(payload.get("message_version"))
        if version is None:  # not in the message: tell the versions by their op field
            version = "1.0" if "OPERATION" in payload else "2.0" if "op" in payload else None
        if str(payload.get("message_type", "")).lower() == "heartbeat":
            raise SkipRecord("heartbeat")
        if version in ("1.0", "1"):
            return [self._decode_v1(payload, fields)]
        if version in ("2.0", "2"):
            return [self._decode_v2(payload, fields)]
        if version is None and not any(k in payload for k in ("data", "before", "after")):
            raise SkipRecord("heartbeat")  # no operation, no image: a bare heartbeat
        raise QuarantineError(f"unknown CDL message_version {version!r}")

    # ------------------------------------------------------------------ helpers

    def _check_heartbeat(self, payload: dict[str, Any], op: Any, schema: Any, table: Any) -> None:
        if f"{schema}.{table}".lower() in self.heartbeat_tables:
            raise SkipRecord("heartbeat")
        if op is None and not any(payload.get(k) is not None for k in ("data", "before", "after")):
            raise SkipRecord("heartbeat")

    @staticmethod
    def _images(payload: dict[str, Any], fields: dict[str, dict[str, Any]], after_name: str) -> dict[str, Any]:
        after, after_types, after_gone = decode_row(payload.get(after_name), fields.get(after_name))
        before, before_types, before_gone = decode_row(payload.get("before"), fields.get("before"))
        key = None
        unique = payload.get("unique")
        if isinstance(unique, dict) and unique:
            key, _, _ = decode_row(unique, fields.get("unique"))
        elif unique is not None and not isinstance(unique, dict):
            raise QuarantineError("unique is not an object")
        return {
            "after": after,
            "before": before,
            # unavailable (TOAST) columns are not provided: list only the others
            "after_cols": list(after) if after is not None and after_gone else None,
            "before_cols": list(before) if before is not None and before_gone else None,
            "col_types": {**before_types, **after_types},
            "key": key,
        }

    def _seq(self, lsn: Any, tx: Any) -> tuple[str | None, str | None]:
        lsn_n = parse_position(lsn, "lsn", self.lsn_format)
        tx_n = parse_position(tx, "txId", "auto")
        if lsn_n is None:
            return None, _text(tx)
        return (seq_of(lsn_n) if tx_n is None else seq_of(lsn_n, tx_n)), _text(tx)

    @staticmethod
    def _extras(payload: dict[str, Any], version: str, data_store: Any, database: Any) -> dict[str, str | None]:
        return {
            "message_version": version,
            "message_type": _text(payload.get("message_type")),
            "lob_columns": _text(payload.get("LOB_COLUMNS")),
            "data_store": _text(data_store),
            # 2.0's source.db (1.0 names no database): not source_db, see the module notes
            "database": _text(database),
        }

    # ------------------------------------------------------------------ versions

    def _decode_v1(self, payload: dict[str, Any], fields: dict[str, dict[str, Any]]) -> Change:
        operation = payload.get("OPERATION")
        schema, table = payload.get("SEG_OWNER"), payload.get("TABLE_NAME")
        self._check_heartbeat(payload, operation, schema, table)
        op = _V1_OPS.get(str(operation).upper())
        if op is None:
            raise QuarantineError(f"unknown CDL OPERATION {operation!r}")
        if not table:
            raise QuarantineError("CDL message without TABLE_NAME")
        images = self._images(payload, fields, "data")
        self._require_images(op, images)
        props = _tx_properties(payload.get("transaction"))
        seq, tx_id = self._seq(props.get("lsn"), props.get("txId"))
        return Change(
            op=op,
            source_table=str(table),
            source_db=self.database,
            source_schema=_text(schema),
            seq=seq,
            tx_id=tx_id,
            commit_ts_us=_ms_to_us(payload.get("TIMESTAMP"), "TIMESTAMP"),
            extras=self._extras(payload, "1.0", payload.get("DATA_STORE"), None),
            **images,
        )

    def _decode_v2(self, payload: dict[str, Any], fields: dict[str, dict[str, Any]]) -> Change:
        source = payload.get("source")
        if not isinstance(source, dict):
            raise QuarantineError("CDL 2.0 message without a source block")
        code = payload.get("op")
        self._check_heartbeat(payload, code, source.get("schema"), source.get("table"))
        if code == "m":
            raise SkipRecord("message")  # Debezium logical-decoding message, no row
        op = _V2_OPS.get(code)
        if op is None:
            raise QuarantineError(f"unknown Debezium op {code!r}")
        table = source.get("table")
        if not table:
            raise QuarantineError("CDL 2.0 message without source.table")
        images = self._images(payload, fields, "after")
        self._require_images(op, images)
        seq, tx_id = self._seq(source.get("lsn"), source.get("txId"))
        return Change(
            op=op,
            source_table=str(table),
            # named as 1.0 names the table (no database): one table_id for both versions
            source_db=self.database,
            source_schema=_text(source.get("schema")),
            seq=seq,
            tx_id=tx_id,
            commit_ts_us=_ms_to_us(source.get("ts_ms"), "source.ts_ms"),
            capture_ts_us=_ms_to_us(payload.get("ts_ms"), "ts_ms"),
            extras=self._extras(payload, "2.0", source.get("connector"), source.get("db")),
            **images,
        )

    @staticmethod
    def _require_images(op: str, images: dict[str, Any]) -> None:
        # a delete may carry only `unique` (REPLICA IDENTITY DEFAULT); apply it by key
        if op in ("insert", "snapshot", "update") and images["after"] is None:
            raise QuarantineError(f"{op} without an after image")
        if op == "delete" and images["before"] is None and images["key"] is None:
            raise QuarantineError("delete without a before image or unique key")
