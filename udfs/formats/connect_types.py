"""Kafka Connect / Debezium field values to canonical text and a Spark SQL type.

Debezium JSON (and the formats built on it: Huawei CDL 2.0, Lindorm) carries each row
image as a Connect ``struct``; the envelope's ``schema`` names the logical type of every
field (``org.apache.kafka.connect.data.Decimal``, ``io.debezium.time.MicroTimestamp``...).
The JSON value alone is ambiguous (a decimal is base64 bytes, a date an int), so the
schema is needed to decode it.

Every conversion here is exact: decimals go through Python ints (never floats), times
through integer ``divmod``. The result is the canonical text of the value plus the Spark
SQL type the mart should cast it to.

Decisions
---------
* ``Decimal`` -> ``decimal(p,s)``, ``p`` = ``connect.decimal.precision`` when given, else
  38, and at least ``s + 1``. A negative scale is folded into the digits (scale 0). When
  ``p`` would exceed 38 (Spark's maximum) the type is ``string`` so no digit is lost.
* ``VariableScaleDecimal`` (PostgreSQL ``NUMERIC`` without precision) has a scale per
  row and up to 131072 digits: no fixed Spark decimal holds it, so its type is
  ``string`` (the exact digits text).
* Times of day (``Time``, ``MicroTime``, ``NanoTime``) are ``string``: Spark has no time
  type. Text is ``HH:MM:SS.ffffff`` (9 digits for ``NanoTime``); MySQL ``TIME`` may be
  negative or beyond 24 h, so hours may have more digits and a ``-`` sign.
* Timestamps are ISO-8601 UTC with 6 fractional digits (9 for ``NanoTimestamp``).
  ``ZonedTimestamp`` keeps all its fractional digits, padded to at least 6.
* ``bytes`` stays base64 text (validated), type ``binary``.
* Nested ``struct``/``array``/``map`` values become compact JSON text, type ``string``.
* A field without a schema keeps :func:`~udfs.contract.canonical_text` and no type.
"""

from __future__ import annotations

import base64
import binascii
import datetime as _dt
import decimal as _decimal
import re
from typing import Any

from udfs.contract import JsonNumber, QuarantineError, canonical_text

#: Debezium's placeholder for a value it could not read (PostgreSQL TOAST, Oracle LOB).
UNAVAILABLE = "__debezium_unavailable_value"
_UNAVAILABLE_BYTES = UNAVAILABLE.encode("utf-8")

# Logical type names
DECIMAL = "org.apache.kafka.connect.data.Decimal"
VARIABLE_SCALE_DECIMAL = "io.debezium.data.VariableScaleDecimal"
DATES = {"io.debezium.time.Date", "org.apache.kafka.connect.data.Date"}
#: time-of-day names -> (units per second, fractional digits written)
TIMES = {
    "io.debezium.time.Time": (1_000, 6),
    "org.apache.kafka.connect.data.Time": (1_000, 6),
    "io.debezium.time.MicroTime": (1_000_000, 6),
    "io.debezium.time.NanoTime": (1_000_000_000, 9),
}
#: epoch-timestamp names -> (units per second, fractional digits written)
TIMESTAMPS = {
    "io.debezium.time.Timestamp": (1_000, 6),
    "org.apache.kafka.connect.data.Timestamp": (1_000, 6),
    "io.debezium.time.MicroTimestamp": (1_000_000, 6),
    "io.debezium.time.NanoTimestamp": (1_000_000_000, 9),
}
ZONED_TIMESTAMP = "io.debezium.time.ZonedTimestamp"

_PRIMITIVE_TYPES = {
    "int8": "tinyint",
    "int16": "smallint",
    "int32": "int",
    "int64": "bigint",
    "float32": "float",
    "float64": "double",
    # Kafka's JsonConverter writes FLOAT32 / FLOAT64 as "float" / "double".
    "float": "float",
    "double": "double",
    "boolean": "boolean",
    "string": "string",
    "bytes": "binary",
    "struct": "string",
    "array": "string",
    "map": "string",
}
_INT_TYPES = {"int8", "int16", "int32", "int64"}
_FLOAT_TYPES = {"float32", "float64", "float", "double"}
# Jackson quotes non-finite doubles by default (QUOTE_NON_NUMERIC_NUMBERS)
_NON_FINITE = {"NaN", "Infinity", "-Infinity", "+Infinity"}

#: Spark's widest decimal
MAX_PRECISION = 38

_EPOCH = _dt.datetime(1970, 1, 1)
_EPOCH_DATE = _dt.date(1970, 1, 1)
_ZONED_RE = re.compile(
    r"^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?"
    r"(Z|[+-]\d{2}(?::?\d{2}(?::?\d{2})?)?)$"
)


# --------------------------------------------------------------------------- schemas


def field_schemas(struct_schema: dict[str, Any] | None) -> dict[str, dict[str, Any]]:
    """Map field name -> field schema for a Connect ``struct`` schema.

    Parameters
    ----------
    struct_schema:
        A Connect schema with a ``fields`` list (``None`` or ``{}`` gives ``{}``).

    Returns
    -------
    dict
        ``{field: schema}``; fields without a ``field`` name are ignored.
    """
    if not isinstance(struct_schema, dict):
        return {}
    fields = struct_schema.get("fields")
    if not isinstance(fields, list):
        return {}
    return {f["field"]: f for f in fields if isinstance(f, dict) and isinstance(f.get("field"), str)}


def _params(field_schema: dict[str, Any]) -> dict[str, Any]:
    params = field_schema.get("parameters")
    return params if isinstance(params, dict) else {}


def _int_param(field_schema: dict[str, Any], name: str, column: str | None) -> int | None:
    raw = _params(field_schema).get(name)
    if raw is None:
        return None
    try:
        return int(raw)
    except (TypeError, ValueError):
        raise QuarantineError(f"column {column}: bad decimal parameter {name}={raw!r}") from None


def _decimal_type(field_schema: dict[str, Any], column: str | None) -> str:
    scale = _int_param(field_schema, "scale", column)
    if scale is None:
        raise QuarantineError(f"column {column}: Decimal schema without a scale")
    given = _int_param(field_schema, "connect.decimal.precision", column)
    if scale < 0:
        # digits to the left of the point grow by -scale; Spark needs scale >= 0
        precision = MAX_PRECISION if given is None else given - scale
        scale = 0
    else:
        precision = MAX_PRECISION if given is None else given
    precision = max(precision, scale + 1)
    if precision > MAX_PRECISION:
        return "string"  # wider than any Spark decimal: keep the exact text
    return f"decimal({precision},{scale})"


def logical_type(field_schema: dict[str, Any] | None) -> str | None:
    """Spark SQL type of a field, from its Connect schema (``None`` when unknown).

    Parameters
    ----------
    field_schema:
        The field's Connect schema (``type``, optional ``name`` and ``parameters``).

    Returns
    -------
    str or None
        E.g. ``"decimal(10,2)"``, ``"timestamp"``, ``"date"``, ``"bigint"``.
    """
    if not isinstance(field_schema, dict):
        return None
    name = field_schema.get("name")
    if name is None:  # the common case: a plain Connect type
        return _PRIMITIVE_TYPES.get(field_schema.get("type"))
    if name == DECIMAL:
        return _decimal_type(field_schema, field_schema.get("field"))
    if name == VARIABLE_SCALE_DECIMAL:
        return "string"
    if name in DATES:
        return "date"
    if name in TIMES:
        return "string"
    if name in TIMESTAMPS or name == ZONED_TIMESTAMP:
        return "timestamp"
    return _PRIMITIVE_TYPES.get(field_schema.get("type"))


# --------------------------------------------------------------------------- values


def _b64(value: Any, column: str | None) -> bytes:
    if not isinstance(value, str):
        raise QuarantineError(f"column {column}: expected base64 text, got {type(value).__name__}")
    try:
        return base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        raise QuarantineError(f"column {column}: bad base64 {value[:40]!r}") from None


def _scaled_text(unscaled: int, scale: int) -> str:
    """Exact decimal text of ``unscaled * 10**-scale`` (integer arithmetic only)."""
    sign = "-" if unscaled < 0 else ""
    digits = str(abs(unscaled))
    if scale <= 0:
        return sign + digits + "0" * (-scale) if unscaled else "0"
    digits = digits.rjust(scale + 1, "0")
    return f"{sign}{digits[:-scale]}.{digits[-scale:]}"


def _numeric_text(value: Any, scale: int, column: str | None) -> str:
    """A decimal sent as a JSON number (``decimal.format=NUMERIC``), at the schema's scale."""
    try:
        number = _decimal.Decimal(str(value))
    except _decimal.InvalidOperation:
        raise QuarantineError(f"column {column}: bad decimal {value!r}") from None
    if not number.is_finite():
        raise QuarantineError(f"column {column}: bad decimal {value!r}")
    sign, digits, exponent = number.as_tuple()
    unscaled = int("".join(map(str, digits)) or "0")
    shift = exponent + max(scale, 0)  # exponent of the value relative to the target scale
    if shift >= 0:
        unscaled *= 10**shift
    else:
        unscaled, rest = divmod(unscaled, 10**-shift)
        if rest:
            raise QuarantineError(f"column {column}: {value!r} has more digits than scale {scale}")
    return _scaled_text(-unscaled if sign else unscaled, max(scale, 0))


def _decode_decimal(value: Any, field_schema: dict[str, Any], column: str | None) -> str:
    scale = _int_param(field_schema, "scale", column)
    if scale is None:
        raise QuarantineError(f"column {column}: Decimal schema without a scale")
    if isinstance(value, bool):
        raise QuarantineError(f"column {column}: bad decimal {value!r}")
    if isinstance(value, (int, JsonNumber)):
        return _numeric_text(value, scale, column)
    raw = _b64(value, column)
    return _scaled_text(int.from_bytes(raw, "big", signed=True), scale)


def _decode_variable_scale(value: Any, column: str | None) -> str:
    if not isinstance(value, dict) or "value" not in value or "scale" not in value:
        raise QuarantineError(f"column {column}: bad VariableScaleDecimal {canonical_text(value)!r}")
    scale = value["scale"]
    if isinstance(scale, bool) or not isinstance(scale, int):
        raise QuarantineError(f"column {column}: bad VariableScaleDecimal scale {scale!r}")
    raw = _b64(value["value"], column)
    return _scaled_text(int.from_bytes(raw, "big", signed=True), scale)


def _require_int(value: Any, column: str | None, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise QuarantineError(f"column {column}: {what} must be an integer, got {canonical_text(value)!r}")
    return value


def _fraction(units: int, per_second: int, width: int) -> str:
    """Fraction of a second ``units/per_second`` as exactly ``width`` digits."""
    # per_second and 10**width are powers of ten: scale up or down exactly
    scaled = units * 10**width // per_second
    return str(scaled).zfill(width)


def _decode_date(value: Any, column: str | None) -> str:
    days = _require_int(value, column, "a date")
    try:
        return (_EPOCH_DATE + _dt.timedelta(days=days)).isoformat()
    except OverflowError:
        raise QuarantineError(f"column {column}: date out of range ({days} days)") from None


def _decode_time(value: Any, per_second: int, width: int, column: str | None) -> str:
    units = _require_int(value, column, "a time")
    sign = "-" if units < 0 else ""
    seconds, rest = divmod(abs(units), per_second)
    minutes, second = divmod(seconds, 60)
    hour, minute = divmod(minutes, 60)
    return f"{sign}{hour:02d}:{minute:02d}:{second:02d}.{_fraction(rest, per_second, width)}"


def _decode_timestamp(value: Any, per_second: int, width: int, column: str | None) -> str:
    units = _require_int(value, column, "a timestamp")
    # floor division: the remainder is always >= 0, so pre-1970 values come out right
    seconds, rest = divmod(units, per_second)
    try:
        moment = _EPOCH + _dt.timedelta(seconds=seconds)
    except OverflowError:
        raise QuarantineError(f"column {column}: timestamp out of range ({units})") from None
    return f"{moment:%Y-%m-%dT%H:%M:%S}.{_fraction(rest, per_second, width)}Z"


def _decode_zoned(value: Any, column: str | None) -> str:
    match = _ZONED_RE.match(value) if isinstance(value, str) else None
    if match is None:
        raise QuarantineError(f"column {column}: bad ZonedTimestamp {canonical_text(value)!r}")
    year, month, day, hour, minute, second = (int(g) for g in match.groups()[:6])
    fraction, offset = match.group(7) or "", match.group(8)
    shift = _dt.timedelta(0)
    if offset != "Z":
        digits = offset[1:].replace(":", "")
        shift = _dt.timedelta(hours=int(digits[0:2]), minutes=int(digits[2:4] or 0), seconds=int(digits[4:6] or 0))
        if offset[0] == "-":
            shift = -shift
    try:
        moment = _dt.datetime(year, month, day, hour, minute, second) - shift
    except (ValueError, OverflowError):
        raise QuarantineError(f"column {column}: bad ZonedTimestamp {value!r}") from None
    return f"{moment:%Y-%m-%dT%H:%M:%S}.{fraction.ljust(6, '0')}Z"


def _decode_primitive(value: Any, kind: str | None, column: str | None) -> str | None:
    if kind == "string" and type(value) is str:  # canonical_text of a str is itself
        return value
    if kind in _INT_TYPES:
        return str(_require_int(value, column, kind))
    if kind in _FLOAT_TYPES:
        if isinstance(value, bool) or not (
            isinstance(value, (int, JsonNumber)) or (isinstance(value, str) and value in _NON_FINITE)
        ):
            raise QuarantineError(f"column {column}: {kind} must be a number, got {canonical_text(value)!r}")
        return str(value)
    if kind == "boolean":
        if not isinstance(value, bool):
            raise QuarantineError(f"column {column}: boolean expected, got {canonical_text(value)!r}")
        return canonical_text(value)
    if kind == "bytes":
        _b64(value, column)  # validate only: the mart keeps the base64 text
        return value
    return canonical_text(value)


def decode_value(
    value: Any, field_schema: dict[str, Any] | None, column: str | None = None
) -> tuple[str | None, str | None]:
    """Decode one field value by its Connect field schema.

    Parameters
    ----------
    value:
        The JSON value as parsed by :func:`~udfs.contract.loads_exact`.
    field_schema:
        The field's Connect schema, or ``None`` when the envelope has none.
    column:
        Column name for error messages; defaults to the schema's ``field``.

    Returns
    -------
    tuple
        ``(canonical text or None for NULL, Spark SQL type or None when unknown)``.

    Raises
    ------
    QuarantineError
        Bad base64, a malformed decimal, time or timestamp, or a value of the wrong JSON
        kind for its schema type. The reason names the column.
    """
    if not isinstance(field_schema, dict):  # no schema: no type, canonical text
        return (None if value is None else canonical_text(value)), None
    if field_schema.get("name") is None:  # a plain Connect type (as logical_type, then _decode_primitive)
        primitive = field_schema.get("type")
        kind = _PRIMITIVE_TYPES.get(primitive)
        if value is None:
            return None, kind
        return _decode_primitive(value, primitive, field_schema.get("field") if column is None else column), kind
    if column is None:
        column = field_schema.get("field")
    kind = logical_type(field_schema)
    if value is None:
        return None, kind
    if not isinstance(field_schema, dict):
        return canonical_text(value), None
    name = field_schema.get("name")
    if name == DECIMAL:
        return _decode_decimal(value, field_schema, column), kind
    if name == VARIABLE_SCALE_DECIMAL:
        return _decode_variable_scale(value, column), kind
    if name in DATES:
        return _decode_date(value, column), kind
    if name in TIMES:
        return _decode_time(value, *TIMES[name], column), kind
    if name in TIMESTAMPS:
        return _decode_timestamp(value, *TIMESTAMPS[name], column), kind
    if name == ZONED_TIMESTAMP:
        return _decode_zoned(value, column), kind
    return _decode_primitive(value, field_schema.get("type"), column), kind


def is_unavailable(value: Any, field_schema: dict[str, Any] | None) -> bool:
    """Whether ``value`` is Debezium's "value not available" placeholder.

    PostgreSQL does not log an unchanged TOASTed column, so Debezium sends
    ``__debezium_unavailable_value`` instead: the column was *not provided* and must
    keep its previous value. Binary and ``Decimal`` columns carry the placeholder as
    base64 of its UTF-8 bytes, strings as the text itself, arrays as a one-element list.

    Parameters
    ----------
    value:
        The JSON value.
    field_schema:
        The field's Connect schema or ``None`` (then both spellings are recognised).

    Returns
    -------
    bool
        ``True`` for the placeholder; never raises (bad base64 is not a placeholder).
    """
    if value is None or value.__class__ is int or value.__class__ is bool:  # never a placeholder
        return False
    if value == UNAVAILABLE:
        return True
    schema = field_schema if isinstance(field_schema, dict) else {}
    if isinstance(value, dict) and schema.get("name") == VARIABLE_SCALE_DECIMAL:
        value = value.get("value")
    if isinstance(value, list) and len(value) == 1 and schema.get("type") in ("array", None):
        return is_unavailable(value[0], schema.get("items") if schema else None)
    if not isinstance(value, str):
        return False
    binary = schema.get("type") == "bytes" or schema.get("name") in (DECIMAL, VARIABLE_SCALE_DECIMAL)
    if not binary and schema:
        return False
    try:
        return base64.b64decode(value, validate=True) == _UNAVAILABLE_BYTES
    except (binascii.Error, ValueError):
        return False


def decode_row(
    row: dict[str, Any] | None, struct_schema: dict[str, Any] | None, *, placeholders: bool = True
) -> tuple[dict[str, str | None] | None, dict[str, str], list[str]]:
    """Decode one row image (a Connect struct value) with its struct schema.

    Parameters
    ----------
    row:
        Column -> JSON value, or ``None`` for "no image".
    struct_schema:
        The image's Connect ``struct`` schema, or ``None``/``{}``.
    placeholders:
        Recognise Debezium's unavailable-value placeholder (:func:`is_unavailable`).
        ``False`` for sources that are not Debezium-based, where it is plain data.

    Returns
    -------
    tuple
        ``(values, col_types, unavailable)``: column -> canonical text (``None`` when
        ``row`` is ``None``), column -> Spark type for every schema field with a known
        type, and the columns holding the unavailable placeholder (left out of
        ``values``).

    Raises
    ------
    QuarantineError
        ``row`` is not an object, or a value cannot be decoded.
    """
    schemas = field_schemas(struct_schema)
    types: dict[str, str] = {}
    for name, schema in schemas.items():
        kind = logical_type(schema)
        if kind is not None:
            types[name] = kind
    if row is None:
        return None, types, []
    if not isinstance(row, dict):
        raise QuarantineError(f"row image is not an object: {canonical_text(row)[:80]!r}")
    values: dict[str, str | None] = {}
    unavailable: list[str] = []
    for name, raw in row.items():
        schema = schemas.get(name)
        if placeholders and is_unavailable(raw, schema):
            unavailable.append(name)
            continue
        values[name], _ = decode_value(raw, schema, name)
    return values, types, unavailable


def split_envelope(doc: Any) -> tuple[dict[str, Any] | None, Any]:
    """Split a JsonConverter message into ``(schema, payload)``.

    With ``schemas.enable=true`` the message is ``{"schema": ..., "payload": ...}``;
    without it, the payload alone. Both shapes may share one feed.

    Parameters
    ----------
    doc:
        The parsed message.

    Returns
    -------
    tuple
        ``(schema or None, payload)``; an empty schema ``{}`` becomes ``None``.
    """
    if isinstance(doc, dict) and "payload" in doc and set(doc) <= {"schema", "payload"}:
        schema = doc.get("schema")
        return (schema if isinstance(schema, dict) and schema else None), doc["payload"]
    return None, doc
