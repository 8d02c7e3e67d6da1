"""Shared normalization after a format decoder: the pure, Spark-free part of the UDFs.

``decode_records`` takes a batch of records of one feed and returns one result per
record: ``status`` (``ok``, ``skipped`` or ``quarantined``), the ``reason`` and the
changelog rows. Here, for every format alike:

* the table is matched to ``cdc.yml`` case-insensitively (``udfs.config.match_table``)
  and gets its ``table_id``; column names are lower-cased;
* the key comes from the event, else from the configured key columns read from the
  images; a change without a key is quarantined with the reason;
* an update that changes the key becomes a delete of the old key and an insert of the
  new key (columns the after image does not provide are taken from the before image);
* ``event_id`` is a hash of what the change *is* (table, key, op, seq, images), not of
  where it was read, so the same event delivered twice has the same id.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from functools import lru_cache
from typing import TYPE_CHECKING, Any

try:  # a speed-up only: executors of a cluster need no more than pyspark's dependencies
    import orjson
except ImportError:  # pragma: no cover - the project's environment has it
    orjson = None

from udfs.config import match_table
from udfs.contract import Change, QuarantineError, Record, SkipRecord

if TYPE_CHECKING:
    import pyarrow as pa

CHANGE_FIELDS = (
    "row_index int, source_db string, source_schema string, source_table string, table_id string, op string, "
    "key map<string,string>, key_text string, before map<string,string>, after map<string,string>, "
    "before_cols array<string>, after_cols array<string>, col_types map<string,string>, seq string, "
    "commit_ts_us bigint, capture_ts_us bigint, tx_id string, event_id string, extras map<string,string>"
)


def split_top_level(ddl: str) -> list[str]:
    """The comma-separated parts of a DDL list, split only outside ``<...>`` and ``(...)``."""
    parts, depth, cur = [], 0, ""
    for ch in ddl:
        depth += ch in "<("
        depth -= ch in ">)"
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    return [*parts, cur]


def _spark_type(ddl: str) -> Any:
    """A pyspark data type of a DDL type of the kinds the UDF results use, parsed without
    a JVM (``_parse_datatype_string`` needs a running session)."""
    from pyspark.sql import types as spark_types

    s = ddl.strip()
    if s.startswith("struct<"):
        fields = []
        for part in split_top_level(s[7:-1]):
            name, _, t = part.strip().partition(":")
            fields.append(spark_types.StructField(name.strip(), _spark_type(t), True))
        return spark_types.StructType(fields)
    if s.startswith("array<"):
        return spark_types.ArrayType(_spark_type(s[6:-1]), True)
    if s.startswith("map<"):
        k, v = split_top_level(s[4:-1])
        return spark_types.MapType(_spark_type(k), _spark_type(v), True)
    simple = {
        "string": spark_types.StringType(),
        "int": spark_types.IntegerType(),
        "bigint": spark_types.LongType(),
        "boolean": spark_types.BooleanType(),
    }
    return simple[s]


def arrow_type_of_ddl(ddl: str) -> pa.DataType:
    """The Arrow type Spark exchanges the DDL type ``ddl`` as, with pyspark's own
    ``to_arrow_type``, without a JVM (string, int, bigint, boolean, struct, array, map)."""
    from pyspark.sql.pandas.types import to_arrow_type

    return to_arrow_type(_spark_type(ddl))


def _ddl_struct(fields: str) -> str:
    return ", ".join(p.strip().replace(" ", ":", 1) for p in split_top_level(fields))


#: Spark DDL of the ``cdc_decode`` result
#: A DDL record's content (``udfs.contract.Ddl``), for the ``ddl_log`` table.
DDL_FIELDS = "struct<sql:string, source_db:string, source_schema:string, source_table:string, commit_ts_us:bigint>"
DECODE_RESULT_DDL = (
    f"struct<status:string, reason:string, changes:array<struct<{_ddl_struct(CHANGE_FIELDS)}>>, ddl:{DDL_FIELDS}>"
)


@lru_cache(maxsize=64)
def decoder_from_options(options_json: str) -> tuple[Any, dict[str, Any]]:
    from udfs.formats import decoder_class

    opts = json.loads(options_json)
    cls = decoder_class(opts["format"])
    feed_options = dict(opts.get("options") or {})
    feed_options["tables"] = opts.get("tables") or {}
    return cls(feed_options), opts


# The key text's fast path produces the very text of the ``json.dumps`` call it stands
# for: ``orjson`` writes a ``str`` exactly as ``json.dumps(..., ensure_ascii=False)`` does
# (same escapes, non-ASCII kept; checked for every character up to U+007F) and sorts
# keys by code point, compact. Only exact ``str`` keys and ``str`` / ``None`` values go
# through it (no number: a float's text differs); when orjson raises (a lone
# surrogate...), the stdlib call runs instead.
_SORT = orjson.OPT_SORT_KEYS if orjson is not None else 0
_TEXT_TYPES = frozenset((str, type(None)))


def _texts_only(mapping: dict[Any, Any]) -> bool:
    """Every key a ``str`` and every value a ``str`` or ``None`` (exact types)."""
    return _TEXT_TYPES.issuperset(map(type, mapping.values())) and _TEXT_TYPES.issuperset(map(type, mapping))


def key_text(key: dict[str, str | None]) -> str:
    """Canonical text of a key: JSON, lower-case names, sorted, unicode kept."""
    if orjson is not None and type(key) is dict and _texts_only(key):
        try:
            return orjson.dumps(key, option=_SORT).decode()
        except (TypeError, orjson.JSONEncodeError):
            pass
    return json.dumps(key, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _lower(image: dict[str, str | None] | None) -> dict[str, str | None] | None:
    if image is None:
        return None
    out = {k.lower(): v for k, v in image.items()}
    if len(out) == len(image):
        return out
    out = {}
    for k, v in image.items():
        lk = k.lower()
        if lk in out:
            raise QuarantineError(f"column {k!r} appears twice (names are case-insensitive)")
        out[lk] = v
    return out


#: ``json.dumps(obj, sort_keys=True, ensure_ascii=False)`` is this encoder's ``encode``
#: (``json.dumps`` builds the same encoder for every call)
_EVENT_JSON = json.JSONEncoder(sort_keys=True, ensure_ascii=False)


def _event_id(row: dict[str, Any]) -> str:
    ident = [
        row["table_id"],
        row["key_text"],
        row["op"],
        row["seq"],
        row["before"],
        row["before_cols"],
        row["after"],
        row["after_cols"],
        row.get("_part"),
    ]
    return hashlib.sha256(_EVENT_JSON.encode(ident).encode()).hexdigest()[:32]


#: a file name holds 255 bytes; `table_id=` takes 9 of them
MAX_PARTITION_NAME_BYTES = 246
#: characters Spark writes as %XX in a partition directory name (ExternalCatalogUtils)
_ESCAPED = frozenset("\"#%'*/:=?\\\x7f{[]^") | frozenset(chr(c) for c in range(0x20))


@lru_cache(maxsize=4096)
def partition_name_bytes(table_id: str) -> int:
    """Bytes of ``table_id`` as Spark writes it into a partition directory name."""
    return sum(3 if ch in _ESCAPED else len(ch.encode("utf-8", "surrogatepass")) for ch in table_id)


def table_id_for(tables: dict[str, dict[str, Any]], db: str | None, schema: str | None, table: str) -> str:
    configured = match_table(tables, db, schema, table)
    if configured:
        return configured
    return ".".join(p.lower() for p in (db, schema, table) if p)


def normalize(
    change: Change, tables: dict[str, dict[str, Any]], table_ids: dict[Any, str] | None = None
) -> list[dict[str, Any]]:
    """Turn one decoder :class:`Change` into changelog rows (one, or two for a key change).

    ``table_ids`` caches the table id of each (db, schema, table) for one batch (the
    ``tables`` it was filled with must not change).
    """
    if change.op not in ("insert", "update", "delete", "snapshot", "truncate"):
        raise QuarantineError(f"decoder produced unknown op {change.op!r}")
    before, after = _lower(change.before), _lower(change.after)
    before_cols = [c.lower() for c in change.before_cols] if change.before_cols is not None else None
    after_cols = [c.lower() for c in change.after_cols] if change.after_cols is not None else None
    if before is not None and before_cols is None:
        before_cols = list(before)
    if after is not None and after_cols is None:
        after_cols = list(after)
    table = change.source_table
    if not table:
        raise QuarantineError("no table name")
    if table_ids is None:
        table_id = table_id_for(tables, change.source_db, change.source_schema, table)
    else:
        where = (change.source_db, change.source_schema, table)
        try:
            table_id = table_ids[where]
        except KeyError:
            table_id = table_ids[where] = table_id_for(tables, *where)
        except TypeError:  # a name that is not hashable: no cache
            table_id = table_id_for(tables, *where)
    if partition_name_bytes(table_id) > MAX_PARTITION_NAME_BYTES:
        raise QuarantineError(
            f"table name {table_id[:60]!r}... is too long: the changelog and the state are partitioned by table, and "
            f"its directory name would take {partition_name_bytes(table_id)} bytes (at most {MAX_PARTITION_NAME_BYTES})"
        )
    base = {
        "source_db": change.source_db,
        "source_schema": change.source_schema,
        "source_table": table,
        "table_id": table_id,
        "col_types": {k.lower(): v for k, v in change.col_types.items()},
        "seq": change.seq,
        "commit_ts_us": change.commit_ts_us,
        "capture_ts_us": change.capture_ts_us,
        "tx_id": change.tx_id,
        "extras": {k: (None if v is None else str(v)) for k, v in change.extras.items()},
    }
    if change.op == "truncate":
        row = dict(
            base, op="truncate", key=None, key_text=None, before=None, after=None, before_cols=None, after_cols=None
        )
        return [row]

    key_cols: list[str] | None = None
    event_key = {k.lower(): v for k, v in change.key.items()} if change.key else None
    if event_key is None:
        key_cols = [c.lower() for c in change.key_columns] if change.key_columns else None
        if not key_cols:
            key_cols = (tables.get(table_id) or {}).get("key") or None
        if not key_cols:
            raise QuarantineError(f"no key for table {table_id!r}: the event carries none; set tables.<name>.key")
    else:
        key_cols = sorted(event_key)

    def key_from(image: dict[str, str | None] | None, cols: list[str] | None) -> dict[str, str | None] | None:
        if image is None or not all(c in image and (cols is None or c in cols) for c in key_cols):
            return None
        return {c: image[c] for c in key_cols}

    old_key = key_from(before, before_cols)
    new_key = key_from(after, after_cols)
    if change.op == "delete":
        key = event_key or old_key or new_key
    elif change.op == "update":
        key = new_key or event_key or old_key
    else:
        key = new_key or event_key
    if key is None:
        missing = [c for c in key_cols if c not in ((after if change.op != "delete" else before) or {})]
        raise QuarantineError(f"missing key column(s) {', '.join(missing) or key_cols} for table {table_id!r}")

    common = dict(base, before=before, before_cols=before_cols)
    if change.op == "update" and old_key is not None and new_key is not None and old_key != new_key:
        # A key change moves the row: delete the old key, insert the new one.
        moved = dict(before or {})
        moved.update(after or {})
        moved_cols = sorted(set(before_cols or []) | set(after_cols or []))
        return [
            dict(common, op="delete", key=old_key, key_text=key_text(old_key), after=None, after_cols=None, _part=0),
            dict(
                common,
                op="insert",
                key=new_key,
                key_text=key_text(new_key),
                after=moved,
                after_cols=moved_cols,
                _part=1,
            ),
        ]
    return [dict(common, op=change.op, key=key, key_text=key_text(key), after=after, after_cols=after_cols)]


def decode_records(
    options_json: str,
    texts: list[str | None],
    kafka_keys: list[str | None] | None = None,
    source_files: list[str | None] | None = None,
    headers: list[list[str] | None] | None = None,
) -> list[dict[str, Any]]:
    """Decode a batch of records of one feed; one result dict per record (see module doc)."""
    results: list[dict[str, Any]] = []
    try:
        decoder, opts = decoder_from_options(options_json)
    except (ValueError, KeyError) as exc:
        reason = f"bad decoder options: {exc}"
        return [{"status": "quarantined", "reason": reason, "changes": None} for _ in texts]
    tables = opts.get("tables") or {}
    keys = kafka_keys if kafka_keys is not None else [None] * len(texts)
    files = source_files if source_files is not None else [None] * len(texts)
    heads = headers if headers is not None else [None] * len(texts)
    table_ids: dict[Any, str] = {}
    for text, kafka_key, source_file, header in zip(texts, keys, files, heads, strict=True):
        try:
            record = Record(text=text, kafka_key=kafka_key, source_file=source_file, header=header)
            changes = decoder.decode(record)
            rows: list[dict[str, Any]] = []
            for change in changes:
                rows.extend(normalize(change, tables, table_ids))
            for i, row in enumerate(rows):
                row["row_index"] = i
                row["event_id"] = _event_id(row)
                row.pop("_part", None)
            results.append({"status": "ok", "reason": None, "changes": rows})
        except SkipRecord as exc:
            skipped: dict[str, Any] = {"status": "skipped", "reason": str(exc) or "skipped", "changes": []}
            if exc.ddl is not None:
                skipped["ddl"] = dataclasses.asdict(exc.ddl)
            results.append(skipped)
        except QuarantineError as exc:
            results.append({"status": "quarantined", "reason": str(exc), "changes": None})
        except RecursionError:
            results.append({"status": "quarantined", "reason": "nested too deeply", "changes": None})
        except Exception as exc:  # noqa: BLE001 - one bad record never stops the run
            results.append(
                {"status": "quarantined", "reason": f"decoder error: {type(exc).__name__}: {exc}", "changes": None}
            )
    return results
