"""Merge growth: the time to merge one fixed batch into a state of growing size.

One schema, one table (``inventory.customers``, PostgreSQL Debezium events: the order
key is the LSN), grown in steps:

1. a bootstrap ``dbt run`` of the staging models and the changelog over an empty
   landing folder creates the changelog;
2. for each size S: the changelog gets the snapshot rows of keys ``[previous S, S)``,
   written natively by Spark in the changelog's own schema (the order key and bucket
   expressions are compiled from the project's macros ``cdc_order_key`` and
   ``cdc_bucket``; one row per size is checked against what ``cdc_decode`` makes of the
   same event rendered as Debezium JSON, so the synthetic rows are the rows the decoder
   would have written). A ``dbt run`` of the merge models folds them (the *initial
   merge*): the state now holds S rows;
3. the batch: ``batch`` full-image updates of distinct random keys of the state,
   ``late_fraction`` of them *late* (their LSN is older than the key's snapshot, so the
   state must not change for them), as one Debezium JSON landing file; a ``dbt run``
   decodes it into the changelog (``DECODE_SELECTION``), a second one merges it
   (``MERGE_NODES``). The merge time is the sum of the merge nodes
   (``MERGE_NODES``: the pending changes, the key moves, the changes read, the changes
   to refold, the refold, the two segment tables, ``state_columns``, the ``state`` and
   ``history`` views, ``merge_log``) from ``run_results.json``; its CPU is
   what the process tree used during the second run. ``repeat`` batches are merged at
   each size by each path and the fastest counts (the machine is shared); every batch
   stays in the changelog, so the state's history grows with them.

The state and the history are merge-on-read (``macros/sql/cdc_merge_plan.sql``): the
initial merge of each size is forced to compact, so every batch starts from one base
segment of S keys. Two paths, batches alternating so both see the same state:

* *append* (the models' plan below the compaction threshold): the merge writes a segment
  with the batch's keys only;
* *compact* (``compact_after_segments: 0``, what every merge did before segments: copy on
  write): the merge also copies every other key into a new base.

After each *append* batch the read cost of merge-on-read is measured: a full read of the
``state`` view (the base plus one segment, resolved by key) written to Spark's ``noop``
sink, against the same read of the base segment alone (what a copy-on-write table costs
to read); the fastest of ``READS`` reads each.

After each *append* batch the marts are measured too: a ``dbt run`` of ``mart_columns``
(its views included), and its read of the columns from ``state_columns`` against the
same read from every row of the ``state`` view (what it read before ``state_columns``),
the two reads' columns checked equal.

After each batch the state is checked: S live rows, and exactly the on-time keys carry
the batch's LSN.
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import json
import random
import time
from pathlib import Path
from typing import Any

from bench.data import workload
from bench.dbt_nodes import node_times

TABLE = "inventory.customers"
COLUMNS = ("id", "name", "email", "bio", "balance", "visits", "tier")
BASE_LSN = 10**9  # key k's snapshot is at BASE_LSN + k * LSN_STEP
LSN_STEP = 100
ONTIME_LSN = 10**13  # every on-time batch change is after every snapshot
TS_MS = 1_700_000_000_000
MERGE_NODES = (
    "int_pending_changes",
    "key_moves",
    "int_key_move_links",
    "int_changes_read",
    "int_changes_to_refold",
    "int_row_versions_refolded",
    "state_segments",
    "history_segments",
    "state_columns",
    "state",
    "history",
    "merge_log",
)
#: full reads of the state per measurement (the fastest counts)
READS = 2
#: a batch's first run: decode, changelog, and the audit row that marks the file read
#: (no marts, audit reports or tests: they do not change what the merge costs); then a
#: run of ``MERGE_NODES`` alone, so its CPU is measured apart
DECODE_SELECTION = "+audit_files"
#: the models whose data tests a run pays for at every size (measured apart, ``dbt test``
#: after the merge): the changelog's, the audit row's and the merge's
TESTED_MODELS = ("changelog", "audit_files", *MERGE_NODES)
#: the slowest of those tests listed per batch
SLOWEST_TESTS = 6
#: the test scopes measured side by side (``Config.test_scope``), in turn
TEST_SCOPES = ("all", "run")

#: The values of key ``k`` as Spark SQL over a column ``id`` (see :func:`base_row`).
_VALUE_SQL = {
    "id": "cast(id as string)",
    "name": "concat('customer-', id)",
    "email": "case when id % 10 = 0 then null else concat('c', id, '@example.com') end",
    "bio": "repeat('lorem ipsum ', 1 + cast(id % 12 as int))",
    "balance": "concat(cast(id % 100000 as string), '.', lpad(cast(id % 1000000 as string), 6, '0'))",
    "visits": "cast(id % 1000 as string)",
    "tier": "cast(id % 5 as string)",
}


def base_row(k: int) -> dict[str, str | None]:
    """The snapshot row of key ``k`` (the same values as ``_VALUE_SQL``)."""
    return {
        "id": str(k),
        "name": f"customer-{k}",
        "email": None if k % 10 == 0 else f"c{k}@example.com",
        "bio": "lorem ipsum " * (1 + k % 12),
        "balance": f"{k % 100000}.{k % 1000000:06d}",
        "visits": str(k % 1000),
        "tier": str(k % 5),
    }


def _event(op: str, row: dict[str, str | None], lsn: int, ts_ms: int, tx_id: int) -> Any:
    wl = workload()
    return wl.SourceEvent(
        wl.CUSTOMERS,
        op,
        None,
        row,
        position=(1, lsn, 0),
        lsn=lsn,
        prev_commit_lsn=lsn - 1,
        tx_id=tx_id,
        ts_ms=ts_ms,
        capture_ts_ms=ts_ms + 500,
        snapshot="true" if op == "r" else "false",
    )


def snapshot_line(k: int) -> str:
    """Key ``k``'s snapshot as the Debezium JSON line the synthetic row stands for."""
    ev = _event("r", base_row(k), BASE_LSN + k * LSN_STEP, TS_MS + k, 500 + k)
    return json.dumps(workload().render_debezium(ev, False), separators=(",", ":"))


def _base_rows_sql(start: int, end: int, order_key_sql: str, bucket_sql: str, columns: list[str]) -> str:
    after = ", ".join(f"'{c}', {_VALUE_SQL[c]}" for c in COLUMNS)
    cols = ", ".join(f"'{c}'" for c in COLUMNS)
    return f"""
with ids as (
    select id, {BASE_LSN} + id * {LSN_STEP} as lsn, {TS_MS} + id as ts_ms, 500 + id as txid
    from range({start}, {end})
),
rows as (
    select
        'bench_merge' as feed, 'debezium_json' as format,
        'bench-synthetic:base-{start}' as source_file,
        cast(id - {start} as int) as record_index, 0 as row_index,
        cast(null as string) as kafka_topic, cast(null as int) as kafka_partition,
        cast(null as bigint) as kafka_offset,
        'inventorydb' as source_db, 'inventory' as source_schema, 'customers' as source_table,
        'snapshot' as op,
        map('id', cast(id as string)) as key,
        concat('{{"id":"', id, '"}}') as key_text,
        cast(null as map<string, string>) as before,
        map({after}) as after,
        cast(null as array<string>) as before_cols,
        array({cols}) as after_cols,
        cast(map() as map<string, string>) as col_types,
        lpad(cast(lsn as string), 20, '0') as seq,
        timestamp_micros(ts_ms * 1000) as commit_ts,
        timestamp_micros((ts_ms + 500) * 1000) as capture_ts,
        cast(txid as string) as tx_id,
        substr(sha2(concat('bench-base|', id), 256), 1, 32) as event_id,
        map('connector', 'postgresql', 'snapshot', 'true', 'server', 'dbserver1', 'version', '2.5.0.Final',
            'lsn', cast(lsn as string), 'txId', cast(txid as string)) as extras,
        '{TABLE}' as table_id
    from ids
),
final as (
    select
        rows.*,
        {order_key_sql} as order_key,
        'bench-synthetic-base' as run_id,
        current_timestamp() as loaded_at,
        {bucket_sql} as bucket
    from rows
)
select {", ".join(columns)} from final
"""


_CHECKED = (
    "source_db",
    "source_schema",
    "source_table",
    "table_id",
    "op",
    "key",
    "key_text",
    "before",
    "after",
    "before_cols",
    "after_cols",
    "col_types",
    "seq",
    "tx_id",
    "extras",
    "commit_ts_us",
    "capture_ts_us",
)


def check_synthetic_row(spark: Any, sql: str, k: int, decoder_options: str) -> None:
    """Fail unless the synthetic row of key ``k`` is what ``cdc_decode`` makes of its event."""
    from udfs.decode import decode_records

    decoded = decode_records(decoder_options, [snapshot_line(k)])[0]
    assert decoded["status"] == "ok", decoded
    expected = decoded["changes"][0]
    row = (
        spark.sql(sql)
        .where(f'key_text = \'{{"id":"{k}"}}\'')
        .selectExpr("*", "unix_micros(commit_ts) as commit_ts_us", "unix_micros(capture_ts) as capture_ts_us")
        .collect()
    )
    assert len(row) == 1, f"synthetic row of key {k}: {len(row)} rows"
    got = row[0].asDict()
    diffs = {c: (got[c], expected[c]) for c in _CHECKED if got[c] != expected[c]}
    assert not diffs, f"synthetic changelog row differs from the decoder's (got, expected): {diffs}"


def batch_lines(b: int, n_keys: int, size: int, late_fraction: float, seed: int) -> tuple[list[str], int]:
    """Batch ``b``: full-image updates of ``size`` distinct random keys below ``n_keys``,
    ``late_fraction`` of them older than the key's snapshot. Returns (lines, late count)."""
    wl = workload()
    rng = random.Random(f"bench-merge:{seed}:{b}")
    keys = rng.sample(range(n_keys), min(size, n_keys))
    n_late = round(len(keys) * late_fraction)
    late = set(rng.sample(range(len(keys)), n_late))
    lines = []
    for j, k in enumerate(keys):
        row = base_row(k) | {"name": f"customer-{k}-batch-{b}", "visits": str(k % 1000 + b + 1)}
        if j in late:
            lsn, ts = BASE_LSN + k * LSN_STEP - 1 - j % 50, TS_MS + k - 1
        else:
            lsn, ts = ONTIME_LSN + b * 10**9 + j * 10, TS_MS + 10**9 + b * 10**6 + j
        ev = _event("u", row, lsn, ts, 10**7 + b * 10**6 + j)
        lines.append(json.dumps(wl.render_debezium(ev, False), separators=(",", ":")))
    rng.shuffle(lines)
    return lines, n_late


def _compile_macros(config: Any) -> tuple[str, str]:
    """The SQL of ``cdc_order_key()`` and ``cdc_bucket()`` as this configuration renders them."""
    from udfs.pipeline import run_dbt

    marker = "-- bench-split --"
    with contextlib.redirect_stdout(io.StringIO()):  # dbt prints the compiled query
        result = run_dbt(
            config, "compile", extra=["--inline", f"select {{{{ cdc_order_key() }}}} {marker} {{{{ cdc_bucket() }}}}"]
        )
    code = result.result.results[0].node.compiled_code.strip()
    assert code.startswith("select"), code
    order_key, bucket = code[len("select") :].split(marker)
    return order_key.strip(), bucket.strip()


#: the merge plans (``cdc_merge_plan``) the section compares
MERGE_PATHS = ("append", "compact")


def _with_plan(config: Any, path: str) -> Any:
    """The configuration whose next merge takes ``path``: every merge compacts, or none does."""
    if path == "compact":
        return dataclasses.replace(config, compact_after_segments=0)
    return dataclasses.replace(config, compact_after_segments=10**9, compact_after_fraction=1e12)


def _best_read_s(spark: Any, sql: str) -> float:
    """The fastest of ``READS`` full reads of ``sql`` into Spark's noop sink."""
    best = float("inf")
    for _ in range(READS):
        started = time.perf_counter()
        spark.sql(sql).write.format("noop").mode("overwrite").save()
        best = min(best, time.perf_counter() - started)
    return round(best, 3)


def _read_costs(spark: Any, schema: str) -> dict[str, float]:
    """A full read of the ``state`` view against the same read of its base segment alone."""
    base = spark.sql(
        f"select run_id from `{schema}`.merge_log where compacted order by merged_through desc limit 1"
    ).first()[0]
    columns = ", ".join(c for c in spark.table(f"`{schema}`.state").columns)
    return {
        "read_state_s": _best_read_s(spark, f"select {columns} from `{schema}`.state"),
        "read_base_s": _best_read_s(spark, f"select {columns} from `{schema}`.state_segments where segment = '{base}'"),
    }


#: a table's columns with their declared types, as ``mart_columns`` reads them: from
#: ``state_columns`` (what a run reads), or from every row of the ``state`` view (what
#: it read before ``state_columns``)
_COLUMNS_SQL = {
    "state_columns": (
        "select table_id, column_name, collect_set(logical_type) as declared from `{s}`.state_columns "
        "where column_name is not null group by table_id, column_name"
    ),
    "state": (
        "select table_id, column_name, collect_set(logical_type) as declared from ("
        "select table_id, column_name, cast(null as string) as logical_type from `{s}`.state "
        "lateral view explode(map_keys(row)) held as column_name union all "
        "select table_id, column_name, logical_type from `{s}`.state "
        "lateral view explode(col_types) declared as column_name, logical_type) "
        "group by table_id, column_name"
    ),
}


def _mart_costs(spark: Any, config: Any, target: Path) -> dict[str, Any]:
    """What the marts cost after this batch: the ``mart_columns`` node (its views
    included), and its read of the columns from ``state_columns`` against the same read
    from the whole state (side by side; both give the same columns)."""
    from udfs.pipeline import run_dbt

    run_dbt(config, "run", extra=["--select", "mart_columns"])
    node = node_times(target)["nodes"]["mart_columns"]
    reads = {name: _best_read_s(spark, sql.format(s=config.schema)) for name, sql in _COLUMNS_SQL.items()}
    columns = {
        name: {(r[0], r[1]) for r in spark.sql(sql.format(s=config.schema)).collect()}
        for name, sql in _COLUMNS_SQL.items()
    }
    assert columns["state_columns"] == columns["state"], columns
    return {"mart_columns_s": node, "columns_read_s": reads}


def _merge_one_batch(
    spark: Any,
    config: Any,
    landing: Path,
    b: int,
    size: int,
    batch: int,
    late_fraction: float,
    seed: int,
    sampler: Any,
    path: str = "append",
) -> dict[str, Any]:
    """Land batch ``b`` over the first ``size`` keys, decode it, merge it by ``path``
    (see ``MERGE_PATHS``); timed and checked."""
    from udfs.pipeline import run_dbt

    s = config.schema
    target = config.warehouse / "dbt" / "target"
    lines, n_late = batch_lines(b, size, batch, late_fraction, seed)
    (landing / f"batch-{b:02d}.json").write_text("\n".join(lines) + "\n", encoding="utf-8")
    with sampler.section(f"merge:S={size}:batch decode"):
        run_dbt(config, "run", extra=["--select", DECODE_SELECTION])
    decode = node_times(target)
    changelog_rows = spark.table(f"`{s}`.changelog").count()
    with sampler.section(f"merge:S={size}:batch merge ({path})") as spent:
        run_dbt(_with_plan(config, path), "run", extra=["--select", " ".join(MERGE_NODES)])
    merge = node_times(target)
    ontime_prefix = str(ONTIME_LSN + b * 10**9).zfill(20)[:11]
    live, ontime_applied = spark.sql(
        f"select count_if(not is_deleted), count_if(last_seq like '{ontime_prefix}%') from `{s}`.state"
    ).collect()[0]
    versions, buckets = spark.sql(
        f"select versions_rewritten, buckets_rewritten from `{s}`.merge_log order by merged_through desc limit 1"
    ).collect()[0]
    n = min(batch, size)
    took = spark.sql(f"select distinct merge_plan from `{s}`.int_row_versions_refolded").first()[0]
    assert took == path, f"batch {b}: asked for the {path} path, the model took the {took} path"
    reads = _read_costs(spark, s) if path == "append" else {}
    tests = {"tests": _test_costs(config, target)} if path == "append" else {}
    marts = _mart_costs(spark, config, target) if path == "append" else {}
    return {
        "batch_no": b,
        "path": path,
        "changelog_rows": changelog_rows,
        "late": n_late,
        "check_ok": live == size and ontime_applied == n - n_late,
        "state_rows_live_after": live,
        "ontime_applied": ontime_applied,
        "merge_s": round(sum(merge["nodes"].get(node, 0.0) for node in MERGE_NODES), 3),
        "merge_nodes_s": {node: merge["nodes"].get(node) for node in MERGE_NODES},
        "merge_invocation_wall_s": round(spent["wall_s"], 3),
        "merge_invocation_cpu_s": round(spent["cpu_s"], 1),
        "decode_s": decode["stages"]["read+decode (stg)"],
        "changelog_s": decode["stages"]["changelog"],
        "versions_rewritten": versions,
        "buckets_rewritten": buckets,
        **reads,
        **tests,
        **marts,
    }


def _test_costs(config: Any, target: Path) -> dict[str, Any]:
    """What the data tests of the changelog and the merge's models cost after this batch
    (``dbt test`` of ``TESTED_MODELS``), with each ``test_scope`` in turn (``run``: the
    unique tests read the rows of the latest run; ``all``: every row): the wall time
    while a test ran, the tests' busy seconds and the slowest tests."""
    from udfs.pipeline import run_dbt

    costs = {}
    for scope in TEST_SCOPES:
        run_dbt(dataclasses.replace(config, test_scope=scope), "test", extra=["--select", " ".join(TESTED_MODELS)])
        tests = node_times(target)
        costs[scope] = {
            "wall_s": tests["nodes_wall_s"],
            "busy_s": tests["stages"]["tests"],
            "n": tests["n_tests"],
            "slowest_s": dict(sorted(tests["tests"].items(), key=lambda test: -test[1])[:SLOWEST_TESTS]),
        }
    return costs


def run_merge_growth(
    spark: Any,
    config: Any,
    landing: Path,
    sizes: list[int],
    batch: int,
    late_fraction: float,
    seed: int,
    sampler: Any,
    repeat: int = 2,
) -> dict[str, Any]:
    """See the module doc; ``repeat`` batches are merged at each size, the fastest counts."""
    from udfs.pipeline import run_dbt

    s = config.schema
    target = config.warehouse / "dbt" / "target"
    decoder_options = json.dumps(config.decoder_options(config.feeds[0]), sort_keys=True)
    with sampler.section("merge:setup") as setup:
        run_dbt(config, "run", extra=["--select", "+changelog"])
        order_key_sql, bucket_sql = _compile_macros(config)
        columns = spark.table(f"`{s}`.changelog").columns

    steps = []
    previous = 0
    b = 0
    for size in sizes:
        sql = _base_rows_sql(previous, size, order_key_sql, bucket_sql, columns)
        check_synthetic_row(spark, sql, size - 1, decoder_options)
        with sampler.section(f"merge:S={size}:base insert") as insert:
            spark.sql(sql).write.insertInto(f"`{s}`.changelog")
        with sampler.section(f"merge:S={size}:initial merge") as initial_spent:
            run_dbt(_with_plan(config, "compact"), "run", extra=["--select", " ".join(MERGE_NODES)])
        initial = node_times(target)
        batches = []
        for _ in range(repeat):
            for path in MERGE_PATHS:
                batches.append(
                    _merge_one_batch(spark, config, landing, b, size, batch, late_fraction, seed, sampler, path)
                )
                b += 1
        compact = min((r for r in batches if r["path"] == "compact"), key=lambda r: r["merge_s"])
        appended = [r for r in batches if r["path"] == "append"]
        best = min(appended, key=lambda r: r["merge_s"])
        steps.append(
            {
                "state_rows": size,
                "batch_changes": min(batch, size),
                "batch_late": best["late"],
                "changelog_rows_before_batch": best["changelog_rows"] - min(batch, size),
                "check_ok": all(r["check_ok"] for r in batches),
                # the fastest of the batches merged at this size
                "merge_s": best["merge_s"],
                "merge_cpu_s": min(r["merge_invocation_cpu_s"] for r in appended),
                "merge_nodes_s": best["merge_nodes_s"],
                # the same, compacting (copy on write; side by side, alternating batches)
                "compact_merge_s": compact["merge_s"],
                "compact_merge_cpu_s": min(r["merge_invocation_cpu_s"] for r in batches if r["path"] == "compact"),
                "compact_merge_nodes_s": compact["merge_nodes_s"],
                # read cost of merge-on-read: the state view (base + one segment) vs the base alone
                "read_state_s": min(r["read_state_s"] for r in appended),
                "read_base_s": min(r["read_base_s"] for r in appended),
                # the data tests after a merge, by test scope (fastest of the batches)
                "tests_wall_s": {sc: min(r["tests"][sc]["wall_s"] for r in appended) for sc in TEST_SCOPES},
                "tests_busy_s": {sc: min(r["tests"][sc]["busy_s"] for r in appended) for sc in TEST_SCOPES},
                # the marts after a merge: the mart_columns node, and its read of the columns
                # from state_columns against the whole state (fastest of the batches)
                "mart_columns_s": min(r["mart_columns_s"] for r in appended),
                "columns_read_s": {src: min(r["columns_read_s"][src] for r in appended) for src in _COLUMNS_SQL},
                "batch_decode_s": best["decode_s"],
                "versions_rewritten": best["versions_rewritten"],
                "buckets_rewritten": best["buckets_rewritten"],
                "base_insert_s": round(insert["wall_s"], 3),
                "initial_merge_s": round(sum(initial["nodes"].get(n, 0.0) for n in MERGE_NODES), 3),
                "initial_merge_cpu_s": round(initial_spent["cpu_s"], 1),
                "batches": batches,
            }
        )
        previous = size
    ratios = [
        {
            "from": a["state_rows"],
            "to": c["state_rows"],
            "state_growth": round(c["state_rows"] / a["state_rows"], 2),
            "merge_time_ratio": round(c["merge_s"] / a["merge_s"], 2),
            "merge_cpu_ratio": round(c["merge_cpu_s"] / a["merge_cpu_s"], 2),
            "compact_merge_time_ratio": round(c["compact_merge_s"] / a["compact_merge_s"], 2),
            "read_state_time_ratio": round(c["read_state_s"] / a["read_state_s"], 2),
            "tests_time_ratio": {sc: round(c["tests_wall_s"][sc] / a["tests_wall_s"][sc], 2) for sc in TEST_SCOPES},
            "mart_columns_time_ratio": round(c["mart_columns_s"] / a["mart_columns_s"], 2),
            "columns_read_time_ratio": {
                src: round(c["columns_read_s"][src] / a["columns_read_s"][src], 2) for src in _COLUMNS_SQL
            },
        }
        for a, c in zip(steps, steps[1:], strict=False)
    ]
    return {
        "table": TABLE,
        "buckets": config.buckets,
        "batch": batch,
        "late_fraction": late_fraction,
        "repeat": repeat,
        "bootstrap_s": round(setup["wall_s"], 3),
        "steps": steps,
        "ratios": ratios,
        "target": "merge time ratio <= 2 when the state grows 10x",
    }
