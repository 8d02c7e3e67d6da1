"""What reading a landing file through its codec costs (``udfs/compression.py``).

``python -m bench.compressed_files [--events 20000] [--rounds 3]`` writes one file of
Debezium JSON lines (the differential test's workload, its mix of envelope shapes)
plain and compressed with each codec (:func:`compress`: ``.gz`` at gzip's level 6,
``.bz2``, ``.zst`` as pyarrow writes it, ``.deflate`` at zlib's level 6, ``.lz4`` and
``.snappy`` in Hadoop's block framing of 256 KiB blocks, as Spark writes them), and
times ``udfs.spark_udfs.decode_record_batches`` over each (what ``cdc_decode_records``
runs on a landing file: read by parts, cut, decoded), in this process. It prints each
file's size, the best round's CPU seconds and the ratio to the plain file's. The files
take turns round by round (the machine is shared and noisy). No Spark job runs.
"""

from __future__ import annotations

import argparse
import bz2
import gzip
import json
import struct
import tempfile
import time
import zlib
from collections.abc import Callable
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


#: the block of Hadoop's block framing: its codecs' default buffer (``io.compression.codec.*.buffersize``)
HADOOP_BLOCK_BYTES = 256 * 1024


def hadoop_blocks(data: bytes, compress_chunk: Callable[[bytes], bytes], block_bytes: int, chunk_bytes: int) -> bytes:
    """``data`` in Hadoop's block framing (``BlockCompressorStream``): each block of
    ``block_bytes`` its length, then its chunks of ``chunk_bytes`` (compressed by
    ``compress_chunk``), each with its compressed length, all 4 bytes big-endian; no
    data: one block of length 0."""
    out = []
    for start in range(0, len(data), block_bytes):
        block = data[start : start + block_bytes]
        out.append(struct.pack(">i", len(block)))
        for at in range(0, len(block), chunk_bytes):
            chunk = compress_chunk(block[at : at + chunk_bytes])
            out.append(struct.pack(">i", len(chunk)) + chunk)
    return b"".join(out) or struct.pack(">i", 0)


def compress(data: bytes, codec: str, block_bytes: int = HADOOP_BLOCK_BYTES, chunk_bytes: int | None = None) -> bytes:
    """``data`` compressed whole as a landing file of ``codec`` is (its name in
    ``udfs.compression.CODEC_BY_EXTENSION``); ``block_bytes`` and ``chunk_bytes`` shape
    the Hadoop block framing of ``lz4`` and ``snappy``."""
    if codec == "gzip":
        return gzip.compress(data, 6)
    if codec == "bz2":
        return bz2.compress(data)
    if codec == "zstd":
        sink = pa.BufferOutputStream()
        with pa.CompressedOutputStream(sink, "zstd") as out:
            out.write(data)
        return sink.getvalue().to_pybytes()
    if codec == "deflate":
        return zlib.compress(data, 6)
    if codec == "lz4":
        import lz4.block

        def chunk(part: bytes) -> bytes:
            return lz4.block.compress(part, store_size=False)
    elif codec == "snappy":

        def chunk(part: bytes) -> bytes:
            return pa.Codec("snappy").compress(part, asbytes=True)
    else:
        raise ValueError(f"unknown codec {codec!r}")
    return hadoop_blocks(data, chunk, block_bytes, chunk_bytes or block_bytes)


def write_files(content: bytes, folder: Path) -> dict[str, Path]:
    """``content`` plain and in each codec, by codec name ("plain": as it is)."""
    from udfs.compression import CODEC_BY_EXTENSION

    paths = {"plain": folder / "changes.jsonl"}
    paths["plain"].write_bytes(content)
    for extension, codec in CODEC_BY_EXTENSION.items():
        paths[codec] = folder / f"changes.jsonl{extension}"
        paths[codec].write_bytes(compress(content, codec))
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
