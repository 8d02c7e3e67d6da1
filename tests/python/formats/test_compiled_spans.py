"""The compiled byte-span loops of ``udfs.formats.compiled`` against plain Python slicing."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from udfs.formats.columnar import buffers, gather, skip_ws, validate
from udfs.formats.compiled import gather_spans, json_array_of, starts_with_at


def as_bytes(data: bytes) -> np.ndarray:
    return np.frombuffer(data, dtype=np.uint8)


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=64), st.data())
def test_gather_spans_is_slicing(data: bytes, draw: st.DataObject) -> None:
    n = draw.draw(st.integers(0, 8))
    spans = [sorted(draw.draw(st.lists(st.integers(0, len(data)), min_size=2, max_size=2))) for _ in range(n)]
    valid = draw.draw(st.lists(st.booleans(), min_size=n, max_size=n))
    starts = np.array([s for s, _ in spans], dtype=np.int64)
    ends = np.array([e for _, e in spans], dtype=np.int64)
    offs, out = gather_spans(as_bytes(data), starts, ends, np.array(valid, dtype=bool))
    pieces = [data[s:e] if v else b"" for (s, e), v in zip(spans, valid, strict=True)]
    assert bytes(out) == b"".join(pieces)
    assert np.diff(offs).tolist() == [len(p) for p in pieces]
    offs, out = gather_spans(as_bytes(data), starts, ends)
    assert bytes(out) == b"".join(data[s:e] for s, e in spans)


def test_gather_keeps_nulls_and_unicode() -> None:
    data = "a\u00e9\nb\U0001f600c".encode()
    got = gather(as_bytes(data), np.array([0, 1, 4, 0]), np.array([1, 4, 9, 0]), np.array([True, True, True, False]))
    assert got.to_pylist() == ["a", "\u00e9\n", "b\U0001f600", None]
    assert got.null_count == 1
    assert gather(as_bytes(b""), np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)).to_pylist() == []


def test_json_array_of() -> None:
    texts = [b'{"a": 1}', b" [2] ", b'"x"']
    b = as_bytes(b"".join(texts))
    off = np.cumsum([0] + [len(t) for t in texts])
    assert bytes(json_array_of(b, off)) == b'[{"a": 1}, [2] ,"x"]'
    assert bytes(json_array_of(b[:8], off[:2])) == b'[{"a": 1}]'
    assert bytes(json_array_of(b[:0], off[:1])) == b"[]"


def test_validate_tells_each_text() -> None:
    # a text is valid only as one whole JSON value: two values, a truncated one, an
    # empty text and one that would close the batch's array early are not
    texts = ['{"a": 1}', '{"a": 1} {"b": 2}', '{"a": ', "", "1], [2", ' "\u00e9" ', "[]"]
    arr = pa.array(texts, pa.string())
    b, off = buffers(arr)
    first = skip_ws(b, off[:-1], off[1:])
    assert validate(b, off, first).tolist() == [True, False, False, False, False, True, True]


def test_starts_with_at() -> None:
    b = as_bytes(b'xx{"type":"struct"}yy{"type":"strucT"}')
    got = starts_with_at(b, np.array([2, 21, 0, -1, 36]), b'{"type":"struct"}')
    assert got.tolist() == [True, False, False, False, False]
