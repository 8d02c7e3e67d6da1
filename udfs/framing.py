"""Split a landing file into records, by framing (see DESIGN.md, "Landing framings").

Each function takes the file's bytes and returns :class:`RawRecord` items in file
order (``line_blocks``, ``length_prefixed_records`` and ``open_kafka_dump`` read a file
by parts instead, for ``cdc_decode_records``). A framing never decodes an envelope: it
only finds where records begin and end and, for Kafka dumps, reads the message metadata
(topic, partition, offset, key).

Decisions:

* ``lines``: records are separated by ``\\n``; a trailing ``\\r`` (CRLF files) and a
  UTF-8 BOM at the start of the file are removed; blank lines are not records.
* ``documents``: concatenated JSON values separated by whitespace (pretty-printed
  objects). When a document cannot be parsed (also: nested too deeply) the remainder
  of the file is one record with the reason, since its end cannot be found.
* ``kcat``: ``kcat -C -J`` lines; ``payload`` and ``key`` are text holding the Kafka
  value and key; a null payload is a tombstone (``text is None``). A line whose
  metadata does not fit the record columns (a ``topic`` that is not text, a
  ``partition`` beyond int, an ``offset``/``ts`` beyond bigint, text that is not valid
  Unicode such as a lone ``\\ud800`` escape) is one quarantined record.
* ``kafka_parquet``: a parquet file with the columns Spark's Kafka source produces
  (``key``, ``value`` binary, ``topic``, ``partition``, ``offset``, ``timestamp``).
* ``length_prefixed``: binary records one after another, each a 4-byte big-endian
  unsigned length followed by that many bytes (a Kafka value dump without metadata).
  A length that runs past the end of the file makes the rest one quarantined record
  (``truncated``).
* Formats whose records are binary (``Decoder.binary_values``: DTS Avro) get each
  value as **base64 text** from ``kafka_parquet`` and ``length_prefixed``; the
  quarantine then keeps it as base64.
* ``csv``: RFC-4180 rows (quoted fields may hold newlines and doubled quotes). With
  the feed option ``header: true`` the first row names the columns.

Invalid UTF-8 quarantines only the record that holds it (``lines``, ``documents``,
``csv``): the file is decoded with ``surrogateescape``, split, and each record's bytes
are checked on their own; the bad record keeps its raw bytes as base64.
"""

from __future__ import annotations

import base64
import codecs
import dataclasses
import io
import json
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, BinaryIO

if TYPE_CHECKING:
    import pyarrow as pa
    import pyarrow.parquet as pq

FRAMINGS = ("lines", "documents", "kcat", "kafka_parquet", "csv", "length_prefixed")

try:  # a speed-up only: without msgspec every kcat line takes the stdlib parser
    import msgspec as _msgspec

    _FAST_JSON: object = _msgspec.json.Decoder()
    _FAST_ERRORS: tuple[type[BaseException], ...] = (_msgspec.DecodeError, RecursionError)
except ImportError:  # pragma: no cover - the project's environment has it
    _FAST_JSON = None
    _FAST_ERRORS = ()


def _loads(text: str) -> object:
    """``json.loads(text)``: msgspec parses to the same values; what it rejects (also
    what the stdlib accepts, such as ``NaN``) goes to ``json.loads``, whose value or
    error text is the result."""
    if _FAST_JSON is not None:
        try:
            return _FAST_JSON.decode(text)  # type: ignore[attr-defined]
        except _FAST_ERRORS:
            pass
    return json.loads(text)


@dataclass
class RawRecord:
    """One record of a landing file, before decoding."""

    record_index: int
    text: str | None
    error: str | None = None
    raw_b64: str | None = None
    kafka_key: str | None = None
    kafka_topic: str | None = None
    kafka_partition: int | None = None
    kafka_offset: int | None = None
    kafka_timestamp_ms: int | None = None
    header: list[str] | None = None


def _utf8(raw: bytes, index: int) -> RawRecord:
    try:
        return RawRecord(index, raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        return RawRecord(
            index,
            None,
            error=f"invalid UTF-8 at byte {exc.start}",
            raw_b64=base64.b64encode(raw).decode(),
        )


def strip_bom(content: bytes) -> bytes:
    return content[3:] if content.startswith(b"\xef\xbb\xbf") else content


def _escaped(text: str, index: int, error: str | None = None, **fields: object) -> RawRecord:
    """A record cut out of text decoded with ``surrogateescape``: invalid UTF-8 in it
    makes it a quarantined record with its raw bytes as base64 (its neighbours stay)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raw = text.encode("utf-8", "surrogateescape")
        at = len(text[: exc.start].encode("utf-8", "surrogateescape"))
        reason = f"invalid UTF-8 at byte {at}" + (f"; {error}" if error else "")
        return RawRecord(index, None, error=reason, raw_b64=base64.b64encode(raw).decode(), **fields)  # type: ignore[arg-type]
    return RawRecord(index, text, error=error, **fields)  # type: ignore[arg-type]


def split_lines(content: bytes, at_file_start: bool = True) -> list[RawRecord]:
    """The ``lines`` records of ``content``; the BOM is dropped only ``at_file_start``
    (a later block of the file, see :func:`line_blocks`, keeps a line's leading BOM
    bytes, as the whole file's split does)."""
    out = []
    index = 0
    for line in (strip_bom(content) if at_file_start else content).split(b"\n"):
        if line.endswith(b"\r"):
            line = line[:-1]
        if not line.strip():
            continue
        out.append(_utf8(line, index))
        index += 1
    return out


def line_blocks(stream: BinaryIO, block_bytes: int, max_line_bytes: int) -> Iterator[bytes | int]:
    """A ``lines`` file read ``block_bytes`` at a time, as blocks of whole lines.

    Each block ends just after a ``\\n`` (the last: at the end of the file), so
    :func:`split_lines` of the blocks one after the other, numbering on, gives the
    records of the whole file (only the first block starts the file: its BOM). A line
    that runs over a block boundary is a block of its own, so a block holds at most
    ``max(block_bytes, its longest line + 1)`` bytes. A line longer than
    ``max_line_bytes`` is not held: its length (without the ``\\n``) comes instead of
    a block, an ``int``, and reading goes on after it.
    """
    return _blocks(stream, block_bytes, max_line_bytes, lambda data: (data.find(b"\n"), data.rfind(b"\n")))


def csv_row_blocks(stream: BinaryIO, block_bytes: int, max_row_bytes: int) -> Iterator[bytes | int]:
    """A ``csv`` file read ``block_bytes`` at a time, as blocks of whole rows: as
    :func:`line_blocks`, but a ``\\n`` inside a quoted value does not end a row (the
    rows :func:`split_csv` cuts). A row longer than ``max_row_bytes`` comes as its length."""
    return _blocks(stream, block_bytes, max_row_bytes, _CsvRowEnds())


class _CsvRowEnds:
    """The first and last ``\\n`` of each part of a CSV file (given in file order) that
    end a row: those after an even number of quotes since the file's start, as
    :func:`_csv_rows` counts them (a doubled quote counts twice)."""

    def __init__(self) -> None:
        self.quoted = False  # inside quotes where the parts read so far end

    def __call__(self, data: bytes) -> tuple[int, int]:
        import numpy as np

        if not self.quoted and data.find(b'"') < 0:  # no quote at all: every newline ends a row
            return data.find(b"\n"), data.rfind(b"\n")
        raw = np.frombuffer(data, np.uint8)
        quotes = np.flatnonzero(raw == ord('"'))
        newlines = np.flatnonzero(raw == ord("\n"))
        outside = newlines[(np.searchsorted(quotes, newlines) + self.quoted) % 2 == 0]
        self.quoted = bool((len(quotes) + self.quoted) % 2)
        return (int(outside[0]), int(outside[-1])) if len(outside) else (-1, -1)


def _blocks(
    stream: BinaryIO, block_bytes: int, max_record_bytes: int, ends: Callable[[bytes], tuple[int, int]]
) -> Iterator[bytes | int]:
    """``stream`` read ``block_bytes`` at a time, as blocks of whole records, each
    ending just after a ``\\n`` that ``ends`` finds: ``ends(data)`` gives the first and
    last such positions in ``data`` (-1: none), every part of the file passed to it
    once, in order. A record longer than ``max_record_bytes`` comes as its length."""
    if block_bytes > max_record_bytes:
        raise ValueError(f"block_bytes {block_bytes} is more than max_line_bytes {max_record_bytes}")
    pending: list[bytes] = []  # the start of a record that runs over a block boundary
    pending_bytes = 0
    skipped = -1  # bytes of a record longer than max_record_bytes read so far (-1: none)
    while data := stream.read(block_bytes):
        first, last = ends(data)
        start = 0
        if skipped >= 0 or pending:
            if first < 0:
                if skipped >= 0:
                    skipped += len(data)
                else:
                    pending.append(data)
                    pending_bytes += len(data)
                    if pending_bytes > max_record_bytes:
                        skipped, pending, pending_bytes = pending_bytes, [], 0
                continue
            if skipped >= 0:
                yield skipped + first
            elif pending_bytes + first > max_record_bytes:
                yield pending_bytes + first
            else:
                yield b"".join([*pending, data[: first + 1]])
            skipped, pending, pending_bytes = -1, [], 0
            start = first + 1
        if last >= start:
            yield data[start : last + 1]
            start = last + 1
        if start < len(data):  # (shorter than a block, so than max_record_bytes)
            pending, pending_bytes = [data[start:]], len(data) - start
    if skipped >= 0:
        yield skipped
    elif pending:
        yield b"".join(pending)


def split_documents(content: bytes) -> list[RawRecord]:
    """The records of a ``documents`` file (:func:`document_records` of its bytes, read at once)."""
    return list(document_records(io.BytesIO(content), max(len(content), 1)))


def document_records(stream: BinaryIO, block_bytes: int, max_text_bytes: int | None = None) -> Iterator[RawRecord]:
    """The JSON values of a ``documents`` file, read from ``stream`` ``block_bytes`` at a
    time, as records numbered from 0 (text decoded with ``surrogateescape``, a BOM
    dropped at the start of the file).

    Each value is cut where ``json.JSONDecoder.raw_decode`` ends it; a value that runs
    past what was read (or may: a number such as ``-4.`` that only digits, signs, points
    and exponents follow up to there) is cut again once more is read (as much again as is
    held, so a long value costs a few parses, not one per block). A value that cannot be
    parsed makes the rest of the file one record with the reason, whose position (line,
    column, char) counts from the start of the file; the error is final once it is not
    within the last characters read nor in a string still open (:func:`_maybe_cut_short`),
    so the rest is then read a block at a time, not held in ever larger reads.

    ``max_text_bytes``: when no value ends within that many bytes of UTF-8, they are one
    record without text that says so, and the rest of the file is not read (where the
    next value starts cannot be known without holding them); the rest of a file that
    cannot be parsed, past that, keeps its reason without its text.
    """
    decoder = json.JSONDecoder()
    utf8 = codecs.getincrementaldecoder("utf-8")("surrogateescape")
    text, eof, at_file_start, index = "", False, True, 0
    # where ``text`` starts in the file: chars, newlines, chars since the last newline
    chars_before, lines_before, column_before = 0, 0, 0
    want = block_bytes
    while not eof:
        data = stream.read(want)
        eof = len(data) < want  # (a file's read returns less only at its end)
        text += utf8.decode(data, final=eof)
        if at_file_start and text:
            text, at_file_start = text.removeprefix("\ufeff"), False
        pos, n = 0, len(text)
        while True:
            while pos < n and text[pos].isspace():
                pos += 1
            if pos >= n:
                break
            try:
                _, end = decoder.raw_decode(text, pos)
            except (ValueError, RecursionError) as exc:
                if not eof and _maybe_cut_short(exc, n):
                    break  # perhaps only cut short by the end of what was read: read on
                reason = "nested too deeply" if isinstance(exc, RecursionError) else str(exc)
                if isinstance(exc, json.JSONDecodeError):  # its position in the file, not in ``text``
                    line_start = text.rfind("\n", 0, exc.pos) + 1
                    column = exc.colno if line_start else column_before + exc.pos + 1
                    reason = (
                        f"{exc.msg}: line {lines_before + exc.lineno} column {column} (char {chars_before + exc.pos})"
                    )
                rest, rest_bytes = _rest_of_file(text[pos:], stream, utf8, block_bytes, max_text_bytes, eof)
                if rest is None:
                    reason += (
                        f"; the rest of the file holds {rest_bytes:,} bytes, more than the "
                        f"{max_text_bytes:,} one record may hold (Arrow's 32-bit offsets)"
                    )
                    yield RawRecord(index, None, error=f"not JSON: {reason}")
                else:
                    yield _escaped(rest, index, error=f"not JSON: {reason}")
                return
            if not eof and not _NOT_IN_A_NUMBER.search(text, end):
                break  # only digits, signs, points and exponents up to the block's end: "-4." may go on "5e-3"
            yield _escaped(text[pos:end], index)
            index += 1
            pos = end
        if (
            max_text_bytes is not None
            and not eof
            and 4 * (len(text) - pos) > max_text_bytes  # (a character takes 1 to 4 bytes)
            and (size := _text_bytes(text[pos:])) > max_text_bytes
        ):
            reason = (
                f"document too large: no value ends within {size:,} bytes from char {chars_before + pos:,}, more "
                f"than the {max_text_bytes:,} one record may hold (Arrow's 32-bit offsets); the rest of the file "
                "is not read"
            )
            yield RawRecord(index, None, error=reason)
            return
        newline = text.rfind("\n", 0, pos)
        chars_before += pos
        lines_before += text.count("\n", 0, pos)
        column_before = pos - newline - 1 if newline >= 0 else column_before + pos
        text = text[pos:]
        want = max(block_bytes, len(text))  # a long value: as much again as is held


#: a character that cannot go on a JSON number (so a value followed by one is whole)
_NOT_IN_A_NUMBER = re.compile(r"[^0-9+\-.eE]")
#: how close to the end of the text read an error of ``raw_decode`` may be when the value
#: is only cut short there: the longest token cut short is ``-Infinity`` (8 characters
#: held) and ``\uXXXX`` (6); whitespace before the end is skipped before the error
_CUT_SHORT_CHARS = 16


def _maybe_cut_short(exc: ValueError | RecursionError, n: int) -> bool:
    """Whether a value ``raw_decode`` could not parse out of the ``n`` characters read
    so far may parse once more is read: a string still open, or an error within the last
    few characters. Any other error is the file's own, and the rest of the file is read
    only to be the record's text (not held in parts until the end of the file, nor
    misreported as a value too large). Nested too deeply is final: more text nests no less."""
    if not isinstance(exc, json.JSONDecodeError):
        return False
    return exc.msg.startswith("Unterminated string") or exc.pos >= n - _CUT_SHORT_CHARS


def _rest_of_file(
    held: str,
    stream: BinaryIO,
    utf8: codecs.IncrementalDecoder,
    block_bytes: int,
    max_text_bytes: int | None,
    eof: bool,
) -> tuple[str | None, int]:
    """``held`` and the rest of ``stream`` (decoded on by ``utf8``), and its size in bytes:
    the text of the record a file that cannot be parsed ends with, or None past
    ``max_text_bytes`` (then only counted, ``block_bytes`` at a time)."""
    size, parts = _text_bytes(held), [held]
    while not eof:
        data = stream.read(block_bytes)
        eof = len(data) < block_bytes
        piece = utf8.decode(data, final=eof)
        size += _text_bytes(piece)
        parts.append(piece)
        if max_text_bytes is not None and size > max_text_bytes:
            parts.clear()  # past the limit: only counted from here on
    return (None, size) if max_text_bytes is not None and size > max_text_bytes else ("".join(parts), size)


def _text_bytes(text: str) -> int:
    """UTF-8 bytes of ``text`` (decoded with ``surrogateescape``)."""
    return len(text) if text.isascii() else len(text.encode("utf-8", "surrogateescape"))


def split_kcat(content: bytes, at_file_start: bool = True) -> list[RawRecord]:
    """The ``kcat`` records of ``content`` (``at_file_start``: as ``split_lines``')."""
    out = []
    for rec in split_lines(content, at_file_start):
        if rec.text is None:
            out.append(rec)
            continue
        try:
            msg = _loads(rec.text)
            if not isinstance(msg, dict) or "payload" not in msg:
                raise ValueError("no payload field")
            payload, key, topic = msg.get("payload"), msg.get("key"), msg.get("topic")
            if payload is not None and not isinstance(payload, str):
                raise ValueError("payload is not text")
            if topic is not None and not isinstance(topic, str):
                raise ValueError("topic is not text")
            key = key if isinstance(key, str) or key is None else json.dumps(key)
            for text in (payload, key, topic):
                if text is not None:
                    text.encode("utf-8")  # a lone surrogate escape is not Unicode text
            out.append(
                RawRecord(
                    rec.record_index,
                    payload,
                    kafka_key=key,
                    kafka_topic=topic,
                    kafka_partition=_int_or_none(msg.get("partition"), 31),
                    kafka_offset=_int_or_none(msg.get("offset")),
                    kafka_timestamp_ms=_int_or_none(msg.get("ts")),
                )
            )
        except RecursionError:
            raw = base64.b64encode(rec.text.encode()).decode()
            out.append(RawRecord(rec.record_index, None, error="not a kcat -J line: nested too deeply", raw_b64=raw))
        except (ValueError, TypeError) as exc:
            raw = base64.b64encode(rec.text.encode()).decode()
            out.append(RawRecord(rec.record_index, None, error=f"not a kcat -J line: {exc}", raw_b64=raw))
    return out


def _int_or_none(value: object, bits: int = 63) -> int | None:
    """An integer that fits a signed column of ``bits + 1`` bits (int: 31, bigint: 63)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"not an integer: {value!r}")
    if not -(2**bits) <= value < 2**bits:
        raise ValueError(f"integer out of range: {value}")
    return value


def _binary(raw: bytes, index: int) -> RawRecord:
    text = _b64(raw)
    return RawRecord(index, text, raw_b64=text)


def split_length_prefixed(content: bytes) -> list[RawRecord]:
    """The records of a ``length_prefixed`` file (:func:`length_prefixed_records` of its bytes)."""
    return list(length_prefixed_records(io.BytesIO(content), len(content)))


def _base64_bytes(n: int) -> int:
    """The length of ``n`` bytes as base64."""
    return 4 * ((n + 2) // 3)


def length_prefixed_records(stream: BinaryIO, size: int, max_text_bytes: int | None = None) -> Iterator[RawRecord]:
    """The records of a ``length_prefixed`` file of ``size`` bytes, read from ``stream``
    one at a time (each value as base64 text), numbered from 0. A length that runs past
    the end of the file makes the rest one record (``truncated: ...``, the rest's bytes
    as ``raw_b64``), the last.

    ``max_text_bytes``: a record whose base64 would hold more is not read (``stream`` is
    skipped past it, so it must seek): a complete one is a record without text that
    says ``record too large: ...``; a truncated rest keeps its error, without
    ``raw_b64``. None: no limit (the caller checks what it holds).
    """
    index, pos = 0, 0
    while pos < size:
        header = stream.read(min(4, size - pos))
        left = size - pos - len(header)
        if len(header) < 4:
            yield RawRecord(index, None, error="truncated: length prefix cut short", raw_b64=_b64(header))
            return
        length = int.from_bytes(header, "big")
        truncated = length > left
        kept = 4 + left if truncated else length
        if max_text_bytes is not None and _base64_bytes(kept) > max_text_bytes:
            if truncated:
                yield RawRecord(index, None, error=f"truncated: {length} bytes announced, {left} left")
                return
            stream.seek(length, io.SEEK_CUR)
            reason = (
                f"record too large: {length:,} bytes ({_base64_bytes(length):,} as base64), more than the "
                f"{max_text_bytes:,} one record may hold (Arrow's 32-bit offsets)"
            )
            yield RawRecord(index, None, error=reason)
        elif truncated:
            rest = header + stream.read(left)
            yield RawRecord(index, None, error=f"truncated: {length} bytes announced, {left} left", raw_b64=_b64(rest))
            return
        else:
            value = stream.read(length)
            if len(value) < length:  # the file shrank while read: not a truncated record
                raise OSError(f"the file ended {length - len(value)} bytes before its size, {size}: it changed")
            yield _binary(value, index)
        pos += 4 + length
        index += 1


def _b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode()


#: the columns of a Kafka dump (Spark's Kafka source) a record keeps, and what each may be
_KAFKA_TEXT = ("key", "topic")
_KAFKA_INTEGERS = {"partition": 31, "offset": 63}
#: pyarrow's threads for a parquet read: none. With them, a process that exits soon after
#: a read aborts in about half the runs (pyarrow 22, "terminate called without an active
#: exception", exit code 134; apache/arrow#34314), after a damaged file up to 16 in 20,
#: read by ``pq.read_table`` or ``ParquetFile.read``; without them, none in 40
PARQUET_THREADS = False
#: every column of a dump a record is made of (a dump's other columns, such as the Kafka
#: source's ``headers`` and ``timestampType``, are not read)
_KAFKA_COLUMNS = ("key", "value", "topic", *_KAFKA_INTEGERS, "timestamp")
#: milliseconds per unit of a timestamp column (a negative factor: divide, rounding down)
_MS_PER_UNIT = {"s": 1000, "ms": 1, "us": -1000, "ns": -1_000_000}


class KafkaParquetError(ValueError):
    """A ``kafka_parquet`` file that is not a Kafka dump: its one quarantined record's reason."""


def _kafka_column(table: pa.Table, name: str) -> pa.Array | None:
    """Column ``name`` of a Kafka dump as one Arrow array, or None when the file lacks it."""
    if name not in table.column_names:
        return None
    return table.column(name).combine_chunks()


def _kafka_timestamps_ms(column: pa.Array) -> pa.Array:
    """A ``timestamp`` column (checked by :func:`check_kafka_dump`) as bigint
    milliseconds since the epoch, exactly: Arrow's integer count of the column's unit,
    divided rounding down (never through a float). A timestamp without a time zone is
    read as UTC: Spark writes its INT96 and ``TIMESTAMP_*`` parquet values as UTC instants."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.types as pat

    if pat.is_integer(column.type):
        return column.cast(pa.int64())
    counts = column.cast(pa.int64()).fill_null(0).to_numpy(zero_copy_only=False)
    factor = _MS_PER_UNIT[column.type.unit]
    ms = counts * factor if factor > 0 else np.floor_divide(counts, -factor)
    return pa.array(ms, type=pa.int64(), mask=column.is_null().to_numpy(zero_copy_only=False))


def read_kafka_dump(content: bytes) -> pa.Table:
    """A ``kafka_parquet`` file's table, checked by :func:`check_kafka_dump`."""
    import pyarrow.parquet as pq

    try:
        # ParquetFile, not pq.read_table, which cannot read a file with two columns of one
        # name; use_threads=False: see PARQUET_THREADS
        dump = pq.ParquetFile(io.BytesIO(content))
        schema = dump.schema_arrow
        table = dump.read(columns=kafka_columns_to_read(schema), use_threads=PARQUET_THREADS)
    except Exception as exc:  # noqa: BLE001 - any reader failure quarantines the file
        raise KafkaParquetError(f"not parquet: {exc}") from exc
    check_kafka_dump(schema, table)
    return table


def kafka_columns_to_read(schema: pa.Schema, names: Iterable[str] = _KAFKA_COLUMNS) -> list[str]:
    """Those of ``names`` the file has exactly once (a repeated one is rejected by
    :func:`check_kafka_dump` before anything reads it)."""
    return [name for name in names if len(schema.get_all_field_indices(name)) == 1]


def check_kafka_dump(schema: pa.Schema, integers: pa.Table) -> None:
    """Raise :class:`KafkaParquetError` for a file that is not a Kafka dump: no
    ``value`` column, a column of a type the Kafka source does not write (``key`` and
    ``value`` binary or text, ``topic`` text, ``partition`` and ``offset`` integers,
    ``timestamp`` a timestamp or integer milliseconds), one of these columns twice, a
    ``partition`` beyond int or an ``offset`` beyond bigint. ``schema``: the file's;
    ``integers``: a table holding at least its ``partition`` and ``offset`` columns, whole
    (their ranges are checked)."""
    import pyarrow.compute as pc
    import pyarrow.types as pat

    for name in _KAFKA_COLUMNS:
        if (times := len(schema.get_all_field_indices(name))) > 1:
            raise KafkaParquetError(f"not a Kafka dump: column {name!r} appears {times} times")

    def type_of(name: str) -> pa.DataType | None:
        if name not in schema.names:
            return None
        kind = schema.field(name).type
        return kind.value_type if pat.is_dictionary(kind) else kind

    if "value" not in schema.names:
        raise KafkaParquetError(f"not a Kafka dump: no 'value' column (columns: {', '.join(schema.names)})")
    for name in ("value", *_KAFKA_TEXT):
        kind = type_of(name)
        if kind is None:
            continue
        if not (pat.is_string(kind) or pat.is_large_string(kind) or pat.is_binary(kind)
                or pat.is_large_binary(kind) or pat.is_null(kind)):  # fmt: skip
            raise KafkaParquetError(f"column {name!r} is {kind}, not binary or text")
        if name == "topic" and pat.is_binary(kind):
            raise KafkaParquetError("column 'topic' is binary, not text")
    for name, bits in _KAFKA_INTEGERS.items():
        kind = type_of(name)
        if kind is None:
            continue
        if not pat.is_integer(kind):
            raise KafkaParquetError(f"column {name!r} is {kind}, not an integer")
        lo, hi = pc.min_max(integers.column(name)).values()
        if lo.is_valid and not (-(2**bits) <= lo.as_py() and hi.as_py() < 2**bits):
            raise KafkaParquetError(f"column {name!r} holds {lo.as_py()}..{hi.as_py()}, beyond {bits + 1}-bit integers")
    kind = type_of("timestamp")
    if kind is not None and not (pat.is_integer(kind) or pat.is_timestamp(kind)):
        raise KafkaParquetError(f"column 'timestamp' is {kind}, not a timestamp")


def open_kafka_dump(path: str) -> pq.ParquetFile:
    """A ``kafka_parquet`` file opened to be read a batch at a time, checked as
    :func:`read_kafka_dump` checks the whole file (its integer columns are read whole,
    for their ranges). Raises :class:`KafkaParquetError` as that function does."""
    import pyarrow.parquet as pq

    try:
        # buffer_size: a row group's column chunks are read 1 MiB at a time, not whole
        dump = pq.ParquetFile(path, buffer_size=2**20)
        integers = dump.read(
            columns=kafka_columns_to_read(dump.schema_arrow, _KAFKA_INTEGERS), use_threads=PARQUET_THREADS
        )
    except Exception as exc:  # noqa: BLE001 - any reader failure quarantines the file
        raise KafkaParquetError(f"not parquet: {exc}") from exc
    try:
        check_kafka_dump(dump.schema_arrow, integers)
    except KafkaParquetError:
        dump.close()
        raise
    return dump


def kafka_parquet_columns(content: bytes, binary_values: bool = False) -> dict[str, pa.Array]:
    """The records of a ``kafka_parquet`` file as Arrow columns
    (:func:`kafka_dump_columns` of :func:`read_kafka_dump`). Raises
    :class:`KafkaParquetError` for a file that is not a Kafka dump (not parquet, or
    what :func:`check_kafka_dump` rejects)."""
    return kafka_dump_columns(read_kafka_dump(content), binary_values)


def kafka_dump_columns(table: pa.Table, binary_values: bool = False) -> dict[str, pa.Array]:
    """The records of a checked Kafka dump's ``table`` (the whole file, or a batch of
    it) as Arrow columns, one element per message in file order: ``text``, ``error``
    and ``raw_b64`` (as :func:`_utf8`, or for ``binary_values`` the value as base64 in
    both), ``kafka_key`` (text; a key that is not UTF-8 is null), ``kafka_topic`` (the
    texts as ``large_string``), ``kafka_partition``, ``kafka_offset`` and
    ``kafka_timestamp_ms``. A null value is a tombstone (``text`` null).

    Column by column, so a file of a million messages costs a million times one, not its
    square.
    """
    import pyarrow as pa
    import pyarrow.types as pat

    n = table.num_rows
    columns: dict[str, pa.Array] = {}
    for name in ("value", *_KAFKA_TEXT):
        col = _kafka_column(table, name)
        if col is None:
            col = pa.nulls(n, pa.string())
        elif pat.is_dictionary(col.type):
            col = col.dictionary_decode()
        columns[name] = col
    # the texts stay large_string (64-bit offsets): the caller checks what one Arrow
    # string column can hold before it casts them
    raw = columns.pop("value").cast(pa.large_binary())
    if binary_values:
        values = raw.to_pylist()
        b64 = pa.array([None if v is None else base64.b64encode(v).decode() for v in values], pa.large_string())
        columns.update(text=b64, error=pa.nulls(n, pa.large_string()), raw_b64=b64)
    else:
        try:
            text = raw.cast(pa.large_string())
            columns.update(text=text, error=pa.nulls(n, pa.large_string()), raw_b64=pa.nulls(n, pa.large_string()))
        except pa.ArrowInvalid:  # invalid UTF-8: those records only are quarantined, as _utf8 does
            records = [RawRecord(i, None) if v is None else _utf8(v, i) for i, v in enumerate(raw.to_pylist())]
            for name in ("text", "error", "raw_b64"):
                columns[name] = pa.array([getattr(r, name) for r in records], pa.large_string())
    key = columns.pop("key").cast(pa.large_binary())
    try:
        columns["kafka_key"] = key.cast(pa.large_string())
    except pa.ArrowInvalid:  # a key that is not UTF-8 text: no key
        columns["kafka_key"] = pa.array([_utf8_or_none(k) for k in key.to_pylist()], pa.large_string())
    columns["kafka_topic"] = columns.pop("topic").cast(pa.large_string())
    for name, bits in _KAFKA_INTEGERS.items():
        col = _kafka_column(table, name)
        kind = pa.int32() if bits == 31 else pa.int64()
        columns[f"kafka_{name}"] = pa.nulls(n, kind) if col is None else col.cast(kind)
    stamp = _kafka_column(table, "timestamp")
    columns["kafka_timestamp_ms"] = pa.nulls(n, pa.int64()) if stamp is None else _kafka_timestamps_ms(stamp)
    return columns


def _utf8_or_none(raw: bytes | None) -> str | None:
    if raw is None:
        return None
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return None


def split_kafka_parquet(content: bytes, binary_values: bool = False) -> list[RawRecord]:
    """The records of a ``kafka_parquet`` file (:func:`kafka_parquet_columns`); a file
    that is not a Kafka dump is one quarantined record holding the file as base64."""
    try:
        columns = kafka_parquet_columns(content, binary_values)
    except KafkaParquetError as exc:
        return [RawRecord(0, None, error=str(exc), raw_b64=base64.b64encode(content).decode())]
    names = [f.name for f in dataclasses.fields(RawRecord) if f.name in columns]
    values = [columns[name].to_pylist() for name in names]
    return [RawRecord(i, **dict(zip(names, row, strict=True))) for i, row in enumerate(zip(*values, strict=True))]


def split_csv(content: bytes, header: bool = False) -> list[RawRecord]:
    rows = csv_rows(content, at_file_start=True)
    names: list[str] | None = None
    error = None
    if header and rows:
        (names, error), rows = csv_header(rows[0]), rows[1:]
    return csv_records(rows, names, error)


def csv_rows(content: bytes, at_file_start: bool = True) -> list[str]:
    """The RFC-4180 rows of ``content`` (a file, or a block of whole rows of one), as
    text decoded with ``surrogateescape``; a BOM is dropped at the file's start only."""
    return _csv_rows((strip_bom(content) if at_file_start else content).decode("utf-8", "surrogateescape"))


def csv_header(row: str) -> tuple[list[str] | None, str | None]:
    """The column names of a CSV file's first row (invalid UTF-8 replaced), or None and
    why for a row Python's ``csv`` cannot read (a newline in a value not quoted, as in
    ``a"b\\nc"``): every record of the file is then quarantined with that reason."""
    import csv

    first = row.rstrip("\r\n").encode("utf-8", "surrogateescape").decode("utf-8", "replace")
    try:
        return next(csv.reader([first]), []), None
    except csv.Error as exc:
        return None, f"the header row is not CSV: {exc}"


def csv_records(rows: list[str], names: list[str] | None, error: str | None = None) -> list[RawRecord]:
    """CSV ``rows`` (:func:`csv_rows`, header row left out) as records numbered from 0,
    each with the file's column ``names`` (and ``error``, the header's); blank rows are
    not records."""
    return [
        _escaped(row.rstrip("\r\n"), i, error=error, header=names) for i, row in enumerate(r for r in rows if r.strip())
    ]


def _csv_rows(text: str) -> list[str]:
    """Split text into RFC-4180 rows: a newline inside quotes does not end a row.

    Line by line (``str.find`` and ``str.count`` in C): a line with an odd number of
    quotes opens or closes a quoted value, and a newline outside quotes ends the row.
    """
    rows, start, pos, quoted = [], 0, 0, False
    while (end := text.find("\n", pos)) >= 0:
        if text.count('"', pos, end) % 2:
            quoted = not quoted
        if not quoted:
            rows.append(text[start : end + 1])
            start = end + 1
        pos = end + 1
    if start < len(text):
        rows.append(text[start:])
    return rows


def split_file(
    content: bytes, framing: str, options: dict | None = None, binary_values: bool = False
) -> list[RawRecord]:
    """Split ``content`` by ``framing``; see the module docstring for each framing."""
    options = options or {}
    if framing == "length_prefixed":
        return split_length_prefixed(content)
    if framing == "lines":
        return split_lines(content)
    if framing == "documents":
        return split_documents(content)
    if framing == "kcat":
        return split_kcat(content)
    if framing == "kafka_parquet":
        return split_kafka_parquet(content, binary_values)
    if framing == "csv":
        return split_csv(content, header=bool(options.get("header", False)))
    raise ValueError(f"unknown framing {framing!r}; known: {', '.join(FRAMINGS)}")
