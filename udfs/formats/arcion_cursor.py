"""Arcion ``cursor`` and ``operationcount`` decoding (pure functions).

Arcion's internal CDC format (JSON and CSV, files on S3) carries two pieces of metadata as
*JSON text inside a string*:

``cursor``
    Where the event was read. MySQL sources write ``log`` (binlog file name),
    ``position`` and ``logSeqNum`` (plus ``slaveServerId``); other sources write
    ``nodeID``, ``dscId``, ``mutId`` and ``partNum``. Every cursor has ``extractorId``,
    ``timestamp`` (query time, ms), ``extractionTimestamp`` (read time, ms) and ``v``.
``operationcount``
    Cumulative ``insertCount``, ``updateCount``, ``deleteCount`` and ``replaceCount``.

Key matching tolerates spelling drift: a key matches a known field when it is equal to the
field's name ignoring case and ``_`` (``node_id``, ``NODEID`` and ``nodeID`` all match).
Nothing more is forgiven: the vendor documentation has line-wrapping typos such as
``"extraction Timestamp"``, ``"partNu m"`` and ``"dscI"``; reading them as the real field
would be a guess, so they land in ``unknown`` (kept, visible, never silently used).
"""

from __future__ import annotations

import re
from typing import Any

import pandas as pd

from udfs.contract import QuarantineError, canonical_text, loads_exact, seq_of

#: Output field -> the cursor key it is read from (matched by :func:`norm_key`).
CURSOR_KEYS: dict[str, tuple[str, ...]] = {
    "extractor_id": ("extractorId",),
    "node_id": ("nodeID",),
    "timestamp_ms": ("timestamp",),
    "extraction_timestamp_ms": ("extractionTimestamp",),
    "log": ("log",),
    "position": ("position",),
    "log_seq_num": ("logSeqNum",),
    # MySQL writes ``slaveServerId``; accept the plain spelling too.
    "server_id": ("slaveServerId", "serverId"),
    "dsc_id": ("dscId",),
    "mut_id": ("mutId",),
    "part_num": ("partNum",),
    "version": ("v",),
}

_TEXT_FIELDS = frozenset({"node_id", "log"})

#: Columns of :func:`decode_cursor`'s result, in order (also the ``cursor_batch`` frame).
CURSOR_FIELDS: tuple[str, ...] = (
    "extractor_id",
    "node_id",
    "timestamp_us",
    "extraction_timestamp_us",
    "lag_ms",
    "log",
    "position",
    "log_seq_num",
    "server_id",
    "dsc_id",
    "mut_id",
    "part_num",
    "version",
    "unknown",
)

#: Output field -> the ``operationcount`` key it is read from.
_COUNT_KEYS: dict[str, str] = {
    "insert_count": "insertCount",
    "update_count": "updateCount",
    "delete_count": "deleteCount",
    "replace_count": "replaceCount",
}

#: Columns of :func:`decode_operationcount`'s result, in order.
OPERATIONCOUNT_FIELDS: tuple[str, ...] = tuple(_COUNT_KEYS)

_TRAILING_DIGITS = re.compile(r"(\d+)$")


def norm_key(key: str) -> str:
    """Lower-case a key and drop ``_``: the only spelling drift we forgive."""
    return key.replace("_", "").lower()


CURSOR_LOOKUP = {norm_key(k): field for field, keys in CURSOR_KEYS.items() for k in keys}
COUNT_LOOKUP = {norm_key(k): field for field, k in _COUNT_KEYS.items()}


def _as_int(value: Any, what: str) -> int | None:
    """An integer field: JSON int, or a string of digits (some writers quote numbers)."""
    if value is None:
        return None
    if isinstance(value, bool):
        raise QuarantineError(f"{what} is a boolean: {value!r}")
    if isinstance(value, int):
        return value
    if isinstance(value, str) and re.fullmatch(r"-?\d+", value.strip()):
        return int(value)
    raise QuarantineError(f"{what} is not an integer: {value!r}")


def _load_object(text: str, what: str) -> dict[str, Any]:
    if not isinstance(text, str):
        raise QuarantineError(f"{what} is not text: {type(text).__name__}")
    try:
        value = loads_exact(text)
    except QuarantineError as exc:
        raise QuarantineError(f"{what} {exc}") from None
    if not isinstance(value, dict):
        raise QuarantineError(f"{what} is not a JSON object: {text[:80]!r}")
    return value


def decode_cursor(text: str | None) -> dict[str, Any] | None:
    """Decode an Arcion ``cursor`` JSON text into a typed dict.

    Parameters
    ----------
    text:
        The cursor JSON text (the value of the ``cursor`` string), or ``None``.

    Returns
    -------
    dict or None
        ``None`` for ``None`` input, else a dict with the keys of :data:`CURSOR_FIELDS`:
        ``extractor_id``, ``node_id``, ``timestamp_us``, ``extraction_timestamp_us``,
        ``lag_ms`` (``extractionTimestamp - timestamp``), ``log``, ``position``,
        ``log_seq_num``, ``server_id`` (``slaveServerId``), ``dsc_id``, ``mut_id``,
        ``part_num``, ``version`` (``v``) and ``unknown`` (every other key -> canonical
        text). Absent fields are ``None``.

    Raises
    ------
    QuarantineError
        The text is not a JSON object, or a known integer field is not an integer.
    """
    if text is None:
        return None
    obj = _load_object(text, "cursor")
    raw: dict[str, Any] = {}
    unknown: dict[str, str | None] = {}
    for key, value in obj.items():
        field = CURSOR_LOOKUP.get(norm_key(key))
        if field is None or field in raw:
            # A typo or a second spelling of a field already read: keep it, do not use it.
            unknown[key] = canonical_text(value)
            continue
        raw[field] = value

    out: dict[str, Any] = {}
    for field in CURSOR_KEYS:
        value = raw.get(field)
        if field in _TEXT_FIELDS:
            out[field] = canonical_text(value)
        else:
            out[field] = _as_int(value, f"cursor {field}")
    ts_ms = out.pop("timestamp_ms")
    ext_ms = out.pop("extraction_timestamp_ms")
    return {
        "extractor_id": out["extractor_id"],
        "node_id": out["node_id"],
        "timestamp_us": None if ts_ms is None else ts_ms * 1000,
        "extraction_timestamp_us": None if ext_ms is None else ext_ms * 1000,
        "lag_ms": None if ts_ms is None or ext_ms is None else ext_ms - ts_ms,
        "log": out["log"],
        "position": out["position"],
        "log_seq_num": out["log_seq_num"],
        "server_id": out["server_id"],
        "dsc_id": out["dsc_id"],
        "mut_id": out["mut_id"],
        "part_num": out["part_num"],
        "version": out["version"],
        "unknown": unknown,
    }


def log_file_number(log: str | None) -> int | None:
    """The number at the end of a binlog file name (``log-bin.000010`` -> 10), or ``None``."""
    if log is None:
        return None
    match = _TRAILING_DIGITS.search(log)
    return int(match.group(1)) if match else None


def cursor_seq(cursor: dict[str, Any] | None) -> str | None:
    """Sortable ``seq`` text of a decoded cursor (see :func:`udfs.contract.seq_of`).

    Two layouts, chosen by what the cursor carries:

    * MySQL (``log`` with trailing digits and ``position``):
      ``seq_of(log file number, position, log_seq_num or 0)``. The file *number* is used,
      not the name, so ``log-bin.000010`` sorts after ``log-bin.000009`` whatever the
      padding; ``logSeqNum`` orders events sharing one position.
    * Otherwise ``seq_of(dsc_id, mut_id)`` (the non-MySQL cursors: ``dscId`` grows per
      extraction session, ``mutId`` within it).

    A feed comes from one source, so the two layouts never need comparing with each
    other. ``None`` when neither layout is complete (e.g. the doc's ``dscI`` typo).
    """
    if cursor is None:
        return None
    file_no = log_file_number(cursor.get("log"))
    if file_no is not None and cursor.get("position") is not None:
        return seq_of(file_no, cursor["position"], cursor.get("log_seq_num") or 0)
    if cursor.get("dsc_id") is not None and cursor.get("mut_id") is not None:
        return seq_of(cursor["dsc_id"], cursor["mut_id"])
    return None


def decode_operationcount(text: str | None) -> dict[str, int | None] | None:
    """Decode an ``operationcount`` JSON text.

    Returns
    -------
    dict or None
        ``None`` for ``None`` input, else ``insert_count``, ``update_count``,
        ``delete_count``, ``replace_count`` (from ``insertCount`` etc., matched ignoring
        case and ``_``) as ints, ``None`` where absent. Other keys are ignored.

    Raises
    ------
    QuarantineError
        Not a JSON object, or a count that is not an integer.
    """
    if text is None:
        return None
    obj = _load_object(text, "operationcount")
    out: dict[str, int | None] = dict.fromkeys(_COUNT_KEYS)
    for key, value in obj.items():
        field = COUNT_LOOKUP.get(norm_key(key))
        if field is not None and out[field] is None:
            out[field] = _as_int(value, f"operationcount {field}")
    return out


# ---------------------------------------------------------------- vectorized wrappers

_INT_CURSOR_FIELDS = tuple(f for f in CURSOR_FIELDS if f not in _TEXT_FIELDS and f != "unknown")


_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


def _fits_int64(value: int | None) -> bool:
    return value is None or _INT64_MIN <= value <= _INT64_MAX


def _batch(
    s: pd.Series, decode: Any, fields: tuple[str, ...], int_fields: tuple[str, ...]
) -> tuple[pd.DataFrame, pd.Series]:
    rows: list[dict[str, Any]] = []
    valid: list[bool] = []
    for value in s:
        decoded = None
        if isinstance(value, str):
            try:
                decoded = decode(value)
            except QuarantineError:
                decoded = None  # a null row: the caller quarantines on the raw text
            if decoded is not None and not all(_fits_int64(decoded[name]) for name in int_fields):
                decoded = None  # a value no bigint holds is malformed here, not a batch failure
        valid.append(decoded is not None)
        rows.append(decoded or dict.fromkeys(fields))
    # Column by column: a DataFrame built from the row dicts infers float64 for an int
    # column that also holds None, which rounds (or rejects) values above 2**53.
    columns = {
        name: pd.array([row[name] for row in rows], dtype="Int64" if name in int_fields else object) for name in fields
    }
    frame = pd.DataFrame(columns, index=s.index)
    return frame, pd.Series(valid, index=s.index, dtype=bool)


def cursor_batch(s: pd.Series) -> pd.DataFrame:
    """Vectorized :func:`decode_cursor`: one row per input, a null row for null/malformed.

    Integer columns use the nullable ``Int64`` dtype; ``unknown`` holds dicts (or ``None``).
    """
    return cursor_batch_masked(s)[0]


def cursor_batch_masked(s: pd.Series) -> tuple[pd.DataFrame, pd.Series]:
    """:func:`cursor_batch` and a boolean Series: ``True`` where the input decoded.

    ``False`` marks null and malformed inputs (their frame row is all null), so a caller
    can tell them from a valid cursor whose fields are all absent (``"{}"``).
    """
    return _batch(s, decode_cursor, CURSOR_FIELDS, _INT_CURSOR_FIELDS)


def operationcount_batch(s: pd.Series) -> pd.DataFrame:
    """Vectorized :func:`decode_operationcount`: one row per input, a null row for null/malformed."""
    return operationcount_batch_masked(s)[0]


def operationcount_batch_masked(s: pd.Series) -> tuple[pd.DataFrame, pd.Series]:
    """:func:`operationcount_batch` and a boolean Series: ``True`` where the input decoded.

    ``"{}"`` decodes (all counts null, ``True``); null and malformed inputs are ``False``.
    """
    return _batch(s, decode_operationcount, OPERATIONCOUNT_FIELDS, OPERATIONCOUNT_FIELDS)
