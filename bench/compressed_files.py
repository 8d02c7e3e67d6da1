"""What reading a landing file through its codec costs (``udfs/compression.py``).

``python -m bench.compressed_files [--events 20000] [--rounds 3]`` writes one file of
Debezium JSON lines (the differential test's workload, rendered as ``deliver`` renders
it) plain and compressed with each codec (``.gz`` at gzip's level 6, ``.bz2``, ``.zst``
as pyarrow writes it), and times ``udfs.spark_udfs.decode_record_batches`` over each
(what ``cdc_decode_records`` runs on a landing file: read by parts, cut, decoded), in
this process. It prints each file's size and the best round's CPU seconds, and the
ratio to the plain file's. The files take turns round by round (the machine is shared
and noisy). No Spark job runs.
"""

from __future__ import annotations

import argparse
import bz2
import gzip
import json
import tempfile
import time
from pathlib import Path

import pyarrow as pa

from bench.data import workload


def debezium_lines(events: int, seed: int = 3) -> tuple[bytes, str]:
    """``events`` Debezium envelopes, one a line (half with their Kafka Connect schema),
    and the decoder options of their tables."""
    wl = workload()
    lines = wl.mixed_debezium_lines(seed, events)
    options = {"format": "debezium_json", "framing": "lines", "options": {}, "tables": wl.debezium_table_options()}
    return ("\n".join(lines) + "\n").encode(), json.dumps(options, sort_keys=True)


def write_files(content: bytes, folder: Path) -> dict[str, Path]:
    """``content`` plain and in each codec, by codec name ("plain": as it is)."""
    paths = {name: folder / f"changes.jsonl{ext}" for name, ext in (("plain", ""), ("gzip", ".gz"), ("bz2", ".bz2"))}
    paths["zstd"] = folder / "changes.jsonl.zst"
    paths["plain"].write_bytes(content)
    paths["gzip"].write_bytes(gzip.compress(content, 6))
    paths["bz2"].write_bytes(bz2.compress(content))
    with pa.output_stream(str(paths["zstd"]), compression="zstd") as out:
        out.write(content)
    return paths


def decode_cpu_seconds(path: Path, options: str) -> tuple[float, int]:
    from udfs.spark_udfs import decode_record_batches

    start = time.process_time()
    batches = decode_record_batches(pa.array([str(path)]), pa.array(["lines"]), pa.array([options]))
    records = sum(batch.num_rows for batch in batches)
    return time.process_time() - start, records


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    content, options = debezium_lines(args.events)
    with tempfile.TemporaryDirectory(prefix="cdc-bench-compressed-") as folder:
        paths = write_files(content, Path(folder))
        decode_cpu_seconds(paths["plain"], options)  # warm: imports, compiled loops
        best: dict[str, float] = {}
        counts: dict[str, int] = {}
        for _ in range(args.rounds):
            for name, path in paths.items():
                seconds, counts[name] = decode_cpu_seconds(path, options)
                best[name] = min(best.get(name, seconds), seconds)
        if len(set(counts.values())) != 1:
            raise SystemExit(f"the files gave different record counts: {counts}")
        print(f"{args.events:,} events, {counts['plain']:,} records; best of {args.rounds} rounds, CPU seconds")
        print(f"{'file':<8} {'bytes':>12} {'CPU s':>8} {'x plain':>8}")
        for name, path in paths.items():
            ratio = best[name] / best["plain"]
            print(f"{name:<8} {path.stat().st_size:>12,} {best[name]:>8.3f} {ratio:>8.2f}")


if __name__ == "__main__":
    main()
