"""The changelog contract every decoder fills (see DESIGN.md, "The changelog contract").

A decoder turns one *record* (one envelope: a JSON line, one pretty-printed document,
one Kafka message) into zero or more :class:`Change` objects. The shared code in
``udfs.decode`` then resolves keys from the configuration, normalizes names, computes
``event_id`` and the order key, and turns the changes into Arrow rows.

Values travel as canonical **text** (``str``) or ``None`` for SQL NULL, never as
floats, so no value is ever rounded on the way to the marts.
"""

from __future__ import annotations

import json as _json
import re as _re
from dataclasses import dataclass, field
from typing import Any, ClassVar

#: Operation names of the changelog ``op`` column.
OPS = ("insert", "update", "delete", "snapshot", "truncate")


class QuarantineError(ValueError):
    """A record that cannot be decoded. The message is the quarantine reason."""


class SkipRecord(Exception):  # noqa: N818 - a control-flow signal, not an error
    """A record that is valid but produces no change (tombstone, heartbeat, DDL...).

    The message is the skip reason, counted per file in the audit. A DDL record passes
    ``ddl`` (a :class:`Ddl`): it is skipped as ``ddl`` and lands in the ``ddl_log`` table.
    """

    def __init__(self, reason: str, ddl: Ddl | None = None) -> None:
        super().__init__(reason)
        self.ddl = ddl


@dataclass
class Ddl:
    """A schema change the source reported (never applied as DML; see ``ddl_log``)."""

    sql: str | None
    source_db: str | None = None
    source_schema: str | None = None
    source_table: str | None = None
    commit_ts_us: int | None = None


@dataclass
class Record:
    """One landing record, as the framing split it out of a file."""

    text: str | None
    kafka_key: str | None = None
    kafka_topic: str | None = None
    kafka_partition: int | None = None
    kafka_offset: int | None = None
    kafka_timestamp_ms: int | None = None
    #: path of the landing file the record comes from
    source_file: str | None = None
    #: column names of the file's header row, for framings that have one (CSV)
    header: list[str] | None = None


@dataclass
class Change:
    """One row change, before the shared normalization.

    Attributes
    ----------
    op:
        One of :data:`OPS`.
    source_db, source_schema, source_table:
        The table as the event names it (case kept). ``source_table`` is required except
        for ``truncate`` of a whole database (never seen so far).
    key:
        Primary-key values when the event carries them (Kafka key, ``pkNames``,
        ``unique``); ``None`` means "take the key columns from the configuration".
    key_columns:
        Names of the key columns when the event names them but the values have to be
        read from the images (Canal ``pkNames``); ignored when ``key`` is given.
    before, after:
        Column -> canonical text (``None`` = SQL NULL). ``None`` for "no image".
    before_cols, after_cols:
        The columns the image *provides*; ``None`` means every column of the image.
        A column absent from the list keeps its previous value in the merge.
    col_types:
        Logical type per column where the envelope declares one.
    seq:
        Sortable text built from the format's own position (see :func:`seq_of`).
    commit_ts_us, capture_ts_us:
        Microseconds since the epoch, UTC.
    """

    op: str
    source_table: str | None
    source_db: str | None = None
    source_schema: str | None = None
    key: dict[str, str | None] | None = None
    key_columns: list[str] | None = None
    before: dict[str, str | None] | None = None
    after: dict[str, str | None] | None = None
    before_cols: list[str] | None = None
    after_cols: list[str] | None = None
    col_types: dict[str, str] = field(default_factory=dict)
    seq: str | None = None
    commit_ts_us: int | None = None
    capture_ts_us: int | None = None
    tx_id: str | None = None
    extras: dict[str, str | None] = field(default_factory=dict)

    def __post_init__(self) -> None:
        # The changelog holds these as bigint: a value beyond it is a malformed event,
        # not a reason to fail the whole batch when the row is converted to Arrow.
        for name in ("commit_ts_us", "capture_ts_us"):
            value = getattr(self, name)
            if value is not None and not _INT64_MIN <= value <= _INT64_MAX:
                raise QuarantineError(f"{name[:-3]} out of range: {value} microseconds")


class Decoder:
    """One decoder per format, behind one interface (as Flink's JSON formats have).

    Subclasses set :attr:`identifier` (the ``format:`` of ``cdc.yml``),
    :attr:`default_framing`, :attr:`framings` and :attr:`option_names`, and implement
    :meth:`decode`.
    """

    identifier: ClassVar[str] = ""
    default_framing: ClassVar[str] = "lines"
    framings: ClassVar[tuple[str, ...]] = ("lines",)
    #: Feed options this format understands (besides the common ones).
    option_names: ClassVar[tuple[str, ...]] = ()
    #: The record is binary (Avro): framings hand it over as base64 text, never as
    #: UTF-8 text (see ``udfs.framing``).
    binary_values: ClassVar[bool] = False
    #: ``"module:function"`` of this format's columnar decoder, when it has one (a batch
    #: decoded column-wise with the very result of :meth:`decode`; the records it cannot
    #: do exactly are decoded here). Its feed option ``columnar`` (true by default) is
    #: then in :attr:`option_names`.
    columnar_decoder: ClassVar[str | None] = None
    #: The columnar decoder also takes each record's landing file and header row
    #: (keywords ``source_files`` and ``headers``): formats whose decoder reads them.
    columnar_reads_files: ClassVar[bool] = False

    def __init__(self, options: dict[str, Any] | None = None) -> None:
        self.options = dict(options or {})
        #: ``cdc_decode`` decodes this feed's batches with :attr:`columnar_decoder`
        self.columnar = False
        if self.columnar_decoder is not None:
            columnar = self.options.get("columnar", True)
            if not isinstance(columnar, bool):
                raise ValueError(f"{self.identifier}: columnar must be true or false, not {columnar!r}")
            self.columnar = columnar

    @classmethod
    def carries_key(cls, framing: str, options: dict[str, Any] | None = None) -> bool:
        """Whether records of this format in ``framing`` name their primary key.

        When they do not, every table of the feed needs ``key:`` in ``cdc.yml``.
        """
        return framing in ("kcat", "kafka_parquet")

    def decode(self, record: Record) -> list[Change]:
        """Decode one record.

        Raises
        ------
        QuarantineError
            The record is malformed; the message is the reason.
        SkipRecord
            The record is valid and carries no row change; the message is the reason.
        """
        raise NotImplementedError


# --------------------------------------------------------------------------- helpers

SEQ_WIDTH = 20
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1
#: a JSON escape of a UTF-16 surrogate (``\\ud800``..``\\udfff``): only a pair is text
_SURROGATE_ESCAPE = _re.compile(r"\\u[dD][89a-fA-F]")


def seq_of(*parts: int | str | None) -> str | None:
    """Build a sortable ``seq`` text from integer parts (or ``None`` when unknown).

    Integers are zero-padded to 20 digits (enough for an unsigned 64-bit value) and
    joined with ``.``, so comparing the texts compares the tuples. Strings are kept as
    they are (callers pass only fixed-width strings).

    >>> seq_of(3, 154, 0) < seq_of(3, 1000, 0)
    True
    """
    if not parts or any(p is None for p in parts):
        return None
    out = []
    for p in parts:
        if isinstance(p, bool):  # bool is an int: never a position
            raise QuarantineError(f"position is a boolean: {p!r}")
        if isinstance(p, int):
            if p < 0:
                raise QuarantineError(f"negative position {p}")
            out.append(str(p).zfill(SEQ_WIDTH))
        else:
            out.append(str(p))
    return ".".join(out)


class JsonNumber(str):
    """A JSON number with a fraction or exponent, kept as its source text."""

    __slots__ = ()


def _dump_nested(value: Any) -> str:
    if isinstance(value, JsonNumber):
        return str(value)
    if isinstance(value, dict):
        items = sorted(value.items())
        return "{" + ",".join(f"{_json.dumps(k, ensure_ascii=False)}:{_dump_nested(v)}" for k, v in items) + "}"
    if isinstance(value, list):
        return "[" + ",".join(_dump_nested(v) for v in value) + "]"
    return _json.dumps(value, ensure_ascii=False)


#: the decoder ``json.loads(text, parse_float=JsonNumber, parse_constant=JsonNumber)``
#: builds for every call (its scanner keeps no state between calls)
_EXACT_JSON = _json.JSONDecoder(parse_float=JsonNumber, parse_constant=JsonNumber)

try:  # a speed-up only: without msgspec every document takes the stdlib parser
    import msgspec as _msgspec

    #: the same values as ``_EXACT_JSON`` from a faster parser: integers of any size
    #: are ints, a number with a fraction or exponent is its source text (``float_hook``
    #: gets the literal), strings and containers alike
    _FAST_JSON: Any = _msgspec.json.Decoder(float_hook=JsonNumber)
    _FAST_ERRORS: tuple[type[BaseException], ...] = (_msgspec.DecodeError, RecursionError)
except ImportError:  # pragma: no cover - the project's environment has it
    _FAST_JSON = None
    _FAST_ERRORS = ()


def _loads_text(text: str) -> Any:
    """``json.loads`` with the exact hooks for a ``str`` that does not start with a BOM.

    msgspec parses first; whatever it rejects (malformed JSON, ``NaN``, a lone surrogate
    escape, an integer past Python's 4,300-digit limit, nesting past the recursion
    limit, which both parsers count on the same Python recursion counter) goes to the
    stdlib parser, which gives the value it accepts or the error text the quarantine
    has always shown. One Python frame, as ``json.loads``, so a document nested to the
    recursion limit fails (or not) exactly as it would there.
    """
    if _FAST_JSON is not None:
        try:
            return _FAST_JSON.decode(text)
        except _FAST_ERRORS:
            pass
    return _EXACT_JSON.decode(text)


def loads_exact(text: str | bytes) -> Any:
    """Parse JSON keeping every number exact.

    Numbers with a fraction or exponent come back as their source text (``str``), so a
    38-digit decimal or a double's digits are never rounded; integers are Python ints
    (arbitrary precision). Raises ``QuarantineError`` on malformed JSON, and on a string
    holding a lone surrogate escape such as ``"\\ud800"`` (valid JSON syntax, but not
    Unicode text: no UTF-8 column can hold it).
    """
    try:
        if text.__class__ is str and not text.startswith("\ufeff"):
            value = _loads_text(text)
        else:  # bytes (encoding detection), a BOM (the error text), anything else
            value = _json.loads(text, parse_float=JsonNumber, parse_constant=JsonNumber)
    except (ValueError, RecursionError) as exc:  # JSONDecodeError is a ValueError
        raise QuarantineError(f"not JSON: {exc}") from None
    hint = text if isinstance(text, str) else text.decode("utf-8", "replace")
    if "\\u" in hint and _SURROGATE_ESCAPE.search(hint):
        # a lone surrogate escape parses, but no UTF-8 column can hold the result
        try:
            _json.dumps(value, ensure_ascii=False).encode("utf-8")
        except (UnicodeEncodeError, RecursionError):
            raise QuarantineError("not JSON text: a lone UTF-16 surrogate escape (\\ud800-\\udfff)") from None
    return value


def canonical_text(value: Any) -> str | None:
    """Canonical text of a JSON value parsed by :func:`loads_exact`.

    Integers keep every digit; fractional numbers are already their source text;
    booleans become ``true``/``false``; nested objects and arrays become compact JSON
    text with sorted keys.
    """
    if value.__class__ is str:  # the common case; str() of a str is the str itself
        return value
    if value is None:
        return None
    if isinstance(value, str):
        return str(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return repr(value)
    return _dump_nested(value)
