"""Tests of the Arcion internal CDC JSON decoder, on the documentation samples."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from change_checks import check

from udfs.contract import Change, QuarantineError, Record
from udfs.formats.arcion_internal_json import ArcionInternalJsonDecoder

ARCION = Path(__file__).resolve().parents[3].parent / "shared" / "corpora" / "arcion"
KEYS = {"region": ["r_regionkey"], "nation": ["n_nationkey"]}


def read(name: str) -> str:
    """A corpus file; a missing corpus is a failure, never a skip."""
    path = ARCION / "internal-json" / name
    assert path.is_file(), f"missing shared corpus file {path}"
    return path.read_text(encoding="utf-8")


def decode(text: str | None) -> Change:
    changes = ArcionInternalJsonDecoder().decode(Record(text))
    assert len(changes) == 1
    return changes[0]


def fold(changes: list[Change], state: dict[tuple, dict] | None = None) -> dict[tuple, dict]:
    """Apply changes: insert replaces the row, update overlays its after_cols, delete removes.

    Not ``change_checks.fold``: two tables here, and an update may change the key (the
    row moves to its new key)."""
    state = {} if state is None else state
    for ch in changes:
        key_cols = KEYS[ch.source_table]
        image = ch.before if ch.op in ("update", "delete") and ch.before else ch.after
        key = tuple(image[c] for c in key_cols)
        if ch.op in ("insert", "snapshot"):
            state[key] = dict(ch.after)
        elif ch.op == "update":
            row = state.pop(key, {})
            row.update({c: ch.after[c] for c in (ch.after_cols or ch.after)})
            state[tuple(row[c] for c in key_cols)] = row
        elif ch.op == "delete":
            state.pop(key, None)
    return state


def counts(i: int, u: int, d: int) -> dict[str, str]:
    return {"insert_count": str(i), "update_count": str(u), "delete_count": str(d), "replace_count": "0"}


NATION = {"n_comment": "Testing comment", "n_nationkey": "100", "n_regionkey": "2", "n_name": "Testing name"}
NATION_COLS = ["n_comment", "n_nationkey", "n_regionkey", "n_name"]
REGION_COLS = ["r_regionkey", "r_comment", "r_name"]


def test_decoder_identity() -> None:
    assert ArcionInternalJsonDecoder.identifier == "arcion_internal_json"
    assert ArcionInternalJsonDecoder.default_framing == "documents"
    assert ArcionInternalJsonDecoder.framings == ("documents", "lines")


def test_snapshot_insert() -> None:
    ch = decode(read("snapshot-insert.json"))
    check(
        ch,
        op="insert",  # no signal tells a snapshot I from a realtime one
        source_db="tpch_scale_0_01",
        source_schema="default_schema",
        source_table="nation",
        key=None,
        key_columns=None,
        before=None,
        before_cols=None,
        after=NATION,
        after_cols=NATION_COLS,
        col_types={},
        seq="00000000000000000010.00000000000000007461.00000000000000000001",
        commit_ts_us=1657516903000000,
        capture_ts_us=1657516904088000,
        tx_id=None,
    )
    assert ch.extras == {
        "cursor": json.loads(read("snapshot-insert.json"))["cursor"],
        "operationcount": '{"insertCount":30,"updateCount":0,"deleteCount":0,"replaceCount":0}',
        **counts(30, 0, 0),
    }


def test_snapshot_update_and_delete() -> None:
    upd = decode(read("snapshot-update.json"))
    check(
        upd,
        op="update",
        source_table="nation",
        before=NATION,
        before_cols=NATION_COLS,
        after={**NATION, "n_name": "Updating test name"},
        after_cols=NATION_COLS,
        seq="00000000000000000010.00000000000000009149.00000000000000000001",
        commit_ts_us=1657516946000000,
        capture_ts_us=1657516947142000,
    )
    assert upd.extras["update_count"] == "1"
    dele = decode(read("snapshot-delete.json"))
    check(
        dele,
        op="delete",
        source_table="nation",
        before={**NATION, "n_name": "Updating test name"},
        before_cols=NATION_COLS,
        after=None,
        after_cols=None,
        seq="00000000000000000010.00000000000000009872.00000000000000000001",
        commit_ts_us=1657516954000000,
        capture_ts_us=1657516955151000,
    )
    assert {k: v for k, v in dele.extras.items() if k.endswith("_count")} == counts(30, 1, 1)


def test_realtime_samples() -> None:
    ins, upd, dele = (decode(read(f"realtime-{op}.json")) for op in ("insert", "update", "delete"))
    common = {"source_db": None, "source_schema": "io_blitzz", "source_table": "region", "key": None}
    check(
        ins,
        op="insert",
        before=None,
        before_cols=None,
        after={"r_regionkey": "10", "r_comment": "India", "r_name": "India"},
        after_cols=REGION_COLS,
        seq="00000001620787053905.00000000000000326118",
        commit_ts_us=1620788088431000,
        # "extraction Timestamp" is a doc typo: not read, so no capture time
        capture_ts_us=None,
        **common,
    )
    # partial images: r_name (exists 0) is in neither image
    check(
        upd,
        op="update",
        before={"r_regionkey": "10"},
        before_cols=["r_regionkey"],
        after={"r_comment": "USA"},
        after_cols=["r_comment"],
        seq="00000001620787053905.00000000000000326190",
        commit_ts_us=1620788090478000,
        capture_ts_us=None,
        **common,
    )
    check(
        dele,
        op="delete",
        before={"r_regionkey": "10"},
        before_cols=["r_regionkey"],
        after=None,
        after_cols=None,
        seq="00000001620787053905.00000000000000326250",
        commit_ts_us=1620788092539000,
        **common,
    )
    assert ins.extras["cursor"].startswith('{"extractorId":0,"nodeID":"node1"')
    assert [c.extras["update_count"] for c in (ins, upd, dele)] == ["0", "1", "1"]
    assert [c.extras["delete_count"] for c in (ins, upd, dele)] == ["0", "0", "1"]


def test_seq_orders_the_samples() -> None:
    for mode in ("snapshot", "realtime"):
        changes = [decode(read(f"{mode}-{op}.json")) for op in ("delete", "insert", "update")]
        assert [c.op for c in sorted(changes, key=lambda c: c.seq)] == ["insert", "update", "delete"]


def test_fold_reaches_expected_states() -> None:
    ins, upd, dele = (decode(read(f"realtime-{op}.json")) for op in ("insert", "update", "delete"))
    state = fold([ins, upd])
    assert state == {("10",): {"r_regionkey": "10", "r_comment": "USA", "r_name": "India"}}
    assert fold([dele], state) == {}
    nation = fold([decode(read(f"snapshot-{op}.json")) for op in ("insert", "update")])
    assert nation == {("100",): {**NATION, "n_name": "Updating test name"}}
    assert fold([decode(read("snapshot-delete.json"))], nation) == {}


def doc(**overrides: Any) -> str:
    base = json.loads(read("realtime-update.json"))
    base.update(overrides)
    return json.dumps(base)


def test_null_text_and_provided_null() -> None:
    # "null" is SQL NULL where exists says provided; a provided "NULL" stays text
    ch = decode(
        doc(
            after={"r_regionkey": "null", "r_comment": "null", "r_name": "NULL"},
            exists={"r_regionkey": "2", "r_comment": "1", "r_name": 1},
        )
    )
    assert ch.after == {"r_comment": None, "r_name": "NULL"}
    assert ch.after_cols == ["r_comment", "r_name"]


def test_one_line_document_and_inline_cursor() -> None:
    text = json.dumps(json.loads(read("snapshot-insert.json")))
    assert "\n" not in text
    assert decode(text).after == NATION
    cursor = {"log": "log-bin.000002", "position": 5, "timestamp": 1}
    ch = decode(doc(cursor=cursor, operationcount=None))
    assert ch.seq == "00000000000000000002.00000000000000000005.00000000000000000000"
    assert ch.commit_ts_us == 1000
    assert ch.extras["operationcount"] is None
    assert ch.extras["insert_count"] is None


def test_missing_exists_map_takes_images_whole() -> None:
    base = json.loads(read("snapshot-update.json"))
    del base["exists"]
    ch = decode(json.dumps(base))
    assert ch.after_cols == NATION_COLS
    assert ch.before_cols == NATION_COLS


def test_missing_cursor() -> None:
    ch = decode(doc(cursor=None))
    assert (ch.seq, ch.commit_ts_us, ch.capture_ts_us, ch.extras["cursor"]) == (None, None, None, None)


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        (None, "empty record"),
        ("   ", "empty record"),
        ('{"tableName": {"name": "region"}, "opType": ', "not JSON"),
        ("[1]", "not a JSON object"),
        (json.dumps({"opType": "I"}), "tableName.name is missing"),
        ("OP", "unknown opType 'X'"),
        ("EXISTS", "exists code of 'r_name' is not 0, 1, 2 or 3"),
        ("LACKS", "after lacks it"),
        ("CURSOR", "cursor not JSON"),
        ("COUNT", "operationcount not JSON"),
    ],
)
def test_quarantine(text: str | None, reason: str) -> None:
    variants = {
        "OP": lambda: doc(opType="X"),
        "EXISTS": lambda: doc(exists={"r_regionkey": "2", "r_comment": "1", "r_name": "7"}),
        "LACKS": lambda: doc(after={"r_regionkey": "null"}),
        "CURSOR": lambda: doc(cursor='{"extractorId":'),
        "COUNT": lambda: doc(operationcount="{oops"),
    }
    if text in variants:
        text = variants[text]()
    with pytest.raises(QuarantineError, match=reason):
        ArcionInternalJsonDecoder().decode(Record(text))
