"""Thin Spark wrappers around the pure functions, and their registration.

Every function here is a vectorized Arrow UDF (``arrow_udf``: a batch of rows in, an
Arrow array out; no row-at-a-time Python UDF) or a table function, registered under a
``cdc_`` name so dbt models and analysts call them from SQL:

``cdc_read_records(path, framing, options)``
    the records of one landing file, as ``array<struct<...>>`` (see ``RECORDS_DDL``).
``cdc_decode(options, text, kafka_key, source_file, header)``
    one record decoded into changelog rows (see ``udfs.decode``); ``source_file`` and
    ``header`` (a CSV file's header row) are for the decoders that need them.
``cdc_decode_files(path, framing, options)``
    both in one call: every record of one landing file with its ``cdc_decode`` result
    (see ``DECODED_RECORDS_DDL``), as one array per file. A record's text never goes
    to the JVM and back between reading and decoding; only a quarantined record's raw
    text comes out.
``cdc_decode_records(TABLE(files))``
    table function, what the models run: the same records and results, one row per
    record (see ``DECODED_RECORD_ROWS_DDL``), for a table of files with the columns
    ``source_file``, ``framing`` and ``decoder_options``. Each file is read on its own
    and its records are decoded and handed to Spark ``DECODE_CHUNK`` at a time, so no
    row, and no Arrow batch, holds a whole file: a landing file of hundreds of MB
    decodes within Spark's default 1 GB driver, where one array per file does not.
``cdc_widest_type(types)``
    the mart type of a column declared with ``types`` (``array<string>``), and the
    conflict when they do not widen to one (see :mod:`udfs.types`).
``cdc_list_files(root)``
    table function: every file below ``root`` (recursive; names starting with ``.`` or
    ``_`` are skipped, as Spark's file sources do; links followed, see :func:`list_files`).

Two analyst functions decode Arcion's nested JSON strings (see
:mod:`udfs.formats.arcion_cursor`); they keep the vendor's names, no ``cdc_`` prefix:

``arcion_cursor(text)``
    an Arcion ``cursor`` text as ``ARCION_CURSOR_DDL`` (see :func:`arcion_cursor_array`).
``arcion_operationcount(text)``
    an Arcion ``operationcount`` text as ``ARCION_OPERATIONCOUNT_DDL``.
"""

from __future__ import annotations

import importlib
import json
import os
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa

from udfs.compression import open_landing_file, open_sized_landing_file
from udfs.decode import DECODE_RESULT_DDL, arrow_type_of_ddl, decode_records
from udfs.formats.arcion_cursor import cursor_batch_masked, operationcount_batch_masked
from udfs.framing import (
    PARQUET_THREADS,
    KafkaParquetError,
    RawRecord,
    csv_header,
    csv_records,
    csv_row_blocks,
    csv_rows,
    document_records,
    kafka_columns_to_read,
    kafka_dump_columns,
    kafka_parquet_columns,
    length_prefixed_records,
    line_blocks,
    open_kafka_dump,
    split_file,
    split_kcat,
    split_lines,
    strip_bom,
)
from udfs.types import widest_type

RECORDS_DDL = (
    "array<struct<record_index:int, text:string, error:string, raw_b64:string, kafka_key:string, "
    "kafka_topic:string, kafka_partition:int, kafka_offset:bigint, kafka_timestamp_ms:bigint, "
    "header:array<string>>>"
)
LIST_FILES_DDL = "path string, size bigint, modified_us bigint"
#: ``cdc_decode_files``: a file's records decoded. ``raw_record`` (the text, or the
#: base64 of bytes that are not UTF-8) and ``raw_is_base64`` only where the record is
#: quarantined (a framing ``error`` or a ``quarantined`` result); null elsewhere.
DECODED_RECORD_FIELDS: tuple[tuple[str, str], ...] = (
    ("record_index", "int"),
    ("error", "string"),
    ("raw_record", "string"),
    ("raw_is_base64", "boolean"),
    ("kafka_topic", "string"),
    ("kafka_partition", "int"),
    ("kafka_offset", "bigint"),
    ("kafka_timestamp_ms", "bigint"),
    ("result", DECODE_RESULT_DDL),
)
DECODED_RECORDS_DDL = "array<struct<" + ", ".join(f"{n}:{t}" for n, t in DECODED_RECORD_FIELDS) + ">>"
#: ``cdc_decode_records``: the same fields, one row per record, with the record's file
DECODED_RECORD_ROWS_DDL = "source_file string, " + ", ".join(f"{n} {t}" for n, t in DECODED_RECORD_FIELDS)
#: the Arrow types Spark exchanges them as
RECORDS_TYPE = arrow_type_of_ddl(RECORDS_DDL)
DECODE_TYPE = arrow_type_of_ddl(DECODE_RESULT_DDL)
DECODED_RECORDS_TYPE = arrow_type_of_ddl(DECODED_RECORDS_DDL)
#: records per ``decode_array`` call in ``cdc_decode_files``: a ``cdc_decode`` Arrow
#: batch (``spark.sql.execution.arrow.maxRecordsPerBatch``), whatever the file sizes
DECODE_CHUNK = 2000
#: text (or base64) bytes of one landing file's records that an Arrow string column, with
#: its 32-bit offsets, can hold; a larger file becomes one record with a framing error
#: (``cdc_decode_records`` reads every framing by parts: there, only a longer record is
#: limited)
MAX_FILE_TEXT_BYTES = 2**31 - 1
#: bytes of a ``LINE_FRAMINGS``, ``csv`` or ``documents`` file ``cdc_decode_records``
#: reads at a time (whole lines, rows, values; of a ``length_prefixed`` file: records
#: until they hold that much base64). 2 MiB: in every framing both the worker's memory
#: and its CPU were lower than at 8 MiB (``bench.file_memory``, 100k events; a 210 MiB
#: ``lines`` file grows it by 74 MiB at 0.86x the whole file's CPU, 132 at 0.87x by 8 MiB
#: blocks, 630 whole; ``documents`` 108 MiB at 0.91x, 211 at 1.00x; 1 MiB gained little more)
FILE_BLOCK_BYTES = 2 * 2**20
#: messages of a ``kafka_parquet`` file ``cdc_decode_records`` reads at a time (a batch
#: whose text one Arrow string column cannot hold is cut in parts that fit)
KAFKA_BATCH_ROWS = 1000
#: the framings of one record per line, which ``cdc_decode_records`` reads by blocks
LINE_FRAMINGS = ("lines", "kcat")
#: the largest ``record_index`` (an ``int``)
MAX_RECORD_INDEX = 2**31 - 1


class FileTooLargeError(ValueError):
    """A file's records hold more text than one Arrow string column can."""

    def __init__(self, text_bytes: int) -> None:
        super().__init__(
            f"file too large: its records hold {text_bytes:,} bytes of text, more than the "
            f"{MAX_FILE_TEXT_BYTES:,} one landing file may hold (Arrow's 32-bit offsets); split the file"
        )


#: The SQL fields of ``arcion_cursor`` (name, Spark type) and the ``cursor_batch`` column
#: each is read from. Timestamps are UTC instants with millisecond precision.
ARCION_CURSOR_FIELDS: tuple[tuple[str, str, str], ...] = (
    ("extractor_id", "bigint", "extractor_id"),
    ("node_id", "string", "node_id"),
    ("timestamp", "timestamp", "timestamp_us"),
    ("extraction_timestamp", "timestamp", "extraction_timestamp_us"),
    ("lag_ms", "bigint", "lag_ms"),
    ("log", "string", "log"),
    ("position", "bigint", "position"),
    ("log_seq_num", "bigint", "log_seq_num"),
    ("server_id", "bigint", "server_id"),
    ("dsc_id", "bigint", "dsc_id"),
    ("mut_id", "bigint", "mut_id"),
    ("part_num", "bigint", "part_num"),
    ("version", "bigint", "version"),
    ("unknown", "map<string,string>", "unknown"),
)
ARCION_OPERATIONCOUNT_FIELDS: tuple[tuple[str, str, str], ...] = tuple(
    (name, "bigint", name) for name in ("insert_count", "update_count", "delete_count", "replace_count")
)
ARCION_CURSOR_DDL = "struct<" + ", ".join(f"{n}:{t}" for n, t, _ in ARCION_CURSOR_FIELDS) + ">"
ARCION_OPERATIONCOUNT_DDL = "struct<" + ", ".join(f"{n}:{t}" for n, t, _ in ARCION_OPERATIONCOUNT_FIELDS) + ">"

#: Spark type -> the Arrow type Spark exchanges it as (UTC timestamps in microseconds).
_ARROW_OF_DDL: dict[str, pa.DataType] = {
    "bigint": pa.int64(),
    "string": pa.string(),
    "timestamp": pa.timestamp("us", tz="UTC"),
    "map<string,string>": pa.map_(pa.string(), pa.string()),
}


def arrow_type(ddl: str) -> pa.DataType:
    from pyspark.sql.pandas.types import to_arrow_type
    from pyspark.sql.types import _parse_datatype_string

    return to_arrow_type(_parse_datatype_string(ddl))


def local_path(path: str) -> str:
    return path[len("file:") :] if path.startswith("file:") else path


def read_records(paths: list[str | None], framings: list[str | None], options: list[str | None]) -> list[Any]:
    """The records of each file as Python dicts: the plain formulation of
    :func:`read_records_array` (what ``cdc_read_records`` runs), kept as its reference."""
    out: list[Any] = []
    for path, framing, opts in zip(paths, framings, options, strict=True):
        if path is None or framing is None:
            out.append(None)
            continue
        with open_landing_file(local_path(path), framing) as fh:
            out.append([r.__dict__ for r in _split(fh.read(), framing, opts)])
    return out


def _split(content: bytes, framing: str, opts: str | None) -> list[Any]:
    """``split_file`` of one file with its feed's options (``opts``: decoder options JSON)."""
    decoder_options = json.loads(opts) if opts else {}
    feed_options = decoder_options.get("options") or {}
    return split_file(content, framing, feed_options, _binary_values(decoder_options.get("format")))


def read_records_array(
    paths: list[str | None], framings: list[str | None], options: list[str | None], records_type: pa.ListType
) -> pa.Array:
    """:func:`read_records` built column by column: the same array as
    ``pa.array(read_records(...), type=records_type)``, without a Python dict per record.

    ``lines`` files whose bytes are all valid UTF-8 (nearly every file) never become
    Python text at all: the lines are sliced as bytes and handed to Arrow, which checks
    them again as it casts them to text. Other framings (and a ``lines`` file holding
    invalid UTF-8) go through :func:`udfs.framing.split_file` as before.
    """
    struct_type: pa.StructType = records_type.value_type
    parts: list[pa.StructArray] = []
    offsets = [0]
    valid: list[bool] = []
    for path, framing, opts in zip(paths, framings, options, strict=True):
        if path is None or framing is None:
            offsets.append(offsets[-1])
            valid.append(False)
            continue
        with open_landing_file(local_path(path), framing) as fh:
            part = file_records_struct(fh.read(), framing, opts, struct_type)
        parts.append(part)
        offsets.append(offsets[-1] + len(part))
        valid.append(True)
    values = pa.concat_arrays(parts) if parts else pa.array([], type=struct_type)
    mask = pa.array([not v for v in valid], type=pa.bool_())
    return pa.ListArray.from_arrays(pa.array(offsets, type=pa.int32()), values, type=records_type, mask=mask)


def file_records_struct(content: bytes, framing: str, opts: str | None, struct_type: pa.StructType) -> pa.StructArray:
    """The records of one file's ``content`` (one element of ``cdc_read_records``).

    A file whose records hold more than ``MAX_FILE_TEXT_BYTES`` of text is one record
    with a framing ``error`` that says so (quarantined, the run goes on): Spark cannot
    carry it, and the file must be split.
    """
    try:
        part = None
        if framing == "lines":
            part = valid_lines_struct(content, struct_type)
        elif framing == "kcat":
            part = kcat_struct(content, struct_type)
        elif framing == "kafka_parquet":
            part = kafka_parquet_struct(content, opts, struct_type)
        if part is None:
            part = _records_struct(_split(content, framing, opts), struct_type)
    except FileTooLargeError as exc:
        return _records_struct([RawRecord(0, None, error=str(exc))], struct_type)
    return part


def valid_lines_struct(content: bytes, struct_type: pa.StructType, at_file_start: bool = True) -> pa.StructArray | None:
    """The ``lines`` framing of ``content`` as records, or None for a file this fast path
    leaves to :func:`udfs.framing.split_lines` (one holding invalid UTF-8, whose bad lines
    are quarantined one by one, or a ``\\r``).

    Same decisions as ``split_lines``: BOM dropped, blank lines (ASCII whitespace only)
    are not records. The lines are cut out of the file's bytes by Arrow without a Python
    object per line; the cast to text checks their UTF-8 (a ``\\n`` byte never falls
    inside a multi-byte sequence, so a file splits into the same lines either way).
    ``at_file_start``: as ``split_lines``'.
    """
    import numpy as np
    import pyarrow.compute as pc

    body = strip_bom(content) if at_file_start else content
    if b"\r" in body:
        return None
    if not body.endswith(b"\n"):
        body += b"\n"
    newlines = np.flatnonzero(np.frombuffer(body, dtype=np.uint8) == 10)
    offsets = np.concatenate((np.zeros(1, dtype=np.int64), newlines + 1))
    with_newline = pa.LargeBinaryArray.from_buffers(
        pa.large_binary(), len(newlines), [None, pa.py_buffer(offsets), pa.py_buffer(body)]
    )
    try:
        lines = pc.binary_slice(with_newline, 0, -1).cast(pa.large_string())
        lines = lines.filter(pc.greater(pc.binary_length(pc.ascii_trim_whitespace(lines)), 0))
        text_bytes = pc.sum(pc.binary_length(lines)).as_py() or 0
        if text_bytes > MAX_FILE_TEXT_BYTES:
            raise FileTooLargeError(text_bytes)
        text = lines.cast(pa.string())
    except (pa.ArrowInvalid, pa.ArrowCapacityError):
        return None
    return _numbered_records({"text": text}, struct_type)


def _numbered_records(columns: dict[str, pa.Array], struct_type: pa.StructType) -> pa.StructArray:
    """Records numbered 0, 1, ... (``record_index``) with the given ``columns``, every
    other field of ``struct_type`` null."""
    import numpy as np

    n = len(next(iter(columns.values())))
    columns = {"record_index": pa.array(np.arange(n, dtype=np.int32)), **columns}
    return pa.StructArray.from_arrays(
        [columns[f.name] if f.name in columns else pa.nulls(n, type=f.type) for f in struct_type],
        fields=list(struct_type),
    )


def kafka_parquet_struct(content: bytes, opts: str | None, struct_type: pa.StructType) -> pa.StructArray | None:
    """The ``kafka_parquet`` framing of ``content`` as records, column by column
    (:func:`udfs.framing.kafka_parquet_columns`: no ``RawRecord`` per message), or None
    for a file that is not a Kafka dump, whose one quarantined record
    :func:`udfs.framing.split_kafka_parquet` writes."""
    decoder_options = json.loads(opts) if opts else {}
    try:
        columns = kafka_parquet_columns(content, _binary_values(decoder_options.get("format")))
    except KafkaParquetError:
        return None
    return _kafka_records(columns, struct_type)


def _kafka_records(columns: dict[str, pa.Array], struct_type: pa.StructType) -> pa.StructArray:
    """Kafka messages' columns (:func:`udfs.framing.kafka_dump_columns`) as records
    numbered from 0; :class:`FileTooLargeError` past ``MAX_FILE_TEXT_BYTES`` of text."""
    import pyarrow.compute as pc

    for name in ("text", "raw_b64"):
        text_bytes = pc.sum(pc.binary_length(columns[name])).as_py() or 0
        if text_bytes > MAX_FILE_TEXT_BYTES:
            raise FileTooLargeError(text_bytes)
    types = {field.name: field.type for field in struct_type}
    return _numbered_records(
        {name: col.cast(types[name]) for name, col in columns.items() if name in types}, struct_type
    )


try:  # a speed-up only: without msgspec, kcat files take udfs.framing.split_kcat
    import msgspec

    class _KcatLine(msgspec.Struct):
        """One ``kcat -J`` line, parsed straight into the fields a record keeps; the
        checks are those of :func:`udfs.framing.split_kcat`."""

        payload: str | None  # required, as split_kcat requires the field
        key: str | None = None  # a key of another JSON type: split_kcat writes it as JSON
        topic: str | None = None
        partition: int | None = None  # int32 and int64 ranges: checked by Arrow
        offset: int | None = None
        ts: int | None = None

    _KCAT_LINE: Any = msgspec.json.Decoder(_KcatLine)
    #: what a line the fast path leaves raises: msgspec's errors, invalid UTF-8
    #: (UnicodeDecodeError), a number out of its column's range (ArrowInvalid, OverflowError)
    _KCAT_FAST_ERRORS: tuple[type[BaseException], ...] = (
        msgspec.MsgspecError,
        ValueError,
        TypeError,
        OverflowError,
        RecursionError,
    )
except ImportError:  # pragma: no cover - the project's environment has it
    _KCAT_LINE = None
    _KCAT_FAST_ERRORS = ()


def kcat_struct(content: bytes, struct_type: pa.StructType, at_file_start: bool = True) -> pa.StructArray | None:
    """The ``kcat`` framing of ``content`` as records, or None for a file this fast path
    leaves to :func:`udfs.framing.split_kcat`: one with any line it cannot take exactly
    (not an object with a text ``payload``, a key that is not text, a number out of
    range or not an integer, bytes that are not UTF-8, ``NaN``...), where
    ``split_kcat`` gives each bad line its own error and keeps the others.

    Same lines as ``split_lines`` (BOM dropped, blank lines skipped). Each line is parsed
    straight into its fields (no dict and no ``RawRecord`` per line), and each field
    becomes one Arrow column: about half the time of ``split_kcat`` + ``_records_struct``
    (BENCHMARKS.md). ``at_file_start``: as ``split_lines``'.
    """
    if _KCAT_LINE is None:
        return None
    body = strip_bom(content) if at_file_start else content
    try:
        # a line's \r is JSON whitespace to msgspec, as split_lines cuts it
        lines = [_KCAT_LINE.decode(line) for line in body.split(b"\n") if line.strip()]
        payloads = [m.payload for m in lines]
        columns = {
            "text": pa.array(payloads, type=pa.string()),
            "kafka_key": pa.array([m.key for m in lines], type=pa.string()),
            "kafka_topic": pa.array([m.topic for m in lines], type=pa.string()),
            "kafka_partition": pa.array([m.partition for m in lines], type=pa.int32()),
            "kafka_offset": pa.array([m.offset for m in lines], type=pa.int64()),
            "kafka_timestamp_ms": pa.array([m.ts for m in lines], type=pa.int64()),
        }
    except _KCAT_FAST_ERRORS:
        return None
    _require_text_fits([p for p in payloads if p])
    return _numbered_records(columns, struct_type)


def _require_text_fits(values: list[str]) -> None:
    """Raise :class:`FileTooLargeError` when ``values`` hold more than
    ``MAX_FILE_TEXT_BYTES`` of UTF-8 (one Arrow string column of a file's records)."""
    # a character takes 1 to 4 bytes: count them exactly only near the limit
    if 4 * sum(map(len, values)) > MAX_FILE_TEXT_BYTES:
        text_bytes = sum(len(v.encode("utf-8", "surrogatepass")) for v in values)
        if text_bytes > MAX_FILE_TEXT_BYTES:
            raise FileTooLargeError(text_bytes)


def _records_struct(records: list[Any], struct_type: pa.StructType) -> pa.StructArray:
    """Records (``RawRecord``) as a struct array, one column at a time."""
    for name in ("text", "raw_b64"):
        _require_text_fits([v for r in records if (v := getattr(r, name))])
    columns = [pa.array([getattr(r, f.name) for r in records], type=f.type) for f in struct_type]
    return pa.StructArray.from_arrays(columns, fields=list(struct_type))


def _binary_values(format_identifier: str | None) -> bool:
    from udfs.formats import FORMATS

    decoder = FORMATS.get(format_identifier or "")
    return bool(decoder and decoder.binary_values)


def list_files(root: str) -> Iterator[tuple[str, int, int]]:
    """Pure generator behind ``cdc_list_files``: (absolute path, size, mtime in us), sorted.

    As Spark lists a folder through Hadoop's local file system: names starting with ``.``
    or ``_`` are skipped; symbolic links are followed, to files and to folders (a folder
    reached twice, by two links or a loop, is listed once, under the first path found);
    an entry gone by the time it is read (a file deleted during the listing, a link to
    nothing) is not a file. A folder that cannot be read fails the listing, naming it,
    where ``os.walk`` would leave its files out without a word; so does a missing root.
    """
    root_path = Path(local_path(root))
    if not root_path.is_dir():
        raise FileNotFoundError(f"the landing folder {root_path} does not exist or is not a folder")

    def unreadable(error: OSError) -> None:
        if not isinstance(error, FileNotFoundError):  # a folder deleted during the listing has no files
            raise error

    found = []
    folders_seen: set[tuple[int, int]] = set()
    for dirpath, dirnames, filenames in os.walk(root_path, onerror=unreadable, followlinks=True):
        try:
            folder = os.stat(dirpath)
        except FileNotFoundError:
            dirnames[:] = []
            continue
        if (folder.st_dev, folder.st_ino) in folders_seen:
            dirnames[:] = []  # a loop, or a second link to a folder listed already
            continue
        folders_seen.add((folder.st_dev, folder.st_ino))
        dirnames[:] = sorted(d for d in dirnames if not d.startswith((".", "_")))
        for name in filenames:
            if name.startswith((".", "_")):
                continue
            p = Path(dirpath) / name
            try:
                st = p.stat()
            except FileNotFoundError:
                continue  # deleted since its folder was read, or a link to nothing
            found.append((str(p), st.st_size, st.st_mtime_ns // 1000))
    yield from sorted(found)


def _struct_array(frame: pd.DataFrame, valid: pd.Series, fields: tuple[tuple[str, str, str], ...]) -> pa.StructArray:
    """A decoded batch frame as an Arrow struct array; rows where ``valid`` is False are null."""
    arrays: list[pa.Array] = []
    for _, ddl, column in fields:
        values = frame[column]
        if ddl == "bigint":
            arrays.append(pa.array(values, type=pa.int64(), from_pandas=True))
        elif ddl == "timestamp":  # integer microseconds since the epoch, UTC
            arrays.append(pa.array(values, type=pa.int64(), from_pandas=True).cast(_ARROW_OF_DDL[ddl]))
        elif ddl == "string":
            arrays.append(pa.array(values.tolist(), type=pa.string()))
        else:  # map<string,string>
            items = [None if m is None else list(m.items()) for m in values.tolist()]
            arrays.append(pa.array(items, type=_ARROW_OF_DDL[ddl]))
    struct_fields = [pa.field(name, _ARROW_OF_DDL[ddl]) for name, ddl, _ in fields]
    mask = pa.array(~valid.to_numpy(dtype=bool), type=pa.bool_())
    return pa.StructArray.from_arrays(arrays, fields=struct_fields, mask=mask)


def arcion_cursor_array(texts: pa.Array) -> pa.StructArray:
    """Pure batch function behind ``arcion_cursor``: cursor texts -> ``ARCION_CURSOR_DDL``.

    Parameters
    ----------
    texts:
        A batch (not the whole column) of Arcion ``cursor`` JSON texts.

    Returns
    -------
    pyarrow.StructArray
        One struct per input (see :func:`udfs.formats.arcion_cursor.decode_cursor`):
        ``timestamp`` / ``extraction_timestamp`` as UTC timestamps (the cursor's epoch
        milliseconds), ``lag_ms`` their difference, ``log``, ``position``,
        ``log_seq_num``, ``server_id`` (``slaveServerId``) for MySQL sources, ``node_id``,
        ``dsc_id``, ``mut_id``, ``part_num`` for the others, ``version`` (``v``); fields a
        source does not write are null; every key not read (including the vendor doc's
        typos such as ``"extraction Timestamp"``) lands in ``unknown``.

    Notes
    -----
    A null input gives a null struct, and so does a malformed one (not a JSON object, a
    known integer field that is not an integer, or a number no bigint holds): a SQL
    function has no channel for a reason, and one bad text must not fail the query. The
    pipeline's quarantine keeps the reason for the records it decodes. ``"{}"`` is not
    malformed: it gives a struct of null fields (and an empty ``unknown``).
    """
    frame, valid = cursor_batch_masked(pd.Series(texts.to_pylist(), dtype=object))
    return _struct_array(frame, valid, ARCION_CURSOR_FIELDS)


def arcion_operationcount_array(texts: pa.Array) -> pa.StructArray:
    """Pure batch function behind ``arcion_operationcount``: -> ``ARCION_OPERATIONCOUNT_DDL``.

    ``insert_count``, ``update_count``, ``delete_count``, ``replace_count`` as bigints
    (null where the text lacks the count). A null or malformed input gives a null struct
    (see :func:`arcion_cursor_array`).
    """
    frame, valid = operationcount_batch_masked(pd.Series(texts.to_pylist(), dtype=object))
    return _struct_array(frame, valid, ARCION_OPERATIONCOUNT_FIELDS)


def columnar_feed(options_json: str) -> Callable[..., pa.StructArray] | None:
    """The columnar decoder a feed's rows go to (``Decoder.columnar_decoder``, e.g.
    :func:`udfs.formats.debezium_json_columnar.decode_debezium_columnar`), unless its
    feed option ``columnar`` is false; None for the record-by-record path (also for
    options that do not parse: ``decode_records`` quarantines their records with the
    reason)."""
    from udfs.decode import decoder_from_options

    try:
        decoder, _ = decoder_from_options(options_json)
    except (ValueError, KeyError, TypeError):
        return None
    if not decoder.columnar:
        return None
    module, _, function = decoder.columnar_decoder.partition(":")
    return getattr(importlib.import_module(module), function)


def reads_files(options_json: str) -> bool:
    """Whether the feed's columnar decoder takes each record's file and header row
    (``Decoder.columnar_reads_files``: Arcion internal CSV)."""
    from udfs.decode import decoder_from_options

    decoder, _ = decoder_from_options(options_json)
    return decoder.columnar_reads_files


def decode_array(
    options: pa.Array,
    text: pa.Array,
    kafka_key: pa.Array,
    source_file: pa.Array,
    header: pa.Array,
    decode_type: pa.DataType,
) -> pa.Array:
    """Pure batch function behind ``cdc_decode``: one ``decode_type`` result per row.

    The rows are grouped by their options (a batch nearly always holds one feed). A
    feed whose format has a columnar decoder (``debezium_json``, ``dts_shareplex_json``;
    unless its option ``columnar`` is false) is decoded by it on the Arrow slices of its
    rows (no Python object per row; the records it cannot do exactly go to
    ``decode_records`` inside it); every other feed's rows become Python values
    (``to_pylist``) for :func:`udfs.decode.decode_records`. The results are merged back
    in row order; both paths give the very same result.
    """
    import numpy as np
    import pyarrow.compute as pc

    n = len(text)
    if n == 0:
        return pa.array([], type=decode_type)
    groups = pc.fill_null(options.cast(pa.string()), "{}").dictionary_encode()
    codes = groups.indices.to_numpy(zero_copy_only=False)
    parts: list[pa.Array] = []
    rows: list[np.ndarray] = []
    for code, value in enumerate(groups.dictionary.to_pylist()):
        opts = value or "{}"  # as an empty options text always was
        idx = np.flatnonzero(codes == code)
        if not len(idx):
            continue
        take = pa.array(idx, type=pa.int64()) if len(idx) < n else None

        def part(column: pa.Array, take: pa.Array | None = take) -> pa.Array:
            return column if take is None else column.take(take)

        columnar = columnar_feed(opts)
        if columnar is not None:
            # a format that reads each record's file and header row takes them too
            more = {"source_files": part(source_file), "headers": part(header)} if reads_files(opts) else {}
            decoded = columnar(opts, part(text), part(kafka_key), **more)
        else:
            decoded = pa.array(
                decode_records(
                    opts,
                    part(text).to_pylist(),
                    part(kafka_key).to_pylist(),
                    part(source_file).to_pylist(),
                    part(header).to_pylist(),
                ),
                type=decode_type,
            )
        parts.append(decoded)
        rows.append(idx)
    if len(parts) == 1:
        return parts[0]
    inverse = np.empty(n, dtype=np.int64)
    inverse[np.concatenate(rows)] = np.arange(n)
    return pa.concat_arrays(parts).take(pa.array(inverse))


def decode_files_array(
    paths: pa.Array,
    framings: pa.Array,
    options: pa.Array,
    chunk: int = DECODE_CHUNK,
) -> pa.Array:
    """Pure batch function behind ``cdc_decode_files``: :func:`read_records_array` of the
    files, then :func:`decode_array` of their records (``chunk`` records at a time), as
    ``DECODED_RECORDS_DDL``: one list per file, null for a null path
    or framing, like ``cdc_read_records``.

    The same results as ``cdc_decode`` over the exploded ``cdc_read_records``: the
    record's options and file are its file's. A record with a framing ``error`` (no
    text) has a null ``result``: it is quarantined with that error.
    """
    import numpy as np
    import pyarrow.compute as pc

    records = read_records_array(paths.to_pylist(), framings.to_pylist(), options.to_pylist(), RECORDS_TYPE)
    values = records.flatten()
    lengths = pc.fill_null(pc.list_value_length(records), 0).to_numpy(zero_copy_only=False)
    owner = pa.array(np.repeat(np.arange(len(records), dtype=np.int64), lengths))
    struct = _decoded_records(values, options.take(owner), paths.take(owner), chunk)
    return pa.ListArray.from_arrays(records.offsets, struct, type=DECODED_RECORDS_TYPE, mask=records.is_null())


def decode_record_batches(
    paths: pa.Array,
    framings: pa.Array,
    options: pa.Array,
    chunk: int = DECODE_CHUNK,
    block_bytes: int = FILE_BLOCK_BYTES,
    whole_files: bool = False,
) -> Iterator[pa.RecordBatch]:
    """Pure function behind ``cdc_decode_records``: the records of each file (null path
    or framing: none), decoded as :func:`decode_files_array` decodes them, as record
    batches of ``DECODED_RECORD_ROWS_DDL`` of at most ``chunk`` rows, one file after
    the other.

    A ``lines`` or ``kcat`` file is read ``block_bytes`` at a time (:func:`line_file_records`),
    a ``kafka_parquet`` file ``KAFKA_BATCH_ROWS`` messages at a time
    (:func:`kafka_parquet_file_records`), a ``length_prefixed`` file by records until
    they hold ``block_bytes`` of base64 (:func:`length_prefixed_file_records`), a
    ``csv`` file ``block_bytes`` at a time, whole rows (:func:`csv_file_records`), a
    ``documents`` file ``block_bytes`` at a time, whole JSON values
    (:func:`documents_file_records`), so the worker holds one block, its records and
    one chunk's results whatever the file's size, and the file has no text limit (only
    a record does). ``whole_files``: every file read at
    once, as before 2026-11-26 (``bench.file_memory``'s reference).
    """
    struct_type: pa.StructType = RECORDS_TYPE.value_type
    for path, framing, opts in zip(paths.to_pylist(), framings.to_pylist(), options.to_pylist(), strict=True):
        if path is None or framing is None:
            continue
        if whole_files:
            parts: Iterable[pa.StructArray] = [read_records_array([path], [framing], [opts], RECORDS_TYPE).flatten()]
        elif framing in LINE_FRAMINGS:
            parts = line_file_records(path, framing, struct_type, block_bytes)
        elif framing == "kafka_parquet":
            parts = kafka_parquet_file_records(path, opts, struct_type)
        elif framing == "length_prefixed":
            parts = length_prefixed_file_records(path, struct_type, block_bytes)
        elif framing == "csv":
            parts = csv_file_records(path, opts, struct_type, block_bytes)
        elif framing == "documents":
            parts = documents_file_records(path, struct_type, block_bytes)
        else:  # a framing this function does not know: read_records_array's error
            parts = [read_records_array([path], [framing], [opts], RECORDS_TYPE).flatten()]
        for part in _chunks(parts, chunk):
            n = len(part)
            yield record_rows(path, _decoded_records(part, _repeat(opts, n), _repeat(path, n), n))


def _chunks(parts: Iterable[pa.StructArray], chunk: int) -> Iterator[pa.StructArray]:
    """The records of ``parts``, in order, ``chunk`` at a time (the last: the rest),
    whatever the parts' sizes (a block of lines holds any number of records).

    Each chunk is a copy (a few MB of text), not a slice: pyarrow 22's ``if_else`` over
    a sliced string array returns invalid offsets.
    """
    held: list[pa.StructArray] = []
    held_rows = 0
    for part in parts:
        start = 0
        while start < len(part):
            take = min(chunk - held_rows, len(part) - start)
            held.append(part.slice(start, take))
            held_rows += take
            start += take
            if held_rows == chunk:
                yield pa.concat_arrays(held)
                held, held_rows = [], 0
    if held_rows:
        yield pa.concat_arrays(held)


def line_file_records(
    path: str, framing: str, struct_type: pa.StructType, block_bytes: int
) -> Iterator[pa.StructArray]:
    """The records of a file of one record per line (``LINE_FRAMINGS``) as
    ``RECORDS_DDL``'s struct, a block of lines at a time
    (:func:`udfs.framing.line_blocks`): the records :func:`file_records_struct` cuts out
    of the whole file, numbered on from block to block, without its limit on the file's
    text. A line longer than ``MAX_FILE_TEXT_BYTES`` is one record with a framing error
    that says so (its text is not held); a file of more records than an ``int`` can
    number fails with a clear error.
    """
    with open_landing_file(local_path(path), framing) as fh:
        blocks = enumerate(line_blocks(fh, block_bytes, MAX_FILE_TEXT_BYTES))
        yield from _numbered_on(
            (
                _records_struct([RawRecord(0, None, error=_too_large("line", block))], struct_type)
                if isinstance(block, int)
                else _line_block_records(block, framing, struct_type, at_file_start=number == 0)
                for number, block in blocks
            ),
            path,
        )


def _too_large(what: str, size: int) -> str:
    """The reason of a record whose ``size`` bytes one record cannot hold."""
    return (
        f"{what} too large: {size:,} bytes, more than the {MAX_FILE_TEXT_BYTES:,} one record may hold "
        "(Arrow's 32-bit offsets)"
    )


def _numbered_on(parts: Iterable[pa.StructArray], path: str) -> Iterator[pa.StructArray]:
    """Parts of a file's records, each numbered from 0, numbered on from part to part
    (:func:`_numbered_from`; empty parts left out)."""
    index = 0
    for records in parts:
        if len(records):
            yield _numbered_from(records, index, path)
            index += len(records)


def kafka_parquet_file_records(path: str, opts: str | None, struct_type: pa.StructType) -> Iterator[pa.StructArray]:
    """The records of a ``kafka_parquet`` file (``RECORDS_DDL``'s struct),
    ``KAFKA_BATCH_ROWS`` messages at a time (:func:`udfs.framing.open_kafka_dump`): the
    records :func:`file_records_struct` cuts out of the whole file, without its limit on
    the file's text: a message whose text one record cannot hold is one quarantined
    record that says so (:func:`_kafka_batch_records`).

    A file that is not a Kafka dump is the one quarantined record ``file_records_struct``
    writes (the file as base64). A file whose footer reads but whose data fails further
    on (a damaged page) keeps the messages read before, then one quarantined record
    with the reader's error (without the file's bytes).
    """
    decoder_options = json.loads(opts) if opts else {}
    binary_values = _binary_values(decoder_options.get("format"))
    try:
        dump = open_kafka_dump(local_path(path))
    except KafkaParquetError:
        yield read_records_array([path], ["kafka_parquet"], [opts], RECORDS_TYPE).flatten()
        return
    index = 0
    columns = kafka_columns_to_read(dump.schema_arrow)
    with dump:
        # row group by row group: a damaged one loses no message of the ones before
        batches = (
            batch
            for group in range(dump.num_row_groups)
            for batch in dump.iter_batches(
                batch_size=KAFKA_BATCH_ROWS, row_groups=[group], columns=columns, use_threads=PARQUET_THREADS
            )
        )
        while True:
            try:
                batch = next(batches, None)
            except Exception as exc:  # noqa: BLE001 - a damaged file is quarantined, the run goes on
                reason = f"not parquet: {exc} (after {index:,} messages)"
                yield _numbered_from(_records_struct([RawRecord(0, None, error=reason)], struct_type), index, path)
                return
            if batch is None:
                return
            for records in _kafka_batch_records(
                kafka_dump_columns(pa.Table.from_batches([batch]), binary_values), struct_type
            ):
                if len(records):
                    yield _numbered_from(records, index, path)
                    index += len(records)


def _kafka_batch_records(columns: dict[str, pa.Array], struct_type: pa.StructType) -> Iterator[pa.StructArray]:
    """A batch of Kafka messages' columns (:func:`udfs.framing.kafka_dump_columns`) as
    records (:func:`_kafka_records`), in as many parts as their text needs to fit one
    Arrow string column: halves, then quarters... A single message past that limit is
    one quarantined record that says so, with its Kafka columns but no text (no
    ``raw_b64``): its neighbours decode as usual."""
    import pyarrow.compute as pc

    n = len(columns["text"])
    text_bytes = max(pc.sum(pc.binary_length(columns[name])).as_py() or 0 for name in ("text", "raw_b64"))
    if text_bytes <= MAX_FILE_TEXT_BYTES:
        yield _kafka_records(columns, struct_type)
    elif n == 1:
        reason = (
            f"message too large: {text_bytes:,} bytes of text, more than the {MAX_FILE_TEXT_BYTES:,} one record "
            "may hold (Arrow's 32-bit offsets)"
        )
        nothing = pa.nulls(1, pa.large_string())
        yield _kafka_records(
            {**columns, "text": nothing, "raw_b64": nothing, "error": pa.array([reason], pa.large_string())},
            struct_type,
        )
    else:
        for start, stop in ((0, n // 2), (n // 2, n)):
            half = {name: column.slice(start, stop - start) for name, column in columns.items()}
            yield from _kafka_batch_records(half, struct_type)


def csv_file_records(
    path: str, opts: str | None, struct_type: pa.StructType, block_bytes: int
) -> Iterator[pa.StructArray]:
    """The records of a ``csv`` file (``RECORDS_DDL``'s struct), a block of whole rows at
    a time (:func:`udfs.framing.csv_row_blocks`): the records :func:`file_records_struct`
    cuts out of the whole file, each with the header row's names (feed option
    ``header``), without its limit on the file's text. A row longer than
    ``MAX_FILE_TEXT_BYTES`` is one record with a framing error that says so; when that
    row is the header, the records that follow have no column names (their decoder
    quarantines them)."""
    decoder_options = json.loads(opts) if opts else {}
    header = bool((decoder_options.get("options") or {}).get("header", False))
    names: list[str] | None = None
    header_error = None

    def part(number: int, block: bytes | int) -> pa.StructArray:
        nonlocal names, header_error
        if isinstance(block, int):
            reason = _too_large("row", block) + ("; it is the header row" if header and number == 0 else "")
            return _records_struct([RawRecord(0, None, error=reason, header=names)], struct_type)
        rows = csv_rows(block, at_file_start=number == 0)
        if header and number == 0 and rows:
            (names, header_error), rows = csv_header(rows[0]), rows[1:]
        return _records_struct(csv_records(rows, names, header_error), struct_type)

    with open_landing_file(local_path(path), "csv") as fh:
        blocks = enumerate(csv_row_blocks(fh, block_bytes, MAX_FILE_TEXT_BYTES))
        yield from _numbered_on((part(number, block) for number, block in blocks), path)


def length_prefixed_file_records(path: str, struct_type: pa.StructType, block_bytes: int) -> Iterator[pa.StructArray]:
    """The records of a ``length_prefixed`` file (``RECORDS_DDL``'s struct), about
    ``block_bytes`` of values at a time (:func:`udfs.framing.length_prefixed_records`):
    the records :func:`file_records_struct` cuts out of the whole file, without its
    limit on the file's text. A record whose base64 one record cannot hold is one
    quarantined record that says so (no text); a file of more records than an ``int``
    can number fails with a clear error."""
    with open_sized_landing_file(local_path(path), "length_prefixed") as (fh, size):
        records = length_prefixed_records(fh, size, MAX_FILE_TEXT_BYTES)
        yield from _record_parts(records, struct_type, block_bytes, path)


def documents_file_records(path: str, struct_type: pa.StructType, block_bytes: int) -> Iterator[pa.StructArray]:
    """The records of a ``documents`` file (``RECORDS_DDL``'s struct), read
    ``block_bytes`` at a time (:func:`udfs.framing.document_records`): the records
    :func:`file_records_struct` cuts out of the whole file, without its limit on the
    file's text. When no JSON value ends within ``MAX_FILE_TEXT_BYTES``, they are one
    quarantined record that says so and the rest of the file is not read."""
    with open_landing_file(local_path(path), "documents") as fh:
        records = document_records(fh, block_bytes, MAX_FILE_TEXT_BYTES)
        yield from _record_parts(records, struct_type, block_bytes, path)


def _record_parts(
    records: Iterable[RawRecord], struct_type: pa.StructType, block_bytes: int, path: str
) -> Iterator[pa.StructArray]:
    """``records`` (numbered from 0, in file order) as struct arrays of records until
    they hold ``block_bytes`` of text, never more than ``MAX_FILE_TEXT_BYTES``; more
    records than an ``int`` numbers is an error."""
    held: list[RawRecord] = []
    held_bytes = 0
    for record in records:
        if record.record_index > MAX_RECORD_INDEX:
            raise _too_many_records(path)
        record_bytes = max(_utf8_bytes(record.text), _utf8_bytes(record.raw_b64))
        if held and held_bytes + record_bytes > MAX_FILE_TEXT_BYTES:  # a part must fit too
            yield _records_struct(held, struct_type)
            held, held_bytes = [], 0
        held.append(record)
        held_bytes += record_bytes
        if held_bytes >= block_bytes:
            yield _records_struct(held, struct_type)
            held, held_bytes = [], 0
    if held:
        yield _records_struct(held, struct_type)


def _utf8_bytes(text: str | None) -> int:
    if text is None:
        return 0
    return len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))


def _numbered_from(records: pa.StructArray, first: int, path: str) -> pa.StructArray:
    """``records`` (numbered from 0) numbered from ``first``: the part of a file read
    after ``first`` records. More records than an ``int`` numbers is an error."""
    import pyarrow.compute as pc

    if first + len(records) - 1 > MAX_RECORD_INDEX:
        raise _too_many_records(path)
    shifted = pc.add(records.field("record_index"), pa.scalar(first, pa.int32()))
    return pa.StructArray.from_arrays(
        [shifted if f.name == "record_index" else records.field(f.name) for f in records.type],
        fields=list(records.type),
    )


def _too_many_records(path: str) -> ValueError:
    return ValueError(
        f"{path}: more than {MAX_RECORD_INDEX + 1:,} records, more than record_index (an int) can number; "
        "split the file"
    )


def _line_block_records(block: bytes, framing: str, struct_type: pa.StructType, at_file_start: bool) -> pa.StructArray:
    """:func:`file_records_struct` of a block of whole lines."""
    if framing == "lines":
        part = valid_lines_struct(block, struct_type, at_file_start)
        return part if part is not None else _records_struct(split_lines(block, at_file_start), struct_type)
    part = kcat_struct(block, struct_type, at_file_start)
    return part if part is not None else _records_struct(split_kcat(block, at_file_start), struct_type)


def _repeat(value: str | None, n: int) -> pa.Array:
    return pa.repeat(pa.scalar(value, pa.string()), n)


def record_rows(source_file: str, decoded: pa.StructArray) -> pa.RecordBatch:
    """Decoded records of one file (``DECODED_RECORDS_DDL``'s struct), as rows of
    ``DECODED_RECORD_ROWS_DDL``."""
    return pa.RecordBatch.from_arrays(
        [_repeat(source_file, len(decoded)), *decoded.flatten()], names=["source_file", *(f.name for f in decoded.type)]
    )


def _decoded_records(values: pa.StructArray, rec_options: pa.Array, rec_files: pa.Array, chunk: int) -> pa.StructArray:
    """Records (``RECORDS_DDL``'s struct), each with its file's options and path, decoded
    ``chunk`` at a time: ``DECODED_RECORDS_DDL``'s struct, one per record."""
    import pyarrow.compute as pc

    text, raw_b64, error = values.field("text"), values.field("raw_b64"), values.field("error")
    parts = [
        decode_array(
            rec_options.slice(i, chunk),
            text.slice(i, chunk),
            values.field("kafka_key").slice(i, chunk),
            rec_files.slice(i, chunk),
            values.field("header").slice(i, chunk),
            DECODE_TYPE,
        )
        for i in range(0, len(values), chunk)
    ]
    result = pa.concat_arrays(parts) if parts else pa.array([], type=DECODE_TYPE)
    failed = pc.is_valid(error)
    quarantined = pc.or_(failed, pc.fill_null(pc.equal(pc.struct_field(result, "status"), "quarantined"), False))
    result = pc.if_else(failed, pa.scalar(None, DECODE_TYPE), result)
    raw_record = pc.if_else(quarantined, pc.coalesce(text, raw_b64), pa.scalar(None, pa.string()))
    raw_is_base64 = pc.if_else(quarantined, pc.is_valid(raw_b64), pa.scalar(None, pa.bool_()))
    columns = {
        "raw_record": raw_record,
        "raw_is_base64": raw_is_base64,
        "result": result,
    }
    struct_type: pa.StructType = DECODED_RECORDS_TYPE.value_type
    return pa.StructArray.from_arrays(
        [columns[f.name] if f.name in columns else values.field(f.name) for f in struct_type],
        fields=list(struct_type),
    )


WIDEST_TYPE_DDL = "struct<spark_type:string, conflict:string>"


def widest_type_array(declared: pa.Array) -> pa.StructArray:
    """Pure batch function behind ``cdc_widest_type`` (see :mod:`udfs.types`)."""
    results = [
        None if types is None else dict(zip(("spark_type", "conflict"), widest_type(types), strict=True))
        for types in declared.to_pylist()
    ]
    return pa.array(results, type=pa.struct([("spark_type", pa.string()), ("conflict", pa.string())]))


def _kill_if_asked() -> None:
    if os.environ.get("CDC_KILL_DURING_DECODE") == "1":
        # crash tests: the whole `cdc run` (its process group) dies while decoding
        import signal

        os.killpg(int(os.environ.get("CDC_DRIVER_PGID", os.getpgid(0))), signal.SIGKILL)


def register(spark: Any) -> None:
    """Register every ``cdc_`` and ``arcion_`` function in ``spark`` (idempotent)."""
    from pyspark.sql.functions import arrow_udf, arrow_udtf, udtf

    records_type, decode_type = RECORDS_TYPE, DECODE_TYPE

    @arrow_udf(RECORDS_DDL)  # type: ignore[misc]
    def cdc_read_records(path: pa.Array, framing: pa.Array, options: pa.Array) -> pa.Array:
        return read_records_array(path.to_pylist(), framing.to_pylist(), options.to_pylist(), records_type)

    @arrow_udf(DECODE_RESULT_DDL)  # type: ignore[misc]
    def cdc_decode(
        options: pa.Array, text: pa.Array, kafka_key: pa.Array, source_file: pa.Array, header: pa.Array
    ) -> pa.Array:
        _kill_if_asked()
        return decode_array(options, text, kafka_key, source_file, header, decode_type)

    @arrow_udf(DECODED_RECORDS_DDL)  # type: ignore[misc]
    def cdc_decode_files(path: pa.Array, framing: pa.Array, options: pa.Array) -> pa.Array:
        _kill_if_asked()
        return decode_files_array(path, framing, options)

    @arrow_udtf(returnType=DECODED_RECORD_ROWS_DDL)  # type: ignore[misc]
    class CdcDecodeRecords:
        def eval(self, files: pa.RecordBatch) -> Iterator[pa.RecordBatch]:
            _kill_if_asked()
            yield from decode_record_batches(
                files.column("source_file"), files.column("framing"), files.column("decoder_options")
            )

    @arrow_udf(ARCION_CURSOR_DDL)  # type: ignore[misc]
    def arcion_cursor(text: pa.Array) -> pa.Array:
        """Arcion ``cursor`` text -> typed struct; null for null or malformed input."""
        return arcion_cursor_array(text)

    @arrow_udf(ARCION_OPERATIONCOUNT_DDL)  # type: ignore[misc]
    def arcion_operationcount(text: pa.Array) -> pa.Array:
        """Arcion ``operationcount`` text -> bigint counts; null for null or malformed input."""
        return arcion_operationcount_array(text)

    @arrow_udf(WIDEST_TYPE_DDL)  # type: ignore[misc]
    def cdc_widest_type(declared: pa.Array) -> pa.Array:
        """Declared Spark types of a column -> the mart type and the conflict, if any."""
        return widest_type_array(declared)

    @udtf(returnType=LIST_FILES_DDL)  # type: ignore[misc]
    class CdcListFiles:
        def eval(self, root: str) -> Iterator[tuple[str, int, int]]:
            yield from list_files(root)

    spark.udf.register("cdc_read_records", cdc_read_records)
    spark.udf.register("cdc_decode", cdc_decode)
    spark.udf.register("cdc_decode_files", cdc_decode_files)
    spark.udf.register("arcion_cursor", arcion_cursor)
    spark.udf.register("arcion_operationcount", arcion_operationcount)
    spark.udf.register("cdc_widest_type", cdc_widest_type)
    spark.udtf.register("cdc_list_files", CdcListFiles)
    spark.udtf.register("cdc_decode_records", CdcDecodeRecords)
