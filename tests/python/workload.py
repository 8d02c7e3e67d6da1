"""Random CDC workload, renderers for every decoded format and a plain-Python reference model.

This module is the oracle of the differential test (``test_differential.py``): it

1. **generates** a random but valid stream of source row changes (:func:`generate`):
   a snapshot, then inserts, updates (some partial, some changing the primary key),
   deletes and re-inserts of deleted keys over several tables, one with a composite
   key. Values exercise fidelity: bigints above 2**53, 32-digit decimals, unicode text
   with quotes, newlines, emoji and line separators, empty strings and NULLs;
2. **renders** each event as a Debezium JSON envelope (:func:`render_debezium`,
   :func:`render_key`), MySQL or PostgreSQL flavoured, with or without the Kafka
   Connect schema; and, per *format case* (:data:`FORMAT_CASES`, each over its own
   tables, :func:`case_tables`), after restricting the stream to what the format can
   express (:func:`adapt_events`), as Arcion internal JSON and CSV
   (:func:`render_arcion_internal_json`, :func:`render_arcion_internal_csv`), Arcion
   JSON CDC for Kafka (:func:`render_arcion_kafka_json`), Huawei CDL 1.0/2.0
   (:func:`render_cdl_json`, :func:`render_cdl_heartbeat`), Lindorm SQL and HBase tables
   (:func:`render_lindorm_json`) and Debezium with logical types
   (:func:`render_debezium_json`);
3. **delivers** the events as landing files the way a real deployment would
   (:func:`deliver`): split over pipeline runs, some late (in the next run), some
   duplicated, spread over several files with random names and shuffled lines, as
   JSON lines (``lines/``) or ``kcat -C -J`` lines with tombstones (``kcat/``); a
   format case's events the same way in its own framing (:func:`deliver_case`, read
   by the feeds of :func:`case_feeds`);
4. **computes the expected result** (:func:`reference_state`,
   :func:`reference_history`) of the merge described in DESIGN.md from the events
   delivered so far.

Conventions
-----------
* Values are canonical **text** (``str``) or ``None`` for SQL NULL, exactly as the
  changelog carries them: ``str(int)`` for integers, the decimal literal with its
  scale (``"-12345678901234567890.123456"``), the string itself.
* Every event has a strictly increasing :attr:`SourceEvent.position`
  ``(binlog file number, pos, row)``; its PostgreSQL LSN increases with it. A table
  is captured by one connector (:attr:`TableSpec.connector`), so the order key the
  pipeline derives (binlog position for MySQL, LSN for PostgreSQL) orders the events
  of a table exactly as the source did.
* A primary-key update is two events, like Debezium emits it: a delete of the old key
  (``before`` = full old row) and a create of the new key, in one transaction.
* A PostgreSQL update may carry the TOAST placeholder :data:`UNAVAILABLE` in
  ``after`` for an unchanged, non-null string column: "not provided, keep the value".

Running ``python tests/python/workload.py --seed 1 --out DIR`` writes a workload's
landing files into ``DIR`` for manual runs (``--case arcion_internal_json`` etc. for a
format case; its feeds are :func:`case_feeds`).
"""

from __future__ import annotations

import base64
import dataclasses
import datetime as _dt
import json
import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: PostgreSQL TOAST placeholder of Debezium: the column is unchanged and not provided.
UNAVAILABLE = "__debezium_unavailable_value"

#: Debezium op letter -> changelog op name.
OP_NAMES = {"c": "insert", "u": "update", "d": "delete", "r": "snapshot"}

#: Kafka Connect schema type of each column type the generator knows.
CONNECT_TYPES = {
    "bigint": "int64",
    "int": "int32",
    "string": "string",
    "decimal(38,6)": "string",
    "timestamp": "string",  # ISO text; with logical types: io.debezium.time.MicroTimestamp
}

DEBEZIUM_VERSION = "2.5.0.Final"
SERVER_NAME = "dbserver1"
PG_DATABASE = "inventorydb"
MYSQL_SERVER_ID = 223344
DECIMAL_SCALE = 6

Row = dict[str, "str | None"]
Key = tuple["str | None", ...]


# --------------------------------------------------------------------------- model


@dataclass(frozen=True)
class Column:
    """One source column: name, type (a key of :data:`CONNECT_TYPES`), nullability."""

    name: str
    type: str
    nullable: bool = True


@dataclass(frozen=True)
class TableSpec:
    """A source table: ``name`` is ``schema.table`` (MySQL: ``db.table``)."""

    name: str
    columns: tuple[Column, ...]
    key: tuple[str, ...]
    connector: str = "mysql"  # "mysql" | "postgresql"

    @property
    def namespace(self) -> str:
        """MySQL database / PostgreSQL schema."""
        return self.name.split(".", 1)[0]

    @property
    def table(self) -> str:
        """Table name without the namespace."""
        return self.name.split(".", 1)[1]

    @property
    def topic(self) -> str:
        """Kafka topic Debezium writes the table's changes to."""
        return f"{SERVER_NAME}.{self.name}"

    @property
    def column_names(self) -> tuple[str, ...]:
        """Column names in declaration order."""
        return tuple(c.name for c in self.columns)

    def column(self, name: str) -> Column:
        """The column called ``name``."""
        for c in self.columns:
            if c.name == name:
                return c
        raise KeyError(name)

    def key_of(self, row: Row) -> Key:
        """Key tuple (text values, key column order) of a row image."""
        return tuple(row[k] for k in self.key)

    def column_types(self) -> dict[str, str]:
        """``{column: type}`` as the ``columns:`` of a ``cdc.yml`` table entry."""
        return {c.name: c.type for c in self.columns}


CUSTOMERS = TableSpec(
    name="inventory.customers",
    columns=(
        Column("id", "bigint", nullable=False),
        Column("name", "string", nullable=False),
        Column("email", "string"),
        Column("bio", "string"),
        Column("balance", "decimal(38,6)"),
        Column("visits", "bigint"),
        Column("tier", "int"),
    ),
    key=("id",),
    connector="postgresql",
)

ORDERS = TableSpec(
    name="inventory.orders",
    columns=(
        Column("order_id", "bigint", nullable=False),
        Column("line_no", "int", nullable=False),
        Column("customer_id", "bigint"),
        Column("amount", "decimal(38,6)"),
        Column("quantity", "int"),
        Column("note", "string"),
    ),
    key=("order_id", "line_no"),
    connector="mysql",
)

DEFAULT_TABLES: tuple[TableSpec, ...] = (CUSTOMERS, ORDERS)


@dataclass(frozen=True)
class SourceEvent:
    """One row change as the source database committed it.

    Attributes
    ----------
    spec:
        The table.
    op:
        Debezium op letter: ``c`` create, ``u`` update, ``d`` delete, ``r`` snapshot read.
    before, after:
        Row images as canonical text; ``after`` may hold :data:`UNAVAILABLE` for a
        string column of a PostgreSQL update.
    position:
        ``(binlog file number, pos, row)``, strictly increasing in source order.
    lsn, prev_commit_lsn, tx_id:
        PostgreSQL position (strictly increasing), last commit LSN, transaction id.
    ts_ms, capture_ts_ms:
        Commit time (often equal for neighbouring events) and connector time.
    snapshot:
        ``source.snapshot``: ``"true"``, ``"last"`` or ``"false"``.
    flavor:
        How a format renders the event where the choice changes what the event says
        (set by :func:`adapt_events`; e.g. the Huawei CDL ``message_version``). Empty
        for the Debezium stream of :func:`generate`.
    """

    spec: TableSpec
    op: str
    before: Row | None
    after: Row | None
    position: tuple[int, int, int]
    lsn: int
    prev_commit_lsn: int
    tx_id: int
    ts_ms: int
    capture_ts_ms: int
    snapshot: str = "false"
    flavor: str = ""

    @property
    def table(self) -> str:
        """Table name ``schema.table``."""
        return self.spec.name

    @property
    def key(self) -> Key:
        """Primary key (text values) of the row the event changes (from ``before`` for a
        delete, or for an update whose ``after`` does not provide the key columns)."""
        image = self.before if self.op == "d" else self.after
        if self.op == "u" and not all(k in (image or {}) for k in self.spec.key):
            image = self.before
        assert image is not None
        return self.spec.key_of(image)

    @property
    def op_name(self) -> str:
        """Changelog op name (``insert``, ``update``, ``delete``, ``snapshot``)."""
        return OP_NAMES[self.op]

    @property
    def binlog_file(self) -> str:
        """MySQL binlog file name of :attr:`position`."""
        return f"mysql-bin.{self.position[0]:06d}"


@dataclass(frozen=True)
class Version:
    """One version of a row in :func:`reference_history`."""

    position: tuple[int, int, int]
    op: str  # changelog op name
    row: Row | None  # the row after the event; None for a delete
    is_deleted: bool


@dataclass
class FileSpec:
    """One landing file: path relative to the landing root, framing, bytes.

    ``events`` are the source events the file holds (duplicates included, tombstones
    not); ``n_records`` counts every record the pipeline reads (tombstones and
    heartbeats included; a CSV header row is not a record); ``n_tombstones`` the
    null-valued Kafka messages; ``n_heartbeats`` the heartbeat messages (Huawei CDL);
    ``other_skipped`` other records the pipeline must skip, by reason (DTS DDL messages,
    DTS Avro ``BEGIN``/``COMMIT`` records).
    """

    path: str
    framing: str  # "lines" | "kcat" | "csv"
    content: bytes
    events: tuple[SourceEvent, ...] = ()
    n_records: int = 0
    n_tombstones: int = 0
    n_heartbeats: int = 0
    other_skipped: dict[str, int] = dataclasses.field(default_factory=dict)

    @property
    def n_skipped(self) -> int:
        """Records the pipeline must skip (tombstones, heartbeats and ``other_skipped``)."""
        return self.n_tombstones + self.n_heartbeats + sum(self.other_skipped.values())


# --------------------------------------------------------------------------- values

_STRING_PIECES = (
    "plain",
    "O'Brien",
    'say "hi"',
    "back\\slash",
    "line1\nline2",
    "crlf\r\nend",
    "tab\there",
    "emoji 😀🚀",
    "family 👩\u200d👩\u200d👧",
    "数据库",
    "Ünïcödé é ß",
    "null",
    "NULL",
    " padded ",
    '{"json": [1, 2.50]}',
    "sep\u2028para\u2029",
    "nbsp\u00a0x",
    "1e309",
    "-0",
    "  ",
)
_WORDS = ("alpha", "beta", "gamma", "delta", "Ωmega", "zeta", "eta", "thêta")


def _gen_string(rng: random.Random, nullable: bool, long_ok: bool = False) -> str | None:
    r = rng.random()
    if nullable and r < 0.1:
        return None
    if r < 0.15:
        return ""
    parts = [rng.choice(_STRING_PIECES) for _ in range(rng.randint(1, 3))]
    parts.append(f"{rng.choice(_WORDS)}-{rng.randint(0, 99999)}")
    text = " ".join(parts)
    if long_ok and rng.random() < 0.15:
        text = (text + " ") * rng.randint(20, 120)
    assert text != UNAVAILABLE
    return text


def _gen_bigint(rng: random.Random, nullable: bool) -> str | None:
    r = rng.random()
    if nullable and r < 0.1:
        return None
    if r < 0.35:
        return str(rng.randint(-1000, 100000))
    if r < 0.5:
        return str(2**53 + rng.randint(-3, 1000))
    if r < 0.55:
        return str(rng.choice((2**63 - 1, -(2**63), 0, -1)))
    if r < 0.8:
        return str(rng.randint(2**53, 2**63 - 1))
    return str(-rng.randint(2**53, 2**63))


def _gen_int(rng: random.Random, nullable: bool) -> str | None:
    r = rng.random()
    if nullable and r < 0.1:
        return None
    if r < 0.15:
        return str(rng.choice((2**31 - 1, -(2**31), 0)))
    return str(rng.randint(-5000, 5000))


def _gen_decimal(rng: random.Random, nullable: bool) -> str | None:
    r = rng.random()
    if nullable and r < 0.1:
        return None
    if r < 0.15:
        return "0." + "0" * DECIMAL_SCALE
    digits = rng.choice((1, 2, 5, 10, 15, 18, 20, 26, 32))
    int_part = rng.randint(0 if digits == 1 else 10 ** (digits - 1), 10**digits - 1)
    frac = rng.randint(0, 10**DECIMAL_SCALE - 1)
    sign = "-" if rng.random() < 0.3 and (int_part or frac) else ""
    return f"{sign}{int_part}.{frac:0{DECIMAL_SCALE}d}"


_EPOCH = _dt.datetime(1970, 1, 1)
_YEAR_US = 365 * 86_400 * 10**6


def micros_text(micros: int) -> str:
    """Canonical text of a UTC timestamp given in microseconds since the epoch."""
    seconds, rest = divmod(micros, 10**6)
    return f"{_EPOCH + _dt.timedelta(seconds=seconds):%Y-%m-%dT%H:%M:%S}.{rest:06d}Z"


def text_micros(text: str) -> int:
    """Inverse of :func:`micros_text`."""
    moment = _dt.datetime.strptime(text, "%Y-%m-%dT%H:%M:%S.%fZ")
    delta = moment - _EPOCH
    return (delta.days * 86_400 + delta.seconds) * 10**6 + delta.microseconds


def _gen_timestamp(rng: random.Random, nullable: bool) -> str | None:
    r = rng.random()
    if nullable and r < 0.1:
        return None
    micros = rng.randint(-20 * _YEAR_US, 0) if r < 0.25 else rng.randint(0, 130 * _YEAR_US)  # 1950..2100
    if rng.random() < 0.2:
        micros -= micros % 10**6  # whole seconds
    return micros_text(micros)


def _gen_value(rng: random.Random, col: Column) -> str | None:
    if col.type == "timestamp":
        return _gen_timestamp(rng, col.nullable)
    if col.type == "bigint":
        return _gen_bigint(rng, col.nullable)
    if col.type == "int":
        return _gen_int(rng, col.nullable)
    if col.type.startswith("decimal"):
        return _gen_decimal(rng, col.nullable)
    return _gen_string(rng, col.nullable, long_ok=True)


def _gen_key(rng: random.Random, spec: TableSpec, pools: dict[str, list[str]]) -> Key:
    out: list[str] = []
    for name in spec.key:
        col = spec.column(name)
        pool = pools.get(f"{spec.name}.{name}")
        if pool is not None and rng.random() < 0.7:
            out.append(rng.choice(pool))
        elif col.type == "bigint":
            out.append(_gen_bigint(rng, False) or "0")
        elif col.type == "int":
            out.append(str(rng.randint(0, 12)) if rng.random() < 0.9 else (_gen_int(rng, False) or "0"))
        elif col.type.startswith("decimal"):
            out.append(_gen_decimal(rng, False) or "0.000000")
        else:
            out.append(f"k-{rng.choice(_STRING_PIECES)}-{rng.randint(0, 10**6)}")
    return tuple(out)


# --------------------------------------------------------------------------- generator


class _Clock:
    """Source positions: binlog file/pos/row, LSN, transaction ids, commit times."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.file_no = 3
        self.pos = 154
        self.row = 0
        self.lsn = 33_000_000 + rng.randint(0, 10**6)
        self.commit_lsn = self.lsn - 1
        self.tx_id = 500 + rng.randint(0, 1000)
        self.ts_ms = 1_700_000_000_000 + rng.randint(0, 10**9)
        self.last_table: str | None = None

    def begin(self) -> None:
        """Start a transaction: new commit time (same millisecond is common)."""
        self.tx_id += 1
        self.ts_ms += self.rng.choice((0, 0, 0, 1, 2, 17, 1000))
        if self.rng.random() < 0.03:
            self.file_no += 1
            self.pos = 4
        self.pos += self.rng.randint(60, 3000)
        self.row = 0
        self.last_table = None

    def commit(self) -> None:
        """End a transaction."""
        self.commit_lsn = self.lsn
        self.lsn += self.rng.randint(8, 64)

    def next(self, table: str, same_rows_event: bool) -> dict[str, Any]:
        """Position of the next row change in the current transaction."""
        if same_rows_event and self.last_table == table:
            self.row += 1
        elif self.last_table is not None:
            self.pos += self.rng.randint(30, 400)
            self.row = 0
        self.last_table = table
        self.lsn += self.rng.randint(8, 400)
        return {
            "position": (self.file_no, self.pos, self.row),
            "lsn": self.lsn,
            "prev_commit_lsn": self.commit_lsn,
            "tx_id": self.tx_id,
            "ts_ms": self.ts_ms,
            "capture_ts_ms": self.ts_ms + self.rng.randint(0, 1500),
        }


def generate(seed: int, n_events: int, tables: Sequence[TableSpec] = DEFAULT_TABLES) -> list[SourceEvent]:
    """A random, valid change stream of ``n_events`` events in source order.

    About 10% of the events are a snapshot (``r``), then transactions of 1-4 changes:
    inserts of new keys, updates of live rows (about 15% change the primary key:
    a ``d`` of the old key then a ``c`` of the new key), deletes, and re-inserts of
    deleted keys. Updates of PostgreSQL tables are partial (TOAST placeholder) about
    a third of the time. Deterministic per ``seed``.
    """
    rng = random.Random(seed)
    clock = _Clock(rng)
    live: dict[str, dict[Key, Row]] = {t.name: {} for t in tables}
    deleted: dict[str, list[Key]] = {t.name: [] for t in tables}
    pools: dict[str, list[str]] = {}
    for t in tables:
        if len(t.key) > 1:  # composite key: few values of the first column, many lines each
            first = t.column(t.key[0])
            pools[f"{t.name}.{first.name}"] = [_gen_bigint(rng, False) or "0" for _ in range(max(4, n_events // 12))]
    events: list[SourceEvent] = []

    def new_key(spec: TableSpec) -> Key:
        for _ in range(1000):
            key = _gen_key(rng, spec, pools)
            if key not in live[spec.name]:
                return key
        raise RuntimeError("could not find a free key")

    def new_row(spec: TableSpec, key: Key) -> Row:
        row = {c.name: _gen_value(rng, c) for c in spec.columns}
        row.update(zip(spec.key, key, strict=True))
        return row

    def emit(spec: TableSpec, op: str, before: Row | None, after: Row | None, pos: dict[str, Any], snap="false"):
        events.append(SourceEvent(spec, op, before, after, snapshot=snap, **pos))

    # -- snapshot
    n_snap = min(n_events, max(len(tables), n_events // 10))
    clock.begin()
    for i in range(n_snap):
        spec = tables[i % len(tables)]
        key = new_key(spec)
        row = new_row(spec, key)
        live[spec.name][key] = row
        snap = "last" if i == n_snap - 1 else "true"
        emit(spec, "r", None, dict(row), clock.next(spec.name, True), snap)
    clock.commit()

    # -- streaming
    while len(events) < n_events:
        clock.begin()
        for _ in range(rng.randint(1, 4)):
            room = n_events - len(events)
            if room <= 0:
                break
            spec = rng.choice(tables)
            rows = live[spec.name]
            same = rng.random() < 0.6
            r = rng.random()
            if not rows or r < 0.25:
                key = new_key(spec)
                row = new_row(spec, key)
                rows[key] = row
                emit(spec, "c", None, dict(row), clock.next(spec.name, same))
            elif r < 0.33 and deleted[spec.name]:
                key = deleted[spec.name].pop(rng.randrange(len(deleted[spec.name])))
                if key in rows:
                    continue
                row = new_row(spec, key)
                rows[key] = row
                emit(spec, "c", None, dict(row), clock.next(spec.name, same))
            elif r < 0.5:
                key = rng.choice(list(rows))
                old = rows.pop(key)
                deleted[spec.name].append(key)
                emit(spec, "d", dict(old), None, clock.next(spec.name, same))
            elif r < 0.58 and room >= 2:
                # primary-key update: Debezium emits d (old key) + c (new key)
                key = rng.choice(list(rows))
                old = rows.pop(key)
                deleted[spec.name].append(key)
                new = dict(old)
                new_k = new_key(spec)
                new.update(zip(spec.key, new_k, strict=True))
                for c in spec.columns:
                    if c.name not in spec.key and rng.random() < 0.3:
                        new[c.name] = _gen_value(rng, c)
                rows[new_k] = new
                emit(spec, "d", dict(old), None, clock.next(spec.name, True))
                emit(spec, "c", None, dict(new), clock.next(spec.name, True))
            else:
                key = rng.choice(list(rows))
                old = rows[key]
                new = dict(old)
                non_key = [c for c in spec.columns if c.name not in spec.key]
                changed = set()
                for c in rng.sample(non_key, rng.randint(1, min(3, len(non_key)))):
                    new[c.name] = _gen_value(rng, c)
                    changed.add(c.name)
                rows[key] = new
                after = dict(new)
                before: Row | None = dict(old)
                if spec.connector == "postgresql":
                    before = None  # REPLICA IDENTITY DEFAULT: no old image on update
                    if rng.random() < 0.35:
                        for c in non_key:
                            if (
                                c.type == "string"
                                and c.name not in changed
                                and old[c.name] is not None
                                and rng.random() < 0.6
                            ):
                                after[c.name] = UNAVAILABLE
                emit(spec, "u", before, after, clock.next(spec.name, same))
        clock.commit()
    return events


# --------------------------------------------------------------------------- renderers


#: Kafka Connect logical type names used with ``logical_types=True``
CONNECT_DECIMAL = "org.apache.kafka.connect.data.Decimal"
MICRO_TIMESTAMP = "io.debezium.time.MicroTimestamp"


def decimal_bytes(text: str) -> str:
    """Kafka Connect ``Decimal`` value of a decimal text at :data:`DECIMAL_SCALE`: base64 of
    the unscaled value as minimal big-endian two's-complement bytes (Java's
    ``BigInteger.toByteArray``)."""
    sign = -1 if text.startswith("-") else 1
    int_part, _, frac = text.lstrip("-").partition(".")
    unscaled = sign * int(int_part + frac.ljust(DECIMAL_SCALE, "0"))
    length = (unscaled + (unscaled < 0)).bit_length() // 8 + 1
    return base64.b64encode(unscaled.to_bytes(length, "big", signed=True)).decode()


def _json_value(col: Column, text: str | None, logical: bool = False) -> Any:
    if text is None:
        return text
    is_decimal = col.type.startswith("decimal")
    if text == UNAVAILABLE:
        # Debezium sends the placeholder of a binary-encoded column as base64 of its bytes
        return base64.b64encode(text.encode()).decode() if logical and is_decimal else text
    if col.type in ("bigint", "int"):
        return int(text)
    if logical and is_decimal:
        return decimal_bytes(text)
    if logical and col.type == "timestamp":
        return text_micros(text)
    return text


def _json_row(spec: TableSpec, row: Row | None, logical: bool = False) -> dict[str, Any] | None:
    if row is None:
        return None
    return {c.name: _json_value(c, row[c.name], logical) for c in spec.columns if c.name in row}


def _column_field(col: Column, logical: bool) -> dict[str, Any]:
    """The Kafka Connect field schema of a column (logical types when ``logical``)."""
    if logical and col.type.startswith("decimal"):
        return {
            "type": "bytes",
            "optional": col.nullable,
            "name": CONNECT_DECIMAL,
            "version": 1,
            "parameters": {"scale": str(DECIMAL_SCALE), "connect.decimal.precision": "38"},
            "field": col.name,
        }
    if logical and col.type == "timestamp":
        return {"type": "int64", "optional": col.nullable, "name": MICRO_TIMESTAMP, "version": 1, "field": col.name}
    return {"type": CONNECT_TYPES[col.type], "optional": col.nullable, "field": col.name}


def _struct_schema(
    fields: Iterable[tuple[str, str, bool] | dict[str, Any]], name: str | None, field_name: str | None, optional: bool
):
    out: dict[str, Any] = {
        "type": "struct",
        "fields": [f if isinstance(f, dict) else {"type": f[1], "optional": f[2], "field": f[0]} for f in fields],
        "optional": optional,
    }
    if name:
        out["name"] = name
    if field_name:
        out["field"] = field_name
    return out


def _value_schema(spec: TableSpec, connector: str, logical: bool = False) -> dict[str, Any]:
    row_fields = [_column_field(c, logical) for c in spec.columns]
    value_name = f"{spec.topic}.Value"
    if connector == "mysql":
        src = [
            ("version", "string", False),
            ("connector", "string", False),
            ("name", "string", False),
            ("ts_ms", "int64", False),
            ("snapshot", "string", True),
            ("db", "string", False),
            ("sequence", "string", True),
            ("table", "string", True),
            ("server_id", "int64", False),
            ("gtid", "string", True),
            ("file", "string", False),
            ("pos", "int64", False),
            ("row", "int32", False),
            ("thread", "int64", True),
            ("query", "string", True),
        ]
        src_name = "io.debezium.connector.mysql.Source"
    else:
        src = [
            ("version", "string", False),
            ("connector", "string", False),
            ("name", "string", False),
            ("ts_ms", "int64", False),
            ("snapshot", "string", True),
            ("db", "string", False),
            ("sequence", "string", True),
            ("schema", "string", False),
            ("table", "string", False),
            ("txId", "int64", True),
            ("lsn", "int64", True),
            ("xmin", "int64", True),
        ]
        src_name = "io.debezium.connector.postgresql.Source"
    return {
        "type": "struct",
        "fields": [
            _struct_schema(row_fields, value_name, "before", True),
            _struct_schema(row_fields, value_name, "after", True),
            _struct_schema(src, src_name, "source", False),
            {"type": "string", "optional": False, "field": "op"},
            {"type": "int64", "optional": True, "field": "ts_ms"},
        ],
        "optional": False,
        "name": f"{spec.topic}.Envelope",
        "version": 1,
    }


def render_debezium(
    event: SourceEvent, with_schema: bool, connector: str | None = None, *, logical_types: bool = False
) -> dict[str, Any]:
    """The Debezium JSON value of ``event`` (``connector``: ``mysql`` or ``postgresql``;
    default: the table's connector).

    Integers are JSON numbers (every digit kept), decimals JSON strings
    (``decimal.handling.mode=string``), timestamps ISO text. ``with_schema`` wraps the
    payload as ``{"schema": <Kafka Connect struct schema>, "payload": ...}``.

    ``logical_types`` renders what Debezium's defaults produce instead (only readable
    with the schema): decimals as ``org.apache.kafka.connect.data.Decimal`` (base64 of
    the unscaled two's-complement bytes, ``scale`` parameter; a TOAST placeholder in a
    decimal column is base64 of the placeholder's bytes) and timestamps as
    ``io.debezium.time.MicroTimestamp`` (microseconds since the epoch).
    """
    spec = event.spec
    connector = connector or spec.connector
    if connector == "mysql":
        source: dict[str, Any] = {
            "version": DEBEZIUM_VERSION,
            "connector": "mysql",
            "name": SERVER_NAME,
            "ts_ms": event.ts_ms,
            "snapshot": event.snapshot,
            "db": spec.namespace,
            "sequence": None,
            "table": spec.table,
            "server_id": MYSQL_SERVER_ID,
            "gtid": None,
            "file": event.binlog_file,
            "pos": event.position[1],
            "row": event.position[2],
            "thread": 7 if event.snapshot == "false" else None,
            "query": None,
        }
    elif connector == "postgresql":
        source = {
            "version": DEBEZIUM_VERSION,
            "connector": "postgresql",
            "name": SERVER_NAME,
            "ts_ms": event.ts_ms,
            "snapshot": event.snapshot,
            "db": PG_DATABASE,
            "sequence": json.dumps([str(event.prev_commit_lsn), str(event.lsn)]),
            "schema": spec.namespace,
            "table": spec.table,
            "txId": event.tx_id,
            "lsn": event.lsn,
            "xmin": None,
        }
    else:
        raise ValueError(f"unknown connector {connector!r}")
    payload = {
        "before": _json_row(spec, event.before, logical_types),
        "after": _json_row(spec, event.after, logical_types),
        "source": source,
        "op": event.op,
        "ts_ms": event.capture_ts_ms,
    }
    if with_schema:
        return {"schema": _value_schema(spec, connector, logical_types), "payload": payload}
    return payload


def render_debezium_json(event: SourceEvent, connector: str | None = None) -> dict[str, Any]:
    """Debezium JSON with its schema and logical types (``debezium_json`` format case).

    :func:`render_debezium` with ``with_schema=True, logical_types=True``: ``Decimal``
    columns as base64 bytes with their scale, timestamps as ``MicroTimestamp``, TOAST
    placeholders as the table's connector sends them (text for strings, base64 for
    decimals).
    """
    return render_debezium(event, True, connector, logical_types=True)


def render_key(event: SourceEvent, with_schema: bool) -> dict[str, Any]:
    """The Kafka message key Debezium writes for ``event`` (the primary key as a struct)."""
    spec = event.spec
    payload = {name: _json_value(spec.column(name), text) for name, text in zip(spec.key, event.key, strict=True)}
    if not with_schema:
        return payload
    fields = [(name, CONNECT_TYPES[spec.column(name).type], False) for name in spec.key]
    return {"schema": _struct_schema(fields, f"{spec.topic}.Key", None, False), "payload": payload}


def mixed_debezium_lines(seed: int, n_events: int, ascii_fraction: float = 0.0) -> list[str]:
    """The envelopes of ``generate(seed, n_events)`` as JSON texts, the shapes mixed.

    Half with logical types (:func:`render_debezium_json`), half plain, of which half
    carry their Kafka Connect schema; ``ascii_fraction`` of them with non-ASCII text as
    ``\\u`` escapes. The decoders' tests and benchmarks read this mix.
    """
    rng = random.Random(seed)
    texts = []
    for event in generate(seed, n_events):
        body = render_debezium_json(event) if rng.random() < 0.5 else render_debezium(event, rng.random() < 0.5)
        texts.append(json.dumps(body, ensure_ascii=bool(ascii_fraction) and rng.random() < ascii_fraction))
    return texts


def debezium_table_options(tables: Sequence[TableSpec] = DEFAULT_TABLES) -> dict[str, dict[str, list[str]]]:
    """The ``tables`` decoder option (each table's key) of ``tables``."""
    return {spec.name: {"key": list(spec.key)} for spec in tables}


# --------------------------------------------------------------------------- delivery


@dataclass
class _Style:
    framing: str
    with_schema: bool
    ensure_ascii: bool
    compact: bool
    tombstone: bool
    offset: int = -1
    tombstone_offset: int = -1
    logical: bool = False


def _dumps(obj: Any, style: _Style) -> str:
    seps = (",", ":") if style.compact else (", ", ": ")
    return json.dumps(obj, ensure_ascii=style.ensure_ascii, separators=seps)


def _render_lines(event: SourceEvent, style: _Style) -> list[str]:
    """The landing line(s) of one event in its framing (kcat: + optional tombstone)."""
    value = _dumps(render_debezium(event, style.with_schema, logical_types=style.logical), style)
    if style.framing == "lines":
        return [value]
    key = _dumps(render_key(event, style.with_schema), style)
    kts = event.capture_ts_ms + 3
    common = {"topic": event.spec.topic, "partition": 0}
    out = [
        {
            **common,
            "offset": style.offset,
            "tstype": "create",
            "ts": kts,
            "broker": 0,
            "key": key,
            "payload": value,
        }
    ]
    if style.tombstone:
        out.append(
            {**common, "offset": style.tombstone_offset, "tstype": "create", "ts": kts, "broker": 0}
            | {"key": key, "payload": None}
        )
    return [json.dumps(o, ensure_ascii=False) for o in out]


def _spread(rng: random.Random, items: list[tuple[int, bool]], n_files: int) -> list[list[tuple[int, bool]]]:
    """``(event index, is duplicate)`` items in ``n_files`` random buckets (files); a
    duplicate never lands in the file of its original (originals are placed first)."""
    buckets: list[list[tuple[int, bool]]] = [[] for _ in range(n_files)]
    home: dict[int, int] = {}
    for i, dup in sorted(items, key=lambda t: t[1]):  # originals first
        b = rng.randrange(n_files)
        if dup and home.get(i) == b:
            b = (b + 1 + rng.randrange(n_files - 1)) % n_files
        home.setdefault(i, b)
        buckets[b].append((i, dup))
    return buckets


def _new_file_name(rng: random.Random, used: set[str], folder: str, ext: str) -> str:
    """A random file name in ``folder`` not in ``used`` (which records it)."""
    while True:
        name = f"{folder}/{rng.getrandbits(48):012x}.{ext}"
        if name not in used:
            used.add(name)
            return name


def deliver(
    events: Sequence[SourceEvent],
    seed: int,
    n_runs: int,
    late_fraction: float = 0.05,
    dup_fraction: float = 0.03,
    *,
    kcat_fraction: float = 0.5,
    tombstone_fraction: float = 0.5,
    max_files: int = 4,
    logical_types: bool = False,
    prefix: str = "",
) -> list[list[FileSpec]]:
    """Landing files per pipeline run for ``events`` (in source order).

    The events are split into ``n_runs`` contiguous runs; then about ``late_fraction``
    of each run's events (all but the last run) move into the next run, and about
    ``dup_fraction`` of all events are delivered a second time (the same bytes, in
    another file of the same or a later run). Each event goes to one framing
    (``kcat_fraction`` of them to ``kcat/``, the rest to ``lines/``) with a random
    rendering (schema or not, ASCII-escaped or not, compact or not); about
    ``tombstone_fraction`` of the kcat-framed deletes are followed by a tombstone.
    Kafka offsets increase with the source order per topic. Each run's events are
    spread over 2..``max_files`` files per framing with random names; about half of
    the files have their lines shuffled. Deterministic per ``seed``.

    ``logical_types`` renders every event with its schema and Kafka Connect logical
    types (:func:`render_debezium_json`); ``prefix`` is put before the file paths
    (``<prefix>lines/...``). Neither changes the random choices made.
    """
    rng = random.Random(seed * 7919 + 101)
    # per-event rendering style and Kafka offsets (in source order)
    offsets: dict[str, int] = {}
    styles: list[_Style] = []
    for ev in events:
        framing = "kcat" if rng.random() < kcat_fraction else "lines"
        style = _Style(
            framing=framing,
            with_schema=rng.random() < 0.5,
            ensure_ascii=rng.random() < 0.3,
            compact=rng.random() < 0.5,
            tombstone=framing == "kcat" and ev.op == "d" and rng.random() < tombstone_fraction,
            logical=logical_types,
        )
        style.with_schema = style.with_schema or logical_types
        topic = ev.spec.topic
        offsets.setdefault(topic, rng.randint(0, 5000))
        offsets[topic] += rng.choice((1, 1, 1, 2))  # gaps: transaction markers, other sinks
        style.offset = offsets[topic]
        if style.tombstone:
            offsets[topic] += 1
            style.tombstone_offset = offsets[topic]
        styles.append(style)

    # split into runs, late arrival, duplicates
    n = len(events)
    bounds = [round(n * i / n_runs) for i in range(n_runs + 1)]
    run_of = [0] * n
    for r in range(n_runs):
        for i in range(bounds[r], bounds[r + 1]):
            run_of[i] = r
            if r < n_runs - 1 and rng.random() < late_fraction:
                run_of[i] = r + 1
    items: list[list[tuple[int, bool]]] = [[] for _ in range(n_runs)]  # (event index, is duplicate)
    for i in range(n):
        items[run_of[i]].append((i, False))
        if rng.random() < dup_fraction:
            items[rng.randint(run_of[i], n_runs - 1)].append((i, True))

    rendered: dict[int, list[str]] = {}
    used_names: set[str] = set()
    out: list[list[FileSpec]] = []
    for r in range(n_runs):
        files: list[FileSpec] = []
        for framing in ("lines", "kcat"):
            mine = [(i, dup) for i, dup in items[r] if styles[i].framing == framing]
            n_files = rng.randint(2, max(2, max_files))
            buckets = _spread(rng, mine, n_files)
            for bucket in buckets:
                if not bucket:
                    continue
                bucket.sort()
                lines: list[str] = []
                n_tomb = 0
                for i, dup in bucket:
                    if i not in rendered:
                        rendered[i] = _render_lines(events[i], styles[i])
                    ev_lines = rendered[i] if not dup else rendered[i][:1]
                    n_tomb += len(ev_lines) - 1
                    lines.extend(ev_lines)
                if rng.random() < 0.5:
                    rng.shuffle(lines)
                name = _new_file_name(rng, used_names, f"{prefix}{framing}", "json")
                files.append(
                    FileSpec(
                        path=name,
                        framing=framing,
                        content=("\n".join(lines) + "\n").encode("utf-8"),
                        events=tuple(events[i] for i, _ in bucket),
                        n_records=len(lines),
                        n_tombstones=n_tomb,
                    )
                )
        rng.shuffle(files)
        out.append(files)
    return out


def delivered_events(runs: Sequence[Sequence[FileSpec]]) -> list[SourceEvent]:
    """Every event held by the files of ``runs`` (duplicates included, file order)."""
    return [ev for files in runs for f in files for ev in f.events]


def write_files(root: str | Path, files: Iterable[FileSpec]) -> list[Path]:
    """Write ``files`` under ``root`` (creating folders); returns the paths written."""
    out = []
    for f in files:
        p = Path(root) / f.path
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(f.content)
        out.append(p)
    return out


# --------------------------------------------------------------------------- other formats
#
# The multi-format differential test renders the same kind of random stream in every
# format the project decodes. Each *format case* gets its own tables (namespace = the
# case name), so all cases share one pipeline run without touching each other's rows.
# What a format cannot express is restricted in the stream by :func:`adapt_events`
# (never by weakening the comparison): the reference model runs on the adapted events.

#: format case -> format identifier (``format:`` of the feed)
FORMAT_CASES: dict[str, str] = {
    "arcion_internal_json": "arcion_internal_json",
    "arcion_internal_csv": "arcion_internal_csv",
    "arcion_kafka_json": "arcion_kafka_json",
    "cdl_json": "cdl_json",
    "lindorm_json": "lindorm_json",
    "debezium_logical": "debezium_json",
    "dts_canal_json": "dts_canal_json",
    "dts_shareplex_json": "dts_shareplex_json",
    "dts_avro": "dts_avro",
}

#: Lindorm's HBase row-key column
HBASE_ROW = "ROW"


def _respec(spec: TableSpec, namespace: str, extra: tuple[Column, ...] = ()) -> TableSpec:
    return TableSpec(f"{namespace}.{spec.table}", spec.columns + extra, spec.key, spec.connector)


def hbase_table(namespace: str = "lindorm_json") -> TableSpec:
    """A Lindorm HBase table: row key ``ROW``, cells ``family_qualifier``.

    Cells are never NULL (an HBase row simply lacks a cell): every column is
    non-nullable. Values are generated as text; :func:`adapt_events` turns them into the
    base64 of their UTF-8 bytes, which is what Lindorm sends and what the mart shows.
    """
    return TableSpec(
        name=f"{namespace}.user_cells",
        columns=(
            Column(HBASE_ROW, "string", nullable=False),
            Column("f_name", "binary", nullable=False),
            Column("f_bio", "binary", nullable=False),
            Column("g_visits", "binary", nullable=False),
        ),
        key=(HBASE_ROW,),
        connector="mysql",
    )


def case_tables(case: str) -> tuple[TableSpec, ...]:
    """The tables of a format case (``customers`` and ``orders`` in namespace ``case``;
    ``debezium_logical`` adds a timestamp column to each, ``lindorm_json`` an HBase table)."""
    if case not in FORMAT_CASES:
        raise ValueError(f"unknown format case {case!r}")
    if case == "debezium_logical":
        return (
            _respec(CUSTOMERS, case, (Column("updated_at", "timestamp"),)),
            _respec(ORDERS, case, (Column("shipped_at", "timestamp"),)),
        )
    tables = (_respec(CUSTOMERS, case), _respec(ORDERS, case))
    if case == "lindorm_json":
        tables += (hbase_table(case),)
    return tables


def case_feeds(case: str) -> list[dict[str, Any]]:
    """``feeds:`` entries of ``cdc.yml`` reading what :func:`deliver_case` writes
    (``path`` relative to the landing root)."""
    fmt = FORMAT_CASES[case]
    if case == "arcion_internal_csv":
        # a CSV file holds one table: one feed per table, named by the option `table`
        return [
            {
                "name": f"{case}_{spec.table}",
                "format": fmt,
                "path": f"{case}/{spec.table}",
                "framing": "csv",
                "options": {"header": True, "table": spec.name},
            }
            for spec in case_tables(case)
        ]
    if case == "debezium_logical":
        return [
            {"name": f"{case}_{framing}", "format": fmt, "path": f"{case}/{framing}", "framing": framing}
            for framing in ("lines", "kcat")
        ]
    framing = {"arcion_kafka_json": "kcat", "lindorm_json": "kcat", "dts_avro": "kafka_parquet"}.get(case, "lines")
    return [{"name": case, "format": fmt, "path": case, "framing": framing}]


def feed_of_path(case: str, path: str) -> str:
    """The feed name (of :func:`case_feeds`) that reads the landing file ``path``."""
    feeds = sorted(case_feeds(case), key=lambda f: -len(f["path"]))
    return next(f["name"] for f in feeds if path.startswith(f["path"] + "/"))


def _prior_rows(events: Iterable[SourceEvent]) -> Iterable[tuple[SourceEvent, Row | None]]:
    """Each event (in the given, source order) with the full row its key had before it."""
    rows: dict[tuple[str, Key], Row] = {}
    for ev in events:
        k = (ev.table, ev.key)
        prior = rows.get(k)
        if ev.op == "d":
            rows.pop(k, None)
        else:
            row = {} if ev.op in ("c", "r") else dict(prior or {})
            row.update({c: v for c, v in (ev.after or {}).items() if v != UNAVAILABLE})
            rows[k] = row
        yield ev, (None if prior is None else dict(prior))


def _resolved(ev: SourceEvent, prior: Row | None) -> SourceEvent:
    """``ev`` with full images: TOAST placeholders replaced by the value they stand for,
    the before image of an update or delete the full old row."""
    if ev.op == "u":
        assert prior is not None, f"update of an absent row at {ev.position}"
        after = {c: (prior[c] if v == UNAVAILABLE else v) for c, v in (ev.after or {}).items()}
        return dataclasses.replace(ev, before=dict(prior), after=after)
    if ev.op == "d":
        assert prior is not None and ev.before == prior, f"delete of a row not as the stream left it at {ev.position}"
    return ev


def full_images(events: Iterable[SourceEvent]) -> list[SourceEvent]:
    """The stream with full row images (see :func:`_resolved`); same meaning."""
    return [_resolved(ev, prior) for ev, prior in _prior_rows(events)]


def _b64(text: str) -> str:
    return base64.b64encode(text.encode("utf-8")).decode()


def adapt_events(case: str, events: Sequence[SourceEvent], seed: int) -> list[SourceEvent]:
    """The stream of :func:`generate` restricted to what format ``case`` can express.

    The reference model runs on the result, so each restriction is visible here:

    * ``arcion_internal_json``: no snapshot marker (the decoder reads ``I`` as an insert
      whether snapshot or realtime), so snapshot reads become inserts. No TOAST
      placeholder: images say what they provide (``exists``). About three quarters of
      the updates and deletes get the realtime shape (``flavor`` ``partial``: ``before``
      only the key columns, an update's ``after`` only the columns it changes); the
      others the snapshot-mode full images (``flavor`` ``full``). An update of a row
      whose insert is not delivered yet thus provides only the changed columns (not even
      the key columns, which are in the before image), and the reference says so.
    * ``arcion_internal_csv``: as JSON, but snapshot reads stay snapshots (X values).
    * ``arcion_kafka_json``: full images (no placeholder in the format).
    * ``cdl_json``: each event gets ``flavor`` ``"1.0"`` (CDL JSON) or ``"2.0"``
      (Debezium payload). 1.0 has no snapshot op (a read becomes ``INSERT``) and no
      TOAST placeholder (images are full); 2.0 keeps both.
    * ``lindorm_json``: no snapshot op (``r`` is documented as unavailable: reads become
      ``c``), no placeholders (full images). HBase table: values become base64 of their
      UTF-8 bytes; every put (``c`` or ``u``) writes only the cells it names, so it is an
      ``update`` (an insert of a new row names all its cells, an update the row key and
      the changed cells); a delete removes the row.
    * ``debezium_logical``: the Debezium stream, plus TOAST placeholders in unchanged,
      non-null decimal columns of PostgreSQL updates (Debezium sends base64 of the
      placeholder for binary-encoded columns).
    * ``dts_canal_json``: no TOAST placeholder (``data`` is the whole row): full images.
      Snapshot reads stay snapshots (``INIT``). How an event is said (``old`` holding
      only the changed columns, the two DELETE layouts, several rows of one
      transaction, table and op in one message) is a rendering choice.
    * ``dts_shareplex_json``: no snapshot op (reads become inserts), no placeholder
      (an update's ``key`` is the whole old row, ``data`` the changed columns): full
      images.
    * ``dts_avro``: full images (every field has a value; the ``NONE`` "not provided"
      value is not generated), snapshot reads stay snapshots (``INIT``).

    A primary-key change stays a delete of the old key and an insert of the new one in
    every case (Arcion's Kafka format documents it so). An Arcion internal realtime
    ``U`` that changes the key (exists 3 on the key, other columns 0) is not generated:
    the pipeline turns it into a delete and an insert of only the provided columns, so
    the columns it does not name are lost (reported; not a format limitation).

    Deterministic per ``case`` and ``seed``.
    """
    rng = random.Random(f"adapt:{case}:{seed}")
    out: list[SourceEvent] = []
    for ev, prior in _prior_rows(events):
        if case in ("arcion_internal_json", "arcion_internal_csv"):
            ev = _resolved(ev, prior)
            if ev.op == "r" and case == "arcion_internal_json":
                ev = dataclasses.replace(ev, op="c")
            if ev.op in ("u", "d") and rng.random() < 0.75:
                before, after = ev.before or {}, ev.after
                keys = {c: before[c] for c in ev.spec.key}
                if after is not None:
                    after = {c: v for c, v in after.items() if c not in ev.spec.key and v != before[c]}
                ev = dataclasses.replace(ev, before=keys, after=after, flavor="partial")
            elif ev.op in ("u", "d"):
                ev = dataclasses.replace(ev, flavor="full")
        elif case == "arcion_kafka_json":
            ev = _resolved(ev, prior)
        elif case == "cdl_json":
            version = "2.0" if rng.random() < 0.5 else "1.0"
            if version == "1.0":
                ev = _resolved(ev, prior)
                if ev.op == "r":
                    ev = dataclasses.replace(ev, op="c")
            ev = dataclasses.replace(ev, flavor=version)
        elif case == "lindorm_json":
            ev = _resolved(ev, prior)
            if ev.spec.key == (HBASE_ROW,):
                ev = _hbase_put(ev, prior, rng)
            elif ev.op == "r":
                ev = dataclasses.replace(ev, op="c")
        elif case in ("dts_canal_json", "dts_avro"):
            ev = _resolved(ev, prior)
        elif case == "dts_shareplex_json":
            ev = _resolved(ev, prior)
            if ev.op == "r":
                ev = dataclasses.replace(ev, op="c")
        elif case == "debezium_logical":
            if ev.op == "u" and ev.before is None and prior is not None and rng.random() < 0.4:
                after = dict(ev.after or {})
                for c in ev.spec.columns:
                    unchanged = after.get(c.name) == prior.get(c.name) and prior.get(c.name) is not None
                    if c.type.startswith("decimal") and unchanged and rng.random() < 0.7:
                        after[c.name] = UNAVAILABLE
                ev = dataclasses.replace(ev, after=after)
        else:
            raise ValueError(f"unknown format case {case!r}")
        out.append(ev)
    return out


def _hbase_put(ev: SourceEvent, prior: Row | None, rng: random.Random) -> SourceEvent:
    spec = ev.spec

    def enc(row: Row) -> Row:
        assert all(v is not None for v in row.values()), "HBase cells are never NULL"
        return {c: _b64(v) for c, v in row.items() if v is not None}

    if ev.op == "d":
        return dataclasses.replace(ev, before=enc(ev.before or {}))
    after = enc(ev.after or {})
    if ev.op == "u":
        old = enc(prior or {})
        named = {c for c in after if c in spec.key or after[c] != old.get(c) or rng.random() < 0.15}
        after = {c: v for c, v in after.items() if c in named}
    return dataclasses.replace(ev, op="u", before=None, after=after)


# ----------------------------------------------------------------- Arcion internal (JSON, CSV)

_ARCION_OPS = {"c": "I", "r": "I", "u": "U", "d": "D"}
_COUNT_FIELD = {"I": "insertCount", "U": "updateCount", "D": "deleteCount"}


def arcion_cursor(event: SourceEvent) -> str:
    """A MySQL-style Arcion cursor (JSON text): binlog ``log`` + ``position`` +
    ``logSeqNum`` (the row in the binlog event, from 1) order the events."""
    file_no, pos, row = event.position
    return json.dumps(
        {
            "extractorId": 0,
            "timestamp": event.ts_ms,
            "extractionTimestamp": event.capture_ts_ms,
            "log": f"log-bin.{file_no:06d}",
            "position": pos,
            "logSeqNum": row + 1,
            "slaveServerId": 1,
            "v": 2,
        },
        separators=(",", ":"),
    )


def arcion_operation_counts(events: Iterable[SourceEvent]) -> list[str]:
    """The cumulative ``operationcount`` JSON text of each event (in source order)."""
    counts = {"insertCount": 0, "updateCount": 0, "deleteCount": 0, "replaceCount": 0}
    out = []
    for ev in events:
        counts[_COUNT_FIELD[_ARCION_OPS[ev.op]]] += 1
        out.append(json.dumps(counts, separators=(",", ":")))
    return out


def _arcion_triplets(event: SourceEvent) -> list[tuple[str | None, str | None, int]]:
    """``(new, old, exists)`` per column of an Arcion event, from the images it has.

    A column in ``after`` exists 1, in ``before`` 2, in both 3, in neither 0 (the
    realtime shape of :func:`adapt_events` ``partial``: the SQL statement's SET and
    WHERE). An insert's ``before`` is ignored (Arcion writes it all ``null``).
    """
    after = event.after or {}
    before = {} if event.op in ("c", "r") else (event.before or {})
    out: list[tuple[str | None, str | None, int]] = []
    for c in event.spec.column_names:
        code = (1 if c in after else 0) + (2 if c in before else 0)
        out.append((after.get(c), before.get(c), code))
    return out


def render_arcion_internal_json(event: SourceEvent, operationcount: str) -> dict[str, Any]:
    """One Arcion internal CDC JSON document.

    ``tableName`` with the namespace as catalog (MySQL) and ``default_schema``;
    ``cursor`` from :func:`arcion_cursor`; ``before``/``after``/``exists`` with every
    column, values as strings, SQL NULL and not-provided columns as ``"null"`` (see
    :func:`_arcion_triplets`); ``operationcount`` the cumulative counts text. A value that
    is exactly the text ``null`` cannot be told from NULL: the generator never makes one.
    """
    spec = event.spec
    triplets = _arcion_triplets(event)

    def text(v: str | None) -> str:
        assert v != "null", "the text 'null' is NULL in Arcion's JSON"
        return "null" if v is None else v

    return {
        "tableName": {
            "namespace": {"catalog": spec.namespace, "schema": "default_schema", "hash": -27122659},
            "name": spec.table,
            "hash": -1893420405,
        },
        "opType": _ARCION_OPS[event.op],
        "cursor": arcion_cursor(event),
        "before": {c: text(old) for c, (_, old, _) in zip(spec.column_names, triplets, strict=True)},
        "after": {c: text(new) for c, (new, _, _) in zip(spec.column_names, triplets, strict=True)},
        "exists": {c: str(code) for c, (_, _, code) in zip(spec.column_names, triplets, strict=True)},
        "operationcount": operationcount,
    }


def _csv_field(value: str | None, force_quote: bool = False) -> str:
    """One RFC 4180 field; an unquoted ``NULL`` is SQL NULL (so the text NULL is quoted)."""
    if value is None:
        return "NULL"
    if force_quote or value == "NULL" or any(ch in value for ch in ',"\r\n'):
        return '"' + value.replace('"', '""') + '"'
    return value


def arcion_csv_header(spec: TableSpec, realtime: bool) -> str:
    """The header row an Arcion CSV file has with ``include-header``."""
    if not realtime:
        return ",".join(spec.column_names)
    names = [f"{c}_{kind}" for c in spec.column_names for kind in ("NEW", "OLD", "EXISTS")]
    return ",".join([*names, "OPERATION", "CURSOR", "OPERATIONCOUNT"])


def render_arcion_internal_csv(event: SourceEvent, operationcount: str) -> str:
    """One Arcion internal CDC CSV row (no line end).

    A snapshot read (``r``) is a snapshot row of X values; any other event a realtime row
    of 3X+3 fields: ``(NEW, OLD, EXISTS)`` per column (:func:`_arcion_triplets`), the
    op, the cursor and the operationcount (quoted JSON). Values are quoted only when
    they need it (``,``, ``"``, CR, LF, or the text ``NULL``).
    """
    if event.op == "r":
        return ",".join(_csv_field((event.after or {})[c]) for c in event.spec.column_names)
    fields: list[str] = []
    for new, old, code in _arcion_triplets(event):
        fields += [_csv_field(new), _csv_field(old), str(code)]
    fields += [_ARCION_OPS[event.op], _csv_field(arcion_cursor(event), True), _csv_field(operationcount, True)]
    return ",".join(fields)


# ----------------------------------------------------------------- Arcion JSON CDC for Kafka


def _plain_json_row(spec: TableSpec, row: Row | None) -> dict[str, Any]:
    return {} if row is None else {c.name: _json_value(c, row[c.name]) for c in spec.columns}


def render_arcion_kafka_json(event: SourceEvent, with_schema: bool) -> tuple[dict[str, Any], dict[str, Any]]:
    """``(key, value)`` of one Arcion JSON CDC Kafka message (MySQL source).

    The key is the primary key struct; the value the Debezium-like envelope with
    ``before: {}`` for inserts and snapshot reads and ``after: {}`` for deletes. Realtime
    events carry ``source.file``/``pos``/``row`` (``row`` from 1); snapshot reads have
    ``snapshot "true"`` and null positions and times. Needs full images.
    """
    spec = event.spec
    snap = event.op == "r"
    connector = "KAFKA_snapshot_connector" if snap else "KAFKA_Connector"
    file_no, pos, row = event.position
    key_fields = [(k, CONNECT_TYPES[spec.column(k).type], False) for k in spec.key]
    key_payload = {k: _json_value(spec.column(k), v) for k, v in zip(spec.key, event.key, strict=True)}
    source = {
        "version": "5.7.41",
        "connector": "MYSQL",
        "name": connector,
        "ts_ms": None if snap else event.ts_ms,
        "db": spec.namespace,
        "schema": None,
        "table": spec.table,
        "snapshot": "true" if snap else "false",
        "server_id": None if snap else "1",
        "gtid": None,
        "file": None if snap else f"mysql-log.{file_no:06d}",
        "pos": None if snap else pos,
        "row": None if snap else row + 1,
        "thread": None if snap else 309,
        "query": f"{_CDL_V1_OPS[event.op]} {spec.name}",
    }
    payload = {
        "before": _plain_json_row(spec, event.before if event.op in ("u", "d") else None),
        "after": _plain_json_row(spec, event.after if event.op != "d" else None),
        "source": source,
        "op": event.op,
        "ts_ms": None if snap else event.capture_ts_ms,
    }
    if not with_schema:
        return key_payload, payload
    row_fields = [(c.name, CONNECT_TYPES[c.type], c.nullable) for c in spec.columns]
    value_name = f"{connector}.{spec.name}.Value"
    src_fields = [
        ("version", "string", False),
        ("connector", "string", False),
        ("name", "string", False),
        ("ts_ms", "int64", True),
        ("db", "string", True),
        ("schema", "string", True),
        ("table", "string", False),
        ("query", "string", True),
        ("snapshot", "string", True),
        ("server_id", "int64", True),
        ("gtid", "string", True),
        ("file", "string", True),
        ("pos", "int64", True),
        ("row", "int32", True),
    ]
    schema = {
        "type": "struct",
        "optional": False,
        "name": f"{connector}.{spec.name}.Envelope",
        "fields": [
            _struct_schema(row_fields, value_name, "before", True),
            _struct_schema(row_fields, value_name, "after", True),
            _struct_schema(src_fields, connector, "source", False),
            {"type": "string", "optional": False, "field": "op"},
            {"type": "int64", "optional": True, "field": "ts_ms"},
        ],
    }
    key = {"schema": _struct_schema(key_fields, f"{connector}.{spec.name}.Key", None, False), "payload": key_payload}
    return key, {"schema": schema, "payload": payload}


# ----------------------------------------------------------------- Huawei CDL JSON

_CDL_V1_OPS = {"c": "INSERT", "r": "INSERT", "u": "UPDATE", "d": "DELETE"}
CDL_DECIMAL = "com.xxx.cdc.data.Decimal"


def _cdl_field(col: Column) -> dict[str, Any]:
    if col.type.startswith("decimal"):
        return {"type": "string", "optional": col.nullable, "name": CDL_DECIMAL, "field": col.name}
    return {"type": CONNECT_TYPES[col.type], "optional": col.nullable, "field": col.name}


def _cdl_struct(fields: list[dict[str, Any]], name: str, field: str, optional: bool = True) -> dict[str, Any]:
    return {"type": "struct", "fields": fields, "optional": optional, "name": name, "field": field}


def render_cdl_json(event: SourceEvent, with_schema: bool, *, delete_image: str = "full") -> dict[str, Any]:
    """One Huawei CDL message, ``message_version`` from ``event.flavor`` (``1.0`` or ``2.0``).

    1.0: ``DATA_STORE``/``SEG_OWNER``/``TABLE_NAME``/``TIMESTAMP``/``OPERATION``,
    ``data`` and ``before``, ``transaction.properties`` ``[{name: lsn}, {name: txId}]``.
    2.0: the Debezium PostgreSQL payload (``source.lsn``/``txId``). Both carry ``unique``
    (the primary key), ``LOB_COLUMNS``, ``message_type`` and ``HEARTBEAT_IDENTIFIER``.
    Decimals are text (``com.xxx.cdc.data.Decimal``). ``delete_image``: ``full`` (the old
    row), ``key`` (only the key columns: REPLICA IDENTITY DEFAULT) or ``none`` (no
    before image: the key comes from ``unique`` alone).
    """
    spec = event.spec
    version = event.flavor or "2.0"
    unique = {k: _json_value(spec.column(k), v) for k, v in zip(spec.key, event.key, strict=True)}
    before = event.before
    if event.op == "d" and delete_image != "full":
        before = None if delete_image == "none" else {k: (before or {})[k] for k in spec.key}
    row_fields = [_cdl_field(c) for c in spec.columns]
    unique_schema = _cdl_struct([_cdl_field(spec.column(k)) for k in spec.key], "unique", "unique")
    heartbeat_id = f"{event.tx_id:08x}-0143-45c1-b184-{event.lsn:012x}"
    if version == "1.0":
        payload: dict[str, Any] = {
            "DATA_STORE": "POSTGRESQL",
            "SEG_OWNER": spec.namespace,
            "TABLE_NAME": spec.table,
            "TIMESTAMP": event.ts_ms,
            "OPERATION": _CDL_V1_OPS[event.op],
            "LOB_COLUMNS": None,
            "transaction": {
                "properties": [{"name": "lsn", "value": event.lsn}, {"name": "txId", "value": event.tx_id}]
            },
            "unique": unique,
            "data": _json_row(spec, event.after),
            "before": _json_row(spec, before),
            "message_version": "1.0",
            "message_type": "0",
            "HEARTBEAT_IDENTIFIER": heartbeat_id,
        }
        if not with_schema:
            return payload
        props = {
            "type": "array",
            "items": {
                "type": "struct",
                "fields": [
                    {"type": "string", "optional": False, "field": "name"},
                    {"type": "int64", "optional": False, "field": "value"},
                ],
                "optional": False,
            },
            "optional": False,
            "field": "properties",
        }
        fields = [
            {"type": "string", "optional": False, "field": "DATA_STORE"},
            {"type": "string", "optional": False, "field": "SEG_OWNER"},
            {"type": "string", "optional": False, "field": "TABLE_NAME"},
            {
                "type": "int64",
                "optional": False,
                "name": "org.apache.kafka.connect.data.Timestamp",
                "version": 1,
                "field": "TIMESTAMP",
            },
            {"type": "string", "optional": False, "field": "OPERATION"},
            {"type": "string", "optional": True, "field": "LOB_COLUMNS"},
            _cdl_struct([props], "transaction", "transaction", False),
            unique_schema,
            _cdl_struct(row_fields, "data", "data"),
            _cdl_struct(row_fields, "before", "before"),
            {"type": "string", "optional": False, "field": "message_version"},
            {"type": "string", "optional": False, "field": "message_type"},
            {"type": "string", "optional": True, "field": "HEARTBEAT_IDENTIFIER"},
        ]
        return {
            "schema": {"type": "struct", "fields": fields, "optional": False, "name": spec.name},
            "payload": payload,
        }
    payload = {
        "before": _json_row(spec, before),
        "after": _json_row(spec, event.after),
        "source": {
            "version": "1.4.0.Final",
            "connector": "postgresql",
            "name": "cdl",
            "ts_ms": event.ts_ms,
            "snapshot": "true" if event.op == "r" else "false",
            "db": "cdl",
            "schema": spec.namespace,
            "table": spec.table,
            "txId": event.tx_id,
            "lsn": event.lsn,
        },
        "op": event.op,
        "ts_ms": event.capture_ts_ms,
        "message_version": "2.0",
        "message_type": "0",
        "LOB_COLUMNS": None,
        "unique": unique,
        "HEARTBEAT_IDENTIFIER": heartbeat_id,
    }
    if not with_schema:
        return payload
    src = [
        ("version", "string", False),
        ("connector", "string", False),
        ("name", "string", False),
        ("ts_ms", "int64", False),
        ("snapshot", "string", True),
        ("db", "string", False),
        ("schema", "string", False),
        ("table", "string", False),
        ("txId", "int64", True),
        ("lsn", "int64", True),
    ]
    fields = [
        _cdl_struct(row_fields, "before", "before"),
        _cdl_struct(row_fields, "data", "after"),
        _struct_schema(src, "io.debezium.connector.postgresql.Source", "source", False),
        {"type": "string", "optional": False, "field": "op"},
        {"type": "int64", "optional": False, "field": "ts_ms"},
        {"type": "string", "optional": False, "field": "message_version"},
        {"type": "string", "optional": False, "field": "message_type"},
        {"type": "string", "optional": True, "field": "LOB_COLUMNS"},
        unique_schema,
        {"type": "string", "optional": True, "field": "HEARTBEAT_IDENTIFIER"},
    ]
    return {"schema": {"type": "struct", "fields": fields, "optional": False, "name": spec.name}, "payload": payload}


def render_cdl_heartbeat(kind: str, lsn: int, tx_id: int, ts_ms: int) -> dict[str, Any]:
    """A CDL heartbeat message the decoder must skip.

    ``kind``: ``v1`` / ``v2`` an UPDATE of CDL's heartbeat table ``cdc_cdl.cdc_heartbeat``
    in CDL JSON 1.0 / Debezium 2.0; ``bare`` a message with ``message_type``
    ``heartbeat``.
    """
    row = {"id": 1, "heartbeat_time": ts_ms}
    if kind == "v1":
        return {
            "DATA_STORE": "POSTGRESQL",
            "SEG_OWNER": "cdc_cdl",
            "TABLE_NAME": "cdc_heartbeat",
            "TIMESTAMP": ts_ms,
            "OPERATION": "UPDATE",
            "LOB_COLUMNS": None,
            "transaction": {"properties": [{"name": "lsn", "value": lsn}, {"name": "txId", "value": tx_id}]},
            "unique": {"id": 1},
            "data": row,
            "before": None,
            "message_version": "1.0",
            "message_type": "0",
            "HEARTBEAT_IDENTIFIER": f"hb-{lsn:x}",
        }
    if kind == "v2":
        return {
            "before": None,
            "after": row,
            "source": {
                "version": "1.4.0.Final",
                "connector": "postgresql",
                "name": "cdl",
                "ts_ms": ts_ms,
                "snapshot": "false",
                "db": "cdl",
                "schema": "cdc_cdl",
                "table": "cdc_heartbeat",
                "txId": tx_id,
                "lsn": lsn,
            },
            "op": "u",
            "ts_ms": ts_ms,
            "message_version": "2.0",
            "message_type": "0",
            "LOB_COLUMNS": None,
            "unique": {"id": 1},
        }
    if kind == "bare":
        return {"message_type": "heartbeat", "HEARTBEAT_IDENTIFIER": f"hb-{lsn:x}", "TIMESTAMP": ts_ms}
    raise ValueError(f"unknown heartbeat kind {kind!r}")


# ----------------------------------------------------------------- Lindorm


def render_lindorm_json(
    event: SourceEvent, with_schema: bool, *, omit_nulls: bool = False, put_op: str = "c"
) -> dict[str, Any]:
    """One Lindorm change record (Debezium format V2.0), ``{"schema", "payload"}``.

    SQL tables send whole rows: ``after`` of an update is the full new row (a column
    missing from it would mean "set to NULL"), ``before`` the full old row. With
    ``omit_nulls`` the NULL columns are left out of both images, as Lindorm's wide rows
    store no cell for NULL (the decoder sets a column the update's before image has and
    its after image lacks to NULL; one in neither keeps its value, NULL already).
    HBase tables (key ``ROW``): the event as :func:`adapt_events` made it; a put names
    only its cells (base64) and is sent as ``put_op`` (``c`` as in the vendor's sample,
    or ``u``), a delete as ``d`` with the old cells. ``schema`` is ``{}`` unless
    ``with_schema`` (SQL tables only: HBase cells have no types).
    """
    spec = event.spec
    hbase = spec.key == (HBASE_ROW,)
    op = event.op
    if hbase and op != "d":
        op = put_op

    def image(row: Row | None) -> dict[str, Any] | None:
        if row is None:
            return None
        if hbase:
            return dict(row)
        return {c.name: _json_value(c, row[c.name]) for c in spec.columns if not (omit_nulls and row[c.name] is None)}

    payload = {
        "op": op,
        "ts_ms": event.capture_ts_ms,
        "before": image(event.before) if op != "c" else None,
        "after": image(event.after) if op != "d" else None,
        "source": {
            "version": "v2.0",
            "db": "ld-uf6k8yqb7j4r0",
            "namespace": spec.namespace,
            "table": spec.table,
            "ts_ms": event.ts_ms,
        },
    }
    schema: dict[str, Any] = {}
    if with_schema and not hbase:
        row_fields = [(c.name, CONNECT_TYPES[c.type], c.nullable) for c in spec.columns]
        src = [(n, t, False) for n, t in (("version", "string"), ("db", "string"), ("namespace", "string"))]
        src += [("table", "string", False), ("ts_ms", "int64", False)]
        schema = {
            "type": "struct",
            "fields": [
                {"type": "string", "optional": False, "field": "op"},
                {"type": "int64", "optional": False, "field": "ts_ms"},
                _struct_schema(row_fields, None, "before", True),
                _struct_schema(row_fields, None, "after", True),
                _struct_schema(src, None, "source", False),
            ],
            "optional": False,
        }
    return {"schema": schema, "payload": payload}


# ----------------------------------------------------------------- Alibaba Cloud DTS

_CANAL_TYPES = {"bigint": "bigint(20)", "int": "int(11)", "decimal(38,6)": "decimal(38,6)", "string": "varchar(255)"}
_CANAL_SQL_TYPES = {"bigint": -5, "int": 4, "decimal(38,6)": 3, "string": 12}
_CANAL_TYPE = {"c": "INSERT", "r": "INIT", "u": "UPDATE", "d": "DELETE"}


def dts_id(event: SourceEvent) -> int:
    """The DTS ``id`` (Canal) / record ``id`` (Avro) of an event: increasing with the
    source order (the LSN of the generator, which every event advances)."""
    return event.lsn - 30_000_000


def render_dts_canal_json(events: Sequence[SourceEvent], rng: random.Random) -> dict[str, Any]:
    """One DTS Canal JSON message holding ``events`` (one row each, in source order):
    consecutive events of one transaction, table and op. ``id`` and ``es`` are the
    first event's; the row index orders the others. An update's ``old`` holds only the
    changed columns (previous values); a delete has its row in ``data`` or (DTS
    instances created before 2022-03-20) in ``old`` with ``data`` null."""
    first = events[0]
    spec, op = first.spec, first.op
    assert all(e.spec == spec and e.op == op and e.tx_id == first.tx_id for e in events)
    rows = [dict(e.before if op == "d" else e.after or {}) for e in events]
    msg: dict[str, Any] = {"data": rows, "old": None}
    if op == "u":
        msg["old"] = [{c: v for c, v in (e.before or {}).items() if (e.after or {}).get(c) != v} for e in events]
    elif op == "d" and rng.random() < 0.4:
        msg["data"], msg["old"] = None, rows
    msg |= {
        "database": spec.namespace,
        "table": spec.table,
        "es": first.ts_ms,
        "id": dts_id(first),
        "isDdl": False,
        "mysqlType": {c.name: _CANAL_TYPES[c.type] for c in spec.columns},
        "pkNames": list(spec.key),
        "sql": "",
        "sqlType": {c.name: _CANAL_SQL_TYPES[c.type] for c in spec.columns},
        "ts": max(e.capture_ts_ms for e in events),
        "type": _CANAL_TYPE[op],
    }
    keys = list(msg)
    rng.shuffle(keys)  # member order carries no meaning
    return {k: msg[k] for k in keys}


def render_dts_canal_ddl(spec: TableSpec, event: SourceEvent) -> dict[str, Any]:
    """A DTS Canal JSON DDL message (skipped as ``ddl``) next to ``event``."""
    return {
        "database": spec.namespace,
        "es": event.ts_ms,
        "id": dts_id(event) - 1,
        "isDdl": True,
        "sql": f"CREATE INDEX ix_{spec.table}_{event.lsn % 1000} ON {spec.table} ({spec.key[0]})",
        "table": spec.table,
        "ts": event.capture_ts_ms,
        "type": "DDL",
    }


def _oracle_time(ms: int) -> str:
    return (_EPOCH + _dt.timedelta(milliseconds=ms)).strftime("%Y-%m-%dT%H:%M:%S")


def render_dts_shareplex_json(event: SourceEvent, op_seq: int, size: int, rng: random.Random) -> dict[str, Any]:
    """One DTS Shareplex JSON message. ``meta.scn`` is the transaction's SCN (one per
    transaction, increasing), ``trans`` its id, ``seq``/``size``/``idx`` the operation's
    place in it. ``ins``/``upd``/``del`` or ``INSERT``/``UPDATE``/``DELETE``. An update's
    ``data`` holds the changed columns (at least one), ``key`` the whole old row; a
    delete's ``data`` is the old row. Oracle names: upper case."""
    spec = event.spec

    def upper(row: Row | None) -> dict[str, Any]:
        return {c.upper(): v for c, v in (row or {}).items()}

    long = rng.random() < 0.5
    op = {"c": ("ins", "INSERT"), "u": ("upd", "UPDATE"), "d": ("del", "DELETE")}[event.op][long]
    meta = {
        "time": _oracle_time(event.ts_ms),
        "userid": 84,
        "op": op,
        "scn": str(14_589_063_000_000 + event.tx_id),
        "rowid": f"AAATGpAAIAAItc{event.lsn % 10**6:06d}",
        "trans": f"{event.tx_id % 11}.{event.tx_id % 7}.{event.tx_id}",
        "seq": op_seq,
        "size": size,
        "table": spec.name.upper(),
        "idx": f"{op_seq}/{size}",
        "posttime": _oracle_time(event.capture_ts_ms + 1000),
    }
    msg: dict[str, Any] = {"meta": meta}
    if event.op == "c":
        msg["data"] = upper(event.after)
    elif event.op == "d":
        msg["data"] = upper(event.before)
    else:
        before, after = event.before or {}, event.after or {}
        changed = {c: v for c, v in after.items() if before.get(c) != v}
        if not changed:  # an update that set a column to its value still names it
            name = next(c for c in spec.column_names if c not in spec.key)
            changed = {name: after[name]}
        msg["data"], msg["key"] = upper(changed), upper(before)
    return msg


def _avro_value(col: Column, text: str | None) -> Any:
    from udfs.formats.dts_avro import typed

    if text is None:
        return None
    if col.type in ("bigint", "int"):
        return typed("Integer", {"precision": 19 if col.type == "bigint" else 10, "value": text})
    if col.type.startswith("decimal"):
        return typed("Decimal", {"value": text, "precision": 38, "scale": DECIMAL_SCALE})
    return typed("Character", {"charset": "utf8mb4", "value": text.encode("utf-8")})


_AVRO_OPERATION = {"c": "INSERT", "r": "INIT", "u": "UPDATE", "d": "DELETE"}


def dts_avro_record(event: SourceEvent, operation: str | None = None) -> dict[str, Any]:
    """One DTS Avro record (for ``encode_record``): full images of typed values;
    ``operation`` ``BEGIN``/``COMMIT`` gives the transaction marker around ``event``."""
    spec = event.spec
    marker = operation is not None
    rec: dict[str, Any] = {
        "version": 1,
        "id": dts_id(event) + {"BEGIN": -1, "COMMIT": 1, None: 0}[operation],
        "sourceTimestamp": event.ts_ms // 1000,
        "sourcePosition": f"{event.position[1]}@{event.position[0]}",
        "safeSourcePosition": f"{event.position[1]}@{event.position[0]}",
        "sourceTxid": str(event.tx_id),
        "source": {"sourceType": "MySQL", "version": "5.7.28"},
        "operation": operation or _AVRO_OPERATION[event.op],
        "objectName": None if marker else spec.name,
        "processTimestamps": None,
        "tags": {},
        "fields": None,
        "beforeImages": None,
        "afterImages": None,
        "bornTimestamp": event.capture_ts_ms // 1000,
    }
    if marker:
        return rec
    rec["fields"] = [{"name": c.name, "dataTypeNumber": 0} for c in spec.columns]
    if event.op in ("u", "d"):
        rec["beforeImages"] = [_avro_value(c, (event.before or {})[c.name]) for c in spec.columns]
    if event.op != "d":
        rec["afterImages"] = [_avro_value(c, (event.after or {})[c.name]) for c in spec.columns]
    return rec


def _avro_line(event: SourceEvent, offset: int, operation: str | None = None) -> str:
    """A DTS Avro Kafka message as a JSON line (value base64) for :func:`frame_records`."""
    from udfs.formats.dts_avro import encode_record

    value = base64.b64encode(encode_record(dts_avro_record(event, operation))).decode()
    return json.dumps({"topic": f"dts.{event.spec.namespace}", "partition": 0, "offset": offset, "value": value})


def frame_records(framing: str, lines: Sequence[str]) -> bytes:
    """The landing file of ``lines`` in ``framing``: newline-joined text, or for
    ``kafka_parquet`` a parquet file (``key`` null, ``value`` the bytes, ``topic``,
    ``partition``, ``offset``, ``timestamp``) of the JSON lines :func:`_avro_line` writes."""
    if framing != "kafka_parquet":
        return ("\n".join(lines) + "\n").encode("utf-8")
    import io

    import pyarrow as pa
    import pyarrow.parquet as pq

    msgs = [json.loads(line) for line in lines]
    table = pa.table(
        {
            "key": pa.array([None] * len(msgs), pa.binary()),
            "value": pa.array([base64.b64decode(m["value"]) for m in msgs], pa.binary()),
            "topic": pa.array([m["topic"] for m in msgs], pa.string()),
            "partition": pa.array([m["partition"] for m in msgs], pa.int32()),
            "offset": pa.array([m["offset"] for m in msgs], pa.int64()),
            # the broker's append time: any value (no decoder reads it), one ms per offset
            "timestamp": pa.array([1_600_000_000_000 + m["offset"] for m in msgs], pa.timestamp("ms", tz="UTC")),
        }
    )
    out = io.BytesIO()
    pq.write_table(table, out)
    return out.getvalue()


# ----------------------------------------------------------------- delivery of a format case


def _kcat_line(topic: str, offset: int, key: str | None, payload: str | None, ts: int) -> str:
    obj = {"topic": topic, "partition": 0, "offset": offset, "tstype": "create", "ts": ts, "broker": 0}
    return json.dumps(obj | {"key": key, "payload": payload}, ensure_ascii=False)


def render_case_records(
    case: str, events: Sequence[SourceEvent], rng: random.Random
) -> list[tuple[str, list[str], int]]:
    """Per event (source order): ``(file group, records, tombstones among them)``.

    ``events`` are the adapted events of ``case`` (:func:`adapt_events`) in source
    order. The first record is the event itself (a JSON line, a CSV row or a ``kcat -J``
    line); a Kafka tombstone may follow. A file group is a landing folder, plus
    ``#snapshot``/``#realtime`` for CSV (different headers). Rendering choices that do not
    change what an event says (schema or not, escaping, image shapes) come from ``rng``.
    """
    counts = arcion_operation_counts(events)
    tx_sizes: dict[int, int] = {}
    for ev in events:
        tx_sizes[ev.tx_id] = tx_sizes.get(ev.tx_id, 0) + 1
    tx_seen: dict[int, int] = {}
    offsets: dict[str, int] = {}
    out: list[tuple[str, list[str], int]] = []

    def dumps(obj: Any) -> str:
        return json.dumps(obj, ensure_ascii=rng.random() < 0.3, separators=(",", ":") if rng.random() < 0.5 else None)

    def offset(topic: str) -> int:
        offsets.setdefault(topic, rng.randint(0, 5000))
        offsets[topic] += rng.choice((1, 1, 1, 2))
        return offsets[topic]

    for i, ev in enumerate(events):
        spec = ev.spec
        if case == "arcion_internal_json":
            doc = render_arcion_internal_json(ev, counts[i])
            out.append((case, [dumps(doc)], 0))
        elif case == "arcion_internal_csv":
            row = render_arcion_internal_csv(ev, counts[i])
            kind = "snapshot" if ev.op == "r" else "realtime"
            out.append((f"{case}/{spec.table}#{kind}", [row], 0))
        elif case == "arcion_kafka_json":
            key, value = render_arcion_kafka_json(ev, with_schema=rng.random() < 0.5)
            topic = f"arcion.{spec.name}"
            lines = [_kcat_line(topic, offset(topic), dumps(key), dumps(value), ev.capture_ts_ms + 3)]
            if ev.op == "d":  # Arcion follows every delete with a tombstone
                lines.append(_kcat_line(topic, offset(topic), dumps(key), None, ev.capture_ts_ms + 3))
            out.append((case, lines, len(lines) - 1))
        elif case == "cdl_json":
            delete_image = "full"
            if ev.op == "d" and spec.connector == "postgresql":
                delete_image = rng.choice(("full", "key", "none"))
            doc = render_cdl_json(ev, with_schema=rng.random() < 0.5, delete_image=delete_image)
            out.append((case, [dumps(doc)], 0))
        elif case == "lindorm_json":
            doc = render_lindorm_json(
                ev, with_schema=rng.random() < 0.3, omit_nulls=rng.random() < 0.5, put_op=rng.choice("ccu")
            )
            topic = f"lindorm.{spec.name}"
            out.append((case, [_kcat_line(topic, offset(topic), None, dumps(doc), ev.capture_ts_ms + 3)], 0))
        elif case == "dts_canal_json":  # deliver_case merges rows into multi-row messages
            out.append((case, [dumps(render_dts_canal_json([ev], rng))], 0))
        elif case == "dts_shareplex_json":
            tx_seen[ev.tx_id] = tx_seen.get(ev.tx_id, 0) + 1
            doc = render_dts_shareplex_json(ev, tx_seen[ev.tx_id], tx_sizes[ev.tx_id], rng)
            out.append((case, [dumps(doc)], 0))
        elif case == "dts_avro":
            out.append((case, [_avro_line(ev, offset(f"dts.{spec.namespace}"))], 0))
        elif case == "debezium_logical":  # deliver_case uses deliver(); this is for unit tests
            out.append((f"{case}/lines", [dumps(render_debezium_json(ev))], 0))
        else:
            raise ValueError(f"unknown format case {case!r}")
    return out


def deliver_case(
    case: str,
    events: Sequence[SourceEvent],
    seed: int,
    n_runs: int,
    late_fraction: float = 0.05,
    dup_fraction: float = 0.03,
    *,
    max_files: int = 3,
) -> list[list[FileSpec]]:
    """Landing files per pipeline run for the adapted ``events`` of format ``case``.

    Same delivery as :func:`deliver`: contiguous runs, about ``late_fraction`` of each
    run's events moved to the next run, about ``dup_fraction`` delivered twice (the same
    bytes, never in the same file), 1..``max_files`` files per folder and run with random
    names, half of them with their records shuffled (a CSV header stays first). Paths
    start with the folders of :func:`case_feeds`. Huawei CDL files get heartbeat messages
    interleaved; Kafka framings carry offsets increasing with the source order per topic
    (Lindorm orders changes of one millisecond by them). Deterministic per ``seed``.
    """
    if case == "debezium_logical":
        return deliver(
            events,
            seed,
            n_runs,
            late_fraction,
            dup_fraction,
            max_files=max_files,
            logical_types=True,
            prefix=f"{case}/",
        )
    rng = random.Random(f"deliver:{case}:{seed}")
    rendered = render_case_records(case, events, rng)
    framing = next(iter({f["framing"] for f in case_feeds(case)}))
    # delivery units: one event each, or (DTS Canal) the rows of one multi-row message
    units = [[i] for i in range(len(events))]
    if case == "dts_canal_json":
        units, rendered = _canal_units(events, rendered, random.Random(f"canal:{seed}"))

    n = len(units)
    bounds = [round(n * i / n_runs) for i in range(n_runs + 1)]
    items: list[list[tuple[int, bool]]] = [[] for _ in range(n_runs)]
    for r in range(n_runs):
        for i in range(bounds[r], bounds[r + 1]):
            run = r + 1 if r < n_runs - 1 and rng.random() < late_fraction else r
            items[run].append((i, False))
            if rng.random() < dup_fraction:
                items[rng.randint(run, n_runs - 1)].append((i, True))

    used: set[str] = set()
    out: list[list[FileSpec]] = []
    for r in range(n_runs):
        files: list[FileSpec] = []
        groups: dict[str, list[tuple[int, bool]]] = {}
        for i, dup in items[r]:
            groups.setdefault(rendered[i][0], []).append((i, dup))
        for group in sorted(groups):
            mine = groups[group]
            n_files = max(1, min(rng.randint(1, max_files), len(mine)))
            if any(dup for _, dup in mine):
                n_files = max(n_files, 2)
            buckets = _spread(rng, mine, n_files)
            folder, _, kind = group.partition("#")
            for bucket in buckets:
                if not bucket:
                    continue
                bucket.sort()
                lines: list[str] = []
                n_tomb = 0
                for i, dup in bucket:
                    ev_lines = rendered[i][1] if not dup else rendered[i][1][:1]
                    n_tomb += 0 if dup else rendered[i][2]
                    lines.extend(ev_lines)
                n_heartbeats = 0
                other: dict[str, int] = {}
                if case == "cdl_json":
                    for _ in range(rng.randint(0, 3)):
                        ev = events[units[rng.choice(bucket)[0]][0]]
                        kind_hb = rng.choice(("v1", "v2", "bare"))
                        hb = render_cdl_heartbeat(kind_hb, ev.lsn - 1, ev.tx_id, ev.ts_ms)
                        lines.insert(rng.randint(0, len(lines)), json.dumps(hb, ensure_ascii=False))
                        n_heartbeats += 1
                elif case in ("dts_canal_json", "dts_avro"):
                    # DDL messages (Canal) / transaction markers (Avro), skipped by reason
                    for _ in range(rng.randint(0, 3)):
                        ev = events[units[rng.choice(bucket)[0]][0]]
                        if case == "dts_canal_json":
                            line, reason = json.dumps(render_dts_canal_ddl(ev.spec, ev)), "ddl"
                        else:
                            marker = rng.choice(("BEGIN", "COMMIT"))
                            line, reason = _avro_line(ev, rng.randint(0, 10**6), marker), marker.lower()
                        lines.insert(rng.randint(0, len(lines)), line)
                        other[reason] = other.get(reason, 0) + 1
                if rng.random() < 0.5:
                    rng.shuffle(lines)
                n_records = len(lines)
                if framing == "csv":
                    spec = events[units[bucket[0][0]][0]].spec
                    eol = "\r\n" if rng.random() < 0.3 else "\n"
                    content = (eol.join([arcion_csv_header(spec, kind == "realtime"), *lines]) + eol).encode("utf-8")
                    ext = "csv"
                else:
                    content = frame_records(framing, lines)
                    ext = "parquet" if framing == "kafka_parquet" else "json"
                name = _new_file_name(rng, used, folder, ext)
                files.append(
                    FileSpec(
                        path=name,
                        framing=framing,
                        content=content,
                        events=tuple(events[j] for i, _ in bucket for j in units[i]),
                        n_records=n_records,
                        n_tombstones=n_tomb,
                        n_heartbeats=n_heartbeats,
                        other_skipped=other,
                    )
                )
        rng.shuffle(files)
        out.append(files)
    return out


def _canal_units(
    events: Sequence[SourceEvent], rendered: list[tuple[str, list[str], int]], rng: random.Random
) -> tuple[list[list[int]], list[tuple[str, list[str], int]]]:
    """DTS Canal delivery units: runs of up to 3 consecutive events of one transaction,
    table and op become one multi-row message (about half of the possible merges)."""
    units: list[list[int]] = []
    for i, ev in enumerate(events):
        if units:
            last = events[units[-1][-1]]
            same = (last.spec, last.op, last.tx_id) == (ev.spec, ev.op, ev.tx_id)
            if same and len(units[-1]) < 3 and rng.random() < 0.6:
                units[-1].append(i)
                continue
        units.append([i])
    out = []
    for unit in units:
        if len(unit) == 1:
            out.append(rendered[unit[0]])
        else:
            msg = render_dts_canal_json([events[i] for i in unit], rng)
            out.append((rendered[unit[0]][0], [json.dumps(msg, ensure_ascii=rng.random() < 0.3)], 0))
    return units, out


# --------------------------------------------------------------------------- reference model


def _in_source_order(events: Iterable[SourceEvent]) -> list[SourceEvent]:
    """Distinct events (one per source position) sorted by source position."""
    by_pos: dict[tuple[int, int, int], SourceEvent] = {}
    for ev in events:
        by_pos.setdefault(ev.position, ev)
    return [by_pos[p] for p in sorted(by_pos)]


def _apply(rows: dict[Key, Row], ev: SourceEvent) -> Row | None:
    """Apply one event to a table's rows; returns the row after it (None: deleted)."""
    key = ev.key
    if ev.op == "d":
        rows.pop(key, None)
        return None
    image = ev.after or {}
    if ev.op in ("c", "r"):
        row = {c: v for c, v in image.items() if v != UNAVAILABLE}
    else:  # update: overlay the provided columns
        row = dict(rows.get(key, {}))
        row.update({c: v for c, v in image.items() if v != UNAVAILABLE})
    rows[key] = row
    return dict(row)


def reference_state(events_delivered: Iterable[SourceEvent]) -> dict[str, dict[Key, Row]]:
    """Current rows per table and key after the delivered events.

    Duplicates count once; events apply in source order whatever the delivery order:
    an insert or snapshot read replaces the row, an update overlays the columns it
    provides (a TOAST placeholder keeps the old value; an update of an unknown row
    starts from nothing, so a column never provided is absent), a delete removes the
    row. Tables without events are absent from the result.
    """
    state: dict[str, dict[Key, Row]] = {}
    for ev in _in_source_order(events_delivered):
        _apply(state.setdefault(ev.table, {}), ev)
    return state


def reference_history(events_delivered: Iterable[SourceEvent]) -> dict[str, dict[Key, list[Version]]]:
    """Versions per table and key: one per distinct delivered event, in source order."""
    state: dict[str, dict[Key, Row]] = {}
    hist: dict[str, dict[Key, list[Version]]] = {}
    for ev in _in_source_order(events_delivered):
        row = _apply(state.setdefault(ev.table, {}), ev)
        hist.setdefault(ev.table, {}).setdefault(ev.key, []).append(Version(ev.position, ev.op_name, row, ev.op == "d"))
    return hist


def key_text(spec: TableSpec, key: Key) -> str:
    """Canonical JSON text of a key, as the pipeline's ``key_text`` column holds it."""
    obj = {name.lower(): value for name, value in zip(spec.key, key, strict=True)}
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def full_row(spec: TableSpec, row: Row | None) -> Row | None:
    """``row`` with every column of ``spec`` (a column never provided is ``None``)."""
    if row is None:
        return None
    return {c: row.get(c) for c in spec.column_names}


# --------------------------------------------------------------------------- manual use


def main(argv: Sequence[str] | None = None) -> int:
    """Write one workload's landing files: ``--seed``, ``--events``, ``--runs``, ``--out``."""
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--events", type=int, default=400)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--out", required=True, help="landing root; run k goes to OUT/run<k>/{lines,kcat}")
    parser.add_argument("--case", choices=sorted(FORMAT_CASES), help="a format case instead of the Debezium feeds")
    args = parser.parse_args(argv)
    if args.case:
        events = adapt_events(args.case, generate(args.seed, args.events, case_tables(args.case)), args.seed)
        runs = deliver_case(args.case, events, args.seed, args.runs)
    else:
        runs = deliver(generate(args.seed, args.events), args.seed, args.runs)
    for k, files in enumerate(runs):
        write_files(Path(args.out) / f"run{k}", files)
    print(f"{sum(len(f) for f in runs)} files in {len(runs)} runs under {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
