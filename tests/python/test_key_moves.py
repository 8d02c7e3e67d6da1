"""Primary-key changes whose after image does not provide every column.

A key change moves the row (DESIGN, "The merge"): ``normalize`` turns an update whose
key changes into a delete of the old key and an insert of the new key, and the new
key's row must be the old key's row as it was just before the change, overlaid with
the columns the change provides. A column the after image does not provide (a
PostgreSQL TOAST placeholder; an Arcion column with ``exists`` 0) keeps the old key's
value: it must not be lost because the insert starts the row afresh.

The first test replays a seeded random history of one table through three
configurations reading one landing folder: every key by the window path
(``long_history_versions: 100000``), busy keys by the long-history path
(``long_history_versions: 4``), and every merge compacting (``compact_after_segments:
0``). The history has updates with TOAST placeholders and NULLs, deletes, re-inserts,
moves to a free key (chains, a move back to the key the row left, a move right after a
move, a move of a key whose history begins with an update, a row swapped between two
keys 8 times with late updates between the moves) and a truncate. It is
delivered in three runs: most events; then a late file (every 11th event, delivered
twice), whose changes to a key before a move already merged must reach the row at its
new key; then a few new events with a move. After every run the three configurations
must give the reference model's live rows and history, and identical state and
history tables.

The second test is the Arcion internal JSON trap of FORMATS.md: a realtime UPDATE
carries only the key in ``before`` and the changed columns in ``after``; when it also
changes the key, the column with ``exists`` 0 keeps its old value at the new key.

The third is a Canal message of several rows that shifts keys (``UPDATE ... SET id =
id + 1``): each row's delete and insert share the row's ``seq``, the rows apply in
their order within the message, and a key a row leaves can take the next row at once.
"""

from __future__ import annotations

import json
import random
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import yaml

from formats.test_dts_canal_json import message as canal_message  # isort: skip
from udfs.export import export_rows
from udfs.pipeline import run_pipeline

TOAST = "__debezium_unavailable_value"
COLUMNS = ("a", "b", "c")
KEYS = tuple(range(1, 13))
LATE_EVERY = 11
# Moves of one row between two keys. The walks' growth with a chain's length is checked
# by bench.key_move_chain's smoke test (test_bench_smoke: rows walked per move); 8 keep
# this test's nine runs short (at 32, the refold's lineage took 40 s of each run).
SWAPS = 8


@dataclass(frozen=True)
class Event:
    """One Debezium event of table ``hot``; ``moved_from`` is set for a key change."""

    lsn: int
    op: str  # c (insert), u (update), d (delete), t (truncate)
    key: int | None  # the key written (for a key change: the new key)
    after: dict | None = None
    moved_from: int | None = None

    def line(self) -> str:
        """The event as Debezium JSON (the before image carries only the key)."""
        if self.op == "d":
            before = {"id": self.key}
        elif self.moved_from is not None:
            before = {"id": self.moved_from}
        else:
            before = None
        source = {
            "connector": "postgresql",
            "db": "d",
            "schema": "s",
            "table": "hot",
            "lsn": self.lsn,
            "ts_ms": self.lsn,
        }
        doc = {"before": before, "after": self.after, "source": source, "op": self.op, "ts_ms": self.lsn}
        return json.dumps(doc)


def replay(events: list[Event]) -> tuple[dict[int, dict], dict[int, list[dict | None]]]:
    """The reference model: the events in lsn order, a duplicate once.

    Returns the live row of every key, and every key's row after each event that
    touches it (``None``: deleted; a truncate touches every key seen before it).
    """
    rows: dict[int, dict] = {}
    versions: dict[int, list[dict | None]] = defaultdict(list)
    for event in sorted({e.lsn: e for e in events}.values(), key=lambda e: e.lsn):
        provided = {c: v for c, v in (event.after or {}).items() if v != TOAST}
        if event.op == "t":
            rows.clear()
            for key in versions:
                versions[key].append(None)
            continue
        if event.op == "d":
            rows.pop(event.key, None)
        elif event.op == "c":
            rows[event.key] = provided
        elif event.moved_from is not None:
            moved = rows.pop(event.moved_from, {})
            versions[event.moved_from].append(None)
            rows[event.key] = {**moved, **provided}
        else:  # an update of a key with no live row starts from the provided columns
            rows[event.key] = {**rows.get(event.key, {}), **provided}
        versions[event.key].append(dict(rows[event.key]) if event.key in rows else None)
    return rows, dict(versions)


class HistoryWriter:
    """Appends events at increasing lsns, tracking which keys are live."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.events: list[Event] = []
        self.live: set[int] = set()
        self.lsn = 0

    def _emit(self, op: str, key: int | None, after: dict | None = None, moved_from: int | None = None) -> None:
        self.lsn += 10
        self.events.append(Event(self.lsn, op, key, after, moved_from))

    def _partial_image(self, key: int, toast: float) -> dict:
        after: dict = {"id": key}
        for column in COLUMNS:
            roll = self.rng.random()
            if roll < toast:
                after[column] = TOAST  # not provided: the column keeps its value
            elif roll < toast + 0.1:
                after[column] = None
            else:
                after[column] = f"{column}{self.lsn + 10}"
        return after

    def insert(self, key: int) -> None:
        self._emit("c", key, {"id": key, **{c: f"{c}{self.lsn + 10}" for c in COLUMNS}})
        self.live.add(key)

    def update(self, key: int) -> None:
        self._emit("u", key, self._partial_image(key, toast=0.4))
        self.live.add(key)

    def delete(self, key: int) -> None:
        self._emit("d", key)
        self.live.discard(key)

    def move(self, old: int, new: int) -> None:
        assert old in self.live and new not in self.live, (old, new)
        self._emit("u", new, self._partial_image(new, toast=0.5), moved_from=old)
        self.live.discard(old)
        self.live.add(new)

    def truncate(self) -> None:
        self._emit("t", None)
        self.live.clear()

    def random_step(self, held: set[int]) -> None:
        """An update (of any live key), or an insert, delete or move of keys not held."""
        movable = sorted(self.live - held)
        free = sorted(set(KEYS) - self.live - held)
        roll = self.rng.random()
        if free and (not movable or roll < 0.1 or (roll < 0.2 and len(self.live) < 5)):
            self.insert(self.rng.choice(free))
        elif roll < 0.65 and self.live:
            self.update(self.rng.choice(sorted(self.live)))
        elif movable and (roll < 0.75 or not free):
            self.delete(self.rng.choice(movable))
        else:
            self.move(self.rng.choice(movable), self.rng.choice(free))

    def pick(self, live: bool, held: set[int]) -> int:
        keys = self.live - held if live else set(KEYS) - self.live - held
        return self.rng.choice(sorted(keys))


def key_move_history(seed: int = 5) -> tuple[list[Event], list[Event]]:
    """(the main history, a few newer events with a move)."""
    writer = HistoryWriter(random.Random(seed))
    held: set[int] = set()  # keys of unfinished patterns: no random insert, delete or move
    writer.update(12)  # key 12's history begins with an update: no insert is seen
    held.add(12)
    for key in range(1, 9):
        writer.insert(key)
    for step in range(230):
        if step == 15:  # the key with no insert seen moves
            held.discard(12)
            writer.move(12, writer.pick(live=False, held=held))
        elif step == 30:  # there and back: x -> y, later y -> x
            there, back = writer.pick(live=True, held=held), writer.pick(live=False, held=held)
            writer.move(there, back)
            held |= {there, back}
        elif step == 80:
            writer.move(back, there)
            held -= {there, back}
        elif step == 45:  # a chain: x -> y, later y -> z
            first = writer.pick(live=True, held=held)
            chained = writer.pick(live=False, held=held)
            writer.move(first, chained)
            held.add(chained)
        elif step == 70:
            held.discard(chained)
            writer.move(chained, writer.pick(live=False, held=held))
        elif step == 100:  # a move right after a move
            first = writer.pick(live=True, held=held)
            second = writer.pick(live=False, held=held)
            writer.move(first, second)
            writer.move(second, writer.pick(live=False, held=held | {first}))
        elif step == 120:
            assert not held
            writer.truncate()
        elif step == 150:  # a row swapped between two keys SWAPS times, updated between moves
            here, there = writer.pick(live=True, held=held), writer.pick(live=False, held=held)
            for _ in range(SWAPS):
                writer.move(here, there)
                writer.update(there)
                here, there = there, here
        else:
            writer.random_step(held)
    main = list(writer.events)
    for key in sorted(writer.live)[:3]:
        writer.update(key)
    writer.move(writer.pick(live=True, held=set()), writer.pick(live=False, held=set()))
    writer.update(writer.events[-1].key)
    return main, writer.events[len(main) :]


def late_changes_carried_by_moves(main: list[Event], late: list[Event]) -> int:
    """Late updates of a key whose next event is a move delivered before them."""
    late_lsns = {e.lsn for e in late}
    carried = 0
    for late_event in late:
        if late_event.op != "u" or late_event.moved_from is not None:
            continue
        touching = [
            e for e in main if e.lsn > late_event.lsn and (e.op == "t" or late_event.key in (e.key, e.moved_from))
        ]
        if touching and touching[0].moved_from == late_event.key and touching[0].lsn not in late_lsns:
            carried += 1
    return carried


def _config(folder: Path, landing: Path, name: str, **settings) -> Path:
    folder.mkdir()
    cfg = {
        "warehouse": ".cdc",
        "schema": f"moves_{name}",
        "marts_schema": f"moves_{name}_marts",
        **settings,
        "feeds": [{"name": "hot", "format": "debezium_json", "path": str(landing)}],
        "tables": {"hot": {"key": ["id"], "columns": {"id": "bigint", "a": "string", "b": "string", "c": "string"}}},
    }
    (folder / "cdc.yml").write_text(yaml.safe_dump(cfg))
    return folder / "cdc.yml"


def _rows(spark, sql: str) -> list[str]:
    return sorted(json.dumps(r.asDict(recursive=True), sort_keys=True, default=str) for r in spark.sql(sql).collect())


def _as_text(row: dict | None) -> dict | None:
    return None if row is None else {c: None if v is None else str(v) for c, v in row.items()}


def _live(spark, schema: str) -> dict[int, dict]:
    rows = spark.sql(f"select key, row from {schema}.state where not is_deleted").collect()
    return {int(r.key["id"]): r.row for r in rows}


def _history_versions(spark, schema: str) -> dict[int, list[dict | None]]:
    versions: dict[int, list[dict | None]] = defaultdict(list)
    # by version_no: a move's delete and the next row's insert into the key share a time
    for r in spark.sql(f"select key, is_deleted, row from {schema}.history order by version_no").collect():
        versions[int(r.key["id"])].append(None if r.is_deleted else r.row)
    return dict(versions)


def test_a_key_change_moves_the_row_with_the_columns_it_does_not_provide(spark, tmp_path):
    main, newer = key_move_history()
    late = [e for i, e in enumerate(main) if i % LATE_EVERY == 5]
    on_time = [e for i, e in enumerate(main) if i % LATE_EVERY != 5]
    moves = [e for e in main + newer if e.moved_from is not None]
    assert len(moves) >= 10 and any(TOAST in e.after.values() for e in moves)
    assert late_changes_carried_by_moves(main, late) > 0, "no late change for a move to carry"

    landing = tmp_path / "landing"
    landing.mkdir()
    configs = [  # schemas moves_window, moves_long, moves_cow
        _config(tmp_path / "window", landing, "window", long_history_versions=100_000),
        _config(tmp_path / "long", landing, "long", long_history_versions=4),
        _config(tmp_path / "cow", landing, "cow", compact_after_segments=0),
    ]
    runs = [
        {"1-main.jsonl": on_time},
        {"2-late.jsonl": late, "2-late-again.jsonl": late},  # late, and the same file twice
        {"3-newer.jsonl": newer},
    ]
    delivered: list[Event] = []
    for number, files in enumerate(runs, start=1):
        for name, events in files.items():
            (landing / name).write_text("\n".join(e.line() for e in events) + "\n")
            delivered += events
        for cfg in configs:
            assert run_pipeline(cfg, spark=spark).quarantined == 0, f"run {number}: {cfg}"

        for table in ("state", "history"):
            window_rows = _rows(spark, f"select * from moves_window.{table}")
            for schema in ("moves_long", "moves_cow"):
                assert _rows(spark, f"select * from {schema}.{table}") == window_rows, f"run {number}: {schema}.{table}"

        want_live, want_versions = replay(delivered)
        want_state = {k: _as_text(row) for k, row in want_live.items()}
        assert _live(spark, "moves_window") == want_state, f"run {number}: live rows"
        got_versions = _history_versions(spark, "moves_window")
        want_history = {k: [_as_text(row) for row in rows] for k, rows in want_versions.items()}
        assert got_versions == want_history, f"run {number}: history versions"

    long_path_keys = spark.sql("select count(*) from moves_long.history group by key_text having count(*) > 4")
    assert long_path_keys.count() > 0, "no key took the long-history path"


def _arcion_event(mut_id: int, op: str, before: dict, after: dict, exists: dict) -> str:
    """One realtime Arcion internal JSON event of ``tpch.region`` (a non-MySQL cursor)."""
    cursor = {
        "extractorId": 0,
        "nodeID": "node1",
        "timestamp": 1620788088431 + mut_id,
        "extractionTimestamp": 1620788088431 + mut_id,
        "dscId": 1620787053905,
        "mutId": mut_id,
        "partNum": 1,
        "v": 2,
    }
    counts = {"insertCount": 1, "updateCount": int(op == "U"), "deleteCount": 0, "replaceCount": 0}
    doc = {
        "tableName": {"namespace": {"catalog": None, "schema": "io_blitzz"}, "name": "region"},
        "opType": op,
        "cursor": json.dumps(cursor),
        "before": before,
        "after": after,
        "exists": exists,
        "operationcount": json.dumps(counts),
    }
    return json.dumps(doc)


def test_arcion_realtime_key_change_keeps_the_column_not_provided(spark, make_config, tmp_path):
    columns = {"r_regionkey": "bigint", "r_comment": "string", "r_name": "string"}
    cfg = make_config(
        [{"name": "region", "format": "arcion_internal_json", "path": "landing", "framing": "lines"}],
        {"region": {"key": ["r_regionkey"], "columns": columns}},
    )
    nulls = dict.fromkeys(columns, "null")
    insert = _arcion_event(
        326118,
        "I",
        nulls,
        {"r_regionkey": "10", "r_comment": "India", "r_name": "India"},
        dict.fromkeys(columns, "1"),
    )
    # UPDATE tpch.region SET r_regionkey = 11, r_comment = 'USA' WHERE r_regionkey = 10
    key_change = _arcion_event(
        326190,
        "U",
        {"r_regionkey": "10", "r_comment": "null", "r_name": "null"},
        {"r_regionkey": "11", "r_comment": "USA", "r_name": "null"},
        {"r_regionkey": "3", "r_comment": "1", "r_name": "0"},
    )
    (tmp_path / "landing" / "region.jsonl").write_text(insert + "\n" + key_change + "\n")
    assert run_pipeline(cfg, spark=spark).quarantined == 0

    schema = yaml.safe_load(cfg.read_text())["schema"]
    state = {r.key["r_regionkey"]: (r.is_deleted, r.row) for r in spark.sql(f"select * from {schema}.state").collect()}
    assert state == {"10": (True, None), "11": (False, {"r_regionkey": "11", "r_comment": "USA", "r_name": "India"})}
    assert export_rows(spark, cfg, "region") == [{"r_regionkey": 11, "r_comment": "USA", "r_name": "India"}]


def _canal(msg_id: int, kind: str, data: list[dict], old: list[dict] | None = None) -> str:
    """One DTS Canal JSON message of ``shop.orders``; ``es`` and ``ts`` follow ``id``."""
    es = 1_700_000_000_000 + msg_id
    return json.dumps(canal_message(kind, data, old, id=msg_id, es=es, ts=es + 500))


def _order(key: int, amount: str, note: str) -> dict:
    return {"id": str(key), "amount": amount, "note": note}


def test_canal_update_of_several_rows_shifting_keys_moves_each_row_in_row_order(spark, make_config, tmp_path):
    cfg = make_config(
        [{"name": "orders", "format": "dts_canal_json", "path": "landing"}],
        {"shop.orders": {"key": ["id"]}},
    )
    schema = yaml.safe_load(cfg.read_text())["schema"]
    landing = tmp_path / "landing"
    rows = [_order(1, "1.00", "a"), _order(2, "2.00", "b"), _order(3, "3.00", "c")]
    # UPDATE orders SET id = id + 1 WHERE id >= 2 ORDER BY id DESC: 3 -> 4, then 2 -> 3
    shift = _canal(3, "UPDATE", [_order(4, "3.30", "c"), _order(3, "2.00", "b")], [{"id": "3"}, {"id": "2"}])
    # one plain update and one key change (3 -> 5, a column changed too) in one message
    mixed = _canal(
        4,
        "UPDATE",
        [_order(1, "1.50", "a"), _order(5, "2.00", "moved")],
        [{"amount": "1.00"}, {"id": "3", "note": "b"}],
    )
    (landing / "1.json").write_text("\n".join([_canal(1, "INSERT", rows), shift, mixed]) + "\n")
    assert run_pipeline(cfg, spark=spark).quarantined == 0

    moves = spark.sql(f"select from_key_text, to_key_text from {schema}.key_moves order by to_order_key").collect()
    assert [(json.loads(m.from_key_text)["id"], json.loads(m.to_key_text)["id"]) for m in moves] == [
        ("3", "4"),
        ("2", "3"),
        ("3", "5"),
    ]

    moved_out = None
    want = {
        1: [_order(1, "1.00", "a"), _order(1, "1.50", "a")],
        2: [_order(2, "2.00", "b"), moved_out],
        3: [_order(3, "3.00", "c"), moved_out, _order(3, "2.00", "b"), moved_out],
        4: [_order(4, "3.30", "c")],
        5: [_order(5, "2.00", "moved")],
    }
    assert _history_versions(spark, schema) == want

    # a late update of key 3 before the shift lands in key 3's history before the row left it
    (landing / "2-late.json").write_text(_canal(2, "UPDATE", [_order(3, "3.30", "c")], [{"amount": "3.00"}]) + "\n")
    assert run_pipeline(cfg, spark=spark).quarantined == 0
    want[3].insert(1, _order(3, "3.30", "c"))
    assert _history_versions(spark, schema) == want
    assert _live(spark, schema) == {1: want[1][-1], 4: want[4][-1], 5: want[5][-1]}
