"""A ``documents`` landing file (JSON values one after another, pretty-printed) read a
block at a time (what ``cdc_decode_records`` does) gives the records of the whole file
read at once.

* :func:`udfs.framing.document_records` at block sizes from 1 byte to more than the
  file gives what the whole text cut by ``raw_decode`` gives (``_reference``, the
  implementation before 2026-11-26): values cut across blocks, a number at a block's
  end (``12`` then ``34``), characters of 2 to 4 bytes and bytes that are not UTF-8
  split between blocks, a BOM only at the start, and a value that cannot be parsed
  making the rest of the file one record whose reason counts line, column and char
  from the start of the file (also nested too deeply);
* every cut of a random valid value reads on (``_maybe_cut_short``), while an error
  found away from the end of what was read is final: the rest of the file is read a
  block at a time, and past the limit its reason stays the syntax error;
* :func:`udfs.spark_udfs.documents_file_records`: the records of
  ``file_records_struct`` over the whole file, numbered on from part to part;
* the limit moves from the file to the value: a file past it decodes record by
  record; when no value ends within it, one quarantined record says so and the rest of
  the file is not read; the rest of a file that cannot be parsed, past it, keeps its
  reason without its text.

The limit is lowered for the tests (monkeypatch); no Spark session.
"""

from __future__ import annotations

import io
import json
import random

import pyarrow as pa
import pytest

import udfs.spark_udfs as spark_udfs
from udfs.framing import RawRecord, _escaped, document_records, split_documents, strip_bom
from udfs.spark_udfs import RECORDS_TYPE, documents_file_records, file_records_struct

STRUCT = RECORDS_TYPE.value_type
BOM = b"\xef\xbb\xbf"


def _reference(content: bytes) -> list[RawRecord]:
    """The whole text cut by ``raw_decode``: ``split_documents`` as it was written
    before the file was read by blocks."""
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


TRICKY = b"".join(
    [
        BOM,
        b'{\n  "op": "c",\n  "after": {"id": 1, "s": "\\u00e9 \\"q\\" \\n"}\n}\n',
        b"12 34\n",
        '{"s": "\u00e9\u4e2d\U0001f600"}'.encode(),
        b"  \r\n\t",
        b'{"bad utf-8": "\xff\xfe"}\n',
        b"[1, 2.5e3, -0, true, false, null]",
        b'"a string"  \n',
        b'{"last": 1}\n',
        BOM + b'{"after a BOM": "not JSON"}',
    ]
)


def _random_file(rng: random.Random) -> bytes:
    values = [
        '{"a": 1}',
        '{\n  "k": [1, {"x": "y"}],\n  "s": "\\u00e9\\n"\n}',
        "123",
        "-4.5e-3",
        '"\u00e9\u4e2d\U0001f600"',
        "true",
        "null",
        "[]",
        '{"s": "\\ud800"}',
    ]
    parts = [rng.choice(values) for _ in range(rng.randint(0, 10))]
    content = "".join(p + rng.choice([" ", "\n", "\r\n", "\n\n  ", ""]) for p in parts).encode()
    ending = rng.choice(["", "garbage", "cut", "deep", "bad utf-8", "bom"])
    if ending == "garbage":
        content += b"\n{oops}\n" + b'{"after": 1}'
    elif ending == "cut":
        content += b'{"cut": "sh'
    elif ending == "deep":
        content += b"[" * 100_000
    elif ending == "bad utf-8":
        content += b'"\xc3"\n"\xe4\xb8"'
    elif ending == "bom":
        content = BOM + content
    return content


def _records(content: bytes, block_bytes: int, max_text_bytes: int | None = None) -> list[RawRecord]:
    return list(document_records(io.BytesIO(content), block_bytes, max_text_bytes))


@pytest.mark.parametrize("block_bytes", [1, 2, 3, 7, 64, 10**6])
def test_read_by_blocks_the_values_are_the_whole_texts(block_bytes) -> None:
    assert _records(TRICKY, block_bytes) == _reference(TRICKY)
    *values, after_bom = _reference(TRICKY)
    assert [v.text for v in values][1:3] == ["12", "34"] and values[-1].text == '{"last": 1}' and len(values) == 8
    assert values[4].error == "invalid UTF-8 at byte 15" and after_bom.text == '\ufeff{"after a BOM": "not JSON"}'
    assert after_bom.error == "not JSON: Expecting value: line 10 column 1 (char 163)"
    rng = random.Random(block_bytes)
    for _ in range(150):
        content = _random_file(rng)
        assert _records(content, block_bytes) == _reference(content), content
    assert split_documents(TRICKY) == _reference(TRICKY)


@pytest.mark.parametrize("block_bytes", [1, 5, 10**6])
def test_an_error_counts_its_position_from_the_start_of_the_file(block_bytes) -> None:
    content = b'{"a": 1}\n\n  {"b":\n 2}  {"c": 3,\n  "d": oops}\n{"e": 5}'
    *good, bad = _records(content, block_bytes)
    assert [r.text for r in good] == ['{"a": 1}', '{"b":\n 2}']
    assert bad.error == "not JSON: Expecting value: line 5 column 8 (char 39)"
    assert bad.text == '{"c": 3,\n  "d": oops}\n{"e": 5}' and bad.record_index == 2
    assert [bad] == _reference(content)[2:]
    same_line = b'  {"a": 1} {"b": oops}'  # the bad value's line starts before it
    assert _records(same_line, block_bytes)[1].error == "not JSON: Expecting value: line 1 column 18 (char 17)"
    assert _records(same_line, block_bytes) == _reference(same_line)
    (deep,) = _records(b" " + b"[" * 100_000, block_bytes)
    assert deep.error == "not JSON: nested too deeply" and deep.text == "[" * 100_000


@pytest.mark.parametrize("block_bytes", [1, 9, 2**20])
def test_the_file_records_are_the_whole_files(tmp_path, block_bytes) -> None:
    rng = random.Random(block_bytes + 1)
    path = tmp_path / "documents.json"
    for content in [TRICKY, b"", BOM, b"  \n", *(_random_file(rng) for _ in range(40))]:
        path.write_bytes(content)
        parts = list(documents_file_records(str(path), STRUCT, block_bytes))
        got = pa.concat_arrays(parts).to_pylist() if parts else []
        assert got == file_records_struct(content, "documents", None, STRUCT).to_pylist(), content


def test_a_file_past_the_text_limit_is_decoded_record_by_record(tmp_path, monkeypatch) -> None:
    content = b"".join(b'{"i": %d, "pad": "%s"}\n' % (i, b"x" * 20) for i in range(6))  # 34 bytes a value
    whole = file_records_struct(content, "documents", None, STRUCT).to_pylist()
    monkeypatch.setattr(spark_udfs, "MAX_FILE_TEXT_BYTES", 80)
    path = tmp_path / "documents.json"
    path.write_bytes(content)
    parts = list(documents_file_records(str(path), STRUCT, 2**20))
    assert [len(p) for p in parts] == [2, 2, 2]  # a part holds what fits
    assert pa.concat_arrays(parts).to_pylist() == whole
    (too_large,) = file_records_struct(content, "documents", None, STRUCT).to_pylist()
    assert too_large["error"].startswith("file too large: ")


@pytest.mark.parametrize("block_bytes", [1, 16])
def test_no_value_ending_within_the_limit_is_one_record_and_the_end_of_the_read(block_bytes) -> None:
    content = b'{"a": 1}\n{"long": "' + b"x" * 100 + b'"}\n{"b": 2}'
    first, too_large = _records(content, block_bytes, max_text_bytes=60)
    assert first.text == '{"a": 1}'
    assert (too_large.record_index, too_large.text, too_large.raw_b64) == (1, None, None)
    assert too_large.error.startswith("document too large: no value ends within ")
    assert " bytes from char 9, more than the 60 one record may hold (Arrow's 32-bit offsets)" in too_large.error
    assert too_large.error.endswith("; the rest of the file is not read")


def test_the_rest_of_a_file_that_cannot_be_parsed_past_the_limit_keeps_its_reason() -> None:
    content = b'{"a": 1}\n{oops' + b"x" * 100
    first, rest = _records(content, 1000, max_text_bytes=60)
    assert first.text == '{"a": 1}' and (rest.text, rest.raw_b64) == (None, None)
    assert rest.error == (
        "not JSON: Expecting property name enclosed in double quotes: line 2 column 2 (char 10); the rest of the "
        "file holds 105 bytes, more than the 60 one record may hold (Arrow's 32-bit offsets)"
    )
    assert [r.error for r in _records(content, 1000, max_text_bytes=105)] == [
        None,
        "not JSON: Expecting property name enclosed in double quotes: line 2 column 2 (char 10)",
    ]


def _json_value(rng: random.Random, depth: int = 0) -> str:
    """A random JSON value as Python's ``json`` reads it (``NaN`` and ``Infinity`` too),
    with whitespace, escapes and characters of 1 to 4 bytes."""
    kind = rng.randrange(10 if depth < 4 else 7)
    if kind == 0:
        return rng.choice(["true", "false", "null", "NaN", "Infinity", "-Infinity"])
    if kind == 1:
        return rng.choice([str(rng.randint(-(10**30), 10**30)), "-0.5e-10", "1.25E+300", "-0", "12.75e12", "7e5"])
    if kind <= 6:
        pieces = ["a", "é", "\\n", '\\"', "\\\\", "\\u00e9", "\\ud83d\\ude00", "中", "😀", " ", "\\/", "\\t"]
        return '"' + "".join(rng.choice(pieces) for _ in range(rng.randint(0, 12))) + '"'
    space = ["", " ", "\n  ", "\t", "\r\n"]
    items = [rng.choice(space) + _json_value(rng, depth + 1) + rng.choice(space) for _ in range(rng.randint(0, 4))]
    if kind <= 8:
        return "[" + ",".join(items) + rng.choice(space) + "]"
    keys = [rng.choice(space) + _json_value(rng, 9) + rng.choice(space) for _ in items]
    keys = [k if k.strip().startswith('"') else ' "k" ' for k in keys]
    return "{" + ",".join(f"{k}:{v}" for k, v in zip(keys, items, strict=True)) + rng.choice(space) + "}"


def test_every_value_cut_short_is_read_on() -> None:
    """Wherever a block ends inside a value, ``raw_decode``'s error says it may be cut
    short (the reader reads on), for every kind of token."""
    from udfs.framing import _maybe_cut_short

    rng = random.Random(7)
    decoder = json.JSONDecoder()
    cuts = 0
    for _ in range(1500):
        value = _json_value(rng)
        json.loads(value)  # a valid value
        for end in range(1, len(value)):
            try:
                decoder.raw_decode(value[:end])
            except ValueError as exc:
                cuts += 1
                assert _maybe_cut_short(exc, end), (value[:end], exc)
    assert cuts > 10_000


@pytest.mark.parametrize("block_bytes", [16, 64])
def test_an_error_is_final_where_it_is_found_and_the_rest_is_read_a_block_at_a_time(block_bytes) -> None:
    """A file whose value cannot be parsed (far from the end of what was read) is not
    read on as if the value were cut short: its reason is the syntax error (not "no
    value ends"), and the rest of the file is read a block at a time."""

    class Reads(io.BytesIO):
        def __init__(self, content: bytes) -> None:
            super().__init__(content)
            self.sizes: list[int] = []

        def read(self, size: int = -1) -> bytes:
            self.sizes.append(size)
            return super().read(size)

    content = b'{"a": 1}\n{oops' + b"x" * 1000
    stream = Reads(content)
    first, rest = document_records(stream, block_bytes, max_text_bytes=60)
    assert first.text == '{"a": 1}' and (rest.text, rest.raw_b64) == (None, None)
    assert rest.error == (
        "not JSON: Expecting property name enclosed in double quotes: line 2 column 2 (char 10); the rest of the "
        "file holds 1,005 bytes, more than the 60 one record may hold (Arrow's 32-bit offsets)"
    )
    assert max(stream.sizes) == block_bytes and stream.tell() == len(content)
    assert _records(content, block_bytes) == _reference(content)  # no limit: the rest is the record's text
