"""Unit tests of the workload generator, the Debezium renderers and the reference model.

No Spark here: these tests make sure the oracle of ``test_differential.py`` is right.
"""

from __future__ import annotations

import base64
import json
import random
from collections import Counter
from decimal import Decimal
from itertools import pairwise

import pytest

try:  # tests/python as a package or as a rootdir-relative folder
    from . import workload as wl
except ImportError:
    import workload as wl

SEEDS = [1, 2, 3, 7, 42]


@pytest.fixture(scope="module", params=SEEDS)
def events(request):
    return wl.generate(request.param, 500)


# --------------------------------------------------------------------------- generator


def test_deterministic_per_seed():
    a, b, c = wl.generate(5, 300), wl.generate(5, 300), wl.generate(6, 300)
    assert a == b
    assert a != c
    assert wl.deliver(a, 5, 3) == wl.deliver(b, 5, 3)


@pytest.mark.parametrize("n", [1, 2, 10, 333])
def test_exact_count(n):
    assert len(wl.generate(3, n)) == n


def test_positions_strictly_increasing(events):
    positions = [e.position for e in events]
    assert all(a < b for a, b in pairwise(positions))
    lsns = [e.lsn for e in events]
    assert all(a < b for a, b in pairwise(lsns))
    assert all(e.prev_commit_lsn < e.lsn for e in events)
    ts = [e.ts_ms for e in events]
    assert ts == sorted(ts)
    assert len(set(ts)) < len(ts)  # same-millisecond events exist


def test_operation_mix(events):
    ops = Counter((e.table, e.op) for e in events)
    for t in ("inventory.customers", "inventory.orders"):
        for op in "rcud":
            assert ops[(t, op)] > 0, (t, op)
    # snapshot first, last snapshot record marked
    snaps = [e for e in events if e.op == "r"]
    assert events[: len(snaps)] == snaps
    assert [e.snapshot for e in snaps][-1] == "last"
    assert all(e.snapshot == "false" for e in events[len(snaps) :])


def test_stream_is_valid_and_has_key_changes_and_reinserts(events):
    """Strict replay: creates of absent keys, updates/deletes of live keys only."""
    live: dict = {}
    seen_deleted: set = set()
    key_changes = reinserts = 0
    for i, e in enumerate(events):
        k = (e.table, e.key)
        if e.op in "rc":
            assert k not in live
            if k in seen_deleted:
                reinserts += 1
            live[k] = dict(e.after)
            assert wl.UNAVAILABLE not in e.after.values()
            assert set(e.after) == set(e.spec.column_names)
        elif e.op == "u":
            assert k in live
            if e.before is not None:
                assert e.before == live[k]
            live[k] = {c: (live[k][c] if v == wl.UNAVAILABLE else v) for c, v in e.after.items()}
        else:
            assert k in live
            assert e.before == live.pop(k)  # full old row
            assert e.after is None
            seen_deleted.add(k)
            nxt = events[i + 1] if i + 1 < len(events) else None
            if (
                nxt is not None
                and nxt.op == "c"
                and nxt.table == e.table
                and nxt.tx_id == e.tx_id
                and nxt.key != e.key
                and {c: v for c, v in nxt.after.items() if c not in e.spec.key}
                == {c: v for c, v in e.before.items() if c not in e.spec.key}
            ):
                key_changes += 1
    assert key_changes > 0
    assert reinserts > 0
    final = {(t, k): r for t, rows in wl.reference_state(events).items() for k, r in rows.items()}
    assert final == live


def test_key_change_is_delete_then_create_in_one_transaction():
    found = 0
    for seed in SEEDS:
        ev = wl.generate(seed, 400)
        for a, b in pairwise(ev):
            if a.op == "d" and b.op == "c" and a.tx_id == b.tx_id and a.table == b.table and a.key != b.key:
                assert a.position < b.position
                assert a.before is not None and b.after is not None
                found += 1
    assert found >= len(SEEDS)


def test_toast_placeholder_only_pg_unchanged_strings(events):
    n = 0
    live: dict = {}
    for e in events:
        if e.op != "d":
            if e.op == "u":
                for c, v in e.after.items():
                    if v == wl.UNAVAILABLE:
                        n += 1
                        assert e.spec.connector == "postgresql"
                        assert e.spec.column(c).type == "string"
                        assert c not in e.spec.key
                        assert live[(e.table, e.key)][c] is not None
            prev = live.get((e.table, e.key), {})
            live[(e.table, e.key)] = {c: (prev[c] if v == wl.UNAVAILABLE else v) for c, v in e.after.items()}
    assert n > 0


def test_fidelity_values_present():
    ev = wl.generate(1, 600)
    values = [v for e in ev for img in (e.before, e.after) if img for v in img.values()]
    ints = [int(v) for e in ev for img in (e.after,) if img for c, v in img.items()
            if v is not None and e.spec.column(c).type == "bigint"]  # fmt: skip
    assert any(abs(i) > 2**53 for i in ints)
    assert max(ints) <= 2**63 - 1 and min(ints) >= -(2**63)
    decs = [v for e in ev if e.after for c, v in e.after.items() if e.spec.column(c).type.startswith("decimal")]
    assert any(v and len(v.replace("-", "").replace(".", "")) >= 30 for v in decs)
    for v in decs:
        if v is not None:
            d = Decimal(v)
            assert f"{d:f}" == v and -d.as_tuple().exponent == wl.DECIMAL_SCALE
            assert len(v.lstrip("-").split(".")[0]) <= 32
            assert v != "-0.000000"
    assert None in values
    assert "" in values
    strings = [v for v in values if isinstance(v, str)]
    for needle in ("'", '"', "\n", "😀", "\u2028", "\\", "数"):
        assert any(needle in s for s in strings), needle


# --------------------------------------------------------------------------- renderers


def _ev(events, connector, op):
    return next(e for e in events if e.spec.connector == connector and e.op == op)


@pytest.mark.parametrize("with_schema", [False, True])
def test_render_mysql(events, with_schema):
    e = _ev(events, "mysql", "u")
    env = wl.render_debezium(e, with_schema)
    payload = env["payload"] if with_schema else env
    if with_schema:
        assert set(env) == {"schema", "payload"}
        fields = {f["field"]: f for f in env["schema"]["fields"]}
        after_types = {f["field"]: f["type"] for f in fields["after"]["fields"]}
        assert after_types == {"order_id": "int64", "line_no": "int32", "customer_id": "int64",
                               "amount": "string", "quantity": "int32", "note": "string"}  # fmt: skip
        assert fields["source"]["name"] == "io.debezium.connector.mysql.Source"
    src = payload["source"]
    assert src["connector"] == "mysql" and src["db"] == "inventory" and src["table"] == "orders"
    assert src["file"] == f"mysql-bin.{e.position[0]:06d}"
    assert (src["pos"], src["row"]) == e.position[1:]
    assert payload["op"] == "u" and payload["before"] is not None
    # JSON text round-trips every digit
    back = json.loads(json.dumps(env))
    after = (back["payload"] if with_schema else back)["after"]
    assert str(after["order_id"]) == e.after["order_id"]
    assert after["amount"] == e.after["amount"]


@pytest.mark.parametrize("with_schema", [False, True])
def test_render_postgresql(events, with_schema):
    e = _ev(events, "postgresql", "d")
    env = wl.render_debezium(e, with_schema)
    payload = env["payload"] if with_schema else env
    src = payload["source"]
    assert src["connector"] == "postgresql" and src["schema"] == "inventory" and src["table"] == "customers"
    assert src["lsn"] == e.lsn and src["txId"] == e.tx_id
    assert json.loads(src["sequence"]) == [str(e.prev_commit_lsn), str(e.lsn)]
    assert payload["op"] == "d" and payload["after"] is None
    assert {k: (None if v is None else str(v)) for k, v in payload["before"].items()} == e.before
    key = wl.render_key(e, with_schema)
    assert (key["payload"] if with_schema else key) == {"id": int(e.key[0])}


def test_render_connector_override_and_snapshot(events):
    e = _ev(events, "mysql", "r")
    assert wl.render_debezium(e, False)["source"]["snapshot"] in ("true", "last")
    pg = wl.render_debezium(e, False, "postgresql")
    assert pg["source"]["lsn"] == e.lsn and pg["op"] == "r"
    with pytest.raises(ValueError):
        wl.render_debezium(e, False, "oracle")


# --------------------------------------------------------------------------- delivery


def _decode_files(runs):
    """A minimal Debezium decoder over the delivered bytes: (table, op, key, after, position) tuples."""
    out = []
    tombstones = 0
    for files in runs:
        for f in files:
            text = f.content.decode("utf-8")
            assert text.endswith("\n")
            lines = text.split("\n")[:-1]
            assert len(lines) == f.n_records
            for line in lines:
                obj = json.loads(line)
                kafka_key = None
                if f.framing == "kcat":
                    assert f.path.startswith("kcat/")
                    assert isinstance(obj["key"], str) and obj["partition"] == 0
                    kafka_key = json.loads(obj["key"])
                    if obj["payload"] is None:
                        tombstones += 1
                        continue
                    assert isinstance(obj["payload"], str)
                    obj = json.loads(obj["payload"])
                else:
                    assert f.path.startswith("lines/")
                if set(obj) == {"schema", "payload"}:
                    obj = obj["payload"]
                src = obj["source"]
                if src["connector"] == "mysql":
                    pos = (int(src["file"].rsplit(".", 1)[1]), src["pos"], src["row"])
                    table = f"{src['db']}.{src['table']}"
                else:
                    pos = src["lsn"]
                    table = f"{src['schema']}.{src['table']}"
                out.append((table, obj["op"], obj["before"], obj["after"], pos, kafka_key))
    return out, tombstones


def _text(v):
    return None if v is None else str(v)


def test_deliver_roundtrip_and_reference(events):
    runs = wl.deliver(events, 11, 3)
    decoded, tombstones = _decode_files(runs)
    assert tombstones == sum(f.n_tombstones for files in runs for f in files) > 0
    # every event delivered, duplicates identical to their original
    delivered = wl.delivered_events(runs)
    assert {e.position for e in delivered} == {e.position for e in events}
    assert len(decoded) == len(delivered)
    by_lsn = {e.lsn: e for e in events}
    by_pos = {e.position: e for e in events}
    for table, op, before, after, pos, kafka_key in decoded:
        e = by_pos[pos] if isinstance(pos, tuple) else by_lsn[pos]
        assert (table, op) == (e.table, e.op)
        assert (before and {k: _text(v) for k, v in before.items()}) == e.before
        assert (after and {k: _text(v) for k, v in after.items()}) == e.after
        if kafka_key is not None:
            kp = kafka_key.get("payload", kafka_key) if "schema" in kafka_key else kafka_key
            assert tuple(_text(kp[k]) for k in e.spec.key) == e.key
    assert wl.reference_state(delivered) == wl.reference_state(events)


def test_deliver_late_duplicates_files(events):
    runs = wl.deliver(events, 3, 3, late_fraction=0.05, dup_fraction=0.03)
    assert len(runs) == 3
    index = {e.position: i for i, e in enumerate(events)}
    n = len(events)
    run_sets = [[index[e.position] for f in files for e in f.events] for files in runs]
    flat = [i for r in run_sets for i in r]
    dups = len(flat) - n
    assert 0 < dups <= 0.1 * n
    # late: an event of an earlier third delivered (first) in a later run
    first_run = {}
    for r, idx in enumerate(run_sets):
        for i in idx:
            first_run.setdefault(i, r)
    late = [i for i, r in first_run.items() if r > 0 and i < round(n * r / 3)]
    assert 0 < len(late) <= 0.15 * n
    assert all(first_run[i] - (3 * i // n) <= 1 for i in first_run)
    # a duplicate never sits in the same file as its original
    for files in runs:
        for f in files:
            c = Counter(e.position for e in f.events)
            assert max(c.values()) == 1
            assert f.path.count("/") == 1 and f.path.split("/")[0] == f.framing
        assert {f.framing for f in files} == {"lines", "kcat"}
    paths = [f.path for files in runs for f in files]
    assert len(paths) == len(set(paths))


def test_kcat_offsets_follow_source_order(events):
    runs = wl.deliver(events, 4, 3)
    by_topic: dict[str, dict[int, tuple]] = {}
    for files in runs:
        for f in files:
            if f.framing != "kcat":
                continue
            for line in f.content.decode().split("\n")[:-1]:  # not splitlines(): raw U+2028 inside
                obj = json.loads(line)
                assert obj["tstype"] == "create" and "ts" in obj and obj["broker"] == 0
                if obj["payload"] is None:
                    order = (None,)
                else:
                    p = json.loads(obj["payload"])
                    p = p.get("payload", p) if set(p) == {"schema", "payload"} else p
                    s = p["source"]
                    order = (s.get("lsn"),) if s["connector"] == "postgresql" else (s["file"], s["pos"], s["row"])
                seen = by_topic.setdefault(obj["topic"], {})
                # a re-delivered offset is the same record
                assert seen.setdefault(obj["offset"], (obj["key"], obj["payload"], order)) == (
                    obj["key"],
                    obj["payload"],
                    order,
                )
    assert set(by_topic) == {"dbserver1.inventory.customers", "dbserver1.inventory.orders"}
    for seen in by_topic.values():
        orders = [seen[o][2] for o in sorted(seen) if seen[o][2] != (None,)]
        assert orders == sorted(orders)
        # a tombstone follows its delete at the next offset with the same key
        for o, (key, payload, _) in seen.items():
            if payload is None:
                prev = json.loads(seen[o - 1][1])
                prev = prev.get("payload", prev) if set(prev) == {"schema", "payload"} else prev
                assert prev["op"] == "d" and seen[o - 1][0] == key


def test_lines_mix_schema_and_escaping():
    runs = wl.deliver(wl.generate(9, 400), 9, 2)
    lines = [ln for files in runs for f in files if f.framing == "lines" for ln in f.content.split(b"\n") if ln]
    with_schema = sum(1 for ln in lines if json.loads(ln).keys() == {"schema", "payload"})
    assert 0 < with_schema < len(lines)
    assert any(b"\\ud83d" in ln for ln in lines) and any("😀".encode() in ln for ln in lines)


@pytest.mark.parametrize("ascii_fraction", [0.0, 0.3])
def test_mixed_debezium_lines(ascii_fraction):
    events = wl.generate(4, 400)
    texts = wl.mixed_debezium_lines(4, 400, ascii_fraction)
    assert len(texts) == len(events)
    bodies = [json.loads(text) for text in texts]
    # the same events, in order, each in one of the three shapes
    payloads = [body.get("payload", body) for body in bodies]
    assert [p["source"] for p in payloads] == [wl.render_debezium(e, False)["source"] for e in events]
    assert [p["op"] for p in payloads] == [wl.render_debezium(e, False)["op"] for e in events]
    logical = sum(1 for b in bodies if "schema" in b and "connect.data.Decimal" in json.dumps(b["schema"]))
    plain_with_schema = sum(1 for b in bodies if "schema" in b) - logical
    plain = sum(1 for b in bodies if "schema" not in b)
    assert logical > 100 and plain_with_schema > 50 and plain > 50
    escaped = sum(1 for text in texts if text.isascii() and "\\u" in text)
    assert (escaped > 0) == (ascii_fraction > 0)
    assert (escaped == 0) or any(not text.isascii() for text in texts)
    # the decoder's ``tables`` option names each event's table and a key its images hold
    options = wl.debezium_table_options()
    assert set(options) == {event.spec.name for event in events}
    for event, payload in zip(events, payloads, strict=True):
        key = options[event.spec.name]["key"]
        image = payload["after"] or payload["before"]
        assert key == list(event.spec.key) and set(key) <= set(image)


# --------------------------------------------------------------------------- reference model


def _mk(spec, op, before, after, n):
    return wl.SourceEvent(spec, op, before, after, (3, 100 + n, 0), 1000 + n, 999, 1, 0, 0)


def test_reference_handbuilt():
    s = wl.CUSTOMERS
    base = {
        "id": "1",
        "name": "a",
        "email": "e",
        "bio": "long",
        "balance": "1.000000",
        "visits": "3",
        "tier": "1",
    }
    upd = dict(base, name="b", bio=wl.UNAVAILABLE)
    moved = dict(base, id=str(2**60), name="b")
    ev = [
        _mk(s, "r", None, base, 0),
        _mk(s, "u", None, upd, 1),  # TOAST keeps bio
        _mk(s, "d", dict(base, name="b"), None, 2),  # key change 1 -> 2**60
        _mk(s, "c", None, moved, 3),
        _mk(s, "c", None, dict(base, bio=None), 4),  # re-insert of key 1
        _mk(s, "u", None, dict(moved, email=None, bio=wl.UNAVAILABLE), 5),
        _mk(s, "d", dict(moved, email=None), None, 6),
    ]
    state = wl.reference_state(ev)
    assert state == {"inventory.customers": {("1",): dict(base, bio=None)}}
    hist = wl.reference_history(ev)["inventory.customers"]
    assert [(v.op, v.is_deleted) for v in hist[("1",)]] == [
        ("snapshot", False),
        ("update", False),
        ("delete", True),
        ("insert", False),
    ]
    assert hist[("1",)][1].row == dict(base, name="b")
    assert hist[("1",)][2].row is None
    assert [v.row for v in hist[(str(2**60),)]] == [moved, dict(moved, email=None), None]
    # late arrival / duplicates: same answer
    shuffled = ev[::-1] + ev[2:4]
    assert wl.reference_state(shuffled) == state
    assert wl.reference_history(shuffled) == wl.reference_history(ev)
    # a partial update of an unknown row (its insert not delivered yet) provides only its columns
    part = wl.reference_state([ev[1]])["inventory.customers"][("1",)]
    assert "bio" not in part and part["name"] == "b"
    assert wl.full_row(s, part)["bio"] is None
    # a delete delivered before the insert it follows: the row stays deleted
    assert wl.reference_state([ev[6], ev[3]]) == {"inventory.customers": {}}


@pytest.mark.parametrize("seed", range(10))
def test_reference_insensitive_to_delivery_order_and_duplicates(seed):
    ev = wl.generate(seed, 300)
    rng = random.Random(seed)
    mixed = ev + rng.sample(ev, 30)
    rng.shuffle(mixed)
    assert wl.reference_state(mixed) == wl.reference_state(ev)
    assert wl.reference_history(mixed) == wl.reference_history(ev)


def test_history_consistent_with_state(events):
    state = wl.reference_state(events)
    hist = wl.reference_history(events)
    assert sum(len(v) for t in hist.values() for v in t.values()) == len(events)
    for table, keys in hist.items():
        live = {k: vs[-1].row for k, vs in keys.items() if not vs[-1].is_deleted}
        assert live == state.get(table, {})
        for vs in keys.values():
            assert [v.position for v in vs] == sorted(v.position for v in vs)
            assert all((v.row is None) == v.is_deleted == (v.op == "delete") for v in vs)


def test_key_text():
    assert wl.key_text(wl.ORDERS, (str(2**60), "3")) == '{"line_no":"3","order_id":"1152921504606846976"}'
    assert wl.key_text(wl.CUSTOMERS, ("é",)) == '{"id":"é"}'


def test_write_files(tmp_path):
    runs = wl.deliver(wl.generate(2, 100), 2, 2)
    paths = wl.write_files(tmp_path / "landing", runs[0])
    assert all(p.exists() for p in paths)
    assert {p.parent.name for p in paths} == {"lines", "kcat"}
    assert wl.main(["--seed", "2", "--events", "50", "--runs", "2", "--out", str(tmp_path / "m")]) == 0
    assert (tmp_path / "m" / "run1" / "lines").is_dir()


# --------------------------------------------------------------------------- other formats


def _decoder_options(case: str, feed: dict) -> str:
    """The decoder options of a feed, as ``Config.decoder_options`` builds them (config order kept)."""
    tables = {
        t.name.lower(): {
            "key": [k.lower() for k in t.key],
            "columns": {c.name.lower(): c.type for c in t.columns},
            "name": t.name,
        }
        for t in wl.case_tables(case)
    }
    opts = {"format": feed["format"], "framing": feed["framing"], "options": feed.get("options") or {}}
    return json.dumps(opts | {"tables": tables})


def _fold(row: dict | None, change: dict) -> dict | None:
    """One changelog row applied as the merge does (reset on insert/snapshot/delete)."""
    if change["op"] == "delete":
        return None
    out = {} if change["op"] in ("insert", "snapshot") or row is None else dict(row)
    out.update({c: (change["after"] or {}).get(c) for c in change["after_cols"] or []})
    return out


@pytest.fixture(scope="module", params=list(wl.FORMAT_CASES))
def case_events(request):
    case = request.param
    return case, wl.adapt_events(case, wl.generate(4, 300, wl.case_tables(case)), 4)


def test_adapted_streams_mean_the_same(case_events):
    """Adapting a stream to a format changes how it is said, not the rows it leaves."""
    case, adapted = case_events
    original = wl.generate(4, 300, wl.case_tables(case))
    assert [e.position for e in adapted] == [e.position for e in original]
    want = wl.reference_state(original)
    got = wl.reference_state(adapted)
    hbase = wl.hbase_table(case).name
    if hbase in got:  # HBase cells are base64 of the text values
        got[hbase] = {
            tuple(base64.b64decode(k).decode() for k in key): {c: base64.b64decode(v).decode() for c, v in row.items()}
            for key, row in got[hbase].items()
        }
    assert got == want
    ops = Counter(e.op for e in adapted)
    assert ops["d"] and ops["u"]
    if case in ("arcion_internal_json", "lindorm_json"):
        assert not ops["r"]  # no snapshot op in these formats
    if case == "arcion_internal_json":
        partial = [e for e in adapted if e.flavor == "partial" and e.op == "u"]
        assert partial and all(set(e.before) == set(e.spec.key) for e in partial)
        assert all(not set(e.after) & set(e.spec.key) for e in partial)
    if case == "cdl_json":
        assert {e.flavor for e in adapted} == {"1.0", "2.0"}
        assert all(wl.UNAVAILABLE not in (e.after or {}).values() for e in adapted if e.flavor == "1.0")
        assert any(wl.UNAVAILABLE in (e.after or {}).values() for e in adapted if e.flavor == "2.0")
    if case == "debezium_logical":
        assert any(
            v == wl.UNAVAILABLE and e.spec.column(c).type.startswith("decimal")
            for e in adapted
            if e.op == "u"
            for c, v in e.after.items()
        )


def test_case_renderers_decode_back(case_events):
    """Every rendered record decodes, through the real decoder and the shared
    normalization, to a change that leaves the row the reference model computes."""
    from udfs.decode import decode_records
    from udfs.framing import split_file

    case, events = case_events
    feeds = wl.case_feeds(case)
    records = wl.render_case_records(case, events, random.Random(4))
    ref: dict = {}
    got: dict = {}
    seqs: dict = {}
    tombstones = 0
    for ev, (group, lines, n_tomb) in zip(events, records, strict=True):
        folder = group.partition("#")[0]
        feed = next(f for f in feeds if f["path"] == folder)
        opts = _decoder_options(case, feed)
        framing = "csv" if feed["framing"] == "csv" else feed["framing"]
        binary = feed["format"] == "dts_avro"  # binary values reach the decoder as base64
        raw = [r for line in lines for r in split_file(wl.frame_records(framing, [line]), framing, {}, binary)]
        results = decode_records(opts, [r.text for r in raw], [r.kafka_key for r in raw])
        assert results[0]["status"] == "ok", (ev, lines[0][:300], results[0])
        assert [r["status"] for r in results[1:]] == ["skipped"] * n_tomb
        tombstones += n_tomb
        (change,) = results[0]["changes"]
        key = (ev.table.lower(), wl.key_text(ev.spec, ev.key))
        assert (change["table_id"], change["key_text"]) == key
        ref.setdefault(ev.table, {})
        after = wl._apply(ref[ev.table], ev)
        got[key] = _fold(got.get(key), change)
        # a column never provided and a provided NULL both read NULL in the mart
        want = None if after is None else {c.lower(): v for c, v in wl.full_row(ev.spec, after).items()}
        have = None if got[key] is None else {c.name.lower(): got[key].get(c.name.lower()) for c in ev.spec.columns}
        assert have == want, (ev, change)
        if change["seq"] is not None:
            seqs.setdefault(key, []).append(change["seq"])
    for key, s in seqs.items():  # per key, the decoded positions follow the source order
        assert s == sorted(s), key
        if case != "lindorm_json":
            assert len(set(s)) == len(s), key
    assert (tombstones > 0) == (case == "arcion_kafka_json")


def test_case_specific_shapes():
    ev = wl.adapt_events("arcion_internal_json", wl.generate(2, 300, wl.case_tables("arcion_internal_json")), 2)
    counts = wl.arcion_operation_counts(ev)
    totals = [sum(json.loads(c).values()) for c in counts]
    assert totals == list(range(1, len(ev) + 1))  # cumulative: one more per event
    upd = next(e for e in ev if e.op == "u" and e.flavor == "partial" and e.after)
    doc = wl.render_arcion_internal_json(upd, counts[0])
    assert doc["opType"] == "U"
    assert {c for c, code in doc["exists"].items() if code == "2"} == set(upd.spec.key)
    assert {c for c, code in doc["exists"].items() if code == "1"} == set(upd.after)
    assert all(doc["after"][c] == "null" for c, code in doc["exists"].items() if code == "0")
    cursor = json.loads(doc["cursor"])
    assert (cursor["log"], cursor["position"]) == (f"log-bin.{upd.position[0]:06d}", upd.position[1])
    # CSV: 3X+3 realtime fields, X snapshot fields
    from udfs.formats.arcion_internal_csv import split_csv_row

    ev = wl.adapt_events("arcion_internal_csv", wl.generate(2, 300, wl.case_tables("arcion_internal_csv")), 2)
    for e in ev[:40]:
        n = len(split_csv_row(wl.render_arcion_internal_csv(e, '{"insertCount":1}')))
        assert n == (len(e.spec.columns) if e.op == "r" else 3 * len(e.spec.columns) + 3)
    assert wl.arcion_csv_header(ev[0].spec, True).endswith("OPERATION,CURSOR,OPERATIONCOUNT")
    # Arcion Kafka: empty images, not null
    ev = wl.adapt_events("arcion_kafka_json", wl.generate(2, 300, wl.case_tables("arcion_kafka_json")), 2)
    ins = next(e for e in ev if e.op == "c")
    dele = next(e for e in ev if e.op == "d")
    snap = next(e for e in ev if e.op == "r")
    assert wl.render_arcion_kafka_json(ins, False)[1]["before"] == {}
    key, value = wl.render_arcion_kafka_json(dele, True)
    assert value["payload"]["after"] == {} and set(key) == {"schema", "payload"}
    src = wl.render_arcion_kafka_json(snap, False)[1]["source"]
    assert (src["snapshot"], src["file"], src["pos"]) == ("true", None, None)
    # Lindorm SQL: a whole row unless NULLs are left out; HBase puts name their cells only
    ev = wl.adapt_events("lindorm_json", wl.generate(2, 300, wl.case_tables("lindorm_json")), 2)
    sql_upd = next(e for e in ev if e.op == "u" and e.spec.key != (wl.HBASE_ROW,))
    assert set(wl.render_lindorm_json(sql_upd, False)["payload"]["after"]) == set(sql_upd.spec.column_names)
    put = next(e for e in ev if e.spec.key == (wl.HBASE_ROW,) and e.op == "u" and len(e.after) < 4)
    msg = wl.render_lindorm_json(put, False)
    assert msg["schema"] == {} and msg["payload"]["op"] == "c" and msg["payload"]["after"] == put.after


def test_decimal_bytes_and_timestamps():
    from udfs.formats.connect_types import decode_value

    field = {"type": "bytes", "name": wl.CONNECT_DECIMAL, "parameters": {"scale": "6"}}
    for text in (
        "0.000000",
        "-0.000001",
        "127.000000",
        "-128.000000",
        "0.000128",
        "-12345678901234567890123456.123456",
    ):
        assert decode_value(wl.decimal_bytes(text), field)[0] == text
    assert base64.b64decode(wl.decimal_bytes("-0.000128")) == b"\x80"
    assert base64.b64decode(wl.decimal_bytes("0.000128")) == b"\x00\x80"
    ts = {"type": "int64", "name": wl.MICRO_TIMESTAMP}
    for micros in (0, 1, -1, 1_700_000_000_123_456, -631_152_000_000_001):
        text = wl.micros_text(micros)
        assert wl.text_micros(text) == micros
        assert decode_value(micros, ts)[0] == text


@pytest.mark.parametrize("case", list(wl.FORMAT_CASES))
def test_deliver_case(case):
    from udfs.framing import split_file

    events = wl.adapt_events(case, wl.generate(6, 250, wl.case_tables(case)), 6)
    runs = wl.deliver_case(case, events, 6, 3)
    assert runs == wl.deliver_case(case, events, 6, 3)
    delivered = wl.delivered_events(runs)
    assert {e.position for e in delivered} == {e.position for e in events}
    assert len(delivered) > len(events)  # duplicates
    feeds = {f["name"] for f in wl.case_feeds(case)}
    for files in runs:
        for f in files:
            assert wl.feed_of_path(case, f.path) in feeds
            assert max(Counter(e.position for e in f.events).values()) == 1
            header = f.framing == "csv"  # the header row is not a record
            assert len(split_file(f.content, f.framing, {"header": header})) == f.n_records
            if header:
                first = f.content.decode("utf-8").splitlines()[0]
                assert first.endswith("OPERATION,CURSOR,OPERATIONCOUNT") == any(e.op != "r" for e in f.events)
    heartbeats = sum(f.n_heartbeats for files in runs for f in files)
    tombstones = sum(f.n_tombstones for files in runs for f in files)
    assert (heartbeats > 0) == (case == "cdl_json")
    assert (tombstones > 0) == (case in ("arcion_kafka_json", "debezium_logical"))
    if case == "arcion_kafka_json":  # a tombstone after every delete (originals, not re-deliveries)
        assert tombstones == sum(1 for e in events if e.op == "d")


def test_dts_case_shapes():
    """The DTS cases say what they are meant to: multi-row Canal messages, both DELETE
    layouts, UPDATE ``old`` with the changed columns, DDL messages; both Shareplex op
    spellings; DTS Avro transaction markers."""
    from udfs.framing import split_file

    msgs: list[dict] = []
    skipped: Counter = Counter()
    for case in ("dts_canal_json", "dts_shareplex_json", "dts_avro"):
        events = wl.adapt_events(case, wl.generate(3, 200, wl.case_tables(case)), 3)
        for files in wl.deliver_case(case, events, 3, 3):
            for f in files:
                skipped.update({(case, r): n for r, n in f.other_skipped.items()})
                if case != "dts_avro":
                    msgs += [json.loads(r.text) | {"_case": case} for r in split_file(f.content, f.framing)]
    canal = [m for m in msgs if m["_case"] == "dts_canal_json" and not m["isDdl"]]
    assert any(len(m["data"] or []) > 1 for m in canal)
    deletes = [m for m in canal if m["type"] == "DELETE"]
    assert any(m["data"] is None and m["old"] for m in deletes) and any(m["data"] for m in deletes)
    updates = [m for m in canal if m["type"] == "UPDATE"]
    assert updates and all(len(o) < len(m["mysqlType"]) for m in updates for o in m["old"])
    assert sum(m["isDdl"] for m in msgs if m["_case"] == "dts_canal_json") == skipped[("dts_canal_json", "ddl")] > 0
    ops = {m["meta"]["op"] for m in msgs if m["_case"] == "dts_shareplex_json"}
    assert ops == {"ins", "upd", "del", "INSERT", "UPDATE", "DELETE"}
    assert skipped[("dts_avro", "begin")] and skipped[("dts_avro", "commit")]
