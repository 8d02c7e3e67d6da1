"""The ``kafka_parquet`` framing: a parquet dump of Kafka messages, as Spark's Kafka
source writes one, cut into records column by column.

* every message is one record in file order; a null value is a tombstone;
* the ``timestamp`` column becomes exact bigint milliseconds whatever its unit, a
  timestamp without a time zone read as UTC (never through a float: before, one
  message in about 170 lost a millisecond);
* a value that is not UTF-8 quarantines its record (a binary format gets base64); a
  key that is not UTF-8 is no key;
* a file that is not a Kafka dump is one quarantined record that names the problem;
* ``cdc_read_records``' column path (``kafka_parquet_struct``) gives exactly the
  records of ``split_file``;
* read a batch at a time, row group by row group, as ``cdc_decode_records`` reads a
  dump (``kafka_parquet_file_records``): the records of the whole file at every batch
  size, a file that is not a dump the same one record (checked before the first batch,
  also a range error in the last row group), a damaged page the messages before it
  and one quarantined record.
"""

from __future__ import annotations

import base64
import io
import json
import random
from datetime import UTC, datetime

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from test_properties import RECORDS_TYPE

from udfs.framing import split_file
from udfs.spark_udfs import file_records_struct, kafka_parquet_struct

STRUCT = RECORDS_TYPE.value_type
AVRO_OPTIONS = json.dumps({"format": "dts_avro"})
JSON_OPTIONS = json.dumps({"format": "debezium_json"})


def _parquet(columns: dict[str, pa.Array]) -> bytes:
    out = io.BytesIO()
    pq.write_table(pa.table(columns), out)
    return out.getvalue()


def _parquet_of(names: list[str], arrays: list[pa.Array]) -> bytes:
    """A parquet file whose columns may repeat a name (``pa.table`` of a dict cannot)."""
    out = io.BytesIO()
    pq.write_table(pa.Table.from_arrays(arrays, names=names), out)
    return out.getvalue()


def _dump(values: list[bytes | None], **extra: pa.Array) -> bytes:
    n = len(values)
    columns = {
        "key": pa.array([None] * n, pa.binary()),
        "value": pa.array(values, pa.binary()),
        "topic": pa.array(["t"] * n),
        "partition": pa.array([0] * n, pa.int32()),
        "offset": pa.array(range(n), pa.int64()),
    }
    columns.update(extra)
    return _parquet(columns)


def _records(content: bytes, options: str = JSON_OPTIONS) -> list[dict]:
    """The records as ``cdc_read_records`` builds them, checked against ``split_file``."""
    binary = json.loads(options)["format"] == "dts_avro"
    reference = pa.array([r.__dict__ for r in split_file(content, "kafka_parquet", {}, binary)], type=STRUCT)
    built = file_records_struct(content, "kafka_parquet", options, STRUCT)
    assert built.equals(reference)
    return reference.to_pylist()


MS_PER_UNIT = {"s": (1000, 1), "ms": (1, 1), "us": (1, 1000), "ns": (1, 1_000_000)}


@pytest.mark.parametrize("unit", ["s", "ms", "us", "ns"])
@pytest.mark.parametrize("tz", ["UTC", "Asia/Shanghai", None])
def test_timestamps_are_exact_milliseconds(unit, tz):
    rng = random.Random(f"{unit}{tz}")
    limit = {"s": 10**11, "ms": 10**14, "us": 10**17, "ns": 9 * 10**18}[unit]
    counts = [0, 1, -1, 999, -999, 1000, -1001, limit - 1, -limit]
    counts += [rng.randrange(-limit, limit) for _ in range(3000)]
    if unit == "ms":
        counts.append(2176914361503)  # 2038-12-25: float seconds * 1000 truncated it to ...502
    content = _dump([b"{}"] * (len(counts) + 1), timestamp=pa.array([*counts, None], pa.timestamp(unit, tz=tz)))
    mul, div = MS_PER_UNIT[unit]
    expected = [c * mul // div for c in counts]  # Python integers: floor division, exact
    got = [r["kafka_timestamp_ms"] for r in _records(content)]
    assert got == [*expected, None]


def test_integer_timestamps_are_taken_as_milliseconds():
    content = _dump([b"{}", b"{}"], timestamp=pa.array([1_700_000_000_123, None], pa.int64()))
    assert [r["kafka_timestamp_ms"] for r in _records(content)] == [1_700_000_000_123, None]


def test_spark_kafka_source_layout_with_naive_timestamp_is_utc():
    """What a Spark job writing its Kafka source to parquet lands: INT96 timestamps,
    read back by pyarrow without a time zone, are UTC instants."""
    at = datetime(2024, 2, 29, 23, 59, 59, 999000, tzinfo=UTC)
    ms = int(at.timestamp()) * 1000 + 999
    table = pa.table(
        {
            "key": pa.array([b'{"id":1}'], pa.binary()),
            "value": pa.array([b'{"op":"c"}'], pa.binary()),
            "topic": ["shop"],
            "partition": pa.array([7], pa.int32()),
            "offset": pa.array([2**62], pa.int64()),
            "timestamp": pa.array([ms * 1000], pa.timestamp("us")),
            "timestampType": pa.array([0], pa.int32()),
        }
    )
    out = io.BytesIO()
    pq.write_table(table, out, use_deprecated_int96_timestamps=True)
    (record,) = _records(out.getvalue())
    assert record == {
        "record_index": 0,
        "text": '{"op":"c"}',
        "error": None,
        "raw_b64": None,
        "kafka_key": '{"id":1}',
        "kafka_topic": "shop",
        "kafka_partition": 7,
        "kafka_offset": 2**62,
        "kafka_timestamp_ms": ms,
        "header": None,
    }


def test_values_keys_and_tombstones():
    values = [b'{"a":"\xc3\xa9"}', None, b'{"a":"\xff"}', b"", "😀\n".encode()]
    keys = [b"k\xc3\xa9", b"\xfe", None, b"", b"k"]
    content = _dump(values, key=pa.array(keys, pa.binary()))
    records = _records(content)
    assert [r["record_index"] for r in records] == [0, 1, 2, 3, 4]
    assert [r["text"] for r in records] == ['{"a":"é"}', None, None, "", "😀\n"]
    assert [r["error"] for r in records] == [None, None, "invalid UTF-8 at byte 6", None, None]
    assert records[2]["raw_b64"] == base64.b64encode(values[2]).decode()
    assert [r["raw_b64"] for r in records[:2] + records[3:]] == [None] * 4
    assert [r["kafka_key"] for r in records] == ["ké", None, None, "", "k"]


def test_binary_values_are_base64_text():
    values = [b"\x00\xff\x10", None, b"", bytes(range(256))]
    records = _records(_dump(values), AVRO_OPTIONS)
    expected = [None if v is None else base64.b64encode(v).decode() for v in values]
    assert [r["text"] for r in records] == expected
    assert [r["raw_b64"] for r in records] == expected
    assert [r["error"] for r in records] == [None] * 4


def test_text_columns_of_type_string_and_missing_metadata():
    content = _parquet({"value": pa.array(["x", None, "é"]), "key": pa.array(["k", None, "é"])})
    records = _records(content)
    assert [(r["text"], r["kafka_key"]) for r in records] == [("x", "k"), (None, None), ("é", "é")]
    assert {(r["kafka_topic"], r["kafka_partition"], r["kafka_offset"], r["kafka_timestamp_ms"]) for r in records} == {
        (None, None, None, None)
    }


NOT_A_DUMP = [
    (b"PAR1 not really", "not parquet: "),
    (_parquet({"payload": pa.array([b"{}"])}), "not a Kafka dump: no 'value' column (columns: payload)"),
    (_parquet({"value": pa.array([1, 2])}), "column 'value' is int64, not binary or text"),
    (_parquet({"value": pa.array([b"{}"]), "topic": pa.array([b"t"])}), "column 'topic' is binary, not text"),
    (_parquet({"value": pa.array([b"{}"]), "key": pa.array([1.5])}), "column 'key' is double, not binary or text"),
    (_parquet({"value": pa.array([b"{}"]), "partition": pa.array(["0"])}), "column 'partition' is string, not an"),
    (
        _parquet({"value": pa.array([b"{}", b"{}"]), "partition": pa.array([0, 2**31], pa.int64())}),
        "column 'partition' holds 0..2147483648, beyond 32-bit integers",
    ),
    (
        _parquet({"value": pa.array([b"{}"]), "offset": pa.array([2**63], pa.uint64())}),
        "column 'offset' holds 9223372036854775808..9223372036854775808, beyond 64-bit integers",
    ),
    (
        _parquet({"value": pa.array([b"{}"]), "timestamp": pa.array(["2024-01-01"])}),
        "column 'timestamp' is string, not a timestamp",
    ),
    (
        _parquet_of(["value", "value"], [pa.array([b"{}"]), pa.array([b"{}"])]),
        "not a Kafka dump: column 'value' appears 2 times",
    ),
    (
        _parquet_of(["value", "offset", "offset"], [pa.array([b"{}"]), pa.array([1]), pa.array([2])]),
        "not a Kafka dump: column 'offset' appears 2 times",
    ),
]


@pytest.mark.parametrize(("content", "reason"), NOT_A_DUMP)
@pytest.mark.parametrize("options", [JSON_OPTIONS, AVRO_OPTIONS])
def test_a_file_that_is_not_a_kafka_dump_is_one_quarantined_record(content, reason, options):
    (record,) = _records(content, options)
    assert record["error"].startswith(reason), record["error"]
    assert record["text"] is None
    assert base64.b64decode(record["raw_b64"]) == content
    assert kafka_parquet_struct(content, options, STRUCT) is None  # split_file writes that record


def test_columns_a_record_is_not_made_of_are_not_read(tmp_path, monkeypatch):
    """The Kafka source's ``headers`` and ``timestampType``, and any other column, even
    one whose name repeats (which ``pq.read_table`` cannot read), leave the records
    as they are without them."""
    values, offsets = pa.array([b'{"a":1}', None, b"{}"]), pa.array([5, 6, 7], pa.int64())
    headers = pa.array(
        [[{"key": "h", "value": b"v"}], [], None], pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())]))
    )
    plain = _parquet_of(["value", "offset"], [values, offsets])
    extra = _parquet_of(
        ["headers", "value", "x", "offset", "x", "timestampType"],
        [headers, values, pa.array([1, 2, 3]), offsets, pa.array(["a", "b", "c"]), pa.array([0, 0, 1], pa.int32())],
    )
    assert _records(extra) == _records(plain)
    assert _batched(extra, JSON_OPTIONS, tmp_path, monkeypatch, 2) == _records(plain)


def _damaged_dump() -> bytes:
    """A dump of 10 messages in two row groups whose footer reads but whose second row
    group's page header is damaged."""
    out = io.BytesIO()
    values = pa.array([f'{{"i":{i}}}'.encode() for i in range(10)], pa.binary())
    pq.write_table(pa.table({"value": values}), out, row_group_size=5, compression="none", use_dictionary=False)
    damaged = bytearray(out.getvalue())
    page = pq.ParquetFile(io.BytesIO(bytes(damaged))).metadata.row_group(1).column(0).data_page_offset
    damaged[page : page + 8] = b"\xff" * 8
    return bytes(damaged)


@pytest.mark.parametrize("damaged", [False, True], ids=["dump", "damaged"])
def test_reading_a_dump_whole_lets_the_interpreter_exit(tmp_path, damaged):
    """``cdc_read_records`` reads a dump whole (``read_kafka_dump``). With pyarrow's
    threads, a process that exited right after that read aborted (pyarrow 22,
    "terminate called without an active exception", exit code 134): 7 runs in 10
    through ``pq.read_table``; after a damaged file 12 in 12 through
    ``ParquetFile.read``. Five clean exits in a row show the read leaves no thread
    behind."""
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from udfs.framing import KafkaParquetError, read_kafka_dump\n"
        "try:\n"
        "    read_kafka_dump(open(sys.argv[1], 'rb').read())\n"
        "except KafkaParquetError as exc:\n"
        "    print(exc)\n"
    )
    path = tmp_path / "dump.parquet"
    path.write_bytes(_damaged_dump() if damaged else _parquet({"value": pa.array([b"{}"] * 3)}))
    for _ in range(5):
        done = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr[-2000:]
        assert done.stdout.startswith("not parquet: ") == damaged, done.stdout


def test_random_dumps_agree_with_split_file():
    """Random files of every column type the Kafka source may write (and chunked, dictionary-encoded
    texts): the column path gives exactly ``split_file``'s records."""
    rng = random.Random(5)
    texts = [b"{}", b'{"a":"\xc3\xa9"}', b"\xff", b"", b"\n", None]
    for _ in range(200):
        n = rng.randint(0, 30)
        columns = {"value": pa.array([rng.choice(texts) for _ in range(n)], pa.binary())}
        if rng.random() < 0.7:
            key_type = rng.choice([pa.binary(), pa.large_binary()])
            columns["key"] = pa.array([rng.choice(texts) for _ in range(n)], key_type)
        if rng.random() < 0.7:
            topic = pa.array([rng.choice(["a", "b", None]) for _ in range(n)], pa.string())
            columns["topic"] = topic.dictionary_encode() if rng.random() < 0.5 else topic
        if rng.random() < 0.7:
            itype = rng.choice([pa.int8(), pa.int32(), pa.int64(), pa.uint16()])
            columns["partition"] = pa.array([rng.choice([0, 1, 100, None]) for _ in range(n)], itype)
        if rng.random() < 0.7:
            columns["offset"] = pa.array([rng.choice([0, 2**40, -1, None]) for _ in range(n)], pa.int64())
        if rng.random() < 0.7:
            unit = rng.choice(["s", "ms", "us", "ns"])
            stamps = [rng.choice([None, rng.randrange(-(10**12), 10**12)]) for _ in range(n)]
            columns["timestamp"] = pa.array(stamps, pa.timestamp(unit, tz=rng.choice([None, "UTC"])))
        content = _parquet(columns)
        for options in (JSON_OPTIONS, AVRO_OPTIONS):
            records = _records(content, options)
            assert len(records) == n


def test_a_large_dump_keeps_every_message():
    """50,000 messages: every one a record in order (the per-message cut once cost the
    square of the file's messages: minutes at this size)."""
    n = 50_000
    content = _dump([f'{{"i":{i}}}'.encode() for i in range(n)])
    records = _records(content)
    assert len(records) == n
    assert [r["kafka_offset"] for r in records] == list(range(n))
    assert records[-1]["text"] == f'{{"i":{n - 1}}}'


# --- read a batch at a time, as cdc_decode_records reads a dump -----------------------


def _batched(content: bytes, options: str, tmp_path, monkeypatch, batch_rows: int) -> list[dict]:
    """The records of ``kafka_parquet_file_records`` (``batch_rows`` messages a batch),
    checked to be the whole file's (``file_records_struct``)."""
    import udfs.spark_udfs as spark_udfs
    from udfs.spark_udfs import kafka_parquet_file_records

    path = tmp_path / "dump.parquet"
    path.write_bytes(content)
    monkeypatch.setattr(spark_udfs, "KAFKA_BATCH_ROWS", batch_rows)
    parts = list(kafka_parquet_file_records(str(path), options, STRUCT))
    assert all(len(p) and len(p) <= max(batch_rows, 1) for p in parts)
    got = pa.concat_arrays(parts) if parts else pa.array([], STRUCT)
    assert got.to_pylist() == file_records_struct(content, "kafka_parquet", options, STRUCT).to_pylist()
    return got.to_pylist()


@pytest.mark.parametrize(("content", "reason"), NOT_A_DUMP)
def test_a_file_that_is_not_a_dump_is_the_same_record_read_by_batches(tmp_path, monkeypatch, content, reason):
    (record,) = _batched(content, JSON_OPTIONS, tmp_path, monkeypatch, 1)
    assert record["error"].startswith(reason) and base64.b64decode(record["raw_b64"]) == content


def test_an_integer_out_of_range_in_the_last_row_group_quarantines_the_whole_file(tmp_path, monkeypatch):
    """The ranges are checked over the whole file before the first batch: the file is
    one quarantined record, as read whole, not its first row groups' messages."""
    n = 30
    columns = {"value": pa.array([b"{}"] * n), "partition": pa.array([0] * (n - 1) + [2**31], pa.int64())}
    out = io.BytesIO()
    pq.write_table(pa.table(columns), out, row_group_size=7)
    (record,) = _batched(out.getvalue(), JSON_OPTIONS, tmp_path, monkeypatch, 7)
    assert record["error"] == "column 'partition' holds 0..2147483648, beyond 32-bit integers"


@pytest.mark.parametrize("batch_rows", [1, 7, 1000])
def test_random_dumps_of_many_row_groups_read_by_batches(tmp_path, monkeypatch, batch_rows):
    rng = random.Random(batch_rows)
    texts = [b"{}", b'{"a":"\xc3\xa9"}', b"\xff", b"", None]
    for _ in range(40):
        n = rng.randint(0, 60)
        columns = {
            "key": pa.array([rng.choice(texts) for _ in range(n)], pa.binary()),
            "value": pa.array([rng.choice(texts) for _ in range(n)], pa.binary()),
            "topic": pa.array([rng.choice(["a", None]) for _ in range(n)], pa.string()).dictionary_encode(),
            "partition": pa.array([rng.choice([0, 3, None]) for _ in range(n)], pa.int32()),
            "offset": pa.array(range(n), pa.int64()),
            "timestamp": pa.array([rng.randrange(10**12) for _ in range(n)], pa.timestamp("us", tz="UTC")),
        }
        out = io.BytesIO()
        pq.write_table(pa.table(columns), out, row_group_size=rng.randint(1, 20))
        for options in (JSON_OPTIONS, AVRO_OPTIONS):
            records = _batched(out.getvalue(), options, tmp_path, monkeypatch, batch_rows)
            assert [r["record_index"] for r in records] == list(range(n))
            assert [r["kafka_offset"] for r in records] == list(range(n))


def test_a_damaged_page_keeps_the_messages_before_it_and_quarantines_the_rest(tmp_path):
    """A dump whose footer reads but whose second row group's page header is damaged
    (``_damaged_dump``): the first row group's messages, then one quarantined record
    with the reader's error. Run in a child process, whose clean exit is checked too
    (see ``test_reading_a_dump_whole_lets_the_interpreter_exit``)."""
    import subprocess
    import sys

    path = tmp_path / "damaged.parquet"
    path.write_bytes(_damaged_dump())
    code = (
        "import json, sys\n"
        "from udfs.spark_udfs import RECORDS_TYPE, kafka_parquet_file_records\n"
        "parts = kafka_parquet_file_records(sys.argv[1], sys.argv[2], RECORDS_TYPE.value_type)\n"
        "print(json.dumps([r for p in parts for r in p.to_pylist()]), flush=True)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(path), JSON_OPTIONS], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0 and done.stdout.strip(), done.stderr[-3000:]
    records = json.loads(done.stdout)
    assert [(r["record_index"], r["text"]) for r in records[:5]] == [(i, f'{{"i":{i}}}') for i in range(5)]
    (last,) = records[5:]
    assert last["record_index"] == 5 and last["text"] is None and last["raw_b64"] is None
    assert last["error"].startswith("not parquet: ") and last["error"].endswith("(after 5 messages)"), last


@pytest.mark.parametrize("options", [JSON_OPTIONS, AVRO_OPTIONS])
def test_a_batch_past_the_text_limit_is_cut_and_a_message_past_it_quarantined(tmp_path, monkeypatch, options):
    """With the limit lowered to 40 bytes: a batch of 10 messages (about 100 bytes of
    text) is cut in parts that fit, and gives the whole file's records at the usual
    limit; a message of 41 bytes (JSON) or one whose base64 passes 40 bytes (Avro) is
    one quarantined record that says so, with its Kafka columns and no text, at its
    place. The whole file read at once is, as before, one "file too large" record."""
    import udfs.spark_udfs as spark_udfs
    from udfs.spark_udfs import kafka_parquet_file_records

    values = [f'{{"i":{i}}}'.encode() for i in range(10)]
    big = 5
    values[big] = b'{"s":"' + b"x" * (41 - 8) + b'"}'
    text_bytes = len(base64.b64encode(values[big])) if options == AVRO_OPTIONS else len(values[big])
    content = _dump(values, key=pa.array([f"k{i}".encode() for i in range(10)], pa.binary()))
    expected = _records(content, options)
    path = tmp_path / "dump.parquet"
    path.write_bytes(content)
    monkeypatch.setattr(spark_udfs, "KAFKA_BATCH_ROWS", 10)
    monkeypatch.setattr(spark_udfs, "MAX_FILE_TEXT_BYTES", 40)
    parts = list(kafka_parquet_file_records(str(path), options, STRUCT))
    assert len(parts) > 2
    got = pa.concat_arrays(parts).to_pylist()
    assert [r["record_index"] for r in got] == list(range(10))
    assert got[:big] + got[big + 1 :] == expected[:big] + expected[big + 1 :]
    assert got[big] == {
        **expected[big],
        "text": None,
        "raw_b64": None,
        "error": f"message too large: {text_bytes:,} bytes of text, more than the 40 one record may hold "
        "(Arrow's 32-bit offsets)",
    }
    assert got[big]["kafka_key"] == "k5" and got[big]["kafka_offset"] == big
    (whole,) = file_records_struct(content, "kafka_parquet", options, STRUCT).to_pylist()
    assert whole["error"].startswith("file too large: ")
