"""Side by side: each fast path of the decode against the plain code it stands for.

``python -m bench.fast_paths [--events N]`` generates landing files of every
benchmarked format (the workload of :mod:`bench.data`) and, in one process, times
each fast path switched on and off, taking turns chunk by chunk (the machine is shared
and noisy: only turns this short compare like with like). For each it checks that both
give the same result, and prints microseconds per record and the ratio:

* ``cdc_read_records``: the Arrow result built column by column, ``lines`` cut by
  Arrow (``read_records_array``), against ``split_file`` to one Python dict per record
  and ``pa.array`` (``read_records``);
* ``loads_exact``: msgspec (``float_hook`` keeps a number's text), against the stdlib
  parser with the same hooks, through ``decode_records``;
* ``kcat columns``: each ``kcat -J`` line parsed by msgspec straight into its fields,
  one Arrow column per field (``kcat_struct``), against ``split_kcat`` and
  ``_records_struct``, through ``read_records_array`` (kcat formats only);
* ``split_kcat``: with the column path off, msgspec for the ``kcat -J`` wrapper of each
  record, against ``json.loads``, through ``read_records_array`` (kcat formats only).

No Spark job runs; a local session only parses the records' Arrow type.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa

from bench.data import FORMAT_CASES, tables_config, write_dataset


def _turns(
    chunks: list[Any], plain: Callable[[Any], Any], fast: Callable[[Any], Any], rounds: int
) -> tuple[float, float]:
    """Seconds of ``plain`` and ``fast`` over every chunk, alternating which goes first."""
    spent = [0.0, 0.0]
    for r in range(rounds):
        for i, chunk in enumerate(chunks):
            results = [None, None]
            for which in (0, 1) if (i + r) % 2 else (1, 0):
                t0 = time.perf_counter()
                results[which] = (plain, fast)[which](chunk)
                spent[which] += time.perf_counter() - t0
            plain_result, fast_result = results
            same = (
                plain_result.equals(fast_result) if isinstance(plain_result, pa.Array) else plain_result == fast_result
            )
            assert same, "the fast path gives another result"
    return spent[0], spent[1]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.fast_paths", description=__doc__.split("\n\n")[0])
    p.add_argument("--events", type=int, default=20_000, help="events per format (default %(default)s)")
    p.add_argument("--rounds", type=int, default=2, help="passes over the data (default %(default)s)")
    args = p.parse_args(argv)

    from pyspark.sql import SparkSession

    SparkSession.builder.master("local[1]").getOrCreate()
    from udfs import contract, framing, spark_udfs
    from udfs.decode import decode_records
    from udfs.framing import split_file
    from udfs.spark_udfs import RECORDS_DDL, arrow_type, read_records, read_records_array

    records_type = arrow_type(RECORDS_DDL)
    fast_json, fast_kcat, kcat_line = contract._FAST_JSON, framing._FAST_JSON, spark_udfs._KCAT_LINE

    print(f"{'format':22} {'fast path':18} {'records':>8} {'plain us/rec':>13} {'fast us/rec':>12} {'ratio':>6}")
    with tempfile.TemporaryDirectory() as tmp:
        for case in FORMAT_CASES.values():
            data = write_dataset(case, Path(tmp) / case.name, args.events, seed=1)
            opts = json.dumps({"format": case.format, "tables": tables_config([case])}, sort_keys=True)
            calls = [([str(path)], [case.framing], [opts]) for path in data.files]
            plain, fast = _turns(
                calls,
                lambda c: pa.array(read_records(*c), type=records_type),
                lambda c: read_records_array(*c, records_type),
                args.rounds,
            )
            n = sum(len(split_file(path.read_bytes(), case.framing, {})) for path in data.files)
            rows = [("cdc_read_records", plain, fast)]
            if case.framing == "kcat":

                def reading(columns_on: bool, msgspec_on: bool) -> Callable[[Any], Any]:
                    def run(call: Any) -> Any:
                        spark_udfs._KCAT_LINE = kcat_line if columns_on else None
                        framing._FAST_JSON = fast_kcat if msgspec_on else None
                        return read_records_array(*call, records_type)

                    return run

                try:
                    turns = _turns(calls, reading(False, True), reading(True, True), args.rounds)
                    rows.append(("kcat columns", *turns))
                    rows.append(
                        ("split_kcat", *_turns(calls, reading(False, False), reading(False, True), args.rounds))
                    )
                finally:
                    spark_udfs._KCAT_LINE, framing._FAST_JSON = kcat_line, fast_kcat
            records = [r for path in data.files for r in split_file(path.read_bytes(), case.framing, {})]
            chunks = [
                ([r.text for r in records[i : i + 1000]], [r.kafka_key for r in records[i : i + 1000]])
                for i in range(0, len(records), 1000)
            ]

            def decoding(json_on: bool, opts: str = opts) -> Callable[[Any], Any]:
                def run(chunk: Any) -> Any:
                    contract._FAST_JSON = fast_json if json_on else None
                    return decode_records(opts, *chunk)

                return run

            try:
                rows.append(("loads_exact", *_turns(chunks, decoding(False), decoding(True), args.rounds)))
            finally:
                contract._FAST_JSON = fast_json
            for label, plain, fast in rows:
                plain_us, fast_us = (s / (n * args.rounds) * 1e6 for s in (plain, fast))
                ratio = plain_us / fast_us
                print(f"{case.name:22} {label:18} {n:>8,} {plain_us:>13.2f} {fast_us:>12.2f} {ratio:>5.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
