"""Peak memory of one Python worker decoding one large ``lines`` landing file, by the
size of the blocks ``cdc_decode_records`` reads it in.

``python -m bench.file_memory [--events 100000] [--blocks 2,8,32,whole] [--rounds 2]``

writes one Debezium JSON file of ``--events`` events (:mod:`bench.data`; 100k events
are about 220 MB) and, for each block size in MiB (``whole``: one block as large as
the file, i.e. the file read at once as before 2026-11-26), runs
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


def child(path: str, options: str, block_bytes: int, warm: str) -> dict[str, Any]:
    """One run, in this process: warm on ``warm`` (a small file), then decode ``path``."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from udfs.spark_udfs import decode_record_batches

    def arrays(p: str) -> list[pa.Array]:
        return [pa.array([v], pa.string()) for v in (p, "lines", options)]

    for _ in decode_record_batches(*arrays(warm)):
        pass
    before = _peak_mib()
    t0, c0 = time.perf_counter(), time.process_time()
    records = changes = 0
    for batch in decode_record_batches(*arrays(path), block_bytes=block_bytes):
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


def _run_child(path: Path, options: str, block_bytes: int, warm: Path) -> dict[str, Any]:
    code = (
        "import json, sys; from bench.file_memory import child; "
        "print(json.dumps(child(sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4])))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(path), options, str(block_bytes), str(warm)],
        capture_output=True,
        text=True,
        timeout=3600,
        cwd=Path(__file__).resolve().parents[1],
    )
    if done.returncode != 0:
        raise SystemExit(f"the decode failed (block {block_bytes}):\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def measure(events: int, blocks: list[str], rounds: int) -> dict[str, Any]:
    from bench.data import FORMAT_CASES, tables_config, write_dataset

    case = FORMAT_CASES["debezium_json"]
    tables = {name: {"key": spec["key"]} for name, spec in tables_config([case]).items()}
    options = json.dumps({"format": "debezium_json", "framing": "lines", "options": {}, "tables": tables})
    best: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory(prefix="cdc-file-memory-") as tmp:
        (file,) = write_dataset(case, Path(tmp) / "big", events, seed=5, per_file=events).files
        (warm,) = write_dataset(case, Path(tmp) / "warm", 500, seed=6, per_file=500).files
        size = file.stat().st_size
        print(f"one file of {events:,} events, {size / MIB:,.1f} MiB", file=sys.stderr)
        for r in range(rounds):
            for block in blocks:
                block_bytes = size + 1 if block == "whole" else int(float(block) * MIB)
                got = _run_child(file, options, block_bytes, warm)
                print(f"round {r + 1}, block {block}: {got}", file=sys.stderr)
                kept = best.setdefault(block, dict(got))
                for key in ("peak_before_mib", "peak_mib", "wall_s", "cpu_s"):
                    kept[key] = min(kept[key], got[key])
                if (got["records"], got["changes"]) != (kept["records"], kept["changes"]):
                    raise SystemExit(f"block {block} gave other records or changes: {got} against {kept}")
    counts = {(b["records"], b["changes"]) for b in best.values()}
    if len(counts) != 1:
        raise SystemExit(f"the block sizes gave other records or changes: {best}")
    return {"events": events, "file_mib": round(size / MIB, 1), "rounds": rounds, "blocks": best}


def report(result: dict[str, Any]) -> str:
    blocks = result["blocks"]
    ref = blocks.get("whole") or next(iter(blocks.values()))
    lines = [
        f"one Debezium JSON file: {result['events']:,} events, {result['file_mib']:,} MiB; "
        f"best of {result['rounds']} round(s)",
        "",
        f"{'block':>8} {'peak MiB':>9} {'before':>7} {'grown':>7} {'vs whole':>9} "
        f"{'wall s':>7} {'cpu s':>6} {'vs whole':>9} {'records':>9} {'changes':>9}",
    ]
    for name, b in blocks.items():
        grown, ref_grown = b["peak_mib"] - b["peak_before_mib"], ref["peak_mib"] - ref["peak_before_mib"]
        label = name if name == "whole" else f"{name} MiB"
        lines.append(
            f"{label:>8} {b['peak_mib']:>9,.0f} {b['peak_before_mib']:>7,.0f} {grown:>7,.0f} "
            f"{grown / ref_grown if ref_grown else float('nan'):>8.2f}x {b['wall_s']:>7.2f} {b['cpu_s']:>6.2f} "
            f"{b['cpu_s'] / ref['cpu_s']:>8.2f}x {b['records']:>9,} {b['changes']:>9,}"
        )
    lines.append("grown: peak minus the peak before decoding the file (the file's own cost)")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--events", type=int, default=100_000)
    p.add_argument("--blocks", default="2,8,32,whole", help="block sizes in MiB, and/or 'whole'")
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--out", help="also write the figures as JSON here")
    args = p.parse_args(argv)
    result = measure(args.events, [b.strip() for b in args.blocks.split(",")], args.rounds)
    if args.out:
        Path(args.out).write_text(json.dumps(result, indent=2) + "\n")
    print(report(result))


if __name__ == "__main__":
    main()
