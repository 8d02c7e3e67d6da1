"""A ``csv`` landing file read a block of whole rows at a time (what
``cdc_decode_records`` does) gives the records of the whole file read at once.

* :func:`udfs.framing.csv_row_blocks`: the blocks put back together are the file; each
  but the last ends after a row (a newline inside quotes does not end one, a doubled
  quote counts twice); a row longer than the limit comes as its length, and the rows
  after it are still found (the quotes are counted while it is skipped);
* :func:`udfs.spark_udfs.csv_file_records` at block sizes from 1 byte to more than the
  file, with and without a header row: the records of ``file_records_struct`` over
  the whole file (quoted newlines and quotes, CRLF, blank rows, a BOM only at the start
  of the file, bytes that are not UTF-8, no final newline, a quote left open), each
  with the header's names, numbered on from block to block;
* the limit moves from the file to the row: a file past it decodes record by record, a
  row past it (also a quoted one of many lines, and the header row) is one quarantined
  record that says so between its neighbours.

The limit is lowered for the tests (monkeypatch); no Spark session.
"""

from __future__ import annotations

import io
import json
import random

import pyarrow as pa
import pytest

import udfs.spark_udfs as spark_udfs
from udfs.framing import csv_row_blocks, csv_rows
from udfs.spark_udfs import RECORDS_TYPE, csv_file_records, file_records_struct

STRUCT = RECORDS_TYPE.value_type
BOM = b"\xef\xbb\xbf"

#: every case a block boundary can cut through
TRICKY = b"".join(
    [
        BOM + b"id,name,note\r\n",
        b'1,"a, b","line one\nline two"\r\n',
        b"\n",
        b'2,"say ""hi""\n""again""",x\n',
        "3,\u00e9\u4e2d\U0001f600,\n".encode(),
        b"4,\xff\xfe not utf-8,y\n",
        b'5,"' + b"q\n" * 20 + b'",z\n',
        BOM + b"6,BOM not at the start of the file,\n",
        b'7,"""",""\n',
        b'8,"open quote to the end\nof the file',
    ]
)
CLOSED = TRICKY.rsplit(b"\n8,", 1)[0] + b"\n8,last,no final newline"


def _options(header: bool) -> str:
    return json.dumps({"format": "arcion_internal_csv", "options": {"header": header}})


def _records(content: bytes, header: bool, block_bytes: int, tmp_path) -> list[dict]:
    path = tmp_path / "file.csv"
    path.write_bytes(content)
    parts = list(csv_file_records(str(path), _options(header), STRUCT, block_bytes))
    assert all(len(p) for p in parts)
    return pa.concat_arrays(parts).to_pylist() if parts else []


def _whole(content: bytes, header: bool) -> list[dict]:
    return file_records_struct(content, "csv", _options(header), STRUCT).to_pylist()


@pytest.mark.parametrize("content", [TRICKY, CLOSED], ids=["open quote", "closed"])
@pytest.mark.parametrize("block_bytes", [1, 2, 7, 64, 10**6])
def test_blocks_are_the_file_cut_after_rows(content, block_bytes) -> None:
    blocks = list(csv_row_blocks(io.BytesIO(content), block_bytes, 10**6))
    assert b"".join(blocks) == content
    rows = [csv_rows(block, at_file_start=i == 0) for i, block in enumerate(blocks)]
    assert [row for part in rows for row in part] == csv_rows(content)
    assert all(block.endswith(b"\n") for block in blocks[:-1])


@pytest.mark.parametrize("header", [True, False])
@pytest.mark.parametrize("block_bytes", [1, 2, 7, 64, 10**6])
def test_by_blocks_the_records_are_the_whole_files(tmp_path, header, block_bytes) -> None:
    for content in (TRICKY, CLOSED, b"", b"id\n", BOM, b"\n\n"):
        got = _records(content, header, block_bytes, tmp_path)
        assert got == _whole(content, header), content
    records = _records(TRICKY, True, block_bytes, tmp_path)
    assert [r["record_index"] for r in records] == list(range(8))
    assert {tuple(r["header"]) for r in records} == {("id", "name", "note")}
    assert records[1]["text"] == '2,"say ""hi""\n""again""",x'
    assert records[3]["error"] == "invalid UTF-8 at byte 2"
    assert records[-1]["text"] == '8,"open quote to the end\nof the file'


def test_random_files(tmp_path) -> None:
    rng = random.Random(7)
    cells = ["a", '""', '"x\ny"', '"q""q"', "\u00e9", "", '"', '"\r\n"']
    for _ in range(60):
        rows = [",".join(rng.choice(cells) for _ in range(rng.randint(1, 4))) for _ in range(rng.randint(0, 12))]
        content = "\n".join(rows).encode() + rng.choice([b"", b"\n", b"\r\n"])
        header = rng.random() < 0.5
        expected = _whole(content, header)
        for block_bytes in (1, 5, 30):
            assert _records(content, header, block_bytes, tmp_path) == expected, content


def test_a_file_past_the_text_limit_is_decoded_record_by_record(tmp_path, monkeypatch) -> None:
    whole = _whole(CLOSED, True)
    longest = max(len(r["text"] or r["raw_b64"]) for r in whole) + 2
    monkeypatch.setattr(spark_udfs, "MAX_FILE_TEXT_BYTES", longest)
    assert _records(CLOSED, True, longest, tmp_path) == whole
    (too_large,) = _whole(CLOSED, True)
    assert too_large["error"].startswith("file too large: ")


def test_a_row_past_the_limit_is_one_quarantined_record(tmp_path, monkeypatch) -> None:
    """The quoted row of 20 lines (5) passes the limit: one record that says so, and
    the rows after it are still cut right (its quotes were counted while skipped)."""
    whole = _whole(CLOSED, True)
    monkeypatch.setattr(spark_udfs, "MAX_FILE_TEXT_BYTES", 40)
    got = _records(CLOSED, True, 16, tmp_path)
    big = 4
    assert len(got) == len(whole)
    assert got[:big] + got[big + 1 :] == whole[:big] + whole[big + 1 :]
    assert got[big]["error"] == (
        f"row too large: {len(whole[big]['text']):,} bytes, more than the 40 one record may hold "
        "(Arrow's 32-bit offsets)"
    )
    assert (got[big]["text"], got[big]["header"], got[big]["record_index"]) == (None, ["id", "name", "note"], big)


def test_a_header_row_past_the_limit(tmp_path, monkeypatch) -> None:
    content = b"id," + b"x" * 50 + b"\n1,a\n2,b\n"
    monkeypatch.setattr(spark_udfs, "MAX_FILE_TEXT_BYTES", 40)
    got = _records(content, True, 8, tmp_path)
    assert [(r["record_index"], r["text"], r["header"]) for r in got] == [
        (0, None, None),
        (1, "1,a", None),
        (2, "2,b", None),
    ]
    assert got[0]["error"].startswith("row too large: 53 bytes, ") and got[0]["error"].endswith(
        "; it is the header row"
    )


def test_a_header_row_python_csv_cannot_read_quarantines_every_record(tmp_path) -> None:
    """A header row with a newline in a value that is not quoted (``a"b\\nc"``, one row
    by RFC-4180's quote count): read whole, the run failed with ``_csv.Error``; now every
    record keeps its text and the reason, in both reads, and is quarantined."""
    from udfs.spark_udfs import decode_files_array

    content = b'id,a"b\nc"\n1,x\n2,y\n'
    whole = _whole(content, True)
    assert [(r["text"], r["header"]) for r in whole] == [("1,x", None), ("2,y", None)]
    assert {r["error"] for r in whole} == {
        "the header row is not CSV: new-line character seen in unquoted field - do you need to open the file in "
        "universal-newline mode?"
    }
    for block_bytes in (1, 4, 100):
        assert _records(content, True, block_bytes, tmp_path) == whole
    path = tmp_path / "file.csv"
    path.write_bytes(content)
    decoded = decode_files_array(
        *(pa.array([v], pa.string()) for v in (str(path), "csv", _options(True)))
    ).values.to_pylist()
    assert [(r["raw_record"], r["result"]) for r in decoded] == [("1,x", None), ("2,y", None)]
