"""How the cut of a landing file into records scales with the file's size, per framing.

``python -m bench.framing_scale [--sizes 5000,20000,80000] [--rounds 2]`` writes, for
every framing, files of each size (records of about 120 bytes, every file its own
size) and times ``udfs.spark_udfs.file_records_struct``, what ``cdc_decode_files``
runs on each landing file before decoding, in this process. It prints microseconds per
record at each size and the ratio of the largest size's to the smallest's: about 1
when the cut is linear in the file, and the size ratio itself (16 at the default
sizes) when it costs the square of the file's records, as ``kafka_parquet`` did until
2026-11-25 (a file of a million messages would have taken hours).

The sizes take turns round by round (the machine is shared and noisy); the best round
of each counts. No Spark job runs.
"""

from __future__ import annotations

import argparse
import io
import json
import time

import pyarrow as pa

#: framing -> the format whose decoder options go with it (a binary one for Avro dumps)
FRAMINGS = {
    "lines": "debezium_json",
    "documents": "debezium_json",
    "kcat": "arcion_kafka_json",
    "kafka_parquet": "debezium_json",
    "kafka_parquet (binary)": "dts_avro",
    "length_prefixed": "dts_avro",
    "csv": "arcion_internal_csv",
}


def _payload(i: int) -> str:
    return json.dumps({"op": "u", "after": {"id": i, "name": f"name é {i}", "note": "x" * 40}, "ts_ms": i})


def file_content(framing: str, n: int) -> bytes:
    """A landing file of ``n`` records in ``framing`` (see :data:`FRAMINGS`)."""
    if framing == "lines":
        return "".join(_payload(i) + "\n" for i in range(n)).encode()
    if framing == "documents":
        return "".join(json.dumps(json.loads(_payload(i)), indent=2) + "\n" for i in range(n)).encode()
    if framing == "kcat":
        lines = (
            json.dumps(
                {"topic": "t", "partition": 0, "offset": i, "key": json.dumps({"id": i}), "payload": _payload(i)}
            )
            for i in range(n)
        )
        return ("\n".join(lines) + "\n").encode()
    if framing.startswith("kafka_parquet"):
        import pyarrow.parquet as pq

        table = pa.table(
            {
                "key": pa.array([json.dumps({"id": i}).encode() for i in range(n)], pa.binary()),
                "value": pa.array([_payload(i).encode() for i in range(n)], pa.binary()),
                "topic": pa.array(["t"] * n),
                "partition": pa.array([0] * n, pa.int32()),
                "offset": pa.array(range(n), pa.int64()),
                "timestamp": pa.array([1_600_000_000_000 + i for i in range(n)], pa.timestamp("ms", tz="UTC")),
            }
        )
        out = io.BytesIO()
        pq.write_table(table, out)
        return out.getvalue()
    if framing == "length_prefixed":
        return b"".join(len(v).to_bytes(4, "big") + v for v in (_payload(i).encode() for i in range(n)))
    if framing == "csv":
        rows = (f'{i},"name, é {i}","line one\nline two",{"x" * 40}\n' for i in range(n))
        return ("id,name,note,pad\n" + "".join(rows)).encode()
    raise ValueError(framing)


def _options(framing: str) -> str:
    options = {"header": True} if framing == "csv" else {}
    return json.dumps({"format": FRAMINGS[framing], "options": options}, sort_keys=True)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.framing_scale", description=__doc__.split("\n\n")[0])
    p.add_argument("--sizes", default="5000,20000,80000", help="records per file (default %(default)s)")
    p.add_argument("--rounds", type=int, default=2, help="passes over the sizes (default %(default)s)")
    p.add_argument("--framings", default=",".join(FRAMINGS), help="framings (default: all)")
    args = p.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")]

    from udfs.spark_udfs import RECORDS_TYPE, file_records_struct

    struct_type = RECORDS_TYPE.value_type
    header = f"{'framing':24} " + " ".join(f"{f'us/rec @ {n:,}':>16}" for n in sizes) + f" {'largest/smallest':>17}"
    print(header)
    print("-" * len(header))
    for framing in args.framings.split(","):
        cut = framing.split(" ")[0]
        opts = _options(framing)
        files = {n: file_content(framing, n) for n in sizes}
        best: dict[int, float] = {}
        for r in range(args.rounds):
            for n in sizes if r % 2 == 0 else reversed(sizes):
                t0 = time.perf_counter()
                records = file_records_struct(files[n], cut, opts, struct_type)
                spent = time.perf_counter() - t0
                assert len(records) == n, (framing, n, len(records))
                assert records.field("error").null_count == n, f"{framing}: a record with a framing error"
                best[n] = min(spent, best.get(n, spent))
        per_record = [best[n] / n * 1e6 for n in sizes]
        cells = " ".join(f"{us:>16.2f}" for us in per_record)
        print(f"{framing:24} {cells} {per_record[-1] / per_record[0]:>16.2f}x", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
