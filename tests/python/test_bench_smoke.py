"""Smoke test of the benchmark harness (``python -m bench``) at a tiny size.

It checks that one run produces every section with positive figures, the JSON and the
chart; it asserts no timing (the figures of a shared CI machine mean nothing). The
harness runs in its own process: it starts its own Spark session with its own settings.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def _positive(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0


def _run_spark_bench(module: str, args: list[str], timeout: int) -> subprocess.CompletedProcess:
    """``python -m <module> <args>`` from the repository, its Spark workers on this Python;
    the process must succeed."""
    done = subprocess.run(
        [sys.executable, "-m", module, *args],
        cwd=REPO,
        env=dict(os.environ, PYSPARK_PYTHON=sys.executable),
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    return done


def test_every_module_the_run_imports_late_is_loaded_right_after_the_snapshot() -> None:
    """``bench.run`` imports some of its modules inside ``main`` (after the code snapshot,
    as they import ``udfs``); ``load_harness`` must load each of them at the snapshot, or
    an edit of ``bench/`` during a run reaches the run's later sections."""
    from bench.run import HARNESS_MODULES

    source = (REPO / "bench" / "run.py").read_text(encoding="utf-8")
    late = set(re.findall(r"^\s+from (bench\.\w+) import", source, flags=re.MULTILINE))
    assert late and late <= set(HARNESS_MODULES), sorted(late - set(HARNESS_MODULES))


def test_bench_writes_every_section_with_positive_figures(tmp_path: Path) -> None:
    out = tmp_path / "results"
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable)
    args = [
        *("--formats", "debezium_json,arcion_internal_csv,dts_avro", "--events", "2000", "--other-events", "600"),
        *("--e2e-events", "2000"),
        *("--state-sizes", "500,5000", "--merge-batch", "200", "--merge-repeat", "1", "--hot-key-versions", "80"),
        *("--work", str(tmp_path / "work"), "--out", str(out)),
    ]
    # The timeout only stops a hung run: about 460 s on a quiet CI machine, more than
    # 900 s beside another pipeline module on a busy one.
    done = subprocess.run(
        [sys.executable, "-m", "bench", *args], cwd=REPO, env=env, capture_output=True, text=True, timeout=2400
    )
    assert done.returncode == 0, done.stderr[-4000:]
    assert "DECODE" in done.stdout and "MERGE GROWTH" in done.stdout
    # the progress log names each format's variants, and no zero for one it does not have
    assert "cached flat" in done.stderr and "flat UDTF" in done.stderr and " 0 r/s" not in done.stderr

    (result,) = out.glob("*.json")
    assert result.with_suffix(".png").stat().st_size > 0
    res = json.loads(result.read_text())
    assert set(res) >= {"meta", "decode", "end_to_end", "merge_growth", "hot_key", "memory"}

    decode, csv, avro = res["decode"]
    assert decode["format"] == "debezium_json" and decode["data"]["records"] == 2000
    assert decode["python_decode_only"]["quarantined"] == 0
    for variant in ("project", "project_one_task", "native_from_json", "bound_orjson"):
        assert _positive(decode[variant]["records_per_s"]), variant
        assert _positive(decode[variant]["mb_per_s"]), variant
    assert _positive(decode["python_decode_only"]["records_per_s"])
    # debezium_json: the record-by-record path and the results cached in the workers
    # and the same cached results yielded flat by an Arrow UDTF, and the files decoded in one
    variants = ("project_python_path", "project_two_calls", "project_cached_results", "project_cached_flat")
    for variant in (*variants, "project_flat_udtf"):
        assert _positive(decode[variant]["records_per_s"]), variant
    assert isinstance(decode["project_cached_results"]["cache_misses"], int)
    assert _positive(decode["ratio_cached_results_over_native"]) and _positive(decode["ratio_project_over_two_calls"])
    assert _positive(decode["ratio_cached_flat_over_native"]) and _positive(decode["cpu_s"]["project_cached_flat"])
    assert _positive(decode["ratio_flat_udtf_over_project"]) and _positive(decode["ratio_flat_udtf_over_native"])
    assert _positive(decode["ratio_project_over_native"]) and _positive(decode["ratio_project_over_bound_orjson"])
    # Arcion internal CSV: one table, snapshot and realtime files with their header rows,
    # against Spark's CSV reader, the csv module and pyarrow.csv; every row one change
    assert csv["format"] == "arcion_internal_csv" and csv["data"]["records"] == 600
    assert csv["data"]["files"] == 2 and csv["bound_orjson"]["parser"] == "csv"
    assert csv["python_decode_only"]["changes"] == 600 and csv["python_decode_only"]["quarantined"] == 0
    for variant in ("project", "native_from_json", "bound_orjson", "bound_pyarrow", "python_decode_only"):
        assert _positive(csv[variant]["records_per_s"]), variant
    assert _positive(csv["project_python_path"]["records_per_s"])  # its columnar decoder against decode_records
    assert "arcion_internal_csv: native is Spark's CSV reader" in done.stdout
    # DTS Avro: a Kafka dump as parquet, against fastavro; Spark has no Avro decoder here
    assert avro["format"] == "dts_avro" and avro["data"]["records"] == 600 and avro["data"]["files"] == 1
    assert avro["bound_orjson"]["parser"] == "fastavro" and avro["bound_orjson"]["failed_records"] == 0
    assert avro["python_decode_only"]["changes"] == 600 and avro["python_decode_only"]["quarantined"] == 0
    for variant in ("project", "bound_orjson", "python_decode_only"):
        assert _positive(avro[variant]["records_per_s"]), variant
    assert avro["native_from_json"]["records_per_s"] is None and avro["ratio_project_over_native"] is None
    assert "spark-avro" in avro["native_from_json"]["missing"] and "dts_avro: no Avro decoder" in done.stdout

    e2e = res["end_to_end"]
    assert e2e["summary"]["records"] == 2000 and e2e["summary"]["quarantined"] == 0
    for stage in ("read+decode (stg)", "changelog", "merge (state/history)", "marts"):
        assert _positive(e2e["stages_s"][stage]), stage
    assert _positive(e2e["native_decode_parquet_s"]) and _positive(e2e["ratio_project_over_native"])
    # the run's nodes, four at a time by default: their span fits in the run's wall time
    assert e2e["dbt_threads"] == 4 and 0 < e2e["nodes_wall_s"] <= e2e["project_wall_s"]

    merge = res["merge_growth"]
    assert [s["state_rows"] for s in merge["steps"]] == [500, 5000]
    for step in merge["steps"]:
        assert step["check_ok"], step
        assert _positive(step["merge_s"]) and _positive(step["merge_cpu_s"]) and _positive(step["initial_merge_s"])
        assert _positive(step["compact_merge_s"]) and _positive(step["compact_merge_cpu_s"])
        assert _positive(step["read_state_s"]) and _positive(step["read_base_s"])
        # the data tests after the merge, the unique tests reading every row and the run's
        assert all(_positive(step["tests_wall_s"][scope]) for scope in ("all", "run")), step["tests_wall_s"]
        # the marts after the merge; the columns read from state_columns and from the whole state
        assert _positive(step["mart_columns_s"]), step
        assert all(_positive(step["columns_read_s"][src]) for src in ("state_columns", "state")), step
        (batch,) = [b for b in step["batches"] if b["path"] == "append"]
        assert batch["tests"]["all"]["n"] == batch["tests"]["run"]["n"] > 0
        assert {b["path"] for b in step["batches"]} == {"append", "compact"}
        # an appended segment holds the batch's keys; a compaction rewrites every key
        appended = max(b["versions_rewritten"] for b in step["batches"] if b["path"] == "append")
        assert appended < min(b["versions_rewritten"] for b in step["batches"] if b["path"] == "compact")
        assert step["batch_changes"] == 200 and step["batch_late"] == 40
    (ratio,) = merge["ratios"]
    assert _positive(ratio["merge_time_ratio"]) and _positive(ratio["merge_cpu_ratio"])
    assert _positive(ratio["tests_time_ratio"]["all"]) and _positive(ratio["tests_time_ratio"]["run"])
    assert _positive(ratio["mart_columns_time_ratio"]) and _positive(ratio["columns_read_time_ratio"]["state"])

    (hot,) = res["hot_key"]["steps"]
    assert hot["versions"] == 80 and hot["long_row_ok"] and hot["window_row_ok"], hot
    assert _positive(hot["long_merge_s"]) and _positive(hot["window_merge_s"])
    assert "HOT KEY" in done.stdout

    memory = res["memory"]
    assert _positive(memory["jvm_vmhwm_mib"]) and _positive(memory["python_worker_vmhwm_max_mib"])
    assert _positive(memory["sections"]["decode:debezium_json:project"]["python_workers_peak_rss_sum_mib"])
    assert _positive(memory["sections"]["e2e:project"]["jvm_peak_rss_mib"])


def test_columnar_decode_bench_checks_every_format() -> None:
    """``python -m bench.columnar_decode --format F``: every record identical to
    ``decode_records`` and on the columnar path, and a figure per path."""
    from bench.columnar_decode import _columnar_formats

    formats = _columnar_formats()
    assert {"debezium_json", "dts_canal_json", "dts_shareplex_json", "arcion_kafka_json"} <= set(formats), formats
    runs = [["--format", fmt] for fmt in formats] + [["--typed"]]  # and Debezium's typed columns
    for run in runs:
        done = subprocess.run(
            [sys.executable, "-m", "bench.columnar_decode", *run, "--events", "600", "--rounds", "1"],
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done.returncode == 0, done.stderr[-4000:]
        # (600 events: more records where a delete is followed by its tombstone)
        records = re.search(r"equality: ([0-9,]+)/([0-9,]+) records identical, 0 mismatches", done.stdout)
        assert records and records[1] == records[2] and int(records[1].replace(",", "")) >= 600, done.stdout
        assert f"columnar path: {records[1]} records (100.0%)" in done.stdout, done.stdout
        table = [line.split() for line in done.stdout.splitlines() if line.endswith("x")]  # the figures
        rows = [row for row in table if row[0] in ("decode_records", "columnar")]
        assert len(rows) == 2 and all(float(row[1].replace(",", "")) > 0 for row in rows), done.stdout


def test_compressed_files_bench_reads_the_same_records_from_every_codec() -> None:
    """``python -m bench.compressed_files``: a row per file, each codec's file smaller
    than the plain one, positive figures (it stops when the files' record counts differ)."""
    done = subprocess.run(
        [sys.executable, "-m", "bench.compressed_files", "--events", "300", "--rounds", "1"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    assert done.stdout.startswith("300 events, 300 records;"), done.stdout
    rows = {row[0]: row[1:] for row in (line.split() for line in done.stdout.splitlines()[2:])}
    codecs = ["gzip", "bz2", "zstd", "deflate", "lz4", "snappy"]
    assert list(rows) == ["plain", *codecs], done.stdout
    sizes = {name: int(row[0].replace(",", "")) for name, row in rows.items()}
    assert all(0 < sizes[name] < sizes["plain"] for name in codecs), sizes
    assert all(float(row[1]) > 0 and float(row[2]) > 0 for row in rows.values()), done.stdout
    assert rows["plain"][2] == "1.00"


@pytest.mark.parametrize(
    ("framing", "setting", "label"),
    [
        ("lines", "0.01", "0.01 MiB"),
        ("kafka_parquet", "7", "7 msgs"),
        ("length_prefixed", "0.01", "0.01 MiB"),
        ("csv", "0.01", "0.01 MiB"),
        ("documents", "0.01", "0.01 MiB"),
    ],
)
def test_file_memory_bench_gives_the_same_records_at_every_block_size(tmp_path: Path, framing, setting, label) -> None:
    """``python -m bench.file_memory``: one run per setting, each a fresh process that
    decodes every record of the file, and a row of figures per setting."""
    out = tmp_path / "file_memory.json"
    done = subprocess.run(
        [sys.executable, "-m", "bench.file_memory", "--events", "400", "--rounds", "1", "--framing", framing]
        + ["--blocks", f"{setting},whole", "--out", str(out)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    blocks = json.loads(out.read_text())["blocks"]
    assert list(blocks) == [setting, "whole"]
    # a record per event; the CSV case's file holds the realtime rows only (the snapshot
    # rows are in another file)
    records = {figures["records"] for figures in blocks.values()}
    assert records == {400} or (framing == "csv" and len(records) == 1 and 300 <= min(records) < 400), blocks
    for figures in blocks.values():
        assert figures["changes"] >= figures["records"], figures
        assert figures["peak_mib"] >= figures["peak_before_mib"] > 0 and figures["cpu_s"] > 0, figures
    rows = [line.split() for line in done.stdout.splitlines() if line.strip().startswith((label, "whole"))]
    assert [row[-2:] for row in rows] == [[f"{min(records)}", row[-1]] for row in rows] and len(rows) == 2, done.stdout


def test_changelog_scan_bench_reads_the_latest_runs_rows_in_every_layout(tmp_path: Path) -> None:
    """``python -m bench.changelog_scan``: each layout's files written as named (INT96,
    INT64; rebalanced: fewer files than the writing tasks made; compacted before the
    latest run: fewer again, every row kept), the pending and present
    reads finding exactly the latest run's rows, the unique test no duplicate, the
    accepted_values test every run's bad op or the latest run's only, and the
    Arcion audit's two reads the same Arcion rows, the compaction's check every file (the
    bench checks every count and exits otherwise), a time per size, layout and read."""
    out = tmp_path / "changelog_scan.json"
    done = _run_spark_bench(
        "bench.changelog_scan",
        ["--runs", "1,3", "--rows-per-run", "300", "--rounds", "1", "--write-tasks", "3", "--out", str(out)],
        timeout=600,
    )
    res = json.loads(out.read_text())
    layouts = ("INT96", "INT64", "INT64 rebalanced", "INT64 compacted")
    assert res["loaded_at_physical_types"] == {
        "INT96": ["INT96"],
        "INT64": ["INT64"],
        "INT64 rebalanced": ["INT64"],
        "INT64 compacted": ["INT64"],
    }
    assert list(res["seconds"]) == ["1", "3"]
    for size, files in res["files"].items():
        assert files["INT96"] == files["INT64"] > files["INT64 rebalanced"] > 0, (size, files)
    # one run: nothing to compact; three: the first two runs' files are one per partition
    assert res["files"]["1"]["INT64 compacted"] == res["files"]["1"]["INT64 rebalanced"], res["files"]
    assert 0 < res["files"]["3"]["INT64 compacted"] < res["files"]["3"]["INT64 rebalanced"], res["files"]
    assert list(res["compaction_s"]) == ["3"] and _positive(res["compaction_s"]["3"]), res
    reads = (
        "pending",
        "tested",
        "op values all",
        "op values run",
        "present",
        "files counted",
        "arcion before",
        "arcion after",
    )
    for size in res["seconds"].values():
        assert all(_positive(size[layout][read]) for layout in layouts for read in reads)
    assert "growth 1 -> 3 runs" in done.stdout, done.stdout


def test_key_move_chain_bench_carries_the_late_change_walking_each_move_once(tmp_path: Path) -> None:
    """``python -m bench.key_move_chain``: a row swapped 6 times between two keys, a late
    update from before the first move; the final row holds it, the forward walk
    (``carrying_moves``) takes each move once, and the backward walk (each move into a
    refolded key back to the chain's start) at most n(n+1)/2 rows. Following every
    later (earlier) move, as before 2026-11-29, walked 21 and 34 rows: the Fibonacci
    numbers, 5.7 million at 32 swaps."""
    out = tmp_path / "key_move_chain.json"
    _run_spark_bench("bench.key_move_chain", ["--moves", "6", "--out", str(out)], timeout=900)
    (step,) = json.loads(out.read_text())
    assert step["moves"] == 6 and step["row_ok"] is True, step
    assert step["recursion_rows"]["carrying_moves"] == 6, step
    assert 6 <= step["recursion_rows"]["inherited_moves"] <= 6 * 7 // 2, step
    assert _positive(step["read_s"]) and _positive(step["refold_s"]) and step["merge_s"] >= step["refold_s"], step
