"""The compiled event-id text (:func:`udfs.formats.compiled.event_texts`) against
``json.dumps`` of the same change, and against a plain string reference where names
repeat or are empty (the bound of the output's size is tightest there: its writes are
not bounds-checked)."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from udfs.formats.columnar import buffers, valid_of
from udfs.formats.compiled import event_texts

TEXT = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=12)
NAMES = st.text("abcXYZ_\u00e9\U0001f680", max_size=6)


def column(values: list[str | None]) -> tuple[np.ndarray, ...]:
    arr = pa.array(values, type=pa.string())
    return (*buffers(arr), valid_of(arr))


def image(draw: st.DrawFn, names: st.SearchStrategy[str], unique: bool) -> list[tuple[str, str | None]] | None:
    if draw(st.booleans()) and draw(st.booleans()):
        return None  # no image (an insert's before)
    cols = draw(st.lists(names, max_size=40, unique=unique))
    return [(n, draw(st.none() | TEXT)) for n in cols]


@st.composite
def changes(draw: st.DrawFn, unique: bool = True) -> list[dict[str, Any]]:
    names = NAMES if unique else st.sampled_from(["", "a", ""])
    out = []
    for _ in range(draw(st.integers(0, 6))):
        out.append(
            {
                "table": draw(st.sampled_from(["db.s.t", 'q"uo\\te', "t\u00e9\n"])),
                # a key's compact JSON (no raw control character: its values are escaped)
                "key_text": json.dumps(
                    draw(st.dictionaries(NAMES, st.none() | TEXT, max_size=3)),
                    ensure_ascii=False,
                    separators=(",", ":"),
                ),
                "op": draw(st.sampled_from(["c", "u", "d", "r"])),
                "seq": draw(st.none() | st.text("0123456789:", max_size=20)),
                "before": image(draw, names, unique),
                "after": image(draw, names, unique),
            }
        )
    return out


def compiled_texts(chs: list[dict[str, Any]]) -> list[str]:
    tables = sorted({c["table"] for c in chs})
    tables_json = pa.array([json.dumps(t, ensure_ascii=False) for t in tables], type=pa.string())
    names: list[str] = []
    values: list[str | None] = []
    image_offsets = [0]
    sorted_entries: list[int] = []
    present = []
    for c in chs:
        for img in (c["before"], c["after"]):
            present.append(img is not None)
            first = len(names)
            for name, value in img or []:
                names.append(name)
                # the value's JSON-escaped text, as the decoders hand it
                values.append(None if value is None else json.dumps(value, ensure_ascii=False)[1:-1])
            # entries sorted by name (code point) within the image, stably
            sorted_entries += sorted(range(first, len(names)), key=lambda i: names[i])
            image_offsets.append(len(names))
    offs, data = event_texts(
        buffers(tables_json),
        np.array([tables.index(c["table"]) for c in chs], dtype=np.int64),
        buffers(pa.array([c["key_text"] for c in chs], type=pa.string())),
        column([c["op"] for c in chs]),
        column([c["seq"] for c in chs]),
        buffers(pa.array(names, type=pa.string())),
        column(values),
        np.array(sorted_entries, dtype=np.int64),
        np.array(image_offsets, dtype=np.int64),
        np.array(present, dtype=bool),
    )
    raw = bytes(data)
    return [raw[offs[i] : offs[i + 1]].decode() for i in range(len(chs))]


@settings(max_examples=300, deadline=None)
@given(changes())
def test_event_text_is_json_dumps_of_the_change(chs: list[dict[str, Any]]) -> None:
    expected = []
    for c in chs:
        images: list[Any] = []
        for img in (c["before"], c["after"]):
            images += [None, None] if img is None else [dict(img), [n for n, _ in img]]
        ident = [c["table"], c["key_text"], c["op"], c["seq"], *images, None]
        expected.append(json.dumps(ident, ensure_ascii=False, sort_keys=True))
    assert compiled_texts(chs) == expected


def reference(c: dict[str, Any]) -> str:
    """The text as the decoders' former Arrow concatenation built it."""

    def quoted(v: str | None) -> str:
        return "null" if v is None else '"' + json.dumps(v, ensure_ascii=False)[1:-1] + '"'

    parts = [json.dumps(c["table"], ensure_ascii=False), quoted(c["key_text"]), f'"{c["op"]}"']
    parts.append("null" if c["seq"] is None else f'"{c["seq"]}"')
    for img in (c["before"], c["after"]):
        if img is None:
            parts += ["null", "null"]
            continue
        ordered = sorted(range(len(img)), key=lambda i: img[i][0])
        parts.append("{" + ", ".join(f'"{img[i][0]}": {quoted(img[i][1])}' for i in ordered) + "}")
        parts.append("[" + ", ".join(f'"{n}"' for n, _ in img) + "]")
    return "[" + ", ".join(parts) + ", null]"


@settings(max_examples=200, deadline=None)
@given(changes(unique=False))
def test_repeated_and_empty_names_fill_the_size_bound(chs: list[dict[str, Any]]) -> None:
    assert compiled_texts(chs) == [reference(c) for c in chs]


def test_worst_case_entries_and_a_null_op() -> None:
    # 40 entries per image of an empty name and a null value: 14 bytes each, the bound's
    # per-entry share; a null op gives an empty text (Arrow's concatenation gave null)
    worst = {"table": "t", "key_text": "", "op": "u", "seq": None, "before": [("", None)] * 40}
    worst["after"] = worst["before"]
    assert compiled_texts([worst] * 50) == [reference(worst)] * 50
    offs, data = event_texts(
        buffers(pa.array(['"t"'])),
        np.zeros(2, dtype=np.int64),
        buffers(pa.array(["{}", "{}"])),
        column(["c", None]),
        column(["1", "2"]),
        buffers(pa.array([], type=pa.string())),
        column([]),
        np.zeros(0, dtype=np.int64),
        np.zeros(5, dtype=np.int64),
        np.zeros(4, dtype=bool),
    )
    assert bytes(data[offs[0] : offs[1]]) == b'["t", "{}", "c", "1", null, null, null, null, null]'
    assert offs[2] == offs[1]
