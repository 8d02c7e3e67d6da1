"""A ``lines`` landing file read a block at a time (what ``cdc_decode_records`` does
since 2026-11-26) gives the records of the whole file read at once.

* :func:`udfs.framing.line_blocks`: the blocks put back together are the file; each
  ends after a ``\\n`` (the last: at the end of the file); a block holds at most
  ``max(block_bytes, its longest line + 1)`` bytes; a line longer than the limit comes
  as its length and reading goes on after it;
* :func:`udfs.spark_udfs.line_file_records` at block sizes from 1 byte to more than
  the file, ``lines`` and ``kcat``: the records of ``file_records_struct`` over the
  whole file, numbered on from block to block (a BOM only at the start of the file,
  CRLF lines and bad lines that take the ``split_lines`` / ``split_kcat`` path, a line
  that is not UTF-8, blank lines, no final newline);
* the limit moves from the file to the line: a file whose text passes the limit is
  decoded record by record by ``decode_record_batches`` (``decode_files_array`` still
  makes it one framing error), a line past it is one quarantined record between its
  neighbours; more records than ``record_index`` can number is a clear error.

The limits are lowered for the tests (monkeypatch); no Spark session.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import pyarrow as pa
import pytest

import udfs.spark_udfs as spark_udfs
from udfs.framing import line_blocks
from udfs.spark_udfs import (
    RECORDS_TYPE,
    decode_files_array,
    decode_record_batches,
    file_records_struct,
    line_file_records,
)

STRUCT = RECORDS_TYPE.value_type
BOM = b"\xef\xbb\xbf"

#: every case a block boundary can cut through
TRICKY = b"".join(
    [
        BOM + b'{"a": 1}\n',
        b"\n",
        b"   \n",
        '{"s": "\u00e9\u4e2d\U0001f600"}\n'.encode(),
        b"\xff\xfe not utf-8\n",
        b'{"long": "' + b"x" * 40 + b'"}\n',
        BOM + b'{"bom": "not at the start of the file"}\n',
        b'{"crlf": 1}\r\n',
        b'{"last": "no final newline"}',
    ]
)


#: the same for ``kcat`` (``kcat -C -J`` lines), with lines the fast path leaves to
#: ``split_kcat`` (not JSON, no payload)
TRICKY_KCAT = b"".join(
    [
        BOM + b'{"topic": "t", "partition": 0, "offset": 1, "ts": 5, "key": "k", "payload": "{}"}\n',
        b"\n",
        '{"topic": "t", "offset": 2, "payload": "\u00e9\u4e2d\U0001f600"}\n'.encode(),
        BOM + b'{"topic": "t", "offset": 9, "payload": "BOM not at the start of the file"}\n',
        b'{"topic": "t", "offset": 3, "payload": null}\r\n',
        b"not json\n",
        b'{"offset": 4}\n',
        b"\xff\xfe not utf-8\n",
        b'{"offset": 5, "payload": "' + b"x" * 40 + b'"}',
    ]
)
CONTENTS = {"lines": TRICKY, "kcat": TRICKY_KCAT}


def _blocks(content: bytes, block_bytes: int, max_line_bytes: int = 10**6) -> list[bytes | int]:
    return list(line_blocks(io.BytesIO(content), block_bytes, max_line_bytes))


@pytest.mark.parametrize("block_bytes", [1, 2, 3, 5, 7, 16, 64, len(TRICKY), len(TRICKY) + 1])
def test_blocks_put_back_together_are_the_file(block_bytes) -> None:
    blocks = _blocks(TRICKY, block_bytes)
    assert all(isinstance(b, bytes) and b for b in blocks)
    assert b"".join(blocks) == TRICKY  # type: ignore[arg-type]
    assert all(b.endswith(b"\n") for b in blocks[:-1])  # type: ignore[union-attr]
    longest = max(len(line) + 1 for line in TRICKY.split(b"\n"))
    assert max(len(b) for b in blocks) <= max(block_bytes, longest)  # type: ignore[arg-type]


def test_no_blocks_of_an_empty_file() -> None:
    assert _blocks(b"", 4) == []


def test_a_line_past_the_limit_comes_as_its_length() -> None:
    content = b"ab\n" + b"y" * 25 + b"\ncd\n" + b"z" * 11
    for block_bytes in (1, 4, 10):
        blocks = _blocks(content, block_bytes, max_line_bytes=10)
        assert [b for b in blocks if isinstance(b, int)] == [25, 11], block_bytes
        assert b"".join(b for b in blocks if isinstance(b, bytes)) == b"ab\ncd\n", block_bytes
    with pytest.raises(ValueError, match="block_bytes 11 is more than max_line_bytes 10"):
        _blocks(content, 11, max_line_bytes=10)


@pytest.mark.parametrize("framing", list(CONTENTS))
@pytest.mark.parametrize("block_bytes", [1, 3, 7, 16, 64, len(TRICKY) + 1])
def test_records_of_the_blocks_are_the_records_of_the_file(tmp_path, framing, block_bytes) -> None:
    content = CONTENTS[framing]
    path = tmp_path / "tricky.json"
    path.write_bytes(content)
    whole = file_records_struct(content, framing, None, STRUCT)
    parts = list(line_file_records(str(path), framing, STRUCT, block_bytes))
    assert all(len(p) for p in parts)
    got = pa.concat_arrays(parts)
    assert got.to_pylist() == whole.to_pylist()
    assert got.type == STRUCT


def test_what_the_tricky_files_hold() -> None:
    """The whole files' records, which the blocks must give: the BOM dropped once, CRLF
    cut, blank lines skipped, a bad line quarantined between its neighbours."""
    lines = file_records_struct(TRICKY, "lines", None, STRUCT).to_pylist()
    texts = [r["text"] for r in lines]
    assert texts[0] == '{"a": 1}' and '\ufeff{"bom": "not at the start of the file"}' in texts
    assert '{"crlf": 1}' in texts and texts[2] is None and lines[2]["error"] == "invalid UTF-8 at byte 0"
    assert [r["record_index"] for r in lines] == list(range(7))
    kcat = file_records_struct(TRICKY_KCAT, "kcat", None, STRUCT).to_pylist()
    assert [r["kafka_offset"] for r in kcat] == [1, 2, None, 3, None, None, None, 5]
    assert (kcat[0]["text"], kcat[0]["kafka_key"], kcat[3]["text"]) == ("{}", "k", None)
    assert [bool(r["error"]) for r in kcat] == [False, False, True, False, True, True, True, False]


def _debezium_file(tmp_path: Path) -> tuple[str, str, int]:
    from bench.data import FORMAT_CASES, tables_config, write_dataset

    case = FORMAT_CASES["debezium_json"]
    data = write_dataset(case, tmp_path / "landing", 60, seed=3, per_file=60)
    (file,) = data.files
    tables = {name: {"key": spec["key"]} for name, spec in tables_config([case]).items()}
    options = json.dumps({"format": "debezium_json", "framing": "lines", "options": {}, "tables": tables})
    return str(file), options, file.stat().st_size


def _rows(batches: list[pa.RecordBatch]) -> list[dict]:
    return pa.Table.from_batches(batches).drop(["source_file"]).to_pylist()


def test_a_file_past_the_text_limit_is_decoded_record_by_record(tmp_path, monkeypatch) -> None:
    path, options, size = _debezium_file(tmp_path)
    arrays = [pa.array([v], pa.string()) for v in (path, "lines", options)]
    expected = decode_files_array(*arrays).flatten().to_pylist()
    assert len(expected) == 60 and all(r["error"] is None for r in expected)

    longest = max(len(line) for line in Path(path).read_bytes().split(b"\n"))
    monkeypatch.setattr(spark_udfs, "MAX_FILE_TEXT_BYTES", longest)
    assert size > 2 * longest
    (whole,) = decode_files_array(*arrays).to_pylist()
    assert [r["error"][:15] for r in whole] == ["file too large:"]
    for block_bytes in (512, longest):
        batches = list(decode_record_batches(*arrays, block_bytes=block_bytes))
        assert _rows(batches) == expected, block_bytes


def test_a_line_past_the_limit_is_one_quarantined_record(tmp_path, monkeypatch) -> None:
    path, options, _ = _debezium_file(tmp_path)
    lines = Path(path).read_bytes().split(b"\n")
    longest = max(len(line) for line in lines)
    long_line = b'{"padding": "' + b"p" * longest + b'"}'
    Path(path).write_bytes(b"\n".join([*lines[:30], long_line, *lines[30:]]))
    arrays = [pa.array([v], pa.string()) for v in (path, "lines", options)]
    with_long = _rows(list(decode_record_batches(*arrays)))

    monkeypatch.setattr(spark_udfs, "MAX_FILE_TEXT_BYTES", longest + 1)
    got = _rows(list(decode_record_batches(*arrays, block_bytes=1000)))
    assert [r["record_index"] for r in got] == list(range(61))
    assert got[30]["error"] == (
        f"line too large: {len(long_line):,} bytes, more than the {longest + 1:,} one record may hold "
        "(Arrow's 32-bit offsets)"
    )
    assert (got[30]["result"], got[30]["raw_record"]) == (None, None)
    # the neighbours decode as they do with the line in the file
    assert got[:30] + got[31:] == with_long[:30] + with_long[31:]
    assert with_long[30]["result"]["status"] == "quarantined"


def test_more_records_than_record_index_numbers_is_a_clear_error(tmp_path, monkeypatch) -> None:
    path = tmp_path / "seven.json"
    path.write_bytes(b"{}\n" * 7)
    monkeypatch.setattr(spark_udfs, "MAX_RECORD_INDEX", 6)
    assert [r["record_index"] for p in line_file_records(str(path), "lines", STRUCT, 4) for r in p.to_pylist()] == list(
        range(7)
    )
    monkeypatch.setattr(spark_udfs, "MAX_RECORD_INDEX", 5)
    with pytest.raises(ValueError, match=r"seven\.json: more than 6 records, more than record_index \(an int\)"):
        list(line_file_records(str(path), "lines", STRUCT, 4))
