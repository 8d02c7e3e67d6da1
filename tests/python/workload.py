"""Random CDC workload, Debezium renderers and a plain-Python reference model.

This module is the oracle of the differential test (``test_differential.py``): it

1. **generates** a random but valid stream of source row changes (:func:`generate`):
   a snapshot, then inserts, updates (some partial, some changing the primary key),
   deletes and re-inserts of deleted keys over several tables, one with a composite
   key. Values exercise fidelity: bigints above 2**53, 32-digit decimals, unicode text
   with quotes, newlines, emoji and line separators, empty strings and NULLs;
2. **renders** each event as a Debezium JSON envelope (:func:`render_debezium`,
   :func:`render_key`), MySQL or PostgreSQL flavoured, with or without the Kafka
   Connect schema;
3. **delivers** the events as landing files the way a real deployment would
   (:func:`deliver`): split over pipeline runs, some late (in the next run), some
   duplicated, spread over several files with random names and shuffled lines, as
   JSON lines (``lines/``) or ``kcat -C -J`` lines with tombstones (``kcat/``);
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
landing files into ``DIR`` for manual runs.
"""

from __future__ import annotations

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
CONNECT_TYPES = {"bigint": "int64", "int": "int32", "string": "string", "decimal(38,6)": "string"}

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

    @property
    def table(self) -> str:
        """Table name ``schema.table``."""
        return self.spec.name

    @property
    def key(self) -> Key:
        """Primary key (text values) of the row the event changes."""
        image = self.before if self.op == "d" else self.after
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
    not); ``n_records`` counts every line (tombstones included); ``n_tombstones`` the
    null-valued Kafka messages.
    """

    path: str
    framing: str  # "lines" | "kcat"
    content: bytes
    events: tuple[SourceEvent, ...] = ()
    n_records: int = 0
    n_tombstones: int = 0


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


def _gen_value(rng: random.Random, col: Column) -> str | None:
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


def _json_value(col: Column, text: str | None) -> Any:
    if text is None or text == UNAVAILABLE:
        return text
    if col.type in ("bigint", "int"):
        return int(text)
    return text


def _json_row(spec: TableSpec, row: Row | None) -> dict[str, Any] | None:
    if row is None:
        return None
    return {c.name: _json_value(c, row[c.name]) for c in spec.columns if c.name in row}


def _struct_schema(fields: Iterable[tuple[str, str, bool]], name: str | None, field_name: str | None, optional: bool):
    out: dict[str, Any] = {
        "type": "struct",
        "fields": [{"type": t, "optional": opt, "field": f} for f, t, opt in fields],
        "optional": optional,
    }
    if name:
        out["name"] = name
    if field_name:
        out["field"] = field_name
    return out


def _value_schema(spec: TableSpec, connector: str) -> dict[str, Any]:
    row_fields = [(c.name, CONNECT_TYPES[c.type], c.nullable) for c in spec.columns]
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


def render_debezium(event: SourceEvent, with_schema: bool, connector: str | None = None) -> dict[str, Any]:
    """The Debezium JSON value of ``event`` (``connector``: ``mysql`` or ``postgresql``;
    default: the table's connector).

    Integers are JSON numbers (every digit kept), decimals JSON strings
    (``decimal.handling.mode=string``). ``with_schema`` wraps the payload as
    ``{"schema": <Kafka Connect struct schema>, "payload": ...}``.
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
        "before": _json_row(spec, event.before),
        "after": _json_row(spec, event.after),
        "source": source,
        "op": event.op,
        "ts_ms": event.capture_ts_ms,
    }
    if with_schema:
        return {"schema": _value_schema(spec, connector), "payload": payload}
    return payload


def render_key(event: SourceEvent, with_schema: bool) -> dict[str, Any]:
    """The Kafka message key Debezium writes for ``event`` (the primary key as a struct)."""
    spec = event.spec
    payload = {name: _json_value(spec.column(name), text) for name, text in zip(spec.key, event.key, strict=True)}
    if not with_schema:
        return payload
    fields = [(name, CONNECT_TYPES[spec.column(name).type], False) for name in spec.key]
    return {"schema": _struct_schema(fields, f"{spec.topic}.Key", None, False), "payload": payload}


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


def _dumps(obj: Any, style: _Style) -> str:
    seps = (",", ":") if style.compact else (", ", ": ")
    return json.dumps(obj, ensure_ascii=style.ensure_ascii, separators=seps)


def _render_lines(event: SourceEvent, style: _Style) -> list[str]:
    """The landing line(s) of one event in its framing (kcat: + optional tombstone)."""
    value = _dumps(render_debezium(event, style.with_schema), style)
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
        )
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
            buckets: list[list[tuple[int, bool]]] = [[] for _ in range(n_files)]
            home: dict[int, int] = {}
            for i, dup in sorted(mine, key=lambda t: t[1]):  # originals first
                b = rng.randrange(n_files)
                if dup and home.get(i) == b:
                    b = (b + 1 + rng.randrange(n_files - 1)) % n_files
                home.setdefault(i, b)
                buckets[b].append((i, dup))
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
                while True:
                    name = f"{framing}/{rng.getrandbits(48):012x}.json"
                    if name not in used_names:
                        used_names.add(name)
                        break
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
    args = parser.parse_args(argv)
    runs = deliver(generate(args.seed, args.events), args.seed, args.runs)
    for k, files in enumerate(runs):
        write_files(Path(args.out) / f"run{k}", files)
    print(f"{sum(len(f) for f in runs)} files in {len(runs)} runs under {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
