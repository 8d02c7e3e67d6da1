"""Peak memory of one Python worker decoding one large landing file, by the size of
the parts ``cdc_decode_records`` reads it in.

``python -m bench.file_memory [--framing lines|kafka_parquet|length_prefixed|csv|documents]
[--events 100000] [--blocks ...] [--rounds 2]``

writes one Debezium JSON file of ``--events`` events (:mod:`bench.data`; 100k events
are about 210 MiB as lines), as ``lines`` or as a Kafka dump (``kafka_parquet``, the
same envelopes as values, one row group as pyarrow writes it); for
``length_prefixed``, the DTS Avro values of as many events one after another, each
after its length; for ``csv``, Arcion internal CSV rows of as many events (the file of
realtime rows, with its header row); ``documents`` reads the Debezium lines file as
JSON values one after another. For each setting (``lines``, ``length_prefixed``,
``csv`` and ``documents``: block sizes in MiB, default 2, 8, 32; ``kafka_parquet``:
messages a batch, default 100, 1000, 10000; ``whole``: the file read at once, as before
2026-11-26) it runs
``udfs.spark_udfs.decode_record_batches`` over it in a fresh Python process, as a
worker runs it, consuming every batch. Per run: the process's peak resident set
(``VmHWM``) before decoding (interpreter, pyarrow, numba, a small file decoded to
warm the compiled loops) and at the end, the decode's wall and CPU seconds, and the
records and changes it gave (the same in every run, or the script fails). The block
sizes take turns round by round (the machine is shared and noisy); the smallest peak
and time of each are kept. Prints a table with each size's figures over ``whole``'s;
no Spark session, no assertion on the figures.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

MIB = 2**20


def _peak_mib() -> float:
    """This process's peak resident set (``VmHWM``; ``ru_maxrss`` would carry the
    parent's peak over ``exec``)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise SystemExit("no VmHWM in /proc/self/status (Linux only)")


def child(path: str, framing: str, options: str, setting: str, warm: str) -> dict[str, Any]:
    """One run, in this process: warm on ``warm`` (a small file of the framing), then
    decode ``path`` with ``setting`` (see :func:`measure`)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    import udfs.spark_udfs as spark_udfs
    from udfs.spark_udfs import decode_record_batches

    def arrays(p: str) -> list[pa.Array]:
        return [pa.array([v], pa.string()) for v in (p, framing, options)]

    kwargs: dict[str, Any] = {"whole_files": setting == "whole"}
    if setting != "whole" and framing == "kafka_parquet":
        spark_udfs.KAFKA_BATCH_ROWS = int(setting)
    elif setting != "whole":
        kwargs["block_bytes"] = int(float(setting) * MIB)
    for _ in decode_record_batches(*arrays(warm), **kwargs):
        pass
    before = _peak_mib()
    t0, c0 = time.perf_counter(), time.process_time()
    records = changes = 0
    for batch in decode_record_batches(*arrays(path), **kwargs):
        records += batch.num_rows
        changes += pc.sum(pc.list_value_length(pc.struct_field(batch.column("result"), "changes"))).as_py() or 0
    return {
        "peak_before_mib": round(before, 1),
        "peak_mib": round(_peak_mib(), 1),
        "wall_s": round(time.perf_counter() - t0, 2),
        "cpu_s": round(time.process_time() - c0, 2),
        "records": records,
        "changes": changes,
    }


def _run_child(path: Path, framing: str, options: str, setting: str, warm: Path) -> dict[str, Any]:
    code = "import json, sys; from bench.file_memory import child; print(json.dumps(child(*sys.argv[1:])))"
    done = subprocess.run(
        [sys.executable, "-c", code, str(path), framing, options, setting, str(warm)],
        capture_output=True,
        text=True,
        timeout=3600,
        cwd=Path(__file__).resolve().parents[1],
    )
    if done.returncode != 0:
        raise SystemExit(f"the decode failed ({framing}, {setting}):\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def _kafka_dump(lines_file: Path, out: Path) -> Path:
    """The Debezium lines of ``lines_file`` as a Kafka dump (Spark's Kafka source
    layout), written as pyarrow writes a table (one row group up to a million messages)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    values = [line for line in lines_file.read_bytes().split(b"\n") if line]
    n = len(values)
    table = pa.table(
        {
            "key": pa.nulls(n, pa.binary()),
            "value": pa.array(values, pa.binary()),
            "topic": pa.array(["dbz"] * n),
            "partition": pa.array([0] * n, pa.int32()),
            "offset": pa.array(range(n), pa.int64()),
            "timestamp": pa.array(range(n), pa.timestamp("ms", tz="UTC")),
        }
    )
    pq.write_table(table, out)
    return out


def _size(path: Path) -> int:
    return path.stat().st_size


def _length_prefixed(dump: Path, out: Path) -> Path:
    """The values of the Kafka dump ``dump``, each after its 4-byte length (tombstones left out)."""
    import pyarrow.parquet as pq

    values = pq.ParquetFile(dump).read(columns=["value"], use_threads=False).column("value").to_pylist()
    out.write_bytes(b"".join(len(v).to_bytes(4, "big") + v for v in values if v is not None))
    return out


#: the format each framing's file holds
FORMAT_OF_FRAMING = {
    "lines": "debezium_json",
    "kafka_parquet": "debezium_json",
    "length_prefixed": "dts_avro",
    "csv": "arcion_internal_csv",
    "documents": "debezium_json",  # the lines file: one value after another, whitespace between
}


def measure(events: int, framing: str, settings: list[str], rounds: int) -> dict[str, Any]:
    """``settings``: for ``lines`` and ``length_prefixed``, block sizes in MiB; for
    ``kafka_parquet``, messages a batch; ``whole``: each file read at once
    (``whole_files``, as before 2026-11-26)."""
    from bench.data import FORMAT_CASES, tables_config, write_dataset

    fmt = FORMAT_OF_FRAMING[framing]
    case = FORMAT_CASES[fmt]
    tables = {name: {"key": spec["key"]} for name, spec in tables_config([case]).items()}
    options = json.dumps({"format": fmt, "framing": framing, "options": case.options, "tables": tables})
    best: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory(prefix="cdc-file-memory-") as tmp:
        # (the CSV case writes a file of snapshot rows and one of realtime rows: the larger)
        file = max(write_dataset(case, Path(tmp) / "big", events, seed=5, per_file=events).files, key=_size)
        warm = max(write_dataset(case, Path(tmp) / "warm", 500, seed=6, per_file=500).files, key=_size)
        if framing == "kafka_parquet":
            file, warm = _kafka_dump(file, Path(tmp) / "big.parquet"), _kafka_dump(warm, Path(tmp) / "warm.parquet")
        elif framing == "length_prefixed":  # the DTS Avro case writes Kafka dumps
            file, warm = _length_prefixed(file, Path(tmp) / "big.bin"), _length_prefixed(warm, Path(tmp) / "warm.bin")
        size = file.stat().st_size
        print(f"one {framing} file of {events:,} events, {size / MIB:,.1f} MiB", file=sys.stderr)
        for r in range(rounds):
            for setting in settings:
                got = _run_child(file, framing, options, setting, warm)
                print(f"round {r + 1}, {setting}: {got}", file=sys.stderr)
                kept = best.setdefault(setting, dict(got))
                for key in ("peak_before_mib", "peak_mib", "wall_s", "cpu_s"):
                    kept[key] = min(kept[key], got[key])
                if (got["records"], got["changes"]) != (kept["records"], kept["changes"]):
                    raise SystemExit(f"{setting} gave other records or changes: {got} against {kept}")
    counts = {(b["records"], b["changes"]) for b in best.values()}
    if len(counts) != 1:
        raise SystemExit(f"the settings gave other records or changes: {best}")
    return {
        "events": events,
        "format": fmt,
        "framing": framing,
        "file_mib": round(size / MIB, 1),
        "rounds": rounds,
        "blocks": best,
    }


def report(result: dict[str, Any]) -> str:
    blocks = result["blocks"]
    ref = blocks.get("whole") or next(iter(blocks.values()))
    unit = "msgs" if result["framing"] == "kafka_parquet" else "MiB"
    lines = [
        f"one {result['format']} {result['framing']} file: {result['events']:,} events, {result['file_mib']:,} MiB; "
        f"best of {result['rounds']} round(s)",
        "",
        f"{'read by':>11} {'peak MiB':>9} {'before':>7} {'grown':>7} {'vs whole':>9} "
        f"{'wall s':>7} {'cpu s':>6} {'vs whole':>9} {'records':>9} {'changes':>9}",
    ]
    for name, b in blocks.items():
        grown, ref_grown = b["peak_mib"] - b["peak_before_mib"], ref["peak_mib"] - ref["peak_before_mib"]
        label = name if name == "whole" else f"{name} {unit}"
        lines.append(
            f"{label:>11} {b['peak_mib']:>9,.0f} {b['peak_before_mib']:>7,.0f} {grown:>7,.0f} "
            f"{grown / ref_grown if ref_grown else float('nan'):>8.2f}x {b['wall_s']:>7.2f} {b['cpu_s']:>6.2f} "
            f"{b['cpu_s'] / ref['cpu_s']:>8.2f}x {b['records']:>9,} {b['changes']:>9,}"
        )
    lines.append("grown: peak minus the peak before decoding the file (the file's own cost)")
    return "\n".join(lines)


DEFAULT_SETTINGS = {
    "lines": "2,8,32,whole",
    "kafka_parquet": "100,1000,10000,whole",
    "length_prefixed": "2,8,32,whole",
    "csv": "2,8,32,whole",
    "documents": "2,8,32,whole",
}


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--events", type=int, default=100_000)
    p.add_argument("--framing", choices=sorted(DEFAULT_SETTINGS), default="lines")
    p.add_argument(
        "--blocks",
        help="lines, length_prefixed, csv, documents: block sizes in MiB; kafka_parquet: messages a batch; "
        f"'whole': the file at once (default: {DEFAULT_SETTINGS})",
    )
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--out", help="also write the figures as JSON here")
    args = p.parse_args(argv)
    settings = (args.blocks or DEFAULT_SETTINGS[args.framing]).split(",")
    result = measure(args.events, args.framing, [b.strip() for b in settings], args.rounds)
    if args.out:
        Path(args.out).write_text(json.dumps(result, indent=2) + "\n")
    print(report(result))


if __name__ == "__main__":
    main()
