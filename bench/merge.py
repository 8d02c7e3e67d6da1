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
   state must not change for them), as one Debezium JSON landing file, then a ``dbt
   run`` of the models up to the merge (``BATCH_SELECTION``). The merge time is the sum of the merge nodes
   (``int_row_versions_refolded``, ``state``, ``history``, ``merge_log``) from
   ``run_results.json``; decoding the batch is reported apart.

After each batch the state is checked: S live rows, and exactly the on-time keys carry
the batch's LSN.
"""

from __future__ import annotations

import contextlib
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
MERGE_NODES = ("int_row_versions_refolded", "state", "history", "merge_log")
#: a batch run: decode, changelog, the merge, and the audit row that marks the file read
#: (no marts, audit reports or tests: they do not change what the merge costs)
BATCH_SELECTION = "+merge_log +audit_files"

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


def run_merge_growth(
    spark: Any,
    config: Any,
    landing: Path,
    sizes: list[int],
    batch: int,
    late_fraction: float,
    seed: int,
    sampler: Any,
) -> dict[str, Any]:
    from udfs.pipeline import run_dbt

    s = config.schema
    target = config.warehouse / "dbt" / "target"
    decoder_options = json.dumps(config.decoder_options(config.feeds[0]), sort_keys=True)
    with sampler.section("merge:setup"):
        t0 = time.perf_counter()
        run_dbt(config, "run", extra=["--select", "+changelog"])
        bootstrap = time.perf_counter() - t0
        order_key_sql, bucket_sql = _compile_macros(config)
        columns = spark.table(f"`{s}`.changelog").columns

    steps = []
    previous = 0
    for b, size in enumerate(sizes):
        sql = _base_rows_sql(previous, size, order_key_sql, bucket_sql, columns)
        check_synthetic_row(spark, sql, size - 1, decoder_options)
        with sampler.section(f"merge:S={size}:base"):
            t0 = time.perf_counter()
            spark.sql(sql).write.insertInto(f"`{s}`.changelog")
            insert_s = time.perf_counter() - t0
            t0 = time.perf_counter()
            run_dbt(config, "run", extra=["--select", " ".join(MERGE_NODES)])
            initial_merge_wall = time.perf_counter() - t0
            initial = node_times(target)
        lines, n_late = batch_lines(b, size, batch, late_fraction, seed)
        (landing / f"batch-{b:02d}.json").write_text("\n".join(lines) + "\n", encoding="utf-8")
        changelog_before = spark.table(f"`{s}`.changelog").count()
        with sampler.section(f"merge:S={size}:batch"):
            t0 = time.perf_counter()
            run_dbt(config, "run", extra=["--select", BATCH_SELECTION])
            wall = time.perf_counter() - t0
        timing = node_times(target)
        merge_s = sum(timing["nodes"].get(n, 0.0) for n in MERGE_NODES)
        ontime_prefix = str(ONTIME_LSN + b * 10**9).zfill(20)[:11]
        live, ontime_applied = spark.sql(
            f"select count_if(not is_deleted), count_if(last_seq like '{ontime_prefix}%') from `{s}`.state"
        ).collect()[0]
        versions, buckets = spark.sql(
            f"select versions_rewritten, buckets_rewritten from `{s}`.merge_log order by merged_through desc limit 1"
        ).collect()[0]
        expected_ontime = min(batch, size) - n_late
        steps.append(
            {
                "state_rows": size,
                "state_rows_live_after": live,
                "changelog_rows_before_batch": changelog_before,
                "batch_changes": min(batch, size),
                "batch_late": n_late,
                "ontime_applied": ontime_applied,
                "check_ok": live == size and ontime_applied == expected_ontime,
                "merge_s": round(merge_s, 3),
                "merge_nodes_s": {n: timing["nodes"].get(n) for n in MERGE_NODES},
                "batch_decode_s": timing["stages"]["read+decode (stg)"],
                "batch_run_wall_s": round(wall, 3),
                "batch_stages_s": timing["stages"],
                "versions_rewritten": versions,
                "buckets_rewritten": buckets,
                "base_insert_s": round(insert_s, 3),
                "initial_merge_s": round(sum(initial["nodes"].get(n, 0.0) for n in MERGE_NODES), 3),
                "initial_merge_wall_s": round(initial_merge_wall, 3),
            }
        )
        previous = size
    ratios = [
        {
            "from": a["state_rows"],
            "to": c["state_rows"],
            "state_growth": round(c["state_rows"] / a["state_rows"], 2),
            "merge_time_ratio": round(c["merge_s"] / a["merge_s"], 2),
        }
        for a, c in zip(steps, steps[1:], strict=False)
    ]
    return {
        "table": TABLE,
        "buckets": config.buckets,
        "batch": batch,
        "late_fraction": late_fraction,
        "bootstrap_s": round(bootstrap, 3),
        "steps": steps,
        "ratios": ratios,
        "target": "merge time ratio <= 2 when the state grows 10x",
    }
