"""``bench.decode.flat_changes``: the rows of the *cached flat* diagnostic (an Arrow
UDTF's output) must be the rows of the bench's project query, which explodes the
records and then their changes (``lateral view outer explode``)."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest

from bench.decode import flat_changes
from udfs.decode import CHANGE_FIELDS, split_top_level
from udfs.spark_udfs import DECODED_RECORDS_TYPE

CHANGE_NAMES = [part.split()[0] for part in split_top_level(CHANGE_FIELDS)]


def _change(n: int, **values: Any) -> dict[str, Any]:
    return {
        "row_index": n,
        "table_id": "inventory.customers",
        "op": "update",
        "key": [("id", str(n))],
        "after": [("id", str(n)), ("name", "Zoë\nline two")],
        "after_cols": ["id", "name"],
        "seq": f"{n:020d}",
        "commit_ts_us": 1_700_000_000_123_456 + n,
        "event_id": f"e{n}",
        **values,
    }


def _record(
    index: int, *, changes: list | None = None, status: str = "ok", reason: str | None = None, error: str | None = None
) -> dict[str, Any]:
    # an error with changes beside it: never from cdc_decode_files, but the model's rule (no
    # changes where there is an error) is what the flat rows must follow
    keep = error is None or changes is not None
    result = {"status": status, "reason": reason, "changes": changes, "ddl": None} if keep else None
    return {"record_index": index, "error": error, "kafka_offset": 40 + index, "result": result}


FILES = [
    # file, its records (None: the file itself null)
    (
        "a.json",
        [
            _record(0, changes=[_change(0), _change(1, op="delete", after=None, after_cols=None)]),
            _record(1, changes=[_change(2)]),
            _record(2, changes=[], status="skipped", reason="tombstone"),
            _record(3, changes=None, status="quarantined", reason="bad json"),
            _record(4, error="framing: truncated record"),
            None,
            _record(6, changes=[_change(3, before=[("id", None)], before_cols=["id"])]),
            _record(7, changes=[_change(8)], error="framing: cut short"),
        ],
    ),
    ("empty.json", []),
    ("null.json", None),
    ("b.json", [_record(0, changes=[_change(4, key=[("id", "18446744073709551615")])])]),
]


def _expected(files: list[tuple[str, list | None]]) -> list[dict[str, Any]]:
    """The project query's explode, row by row, in Python."""
    rows = []
    for path, records in files:
        for rec in records or []:
            if rec is None:
                continue  # `where rec is not null`
            result = rec["result"] or {}
            status = "quarantined" if rec["error"] is not None else result.get("status")
            reason = rec["error"] if rec["error"] is not None else result.get("reason")
            changes = result.get("changes") if rec["error"] is None else None
            head = {
                "feed": "f",
                "source_file": path,
                "record_index": rec["record_index"],
                "status": status,
                "reason": reason,
            }
            for change in changes or [None]:  # `outer`: one row with null change fields
                rows.append(head | {name: None if change is None else change.get(name) for name in CHANGE_NAMES})
    return rows


def _nested(files: list[tuple[str, list | None]]) -> pa.ListArray:
    return pa.array([records for _, records in files], type=DECODED_RECORDS_TYPE)


def _actual(batch: pa.RecordBatch) -> list[dict[str, Any]]:
    rows = batch.to_pylist()
    for row in rows:  # Arrow maps read back as lists of pairs, as given
        for name in ("key", "before", "after", "col_types", "extras"):
            if row[name] is not None:
                row[name] = [tuple(pair) for pair in row[name]]
    return rows


def test_rows_are_the_project_querys_explode() -> None:
    n = len(FILES)
    batch = flat_changes(pa.array(["f"] * n), pa.array([p for p, _ in FILES]), _nested(FILES))
    assert batch.schema.names == ["feed", "source_file", "record_index", "status", "reason", *CHANGE_NAMES]
    assert _actual(batch) == _expected(FILES)
    assert batch.num_rows == 9  # a.json: 2 + 1 + skipped + quarantined + 2 framing errors + 1; b.json: 1


@pytest.mark.parametrize("start", [1, 2, 3])
def test_a_sliced_batch_reads_its_own_files_only(start: int) -> None:
    nested = _nested(FILES).slice(start)
    paths = pa.array([p for p, _ in FILES]).slice(start)
    batch = flat_changes(pa.array(["f"] * len(FILES)).slice(start), paths, nested)
    assert _actual(batch) == _expected(FILES[start:])


def test_no_files_no_rows() -> None:
    batch = flat_changes(pa.array([], pa.string()), pa.array([], pa.string()), _nested([]))
    assert batch.num_rows == 0


def _landing(tmp_path) -> tuple[pa.Array, pa.Array, pa.Array, pa.Array]:
    """Debezium files (lines, documents) with records that decode, quarantine and fail
    framing, and a null path: the files of two feeds."""
    import json
    import random

    from bench.data import workload

    wl = workload()
    rng = random.Random(3)
    bodies = [wl.render_debezium_json(ev) for ev in wl.generate(3, 120)]
    lines = [json.dumps(b, ensure_ascii=rng.random() < 0.5).encode() for b in bodies]
    lines[5:5] = [b"not json", b"\xff\xfe not utf-8", b'{"payload": {"op": "c", "after": {"id": 1}}}']
    (tmp_path / "a.json").write_bytes(b"\n".join(lines) + b"\n")
    (tmp_path / "b.json").write_bytes(b"\n\n".join(json.dumps(b, indent=2).encode() for b in bodies[:40]) + b" {")
    tables = {t.name: {"key": list(t.key)} for t in wl.DEFAULT_TABLES}
    options = [
        json.dumps({"format": "debezium_json", "framing": framing, "options": {}, "tables": tables}, sort_keys=True)
        for framing in ("lines", "documents", "lines")
    ]
    paths = [str(tmp_path / "a.json"), str(tmp_path / "b.json"), None]
    return (
        pa.array(["f1", "f2", "f1"]),
        pa.array(paths, pa.string()),
        pa.array(["lines", "documents", "lines"]),
        pa.array(options),
    )


@pytest.mark.parametrize(("chunk", "block_bytes"), [(7, 1000), (2000, 2 << 20)])
def test_rows_decoded_by_parts_are_the_rows_of_the_files_decoded_whole(tmp_path, chunk, block_bytes) -> None:
    """*flat UDTF* reads and decodes each file by parts (``decode_record_batches``): its
    rows are the rows of the files read whole (``decode_files_array``), in the same order."""
    from bench.decode import decode_flat_batches
    from udfs.spark_udfs import decode_files_array

    feeds, paths, framings, options = _landing(tmp_path)
    whole = flat_changes(feeds, paths, decode_files_array(paths, framings, options))
    batches = list(decode_flat_batches(feeds, paths, framings, options, chunk=chunk, block_bytes=block_bytes))
    by_parts = pa.Table.from_batches(batches, schema=whole.schema)
    assert by_parts.to_pylist() == whole.to_pylist()
    statuses = set(by_parts.column("status").to_pylist())
    assert statuses >= {"ok", "quarantined"} and set(by_parts.column("feed").to_pylist()) == {"f1", "f2"}
    assert len(batches) > (3 if chunk == 7 else 1)
