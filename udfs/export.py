"""``cdc export`` and ``cdc sql``: rows as JSON objects with full fidelity.

Decimals are JSON strings with every digit; integers are exact JSON numbers (Python
ints, whatever their size); floats keep Spark's shortest text (float32 ``3.14`` stays
``3.14``); timestamps are ISO-8601 UTC ending in ``Z`` with microseconds; dates are
``YYYY-MM-DD``; binary is base64; strings are exact (unicode, quotes, newlines).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from decimal import Context, Decimal
from pathlib import Path
from typing import Any

from udfs.config import Config, load_config
from udfs.identifiers import quote_identifier

#: decimal arithmetic wide enough for 38 digits (the default context has 28)
_EXACT = Context(prec=100)
TS_FORMAT = "yyyy-MM-dd'T'HH:mm:ss.SSSSSS'Z'"


def _render_expr(name: str, type_name: str, *, decimals_as_text: bool = False) -> str:
    """SQL expression that renders column ``name`` of Spark SQL type ``type_name`` (its
    ``simpleString``, as ``describe`` prints it) as a JSON-safe value."""
    q = quote_identifier(name)
    t = type_name.strip().lower()
    if t.startswith("decimal"):
        # rendered in Python (see _json_line): Spark's cast to string writes scientific
        # notation ("0E-10") when ANSI mode is off, as dbt-spark sets it; the text is
        # still exact, so through the Thrift server decimals travel as text
        e = f"cast({q} as string)" if decimals_as_text else q
    elif t in ("timestamp", "timestamp_ntz", "timestamp_ltz"):
        e = f'date_format({q}, "{TS_FORMAT}")'
    elif t == "date":
        e = f"cast({q} as string)"
    elif t == "binary":
        e = f"base64({q})"
    elif t in ("float", "double", "real"):
        # Spark's own shortest text; parsed back as a JSON number below.
        e = f"cast({q} as string)"
    elif t.startswith(("map<", "array<", "struct<")):
        e = f"to_json({q})"
    else:
        e = q
    return f"{e} as {q}"


def _json_ready_columns(df: Any) -> list[str]:
    """SQL expressions that render each column of ``df`` as a JSON-safe value."""
    return [_render_expr(f.name, f.dataType.simpleString()) for f in df.schema.fields]


def _decimal_quantum(type_name: str) -> Decimal | None:
    """The quantum of a decimal type's scale (``decimal(38,10)`` -> 1E-10), else None."""
    m = re.fullmatch(r"\s*decimal(?:\(\s*\d+\s*,\s*(\d+)\s*\))?\s*", type_name.lower())
    if m is None:
        return None
    return Decimal(1).scaleb(-int(m.group(1) or 0))


def _json_line(items: Any, floats: set[str], decimals: dict[str, Decimal]) -> str:
    """One JSON object from ``(name, rendered value)`` pairs (see the module docstring)."""
    parts = []
    for name, value in items:
        if name in floats and value is not None:
            if value in ("NaN", "Infinity", "-Infinity"):
                text = json.dumps(value)
            else:
                text = value
        elif name in decimals and value is not None:
            # plain notation with every digit of its scale
            exact = value if isinstance(value, Decimal) else Decimal(str(value))
            text = json.dumps(format(_EXACT.quantize(exact, decimals[name]), "f"))
        else:
            text = json.dumps(value, ensure_ascii=False)
        parts.append(f"{json.dumps(name, ensure_ascii=False)}: {text}")
    return "{" + ", ".join(parts) + "}"


def rows_as_json(spark: Any, df: Any) -> Iterator[str]:
    """Yield each row of ``df`` as one JSON line (see the module docstring)."""
    if not df.schema.fields:  # a statement with no result (`create schema`): it has run, nothing to print
        return
    types = [(f.name, f.dataType.simpleString()) for f in df.schema.fields]
    floats = {name for name, t in types if t in ("float", "double")}
    # name -> the quantum of its scale: Spark hands some decimals over in exponent form
    # (-1.00E-10 for -0.0000000001 in decimal(38,10)); quantized, they print every digit
    decimals = {name: q for name, t in types if (q := _decimal_quantum(t)) is not None}
    view = "_cdc_export_rows"
    df.createOrReplaceTempView(view)
    rendered = spark.sql(f"select {', '.join(_json_ready_columns(df))} from {view}")
    for row in rendered.toLocalIterator():
        yield _json_line(row.asDict().items(), floats, decimals)


def mart_view_name(table_id: str) -> str:
    """The mart view of a table id (the rule of the ``cdc_mart_view_name`` macro)."""
    return re.sub(r"[^A-Za-z0-9_]", "_", table_id.replace(".", "__"))


#: metadata columns of every mart view (exported with ``--with-metadata``)
METADATA_COLUMNS = ("_cdc_op", "_cdc_seq", "_cdc_commit_ts", "_cdc_event_id", "_cdc_key")


def mart_query(
    config: Config, table: str, with_metadata: bool = False, spark: Any = None, fields: dict[str, str] | None = None
) -> str:
    """SQL of a table's mart rows: its own columns (and, with ``with_metadata``, the
    ``_cdc_*`` columns and the ``<column>__text`` views of binary columns), by key.

    The mart's column types (to find the binary columns) come from ``spark``, or from
    ``fields`` (name -> Spark SQL type name) when the caller has no session of its own."""
    # a configured table, or one the events named without configuration
    q = mart_table(config, table)
    if with_metadata:
        return f"select * from {q} order by _cdc_key"
    derived = list(METADATA_COLUMNS)
    if spark is not None:
        fields = {f.name: f.dataType.simpleString() for f in spark.table(q).schema.fields}
    if fields is not None:
        derived += [
            f"{name}__text" for name, t in fields.items() if t.lower() == "binary" and f"{name}__text" in fields
        ]
    excluded = ", ".join(quote_identifier(c) for c in derived)
    return f"select * except ({excluded}) from {q} order by _cdc_key"


def mart_table(config: Config, table: str) -> str:
    """The quoted ``marts.view`` name of a table id."""
    view = mart_view_name(table.lower())
    return f"{quote_identifier(config.marts_schema)}.{quote_identifier(view)}"


def missing_relation_message(command: str, config: Config, table: str | None, rows: Any) -> str | None:
    """Why ``cdc export TABLE`` or ``cdc quarantine`` found no table, in words a user acts
    on, or None when the warehouse holds what they read and the error is another's.
    ``rows(sql)`` returns a statement's rows as tuples (in a session, or through a server).

    Spark says only ``TABLE_OR_VIEW_NOT_FOUND``, the same for a warehouse that has no run
    yet (no ``audit_files``: a run writes it first) and for a table name that is wrong."""

    def tables(schema: str) -> list[str]:
        if schema.lower() not in {str(r[0]).lower() for r in rows("show schemas")}:
            return []
        # (namespace, tableName, isTemporary): a session's temporary views are not the warehouse's
        return sorted(str(r[1]) for r in rows(f"show tables in {quote_identifier(schema)}") if not r[2])

    if "audit_files" not in tables(config.schema):
        return f"the warehouse {config.warehouse} has no run yet: `cdc run` makes its tables"
    if command != "export":
        return None
    views = tables(config.marts_schema)
    if mart_view_name(str(table).lower()) in views:
        return None
    if not views:
        return f"no table `{table}`: the warehouse's marts hold no table yet"
    return f"no table `{table}` in {config.marts_schema}; its tables are: {', '.join(views)}"


def export_lines(
    spark: Any, config_path: str | Path | Config, table: str, with_metadata: bool = False
) -> Iterator[str]:
    """``cdc export``: the current rows of ``table`` as JSON lines (module docstring)."""
    config = config_path if isinstance(config_path, Config) else load_config(config_path)
    return rows_as_json(spark, spark.sql(mart_query(config, table, with_metadata, spark)))


def export_rows(spark: Any, config_path: str | Path | Config, table: str, with_metadata: bool = False) -> list[dict]:
    """The current rows of ``table`` as dicts, parsed from the exported JSON lines."""
    return [json.loads(line) for line in export_lines(spark, config_path, table, with_metadata)]


# ------------------------------------------------------------------ through `cdc serve`
#
# While `cdc serve` holds the warehouse, `cdc sql` and `cdc export` run in the server's
# session through its Thrift server. The same rendering runs there: a query becomes a
# temporary view, its column types come from `describe`, and the rendered select (every
# column JSON-safe text or an exact integer, boolean or string) is fetched over Thrift and
# written by the same `_json_line` as the embedded path, so the lines are identical.


class ThriftQueryError(RuntimeError):
    """A statement failed in, or cannot be run exactly through, the Thrift server."""


#: Thrift column types (PyHive's type codes) whose values arrive exactly as the embedded
#: path renders them; a statement that is not a query may return only these.
_EXACT_THRIFT_TYPES = frozenset(
    f"{t}_TYPE" for t in ("STRING", "VARCHAR", "CHAR", "BOOLEAN", "TINYINT", "SMALLINT", "INT", "BIGINT", "NULL")
)

#: statements that would change the session `cdc serve` shares with every client
_SESSION_CHANGING = re.compile(r"(use|reset)\b|set\s+time\s+zone\b|set\b[^=]*=", re.IGNORECASE | re.DOTALL)
_LEADING_COMMENTS = re.compile(r"\A(?:\s+|--[^\n]*(?:\n|\Z)|/\*.*?\*/)*", re.DOTALL)


def thrift_error_message(exc: BaseException) -> str:
    """The first line of the server's error message (PyHive wraps it in the response)."""
    arg = exc.args[0] if exc.args else None
    status = getattr(arg, "status", None)
    message = getattr(status, "errorMessage", None) or str(exc) or type(exc).__name__
    # "Error running query: [CLASS] org.apache.spark.sql.AnalysisException: [CLASS] text"
    message = re.sub(r"^Error running query:\s*", "", message.strip())
    message = re.sub(r"^(?:\[[\w.]+\]\s*)?(?:[A-Za-z_$][\w$]*\.)+[A-Za-z_$][\w$]*(?:Exception|Error):\s*", "", message)
    return message.splitlines()[0] if message else type(exc).__name__


def _execute(cursor: Any, sql: str) -> None:
    try:
        cursor.execute(sql)
    except Exception as exc:  # noqa: BLE001 - PyHive's and Thrift's errors: one clear line
        raise ThriftQueryError(thrift_error_message(exc)) from exc


def _described(rows: list[tuple[Any, ...]]) -> dict[str, str]:
    """Column name -> type name from the rows of ``describe`` (up to its first section)."""
    fields: dict[str, str] = {}
    for row in rows:
        name = row[0] or ""
        if not name.strip() or name.startswith("#"):
            break
        fields[name] = str(row[1])
    return fields


def _fetch_in_batches(cursor: Any) -> Iterator[tuple[Any, ...]]:
    while True:
        try:
            rows = cursor.fetchmany(1000)
        except Exception as exc:  # noqa: BLE001 - see _execute
            raise ThriftQueryError(thrift_error_message(exc)) from exc
        if not rows:
            return
        yield from rows


def thrift_rows_as_json(cursor: Any, statement: str) -> Iterator[str]:
    """``rows_as_json`` of one statement run through a Thrift server (PyHive ``cursor``).

    A query is rendered in the server (see above); any other statement (``show``,
    ``describe``, ``insert``, ...) runs as it is, and its rows are written when every
    column has a type that Thrift carries exactly, else :class:`ThriftQueryError`.
    ``USE``, ``SET x=y`` and ``RESET`` are refused: they would change the session the
    server shares with every client.
    """
    head = _LEADING_COMMENTS.sub("", statement, count=1)
    if _SESSION_CHANGING.match(head):
        raise ThriftQueryError(
            "USE, SET and RESET would change the session that `cdc serve` shares with every client "
            "(dbt runs included); through the server qualify table names (marts.customers) and put "
            "settings in the spark: section of cdc.yml"
        )
    import uuid

    view = f"_cdc_rows_{uuid.uuid4().hex}"
    try:
        # a query (and only a query) can define a view; creating one runs nothing
        _execute(cursor, f"create temporary view `{view}` as\n{statement}")
        is_query = True
    except ThriftQueryError:
        is_query = False
    if not is_query:
        yield from _thrift_statement_rows(cursor, statement)
        return
    try:
        _execute(cursor, f"describe `{view}`")
        types = _described(list(_fetch_in_batches(cursor)))
        floats = {name for name, t in types.items() if t.lower() in ("float", "double")}
        decimals = {name: q for name, t in types.items() if (q := _decimal_quantum(t)) is not None}
        exprs = [_render_expr(name, t, decimals_as_text=True) for name, t in types.items()]
        _execute(cursor, f"select {', '.join(exprs)} from `{view}`")
        names = list(types)
        for row in _fetch_in_batches(cursor):
            yield _json_line(zip(names, row, strict=True), floats, decimals)
    finally:
        try:
            cursor.execute(f"drop view if exists `{view}`")
        except Exception:  # noqa: BLE001, S110 - a temporary view: it goes with the server
            pass


def _thrift_statement_rows(cursor: Any, statement: str) -> Iterator[str]:
    _execute(cursor, statement)
    description = cursor.description
    if not description:
        return
    names = [str(d[0]) for d in description]
    inexact = [f"`{d[0]}` ({str(d[1]).removesuffix('_TYPE').lower()})" for d in description]
    inexact = [text for d, text in zip(description, inexact, strict=True) if str(d[1]) not in _EXACT_THRIFT_TYPES]
    if inexact:
        raise ThriftQueryError(
            "this statement is not a query, and through the Thrift server only a query's columns keep every value "
            f"exactly; it returned {', '.join(inexact)}: select them in a query instead"
        )
    for row in _fetch_in_batches(cursor):
        yield _json_line(zip(names, row, strict=True), set(), {})


def thrift_export_lines(cursor: Any, config: Config, table: str, with_metadata: bool = False) -> Iterator[str]:
    """``export_lines`` through a Thrift server (PyHive ``cursor``): the same lines."""
    fields = None
    if not with_metadata:
        _execute(cursor, f"describe {mart_table(config, table)}")
        fields = _described(list(_fetch_in_batches(cursor)))
    return thrift_rows_as_json(cursor, mart_query(config, table, with_metadata, fields=fields))
