"""The compiled tokenizer (``udfs.formats.compiled``) against a reference written the
other way: numpy over the whole batch (the columnar decoders' tokenizer before it was
compiled), on hand-written texts and on random JSON (hypothesis)."""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from udfs.formats.columnar import (
    CLOSE_ARR,
    CLOSE_OBJ,
    COLON,
    IS_WS,
    K_ARR,
    K_FALSE,
    K_FRAC,
    K_INT,
    K_NULL,
    K_OBJ,
    K_STR,
    K_TRUE,
    OPEN_ARR,
    OPEN_OBJ,
    STRUCT_CLASS,
    Tokens,
    buffers,
)
from udfs.formats.compiled import string_texts, string_texts_both


def reference_tokens(b: np.ndarray, off: np.ndarray) -> dict[str, np.ndarray]:
    """Every token array by whole-batch numpy passes and binary searches."""
    qpos = np.flatnonzero(b == 34)
    bpos = np.flatnonzero(b == 92)
    if len(bpos):  # a quote after an odd run of backslashes is escaped
        cand = qpos[(qpos > 0) & (b[np.maximum(qpos - 1, 0)] == 92)]
        if len(cand):
            brk = np.flatnonzero(np.diff(bpos) != 1) + 1
            run_start = np.zeros(len(bpos), dtype=np.int64)
            run_start[brk] = brk
            np.maximum.accumulate(run_start, out=run_start)
            i = np.searchsorted(bpos, cand - 1)
            escaped = cand[(i - run_start[i] + 1) % 2 == 1]
            qpos = np.delete(qpos, np.searchsorted(qpos, escaped))
    str_bs = np.zeros(len(qpos) // 2, dtype=bool)
    if len(bpos):
        str_bs[(np.searchsorted(qpos, bpos) - 1) // 2] = True
    spos = np.flatnonzero(STRUCT_CLASS[b] > 0)
    spos = spos[np.searchsorted(qpos, spos) % 2 == 0]
    scls = STRUCT_CLASS[b[spos]]
    delta = np.zeros(len(spos), dtype=np.int32)
    delta[(scls == OPEN_OBJ) | (scls == OPEN_ARR)] = 1
    delta[(scls == CLOSE_OBJ) | (scls == CLOSE_ARR)] = -1
    after = np.cumsum(delta, dtype=np.int32)
    level = np.where(delta == 1, after, after - delta)
    colons = np.flatnonzero(scls == COLON)
    openers = np.flatnonzero(scls == OPEN_OBJ)
    parent = np.full(len(colons), -1, dtype=np.int64)
    for lev in np.unique(level[colons]):
        o = openers[level[openers] == lev]
        m = level[colons] == lev
        parent[m] = o[np.searchsorted(spos[o], spos[colons[m]]) - 1]
    crec = np.searchsorted(off, spos[colons], side="right") - 1
    # names: the string closing right before each colon
    qi = np.searchsorted(qpos, spos[colons]) - 1
    # values: the first byte after the colon's whitespace
    p = spos[colons] + 1
    while len(p) and (m := IS_WS[b[np.minimum(p, len(b) - 1)]] & (p < len(b))).any():
        p[m] += 1
    c = b[p]
    kind = np.full(len(colons), K_INT, dtype=np.int8)
    for char, k in ((b'"', K_STR), (b"{", K_OBJ), (b"[", K_ARR), (b"t", K_TRUE), (b"f", K_FALSE), (b"n", K_NULL)):
        kind[c == char[0]] = k
    start, end = p.copy(), p.copy()
    vbs = np.zeros(len(colons), dtype=bool)
    s = kind == K_STR
    vq = np.searchsorted(qpos, p[s])
    start[s], end[s], vbs[s] = p[s] + 1, qpos[vq + 1], str_bs[vq // 2]
    end[kind == K_TRUE] += 4
    end[kind == K_FALSE] += 5
    for j in np.flatnonzero(kind == K_INT):  # to the next token, less trailing whitespace
        e = spos[colons[j] + 1]
        while IS_WS[b[e - 1]]:
            e -= 1
        end[j] = e
        if any(ch in b"eE." for ch in bytes(b[start[j] : e])):
            kind[j] = K_FRAC
    return {
        "qpos": qpos,
        "str_bs": str_bs,
        "spos": spos,
        "scls": scls,
        "level": level,
        "colons": colons,
        "parent": parent,
        "crec": crec,
        "name_start": qpos[qi - 1] + 1,
        "name_end": qpos[qi],
        "name_bs": str_bs[qi // 2],
        "kind": kind,
        "start": start,
        "end": end,
        "bs": vbs,
        "opener": np.where((kind == K_OBJ) | (kind == K_ARR), colons + 1, -1),
    }


def assert_same_tokens(texts: list[str]) -> Tokens:
    b, off = buffers(pa.array(texts, pa.string()))
    want = reference_tokens(b, off)
    tok = Tokens(b, off)
    got = {name: getattr(tok, name) for name in ("qpos", "str_bs", "spos", "scls", "level", "colons", "parent", "crec")}
    got["name_start"], got["name_end"], got["name_bs"] = tok.names(tok.colons)
    got.update(tok.values(tok.colons))
    for name, expected in want.items():
        assert np.array_equal(got[name], expected), (name, got[name], expected)
    return tok


def test_hand_written_texts() -> None:
    texts = [
        '{"a": "x\\\\", "b\\"": [1, {"c": "\\"}"}], "d" : null , "e":-1.5e3,"f":true, "g" :false}',
        "  {}  ",
        '{"n": {"m": {"k": []}}, "s" :\n"\\u00e9\\n", "i": -0, "big": 12345678901234567890123}',
        '{"ü": "é", "t": "x\\\\\\"y", "E": 2E-5}',
    ]
    tok = assert_same_tokens(texts)
    # a few positions spelled out: the first text's "d" is null, "e" a fraction, "f" true
    kinds = tok.values(tok.colons)["kind"]
    assert kinds[:7].tolist() == [K_STR, K_ARR, K_STR, K_NULL, K_FRAC, K_TRUE, K_FALSE]
    assert kinds[-1] == K_FRAC  # 2E-5
    assert tok.crec.tolist() == [0] * 7 + [2] * 6 + [3] * 3


def test_empty_batch_and_empty_texts() -> None:
    tok = assert_same_tokens([])
    assert len(tok.spos) == 0
    assert_same_tokens(["", "{}", ""])


def test_not_a_colon_is_refused() -> None:
    b, off = buffers(pa.array(['{"a": 1}'], pa.string()))
    tok = Tokens(b, off)
    with pytest.raises(ValueError, match="not a colon"):
        tok.values(np.array([0]))  # the opening brace


def test_unterminated_string_does_not_read_past_the_batch() -> None:
    # callers validate first; a bug there must not crash the worker
    b, off = buffers(pa.array(['{"a": "open'], pa.string()))
    tok = Tokens(b, off)
    assert tok.qpos.tolist() == [1, 3]


_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**30), max_value=10**30)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(alphabet=st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=12)
    | st.sampled_from(['"', "\\", '\\"', "\\\\", "{", "}", "[", "]", ":", ",", " "])
)
_keys = st.text(alphabet=st.sampled_from('ab"\\:{,é '), max_size=4)
_values = st.recursive(
    _scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_keys, inner, max_size=4),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.dictionaries(_keys, _values, max_size=5), max_size=6),
    st.sampled_from([(",", ":"), (", ", ": "), (" ,\n", " :\t")]),
    st.booleans(),
)
def test_random_json_matches_the_reference(docs: list[dict], separators: tuple[str, str], ascii_only: bool) -> None:
    texts = [json.dumps(d, separators=separators, ensure_ascii=ascii_only) for d in docs]
    assert_same_tokens(texts)


# ----------------------------------------------------------------------------- string values

_TWO_CHAR = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t", "/": "\\/"}


def _u_escape(ch: str, upper: bool) -> str:
    units = ch.encode("utf-16-be")
    hexes = [units[i : i + 2].hex() for i in range(0, len(units), 2)]
    return "".join("\\u" + (h.upper() if upper else h) for h in hexes)


@st.composite
def escaped_json_strings(draw: st.DrawFn) -> tuple[str, str]:
    """(a string, a JSON string body for it as some producer may write it: each character
    literal where JSON allows, a two-character escape, ``\\/`` or ``\\uXXXX`` in either case)."""
    text = draw(st.text(alphabet=st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=12))
    body = []
    for ch in text:
        ways = ["u", "U"]
        if ch in _TWO_CHAR:
            ways.append("two")
        if ch >= " " and ch not in '"\\':
            ways.append("literal")
        way = draw(st.sampled_from(ways))
        body.append(ch if way == "literal" else _TWO_CHAR[ch] if way == "two" else _u_escape(ch, way == "U"))
    return text, "".join(body)


@settings(max_examples=300, deadline=None)
@given(st.lists(escaped_json_strings(), max_size=6), st.lists(st.booleans(), min_size=6, max_size=6))
def test_string_values_unescaped_and_canonical(strings: list[tuple[str, str]], valid: list[bool]) -> None:
    raw = [body.encode() for _, body in strings]
    b = np.frombuffer(b"".join(raw), dtype=np.uint8)
    ends = np.cumsum([len(r) for r in raw], dtype=np.int64)
    starts = ends - [len(r) for r in raw]
    valid_ = np.array(valid[: len(raw)], dtype=bool)
    escaped = np.array([b"\\" in r for r in raw], dtype=bool)
    expected = [s for s, _ in strings]
    canonical = [json.dumps(s, ensure_ascii=False)[1:-1] for s, _ in strings]

    def texts(offs: np.ndarray, data: np.ndarray) -> list[str]:
        return [bytes(data[offs[i] : offs[i + 1]]).decode() for i in range(len(raw))]

    def valid_only(values: list[str]) -> list[str]:
        return [e if v else "" for e, v in zip(values, valid_, strict=True)]

    alone = string_texts(b, starts, ends, valid_, escaped)
    both = string_texts_both(b, starts, ends, valid_, escaped)
    assert texts(*alone) == texts(*both[:2]) == valid_only(expected)
    assert np.array_equal(alone[0], both[0])
    # the canonical texts, written in the same pass
    assert texts(*both[2:]) == valid_only(canonical)
    # and as the JSON parser reads them
    assert [json.loads(f'"{body}"') for _, body in strings] == [s for s, _ in strings]


def test_string_values_spelled_out() -> None:
    body = b'a\\/b\\u00e9\\ud83d\\ude00\\u0001\\n\\"\\\\\\u2028'
    b = np.frombuffer(body, dtype=np.uint8)
    one = (b, np.array([0]), np.array([len(body)]), np.array([True]), np.array([True]))
    offs, data = string_texts(*one)
    assert bytes(data).decode() == 'a/b\u00e9\U0001f600\x01\n"\\\u2028'
    offs, data, coffs, cdata = string_texts_both(*one)
    assert bytes(data).decode() == 'a/b\u00e9\U0001f600\x01\n"\\\u2028'
    assert bytes(cdata).decode() == 'a/b\u00e9\U0001f600\\u0001\\n\\"\\\\\u2028'


def test_compiled_constants_are_the_columnar_ones() -> None:
    # numba reads module constants at compile time; the two modules spell them apart
    from udfs.formats import columnar, compiled

    assert [compiled._OPEN_OBJ, compiled._CLOSE_OBJ, compiled._OPEN_ARR, compiled._CLOSE_ARR, compiled._COLON] == [
        OPEN_OBJ,
        CLOSE_OBJ,
        OPEN_ARR,
        CLOSE_ARR,
        COLON,
    ]
    kinds = ["STR", "INT", "FRAC", "TRUE", "FALSE", "NULL", "OBJ", "ARR"]
    assert [getattr(compiled, f"_K_{k}") for k in kinds] == [getattr(columnar, f"K_{k}") for k in kinds]
    assert np.array_equal(compiled._IS_STRUCT > 0, columnar.STRUCT_CLASS > 0)


def test_escaped_control_characters_written_as_json_dumps_writes_them() -> None:
    # every control character json.dumps names, and one it does not, sent as \u escapes
    body = b"\\u0008\\u000c\\u000A\\u000d\\u0009\\u001f\\u0022\\u005C\\u007f"
    b = np.frombuffer(body, dtype=np.uint8)
    one = (b, np.array([0]), np.array([len(body)]), np.array([True]), np.array([True]))
    text = '\b\f\n\r\t\x1f"\\\x7f'
    offs, data = string_texts(*one)
    assert bytes(data).decode() == text
    _, data, _, cdata = string_texts_both(*one)
    assert bytes(data).decode() == text
    assert bytes(cdata).decode() == json.dumps(text, ensure_ascii=False)[1:-1] == '\\b\\f\\n\\r\\t\\u001f\\"\\\\\x7f'
