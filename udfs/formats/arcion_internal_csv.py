"""Arcion internal CDC format, CSV flavour (files written to S3 and other file targets).

One record is the raw text of one CSV row (RFC 4180: ``,`` separated, ``"`` quoted, ``""``
an escaped quote, newlines allowed inside quotes; one trailing line break is allowed). A
feed (a file) carries one table of X columns, and each row is either

* a **snapshot** row: X values -> op ``snapshot``, ``after`` = every column
  (``after_cols`` ``None``: the whole row). It has no cursor: ``seq`` is the lowest
  position ``seq_of(0, 0, 0)``, so it orders before every realtime change of its key
  (the order key puts a null ``seq`` after every position), and snapshot rows among
  themselves keep file order;
* a **realtime** row: 3X+3 fields, X triplets ``(NEW_VAL, OLD_VAL, EXISTS_VAL)`` in the
  table's column order, then the op (``I``/``U``/``D``), the ``cursor`` JSON and the
  ``operationcount`` JSON. EXISTS is 0 (in neither image), 1 (NEW provided),
  2 (OLD provided) or 3 (both); only provided columns enter ``after``/``before``, exactly
  as in the JSON flavour (:mod:`udfs.formats.arcion_internal_json`).

Any other field count is quarantined (``expected X or 3X+3 fields, got n``).

Values: an **unquoted** ``NULL`` is SQL NULL, a quoted ``"NULL"`` is the text ``NULL``
(the parser here tells quoted from unquoted fields, which :mod:`csv` cannot). Everything
else is kept verbatim, spaces included (the doc's snapshot row ``0, AFRICA ,AFRICA`` keeps
`` AFRICA ``): RFC 4180 makes spaces part of the field.

Column names
------------
1. ``record.header`` (the file's header row, when the writer had ``include-header``):

   * A *realtime* header names 3X+3 fields. It is recognized when its length is 3k+3 and
     either every triplet is ``<col>`` + NEW / OLD / EXISTS (as a suffix or prefix, with
     an optional ``_``/``.``/``-``/space separator and optional ``_VAL``/``_VALUE``, any
     case: ``r_name_NEW``, ``NEW_VAL_r_name``...) with the same ``<col>`` three times, or
     the last two names mention ``cursor`` and ``operationcount``. The X column names
     are the ``<col>`` parts; a triplet that does not follow the pattern is named by its
     first (NEW) field as written. The vendor document does not show a header, so this
     is a tolerant guess.
   * Any other header is a snapshot header: its names are the X columns.
   * A data record whose unquoted values equal the header is the header row itself and
     is skipped (``SkipRecord("header row")``).

2. Else the configuration: ``options["tables"]`` is ``{table_name_lower: {"key": [...],
   "columns": {col: type, ...}, "column_order": [col, ...]}}`` and the configured column
   order is the file's: ``column_order`` when present (``Config.decoder_options`` sends
   it because the options reach the UDF as JSON with sorted keys, which sorts the
   ``columns`` mapping), else the order of ``columns``.

The table name (``source_table``) is ``options["table"]`` (a CSV feed carries one table),
or else ``options["table_from_path"]``: a regular expression with a named group
``table``, searched (``re.search``) in ``record.source_file``. Database and schema are
not in the data (``None``). ``key`` is ``None``: keys come from the configuration.
The doc wraps long CSV lines with a trailing ``/``; that is a typesetting artifact and is
*not* undone here.

Feed option ``columnar`` (true by default): ``cdc_decode`` decodes a batch of this feed's
rows column-wise with :mod:`udfs.formats.arcion_internal_csv_columnar`, which gives the
very result of this decoder (the rows it cannot do exactly are decoded here);
``columnar: false`` decodes every row here.
"""

from __future__ import annotations

import functools
import re
from typing import Any, ClassVar

from udfs.contract import Change, Decoder, QuarantineError, Record, SkipRecord, seq_of
from udfs.formats.arcion_internal_json import OP_TYPES, images_from_exists, metadata, parse_exists

#: one field: (text, was it quoted)
Field = tuple[str, bool]

_SEP = r"[_ .\-]?"
_KIND = r"(?P<kind>NEW|OLD|EXISTS)(?:" + _SEP + r"VAL(?:UE)?)?"
_SUFFIX_RE = re.compile(r"^(?P<base>.+?)" + _SEP + _KIND + r"$", re.IGNORECASE)
_PREFIX_RE = re.compile(r"^" + _KIND + _SEP + r"(?P<base>.+)$", re.IGNORECASE)
_KINDS = ("NEW", "OLD", "EXISTS")


# a quoted value's text, ``""`` escaping a quote (the loop unrolled: no step per character)
_QUOTED = r'[^"]*(?:""[^"]*)*'
_FIELD = rf'(?:"{_QUOTED}"|[^,"\r\n]*)'
#: a well-formed row: fields, then at most one line end
_ROW_RE = re.compile(rf"(?P<body>{_FIELD}(?:,{_FIELD})*)(?:\r\n|\r|\n)?")
#: the fields of a well-formed row's body: (opening quote, quoted text, unquoted text)
_FIELDS_RE = re.compile(rf'(?:^|,)(?:(")({_QUOTED})"|([^,"\r\n]*))')


def split_csv_row(text: str) -> list[Field]:
    """Split one RFC 4180 row into ``(value, quoted)`` fields.

    A well-formed row is split by two regular expressions (one C pass each); any other
    goes to :func:`split_csv_row_exact`, which names what is wrong.

    Raises
    ------
    QuarantineError
        Unterminated quote, text after a closing quote, a bare quote in an unquoted
        field, or more than one row.
    """
    row = _ROW_RE.fullmatch(text)
    if row is None:
        return split_csv_row_exact(text)
    return [
        (quoted_text.replace('""', '"'), True) if quote else (plain, False)
        for quote, quoted_text, plain in _FIELDS_RE.findall(row.group("body"))
    ]


def split_csv_row_exact(text: str) -> list[Field]:
    """:func:`split_csv_row` character by character, with the reason a row is malformed."""
    fields: list[Field] = []
    n = len(text)
    i = 0
    while True:
        if i < n and text[i] == '"':
            i += 1
            parts: list[str] = []
            while True:
                j = text.find('"', i)
                if j < 0:
                    raise QuarantineError("unterminated quoted CSV field")
                parts.append(text[i:j])
                if j + 1 < n and text[j + 1] == '"':  # "" is an escaped quote
                    parts.append('"')
                    i = j + 2
                    continue
                i = j + 1
                break
            fields.append(("".join(parts), True))
        else:
            j = i
            while j < n and text[j] not in ",\r\n":
                j += 1
            value = text[i:j]
            if '"' in value:
                raise QuarantineError(f"quote inside an unquoted CSV field: {value[:40]!r}")
            fields.append((value, False))
            i = j
        if i >= n:
            return fields
        char = text[i]
        if char == ",":
            i += 1
            continue
        if char in "\r\n":
            if text[i:] not in ("\n", "\r\n", "\r"):
                raise QuarantineError("more than one CSV row in a record")
            return fields
        raise QuarantineError(f"unexpected {char!r} after a quoted CSV field")


def _split_header_name(name: str) -> tuple[str, str] | None:
    """``(kind, base)`` of a realtime header name (``r_name_NEW`` -> ``("NEW", "r_name")``)."""
    for regex in (_SUFFIX_RE, _PREFIX_RE):
        match = regex.match(name.strip())
        if match:
            return match.group("kind").upper(), match.group("base")
    return None


def columns_from_header(header: list[str]) -> tuple[list[str], bool]:
    """Table column names from a header row, and whether it is a realtime (3X+3) header."""
    names, realtime = _columns_from_header(tuple(header))
    return list(names), realtime


@functools.lru_cache(maxsize=256)  # every record of a file carries the same header row
def _columns_from_header(header: tuple[str, ...]) -> tuple[tuple[str, ...], bool]:
    h = len(header)
    if h < 6 or (h - 3) % 3:
        return header, False
    names: list[str] = []
    all_match = True
    for i in range(0, h - 3, 3):
        parsed = [p for p in (_split_header_name(name) for name in header[i : i + 3]) if p is not None]
        if (
            len(parsed) == 3
            and tuple(kind for kind, _ in parsed) == _KINDS
            and len({base.lower() for _, base in parsed}) == 1
        ):
            names.append(parsed[0][1])
        else:
            all_match = False
            names.append(header[i])
    tail = [name.replace("_", "").lower() for name in header[-2:]]
    if all_match or ("cursor" in tail[0] and "operationcount" in tail[1]):
        return tuple(names), True
    return header, False


def _text(field: Field) -> str | None:
    value, quoted = field
    return None if value == "NULL" and not quoted else value


class ArcionInternalCsvDecoder(Decoder):
    """Decoder of the Arcion internal CDC CSV format (see the module docstring)."""

    identifier: ClassVar[str] = "arcion_internal_csv"
    default_framing: ClassVar[str] = "csv"
    framings: ClassVar[tuple[str, ...]] = ("csv",)
    option_names: ClassVar[tuple[str, ...]] = ("tables", "table", "table_from_path", "columnar")
    columnar_decoder: ClassVar[str | None] = "udfs.formats.arcion_internal_csv_columnar:decode_arcion_csv_columnar"
    columnar_reads_files: ClassVar[bool] = True

    def _table(self, record: Record) -> str:
        table = self.options.get("table")
        if table:
            return str(table)
        pattern = self.options.get("table_from_path")
        if pattern:
            match = re.search(pattern, record.source_file or "")
            if match and match.groupdict().get("table"):
                return match.group("table")
            raise QuarantineError(f"table_from_path {pattern!r} does not match {record.source_file!r}")
        raise QuarantineError("no table name: set the feed option 'table' or 'table_from_path'")

    def _columns(self, table: str) -> list[str]:
        entry: Any = (self.options.get("tables") or {}).get(table.lower())
        # ``column_order`` (a list) survives JSON with sorted keys; ``columns`` (a
        # mapping) keeps its order only where the options were never re-sorted.
        columns = (entry.get("column_order") or entry.get("columns")) if isinstance(entry, dict) else None
        if not columns:
            raise QuarantineError(f"no header row and no configured columns for table {table!r}")
        return [str(col) for col in columns]

    def decode(self, record: Record) -> list[Change]:
        """Decode one CSV row into one :class:`~udfs.contract.Change`."""
        if record.text is None or not record.text.strip("\r\n"):
            raise QuarantineError("empty record")
        fields = split_csv_row(record.text)
        table = self._table(record)
        if record.header:
            if [value for value, _ in fields] == list(record.header):
                raise SkipRecord("header row")
            columns, _ = columns_from_header(record.header)
        else:
            columns = self._columns(table)
        x, n = len(columns), len(fields)

        if n == x:
            return [
                Change(
                    op="snapshot",
                    source_table=table,
                    after={col: _text(f) for col, f in zip(columns, fields, strict=True)},
                    seq=seq_of(0, 0, 0),  # no cursor: before every realtime change
                )
            ]
        if n != 3 * x + 3:
            raise QuarantineError(f"expected {x} or {3 * x + 3} fields, got {n}")

        op_type = fields[3 * x][0].strip()
        if op_type not in OP_TYPES:
            raise QuarantineError(f"unknown op {op_type!r}")
        new: dict[str, str | None] = {}
        old: dict[str, str | None] = {}
        exists: dict[str, int] = {}
        for i, col in enumerate(columns):
            new[col] = _text(fields[3 * i])
            old[col] = _text(fields[3 * i + 1])
            exists[col] = parse_exists(fields[3 * i + 2][0], col)
        after, after_cols, before, before_cols = images_from_exists(columns, new, old, exists)
        return [
            Change(
                op=OP_TYPES[op_type],
                source_table=table,
                before=before,
                after=after,
                before_cols=before_cols,
                after_cols=after_cols,
                **metadata(_text(fields[3 * x + 1]), _text(fields[3 * x + 2])),
            )
        ]
