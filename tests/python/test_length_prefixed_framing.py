"""The ``length_prefixed`` framing: binary records one after another, each a 4-byte
big-endian length and that many bytes, read one record at a time.

* ``split_length_prefixed`` (the whole file) gives what cutting the bytes by their
  prefixes gives (``_cut``, the plain formulation), for random files that end cleanly,
  inside a prefix or inside a value;
* ``length_prefixed_file_records`` (what ``cdc_decode_records`` reads, about a block of
  base64 at a time) gives the whole file's records at every block size, numbered on;
* with the limit lowered: a file past it decodes record by record, in parts that fit
  whatever the block size (read whole, it is one "file too large" record); a record
  past it is one quarantined record that says so, its neighbours as usual; a truncated
  rest past it keeps its error without its bytes; more records than ``record_index``
  numbers is a clear error;
* a file that shrinks while read is an error, not a truncated record.

No Spark session.
"""

from __future__ import annotations

import base64
import io
import random

import pyarrow as pa
import pytest

import udfs.spark_udfs as spark_udfs
from udfs.framing import RawRecord, length_prefixed_records, split_length_prefixed
from udfs.spark_udfs import RECORDS_TYPE, file_records_struct, length_prefixed_file_records

STRUCT = RECORDS_TYPE.value_type


def _cut(content: bytes) -> list[RawRecord]:
    """The records by slicing ``content`` at its prefixes: the reference."""
    out: list[RawRecord] = []
    pos = 0
    while pos < len(content):
        if pos + 4 > len(content):
            rest = base64.b64encode(content[pos:]).decode()
            out.append(RawRecord(len(out), None, error="truncated: length prefix cut short", raw_b64=rest))
            break
        size = int.from_bytes(content[pos : pos + 4], "big")
        if pos + 4 + size > len(content):
            left = len(content) - pos - 4
            rest = base64.b64encode(content[pos:]).decode()
            out.append(RawRecord(len(out), None, error=f"truncated: {size} bytes announced, {left} left", raw_b64=rest))
            break
        text = base64.b64encode(content[pos + 4 : pos + 4 + size]).decode()
        out.append(RawRecord(len(out), text, raw_b64=text))
        pos += 4 + size
    return out


def _prefixed(values: list[bytes]) -> bytes:
    return b"".join(len(v).to_bytes(4, "big") + v for v in values)


def _random_file(rng: random.Random) -> bytes:
    values = [rng.randbytes(rng.choice([0, 1, 2, 3, 5, 40, 300])) for _ in range(rng.randint(0, 30))]
    content = _prefixed(values)
    ending = rng.choice(["clean", "in a prefix", "in a value", "huge length"])
    if ending == "in a prefix":
        content += rng.randbytes(rng.randint(1, 3))
    elif ending == "in a value":
        content += rng.randint(10, 1000).to_bytes(4, "big") + rng.randbytes(rng.randint(0, 9))
    elif ending == "huge length":
        content += (2**32 - 1).to_bytes(4, "big") + rng.randbytes(rng.randint(0, 20))
    return content


def _streamed(content: bytes, tmp_path, block_bytes: int) -> list[dict]:
    path = tmp_path / "values.bin"
    path.write_bytes(content)
    parts = list(length_prefixed_file_records(str(path), STRUCT, block_bytes))
    assert all(len(p) for p in parts)
    return pa.concat_arrays(parts).to_pylist() if parts else []


def test_the_whole_file_is_cut_at_its_prefixes() -> None:
    rng = random.Random(3)
    for _ in range(300):
        content = _random_file(rng)
        assert split_length_prefixed(content) == _cut(content)


@pytest.mark.parametrize("block_bytes", [1, 50, 400, 2**20])
def test_read_by_blocks_the_records_are_the_whole_files(tmp_path, block_bytes) -> None:
    rng = random.Random(block_bytes)
    for _ in range(60):
        content = _random_file(rng)
        got = _streamed(content, tmp_path, block_bytes)
        assert got == file_records_struct(content, "length_prefixed", None, STRUCT).to_pylist()
        assert [r["record_index"] for r in got] == list(range(len(got)))
    (tmp_path / "values.bin").write_bytes(_prefixed([b"x" * 30] * 10))
    sizes = [len(p) for p in length_prefixed_file_records(str(tmp_path / "values.bin"), STRUCT, block_bytes)]
    # 30 bytes are 40 of base64: a block holds whole records until it holds block_bytes
    assert sizes == {1: [1] * 10, 50: [2] * 5, 400: [10], 2**20: [10]}[block_bytes]


@pytest.mark.parametrize("block_bytes", [10, 2**20])
def test_a_file_past_the_text_limit_is_decoded_record_by_record(tmp_path, monkeypatch, block_bytes) -> None:
    """Also when a block is larger than the limit: a part holds what fits (2 records)."""
    content = _prefixed([b"a" * 30, b"b" * 30, b"c" * 30])  # 40 bytes of base64 each
    whole = file_records_struct(content, "length_prefixed", None, STRUCT).to_pylist()
    monkeypatch.setattr(spark_udfs, "MAX_FILE_TEXT_BYTES", 100)
    assert _streamed(content, tmp_path, block_bytes) == whole
    parts = length_prefixed_file_records(str(tmp_path / "values.bin"), STRUCT, block_bytes)
    assert [len(p) for p in parts] == ([1, 1, 1] if block_bytes == 10 else [2, 1])
    (too_large,) = file_records_struct(content, "length_prefixed", None, STRUCT).to_pylist()
    assert too_large["error"].startswith("file too large: its records hold 120 bytes")  # (text and raw_b64 alike)


def test_a_record_past_the_limit_is_one_quarantined_record(tmp_path, monkeypatch) -> None:
    values = [b"a" * 30, b"b" * 31, b"c" * 3]  # base64: 40, 44, 4 bytes
    content = _prefixed(values)
    whole = file_records_struct(content, "length_prefixed", None, STRUCT).to_pylist()
    monkeypatch.setattr(spark_udfs, "MAX_FILE_TEXT_BYTES", 40)
    got = _streamed(content, tmp_path, 10)
    assert [got[0], got[2]] == [whole[0], whole[2]]
    assert (got[1]["record_index"], got[1]["text"], got[1]["raw_b64"]) == (1, None, None)
    assert got[1]["error"] == (
        "record too large: 31 bytes (44 as base64), more than the 40 one record may hold (Arrow's 32-bit offsets)"
    )


def test_a_truncated_rest_past_the_limit_keeps_its_error_without_its_bytes(tmp_path, monkeypatch) -> None:
    content = _prefixed([b"ok"]) + (1000).to_bytes(4, "big") + b"x" * 60  # the rest: 64 bytes, 88 as base64
    whole = file_records_struct(content, "length_prefixed", None, STRUCT).to_pylist()
    assert whole[1]["error"] == "truncated: 1000 bytes announced, 60 left" and whole[1]["raw_b64"]
    monkeypatch.setattr(spark_udfs, "MAX_FILE_TEXT_BYTES", 87)
    got = _streamed(content, tmp_path, 10)
    assert got == [whole[0], {**whole[1], "raw_b64": None}]
    monkeypatch.setattr(spark_udfs, "MAX_FILE_TEXT_BYTES", 88)
    assert _streamed(content, tmp_path, 10) == whole


def test_more_records_than_record_index_numbers_is_a_clear_error(tmp_path, monkeypatch) -> None:
    (tmp_path / "values.bin").write_bytes(_prefixed([b"v"] * 7))
    monkeypatch.setattr(spark_udfs, "MAX_RECORD_INDEX", 6)
    assert len(_streamed(_prefixed([b"v"] * 7), tmp_path, 3)) == 7
    monkeypatch.setattr(spark_udfs, "MAX_RECORD_INDEX", 5)
    with pytest.raises(ValueError, match="more than 6 records, more than record_index"):
        _streamed(_prefixed([b"v"] * 7), tmp_path, 3)


def test_a_file_that_shrinks_while_read_is_an_error() -> None:
    content = _prefixed([b"12345"])
    with pytest.raises(OSError, match="ended 2 bytes before its size, 9: it changed"):
        list(length_prefixed_records(io.BytesIO(content[:-2]), len(content)))
