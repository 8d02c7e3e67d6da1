"""Landing files for the benchmarks, generated with the differential test's workload.

The events come from ``tests/python/workload.py`` (:func:`workload.generate`: a
snapshot, then inserts, partial and full updates, primary-key changes, deletes and
re-inserts over a PostgreSQL table and a MySQL table with a composite key; values
with 19-digit integers, 32-digit decimals and unicode text) and its renderers, so the
benchmark decodes the same kind of records the correctness tests check.

Large sizes are generated in chunks of ``per_file`` events, one landing file per chunk,
each chunk its own random stream (its own seed): memory stays flat at any size, and the
files have the size real connectors land (a few to tens of MB). Keys of different
chunks may collide; that only makes a key's history longer.
"""

from __future__ import annotations

import importlib.util
import random
import sys
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

REPO = Path(__file__).resolve().parents[1]
WORKLOAD_PATH = REPO / "tests" / "python" / "workload.py"


def workload() -> ModuleType:
    """The workload module of the tests (imported from its file, cached)."""
    name = "cdc_bench_workload"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, WORKLOAD_PATH)
        assert spec is not None and spec.loader is not None, f"cannot import {WORKLOAD_PATH}"
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module  # dataclasses look their module up while it executes
        spec.loader.exec_module(module)
    return sys.modules[name]


@dataclass(frozen=True)
class FormatCase:
    """A benchmarked format: identifier, framing, and the workload case rendering it."""

    name: str
    format: str
    framing: str
    #: workload format case (``workload.FORMAT_CASES``); None: plain Debezium (``deliver``)
    workload_case: str | None
    #: the feed's options in ``cdc.yml`` (a CSV feed: its header and its one table)
    options: dict[str, Any] = field(default_factory=dict)

    @property
    def one_table(self) -> bool:
        """A CSV file holds one table's rows: the case writes ``options["table"]`` only."""
        return self.framing == "csv"


FORMAT_CASES: dict[str, FormatCase] = {
    c.name: c
    for c in (
        # Debezium JSON lines, half of the envelopes with the Kafka Connect schema
        FormatCase("debezium_json", "debezium_json", "lines", None),
        # Huawei CDL JSON 1.0 and 2.0 mixed, with and without schema
        FormatCase("cdl_json", "cdl_json", "lines", "cdl_json"),
        # Arcion internal CDC JSON, one document per line
        FormatCase("arcion_internal_json", "arcion_internal_json", "lines", "arcion_internal_json"),
        # Arcion JSON CDC for Kafka as kcat -J lines (a tombstone after each delete)
        FormatCase("arcion_kafka_json", "arcion_kafka_json", "kcat", "arcion_kafka_json"),
        # Lindorm (Debezium format V2.0) as kcat -J lines, SQL and HBase tables
        FormatCase("lindorm_json", "lindorm_json", "kcat", "lindorm_json"),
        # Alibaba Cloud DTS Canal JSON, one message (one row) per line
        FormatCase("dts_canal_json", "dts_canal_json", "lines", "dts_canal_json"),
        # Alibaba Cloud DTS Shareplex JSON (Oracle), one message per line
        FormatCase("dts_shareplex_json", "dts_shareplex_json", "lines", "dts_shareplex_json"),
        # Alibaba Cloud DTS Avro: a Kafka dump as parquet, as Spark's Kafka source writes
        # it (the values binary Avro records)
        FormatCase("dts_avro", "dts_avro", "kafka_parquet", "dts_avro"),
        # Arcion internal CDC CSV of one table, with header rows: each chunk a file of
        # snapshot rows (X fields) and a file of realtime rows (3X+3 fields)
        FormatCase(
            "arcion_internal_csv",
            "arcion_internal_csv",
            "csv",
            "arcion_internal_csv",
            {"header": True, "table": "arcion_internal_csv.customers"},
        ),
    )
}


@dataclass
class DataSet:
    """Landing files written for one benchmark input."""

    folder: Path
    files: list[Path] = field(default_factory=list)
    records: int = 0
    events: int = 0
    bytes: int = 0
    tombstones: int = 0

    def as_dict(self) -> dict[str, Any]:
        return {
            "folder": str(self.folder),
            "files": len(self.files),
            "records": self.records,
            "events": self.events,
            "bytes": self.bytes,
            "tombstones": self.tombstones,
        }


def tables(case: FormatCase) -> tuple[Any, ...]:
    """The workload tables a format case writes."""
    wl = workload()
    if case.workload_case is None:
        return wl.DEFAULT_TABLES
    found = wl.case_tables(case.workload_case)
    if case.one_table:
        found = tuple(t for t in found if t.name == case.options["table"])
        assert found, f"{case.name}: no workload table {case.options['table']!r}"
    return found


def tables_config(cases: list[FormatCase]) -> dict[str, dict[str, Any]]:
    """``tables:`` of ``cdc.yml`` for the tables of ``cases`` (key and column types)."""
    out: dict[str, dict[str, Any]] = {}
    for case in cases:
        for t in tables(case):
            out[t.name] = {"key": list(t.key), "columns": t.column_types()}
    return out


def _chunk_files(case: FormatCase, n_events: int, seed: int) -> list[tuple[str, bytes, int, int]]:
    """One chunk's files: (name suffix, content, records, tombstones) each."""
    wl = workload()
    if case.workload_case is None:
        events = wl.generate(seed, n_events)
        runs = wl.deliver(
            events, seed, 1, late_fraction=0.0, dup_fraction=0.0, kcat_fraction=0.0, tombstone_fraction=0.0, max_files=2
        )
        files = runs[0]
        return [("", b"".join(f.content for f in files), sum(f.n_records for f in files), 0)]
    events = wl.adapt_events(case.workload_case, wl.generate(seed, n_events, tables(case)), seed)
    rendered = wl.render_case_records(case.workload_case, events, random.Random(f"bench:{case.name}:{seed}"))
    if case.framing == "csv":
        return _csv_files(case, rendered)
    lines = [line for _, records, _ in rendered for line in records]
    tombstones = sum(t for _, _, t in rendered)
    return [("", wl.frame_records(case.framing, lines), len(lines), tombstones)]


def _csv_files(case: FormatCase, rendered: list[tuple[str, list[str], int]]) -> list[tuple[str, bytes, int, int]]:
    """A CSV chunk as the workload delivers it: a file per kind of row (``#snapshot``,
    ``#realtime``), each with its header row, rows ended by ``\\n``."""
    wl = workload()
    (spec,) = tables(case)
    out = []
    for kind in ("snapshot", "realtime"):
        rows = [row for folder, records, _ in rendered if folder.endswith(f"#{kind}") for row in records]
        if rows:
            header = wl.arcion_csv_header(spec, realtime=kind == "realtime")
            content = "".join(f"{line}\n" for line in (header, *rows)).encode("utf-8")
            out.append(("" if kind == "realtime" else ".snapshot", content, len(rows), 0))
    return out


def write_dataset(case: FormatCase, folder: Path, n_events: int, seed: int, per_file: int = 10_000) -> DataSet:
    """Write ``n_events`` events of ``case`` under ``folder`` as ``part-NNNNN.json`` files
    (CSV: ``part-NNNNN.csv`` of realtime rows and ``part-NNNNN.snapshot.csv``; a Kafka
    dump: ``part-NNNNN.parquet``)."""
    folder.mkdir(parents=True, exist_ok=True)
    out = DataSet(folder)
    ext = {"csv": ".csv", "kafka_parquet": ".parquet"}.get(case.framing, ".json")
    done = chunk = 0
    while done < n_events:
        n = min(per_file, n_events - done)
        for suffix, content, records, tombstones in _chunk_files(case, n, seed * 100_003 + chunk):
            path = folder / f"part-{chunk:05d}{suffix}{ext}"
            path.write_bytes(content)
            out.files.append(path)
            out.records += records
            out.tombstones += tombstones
            out.bytes += len(content)
        out.events += n
        done += n
        chunk += 1
    return out
