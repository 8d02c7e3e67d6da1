"""Side by side, in one process: a columnar decoder (Debezium JSON by default; ``--format``
any other format that has one) against ``decode_records``, ``orjson.loads`` per line
and ``pyarrow.json.read_json``.

``python -m bench.columnar_decode [--format F] [--events N] [--batch B] [--rounds R] [--data DIR]``
generates (or reuses, with ``--data``) the benchmark's landing files of the format
(:mod:`bench.data`; ``debezium_json``: half the envelopes with the Kafka Connect
schema, some ASCII-escaped, 19-digit integers, 32-digit decimals, TOAST placeholders),
cuts them into lines as ``cdc_read_records`` does (Arrow, ``valid_lines_struct``), and
in batches of ``B`` records (a ``cdc_decode`` Arrow batch) times, taking turns batch by
batch (the machine is shared and noisy). ``--logical``, ``--kcat`` and ``--typed`` are
other Debezium renderings (see ``--help``):

decode_records
    what ``cdc_decode`` runs now: ``to_pylist`` of the batch, ``decode_records``,
    ``pa.array(results, type=<DECODE_RESULT_DDL as Arrow>)``.
columnar
    the format's columnar decoder (``Decoder.columnar_decoder``, e.g.
    ``udfs.formats.debezium_json_columnar.decode_debezium_columnar``) over the Arrow batch
    (records it cannot do exactly go to ``decode_records`` inside it); Debezium's cache of
    Kafka Connect schema texts warm (a long-running Python worker).
columnar_cold (the formats of Kafka Connect envelopes: Debezium, Arcion Kafka, CDL, Lindorm)
    the same with the schema cache emptied before every batch (each batch tokenizes
    and parses the schemas it holds).
orjson
    ``orjson.loads`` of every line of the batch (after ``to_pylist``): a parse bound.
pyarrow_json
    ``pyarrow.json.read_json`` of the batch's lines as one block (type inference).
fastavro (DTS Avro, instead of the two above)
    each Kafka value decoded from base64 and read by fastavro's ``schemaless_reader``
    with the DTS writer schema: the parse bound of the record-by-record decoder.
csv (Arcion internal CSV, instead of the JSON parsers)
    the standard library's ``csv.reader`` over the batch's rows.

Before timing, every batch is checked: the columnar result must equal the
``decode_records`` result record by record (Arrow ``equals``); the mismatch count and
the first diffs are printed. No Spark session is started.
"""

from __future__ import annotations

import argparse
import io
import json
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc


def _lines(path: Path) -> pa.Array:
    from udfs.spark_udfs import valid_lines_struct

    struct_type = pa.struct([("record_index", pa.int32()), ("text", pa.string())])
    part = valid_lines_struct(path.read_bytes(), struct_type)
    assert part is not None, f"{path}: not cut by the Arrow fast path"
    return part.field("text")


def _diff(ref: dict[str, Any], got: dict[str, Any]) -> str:
    out = []
    for k in ("status", "reason"):
        if ref.get(k) != got.get(k):
            out.append(f"{k}: {ref.get(k)!r} != {got.get(k)!r}")
    rc, gc = ref.get("changes") or [], got.get("changes") or []
    if len(rc) != len(gc):
        out.append(f"changes: {len(rc)} != {len(gc)}")
    for a, b in zip(rc, gc, strict=False):
        for k in a:
            if a[k] != b.get(k):
                out.append(f"{k}: {a[k]!r} != {b.get(k)!r}")
    return "; ".join(out)[:600]


_TYPED_FIELDS = [
    {"type": "int64", "optional": False, "field": "id"},
    {"type": "int32", "optional": True, "name": "io.debezium.time.Date", "field": "born"},
    {"type": "int64", "optional": True, "name": "io.debezium.time.MicroTime", "field": "opens"},
    {"type": "int64", "optional": True, "name": "io.debezium.time.MicroTimestamp", "field": "seen"},
    {"type": "int64", "optional": True, "name": "io.debezium.time.NanoTimestamp", "field": "logged"},
    {"type": "string", "optional": True, "name": "io.debezium.time.ZonedTimestamp", "field": "updated_at"},
    {
        "type": "bytes",
        "optional": True,
        "name": "org.apache.kafka.connect.data.Decimal",
        "parameters": {"scale": "8", "connect.decimal.precision": "20"},
        "field": "rate",
    },
    {"type": "struct", "optional": True, "name": "io.debezium.data.VariableScaleDecimal", "field": "amount"},
    {"type": "string", "optional": True, "field": "note"},
]


def _decimal_base64(unscaled: int) -> str:
    import base64

    length = (unscaled + (unscaled < 0)).bit_length() // 8 + 1
    return base64.b64encode(unscaled.to_bytes(length, "big", signed=True)).decode()


def _zoned_text(micros: int) -> str:
    """Debezium's ``ZonedTimestamp`` text of a moment (UTC, microseconds)."""
    import datetime as dt

    moment = dt.datetime(1970, 1, 1) + dt.timedelta(microseconds=micros)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def typed_envelopes(start: int, count: int) -> str:
    """``count`` Debezium envelopes (with schema) of a table of dates, times and numerics,
    one per line."""
    import random

    rng = random.Random(start)
    row_schema = {"type": "struct", "fields": _TYPED_FIELDS, "optional": True, "name": "pg.public.typed.Value"}
    schema = {
        "type": "struct",
        "fields": [
            dict(row_schema, field="before"),
            dict(row_schema, field="after"),
            {"type": "struct", "fields": [], "field": "source"},
        ],
    }
    lines = []
    for i in range(start, start + count):
        seen = rng.randint(0, 2_000_000_000_000_000)
        row = {
            "id": i,
            "born": rng.randint(-25_000, 20_000),
            "opens": rng.randint(0, 86_399_999_999),
            "seen": seen,
            "logged": seen * 1000 + rng.randint(0, 999),
            "updated_at": _zoned_text(seen),
            "rate": _decimal_base64(rng.randint(-(10**19), 10**19)),
            "amount": {"scale": rng.randint(0, 6), "value": _decimal_base64(rng.randint(-(10**12), 10**12))},
            "note": f"n{i}",
        }
        source = {"connector": "postgresql", "db": "shop", "schema": "public", "table": "typed", "lsn": i, "txId": i}
        payload = {"before": None, "after": row, "source": source, "op": "c", "ts_ms": 1_700_000_000_000 + i}
        lines.append(json.dumps({"schema": schema, "payload": payload}, separators=(",", ":")))
    return "\n".join(lines) + "\n"


def _columnar_formats() -> list[str]:
    """The benchmark's formats that have a columnar decoder."""
    from bench.data import FORMAT_CASES
    from udfs.formats import decoder_class

    return [name for name, case in FORMAT_CASES.items() if decoder_class(case.format).columnar_decoder]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.columnar_decode", description=__doc__.split("\n\n")[0])
    p.add_argument(
        "--format",
        default="debezium_json",
        choices=_columnar_formats(),
        help="the format whose columnar decoder runs (default %(default)s)",
    )
    p.add_argument("--events", type=int, default=20_000, help="events to generate (default %(default)s)")
    p.add_argument("--batch", type=int, default=2_000, help="records per batch (default %(default)s)")
    p.add_argument("--rounds", type=int, default=2, help="passes over the data (default %(default)s)")
    p.add_argument("--data", help="reuse (or write) the files in this folder")
    p.add_argument("--profile", action="store_true", help="print a cProfile of the columnar path")
    p.add_argument(
        "--logical",
        action="store_true",
        help="envelopes with Kafka Connect logical types (Decimal bytes, MicroTimestamp): the workload's "
        "debezium_logical rendering, written to --data when given",
    )
    p.add_argument(
        "--kcat",
        action="store_true",
        help="kcat -J lines (every record with its Kafka key, tombstones after half the deletes), cut as "
        "cdc_read_records does, written to --data when given",
    )
    p.add_argument(
        "--typed",
        action="store_true",
        help="envelopes of a PostgreSQL table of dates, times and numerics, with their schema (Date, "
        "MicroTime, MicroTimestamp, NanoTimestamp, ZonedTimestamp, Decimal of scale 8, "
        "VariableScaleDecimal), written to --data when given",
    )
    args = p.parse_args(argv)
    if args.format != "debezium_json" and (args.kcat or args.logical or args.typed):
        p.error("--kcat, --logical and --typed are Debezium renderings")

    import importlib

    import orjson
    import pyarrow.json as pj

    from bench.data import FORMAT_CASES, tables_config, write_dataset
    from udfs.decode import decode_records
    from udfs.formats import columnar as shared
    from udfs.formats import decoder_class

    case = FORMAT_CASES[args.format]
    module_name, _, function = decoder_class(case.format).columnar_decoder.partition(":")
    col = importlib.import_module(module_name)
    decode_columnar = getattr(col, function)
    opts = json.dumps({"format": case.format, "options": case.options, "tables": tables_config([case])}, sort_keys=True)
    if args.typed:
        opts = json.dumps({"format": "debezium_json", "tables": {"typed": {"key": ["id"]}}}, sort_keys=True)
    decode_type = col.DECODE_TYPE

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(args.data) if args.data else Path(tmp) / case.name
        ext = {"kafka_parquet": "parquet", "csv": "csv"}.get(case.framing, "json")
        files = sorted(folder.glob(f"part-*.{ext}")) if folder.exists() else []
        if not files and args.kcat:
            from bench.data import workload

            wl = workload()
            folder.mkdir(parents=True, exist_ok=True)
            for chunk in range(0, args.events, 10_000):
                events = wl.generate(chunk + 1, min(10_000, args.events - chunk))
                runs = wl.deliver(events, chunk + 1, 1, 0.0, 0.0, kcat_fraction=1.0, max_files=2)
                path = folder / f"part-{chunk // 10_000:05d}.json"
                path.write_bytes(b"".join(f.content for f in runs[0]))
                files.append(path)
        if not files and args.logical:
            from bench.data import workload

            wl = workload()
            folder.mkdir(parents=True, exist_ok=True)
            for chunk in range(0, args.events, 10_000):
                events = wl.generate(chunk + 1, min(10_000, args.events - chunk))
                runs = wl.deliver(events, chunk + 1, 1, 0.0, 0.0, kcat_fraction=0.0, logical_types=True, max_files=2)
                path = folder / f"part-{chunk // 10_000:05d}.json"
                path.write_bytes(b"".join(f.content for f in runs[0]))
                files.append(path)
        if not files and args.typed:
            folder.mkdir(parents=True, exist_ok=True)
            for chunk in range(0, args.events, 10_000):
                path = folder / f"part-{chunk // 10_000:05d}.json"
                path.write_text(typed_envelopes(chunk, min(10_000, args.events - chunk)))
                files.append(path)
        if not files:
            t0 = time.perf_counter()
            files = write_dataset(case, folder, args.events, seed=1).files
            print(f"generated {args.events:,} events in {time.perf_counter() - t0:.1f} s under {folder}")
        # each record's file and header row: for a format whose decoders read them (CSV)
        files_of: pa.Array | None = None
        headers: pa.Array | None = None
        if args.kcat or case.framing in ("kcat", "kafka_parquet", "csv"):
            from udfs.spark_udfs import RECORDS_TYPE, file_records_struct

            framing = "kcat" if args.kcat else case.framing
            struct_type = RECORDS_TYPE.value_type
            parts = [file_records_struct(f.read_bytes(), framing, opts, struct_type) for f in files]
            texts = pa.concat_arrays([part.field("text") for part in parts])
            keys: pa.Array | None = pa.concat_arrays([part.field("kafka_key") for part in parts])
            if case.framing == "csv":
                files_of = pa.array([str(f) for f, part in zip(files, parts, strict=True) for _ in range(len(part))])
                headers = pa.concat_arrays([part.field("header") for part in parts])
                keys = None
        else:
            texts = pa.concat_arrays([_lines(f) for f in files])
            keys = None
        n = len(texts)
        nbytes = sum(f.stat().st_size for f in files)

        def cut(column: pa.Array | None, i: int) -> pa.Array | None:
            return None if column is None else column.slice(i, args.batch)

        batches = [
            (texts.slice(i, args.batch), cut(keys, i), cut(files_of, i), cut(headers, i))
            for i in range(0, n, args.batch)
        ]
        print(f"{n:,} records, {nbytes / 1e6:.1f} MB, {len(batches)} batches of {args.batch}")

        def py(column: pa.Array | None) -> list[Any] | None:
            return None if column is None else column.to_pylist()

        def plain(batch: Any) -> pa.Array:
            text, key, source_files, header = batch
            results = decode_records(opts, text.to_pylist(), py(key), py(source_files), py(header))
            return pa.array(results, type=decode_type)

        def columnar(batch: Any) -> pa.Array:
            text, key, source_files, header = batch
            more = {"source_files": source_files, "headers": header} if source_files is not None else {}
            return decode_columnar(opts, text, key, **more)

        def columnar_cold(batch: Any) -> pa.Array:
            shared.clear_schema_cache()  # every batch parses its Kafka Connect schemas again
            return columnar(batch)

        def by_csv(batch: Any) -> int:
            import csv

            return sum(1 for _ in csv.reader(t for t in batch[0].to_pylist() if t is not None))

        def by_orjson(batch: Any) -> int:
            loads = orjson.loads
            text, key = batch[:2]
            parsed = [loads(t) for t in text.to_pylist() if t is not None]
            if key is not None:
                parsed += [loads(k) for k in key.to_pylist() if k is not None]
            return len(parsed)

        def by_fastavro(batch: Any) -> int:
            import base64

            import fastavro

            from udfs.formats.dts_avro import writer_schema

            schema = writer_schema()
            values = [base64.b64decode(t) for t in batch[0].to_pylist() if t is not None]
            return len([fastavro.schemaless_reader(io.BytesIO(v), schema) for v in values])

        def by_pyarrow(batch: Any) -> int:
            batch = batch[0].drop_null()
            body = pc.binary_join(pa.ListArray.from_arrays(pa.array([0, len(batch)], pa.int32()), batch), "\n")
            buf = body[0].as_buffer()
            table = pj.read_json(io.BytesIO(buf.to_pybytes()), read_options=pj.ReadOptions(block_size=buf.size + 1))
            return table.num_rows

        # ------------------------------------------------------------- equality check
        t0 = time.perf_counter()
        mismatches = 0
        shown = 0
        stats = {"fast": 0, "fallback": 0, "escaped_values": 0, "values": 0, "invalid_json": 0}
        for batch in batches:
            ref = plain(batch)
            got = columnar(batch)
            for k in stats:
                stats[k] += col.LAST_STATS.get(k, 0)
            if "columnar_error" in col.LAST_STATS:
                print(f"  columnar error (the batch fell back): {col.LAST_STATS['columnar_error']}")
            if ref.equals(got):
                continue
            for i in range(len(ref)):
                if not ref[i].equals(got[i]):
                    mismatches += 1
                    if shown < 5:
                        print(f"  mismatch: {_diff(ref[i].as_py(), got[i].as_py())}")
                        shown += 1
        print(
            f"equality: {n - mismatches:,}/{n:,} records identical, {mismatches} mismatches "
            f"(checked in {time.perf_counter() - t0:.1f} s)"
        )
        print(
            f"columnar path: {stats['fast']:,} records ({stats['fast'] / n:.1%}), fallback to decode_records "
            f"{stats['fallback']:,} ({stats['fallback'] / n:.2%}); image values {stats['values']:,}, "
            f"of which escaped strings (a Python str each) {stats['escaped_values']:,} "
            f"({stats['escaped_values'] / max(stats['values'], 1):.1%})"
        )

        # ------------------------------------------------------------- timing
        runners: dict[str, Callable[[pa.Array], Any]] = {
            "decode_records": plain,
            "columnar": columnar,
            # the formats of Kafka Connect envelopes keep a schema cache
            **({"columnar_cold": columnar_cold} if hasattr(col, "open_connect_batch") else {}),
            # the parse bounds: a JSON parser, for Avro fastavro's reader, for CSV the csv module
            **(
                {"fastavro": by_fastavro}
                if decoder_class(case.format).binary_values
                else {"csv": by_csv}
                if case.framing == "csv"
                else {"orjson": by_orjson, "pyarrow_json": by_pyarrow}
            ),
        }
        spent = dict.fromkeys(runners, 0.0)
        errors: dict[str, str] = {}
        names = list(runners)
        for r in range(args.rounds):
            for i, batch in enumerate(batches):
                k = (i + r) % len(names)
                for name in names[k:] + names[:k]:  # rotate who goes first
                    if name in errors:
                        continue
                    t0 = time.perf_counter()
                    try:
                        runners[name](batch)
                    except Exception as exc:  # noqa: BLE001 - pyarrow may not infer one type
                        errors[name] = f"{type(exc).__name__}: {str(exc)[:160]}"
                        continue
                    spent[name] += time.perf_counter() - t0
        total = n * args.rounds
        print(f"\n{'path':16} {'records/s':>11} {'us/record':>10} {'vs decode_records':>18}")
        for name in names:
            if name in errors:
                print(f"{name:16} failed: {errors[name]}")
                continue
            us = spent[name] / total * 1e6
            print(
                f"{name:16} {total / spent[name]:>11,.0f} {us:>10.2f} {spent['decode_records'] / spent[name]:>17.2f}x"
            )

        if args.profile:
            import cProfile
            import pstats

            prof = cProfile.Profile()
            prof.enable()
            for batch in batches:
                columnar(batch)
            prof.disable()
            pstats.Stats(prof).sort_stats("tottime").print_stats(25)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
