"""Split a landing file into records, by framing (see DESIGN.md, "Landing framings").

Each function takes the file's bytes and returns :class:`RawRecord` items in file
order. A framing never decodes an envelope: it only finds where records begin and end
and, for Kafka dumps, reads the message metadata (topic, partition, offset, key).

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
import io
import json
from dataclasses import dataclass

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


def split_lines(content: bytes) -> list[RawRecord]:
    out = []
    index = 0
    for line in strip_bom(content).split(b"\n"):
        if line.endswith(b"\r"):
            line = line[:-1]
        if not line.strip():
            continue
        out.append(_utf8(line, index))
        index += 1
    return out


def split_documents(content: bytes) -> list[RawRecord]:
    text = strip_bom(content).decode("utf-8", "surrogateescape")
    decoder = json.JSONDecoder()
    out: list[RawRecord] = []
    pos, n = 0, len(text)
    while True:
        while pos < n and text[pos].isspace():
            pos += 1
        if pos >= n:
            return out
        try:
            _, end = decoder.raw_decode(text, pos)
        except ValueError as exc:
            out.append(_escaped(text[pos:], len(out), error=f"not JSON: {exc}"))
            return out
        except RecursionError:
            out.append(_escaped(text[pos:], len(out), error="not JSON: nested too deeply"))
            return out
        out.append(_escaped(text[pos:end], len(out)))
        pos = end


def split_kcat(content: bytes) -> list[RawRecord]:
    out = []
    for rec in split_lines(content):
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
    text = base64.b64encode(raw).decode()
    return RawRecord(index, text, raw_b64=text)


def split_length_prefixed(content: bytes) -> list[RawRecord]:
    out: list[RawRecord] = []
    pos, n = 0, len(content)
    while pos < n:
        if pos + 4 > n:
            rest = content[pos:]
            out.append(
                RawRecord(
                    len(out), None, error="truncated: length prefix cut short", raw_b64=base64.b64encode(rest).decode()
                )
            )
            break
        size = int.from_bytes(content[pos : pos + 4], "big")
        if pos + 4 + size > n:
            rest = content[pos:]
            out.append(
                RawRecord(
                    len(out),
                    None,
                    error=f"truncated: {size} bytes announced, {n - pos - 4} left",
                    raw_b64=base64.b64encode(rest).decode(),
                )
            )
            break
        out.append(_binary(content[pos + 4 : pos + 4 + size], len(out)))
        pos += 4 + size
    return out


def split_kafka_parquet(content: bytes, binary_values: bool = False) -> list[RawRecord]:
    import pyarrow.parquet as pq

    try:
        table = pq.read_table(io.BytesIO(content))
    except Exception as exc:  # noqa: BLE001 - any reader failure quarantines the file
        return [RawRecord(0, None, error=f"not parquet: {exc}", raw_b64=base64.b64encode(content).decode())]
    cols = {name: table.column(name).to_pylist() for name in table.column_names}
    n = table.num_rows
    out = []
    for i in range(n):
        value = cols.get("value", [None] * n)[i]
        key = cols.get("key", [None] * n)[i]
        ts = cols.get("timestamp", [None] * n)[i]
        if value is None:
            rec = RawRecord(i, None)
        else:
            rec = _binary(value, i) if binary_values else _utf8(value, i)
        if key is not None:
            try:
                rec.kafka_key = key.decode("utf-8") if isinstance(key, bytes) else str(key)
            except UnicodeDecodeError:
                rec.kafka_key = None
        rec.kafka_topic = cols.get("topic", [None] * n)[i]
        rec.kafka_partition = cols.get("partition", [None] * n)[i]
        rec.kafka_offset = cols.get("offset", [None] * n)[i]
        rec.kafka_timestamp_ms = int(ts.timestamp() * 1000) if hasattr(ts, "timestamp") else ts
        out.append(rec)
    return out


def split_csv(content: bytes, header: bool = False) -> list[RawRecord]:
    rows = _csv_rows(strip_bom(content).decode("utf-8", "surrogateescape"))
    names: list[str] | None = None
    if header and rows:
        import csv

        first = rows[0].rstrip("\r\n").encode("utf-8", "surrogateescape").decode("utf-8", "replace")
        names = next(csv.reader([first]), [])
        rows = rows[1:]
    out = []
    for i, row in enumerate(r for r in rows if r.strip()):
        out.append(_escaped(row.rstrip("\r\n"), i, header=names))
    return out


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
