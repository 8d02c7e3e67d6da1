"""Differential test: the pipeline against the plain-Python reference model.

For each seed, :mod:`workload` generates a random Debezium change stream over
``inventory.customers`` (PostgreSQL, TOAST placeholders) and ``inventory.orders``
(MySQL, composite key) and delivers it as landing files over three pipeline runs, with
late events, duplicates, tombstones, shuffled files and two framings (JSON lines and
``kcat -C -J``) read by two feeds. After every run the marts (through
:func:`udfs.export.export_rows`) and the ``history`` table must equal what the
reference model computes from the events delivered so far.

Seeds: ``[1, 2]`` by default; set ``CDC_DIFF_SEEDS="1,2,3,..."`` for more and
``CDC_DIFF_EVENTS`` for another stream length (default 450). Odd seeds refold every key
by the window path of short histories, even seeds by the linear long-history path
(``long_history_versions``), so both are compared with the reference.

The other formats (:data:`workload.FORMAT_CASES`: Arcion internal JSON and CSV, Arcion
JSON CDC for Kafka, Huawei CDL 1.0/2.0, Lindorm SQL and HBase tables, Debezium with
logical types, Alibaba Cloud DTS Canal JSON, Shareplex JSON and Avro) are checked the
same way by :func:`test_format_matches_reference`: each
format case renders its own random stream (restricted by :func:`workload.adapt_events`
to what the format can express) over its own tables, and all cases share one
configuration (one feed or two per case) so that one pipeline run serves them all;
each case is its own test item and is compared with the reference after every run.
To keep CI short they run seed 1 only, 200 events, in :data:`FORMAT_RUNS` runs;
``CDC_DIFF_SEEDS`` and ``CDC_DIFF_EVENTS`` apply to them too when set.
"""

from __future__ import annotations

import base64
import json
import os
from dataclasses import dataclass, field
from decimal import Context, Decimal
from pathlib import Path
from typing import Any

import pytest
import yaml

try:  # tests/python as a package or as a rootdir-relative folder
    from . import workload as wl
except ImportError:
    import workload as wl

SEEDS = [int(s) for s in os.environ.get("CDC_DIFF_SEEDS", "1,2").split(",") if s.strip()]
N_EVENTS = int(os.environ.get("CDC_DIFF_EVENTS", "450"))
N_RUNS = 3
TABLES = wl.DEFAULT_TABLES
_SCALE = Decimal(1).scaleb(-wl.DECIMAL_SCALE)
_EXACT = Context(prec=100)  # 38 digits and more: the default 28-digit context would round


def long_history_versions(seed: int) -> int:
    """The refold path a seed's runs take: odd seeds the window path of short key
    histories (the default threshold, 64 versions, is above every key's history here),
    even seeds the linear long-history path for every key (threshold 0)."""
    return 64 if seed % 2 else 0


def write_config(root: Path, seed: int) -> Path:
    """``cdc.yml`` with one feed per framing and typed columns for both tables."""
    schema = f"diff_s{seed}"
    cfg = {
        "warehouse": ".cdc",
        "schema": schema,
        "marts_schema": f"{schema}_marts",
        "long_history_versions": long_history_versions(seed),
        "feeds": [
            {"name": "lines_feed", "format": "debezium_json", "path": "landing/lines", "framing": "lines"},
            {"name": "kcat_feed", "format": "debezium_json", "path": "landing/kcat", "framing": "kcat"},
        ],
        "tables": {t.name: {"key": list(t.key), "columns": t.column_types()} for t in TABLES},
    }
    for feed in cfg["feeds"]:
        (root / feed["path"]).mkdir(parents=True, exist_ok=True)
    path = root / "cdc.yml"
    path.write_text(yaml.safe_dump(cfg, sort_keys=False, allow_unicode=True), encoding="utf-8")
    return path


# --------------------------------------------------------------------------- normalization


def _typed(col: wl.Column, value: Any) -> Any:
    """A mart value or a reference text as the comparable Python value of its column type."""
    if value is None:
        return None
    if col.type in ("bigint", "int"):
        assert not isinstance(value, (bool, float)), f"{col.name}: {value!r} is not an exact integer"
        return int(value)
    if col.type.startswith("decimal"):
        assert not isinstance(value, float), f"{col.name}: {value!r} went through a float"
        return format(_EXACT.quantize(Decimal(str(value)), _SCALE), "f")
    if col.type == "binary":
        # the bytes (the export's text form is checked by test_export_binary_is_plain_base64)
        return base64.b64decode(value)
    return value


def _key_of(spec: wl.TableSpec, row: dict[str, Any]) -> tuple:
    """Key tuple of a row whose column names are lower case (as the marts have them)."""
    return tuple(None if row.get(k.lower()) is None else str(row[k.lower()]) for k in spec.key)


def expected_rows(spec: wl.TableSpec, state: dict[str, dict[tuple, dict]]) -> dict[tuple, dict[str, Any]]:
    """Reference rows of ``spec``, typed like the mart (a column never provided is None)."""
    rows = state.get(spec.name, {})
    return {k: {c.name: _typed(c, r.get(c.name)) for c in spec.columns} for k, r in rows.items()}


def actual_rows(spark: Any, config_path: Path, spec: wl.TableSpec) -> dict[tuple, dict[str, Any]]:
    """The mart's current rows of ``spec`` by key (declared columns only)."""
    from udfs.export import export_rows

    out: dict[tuple, dict[str, Any]] = {}
    for row in export_rows(spark, config_path, spec.name):
        lower = {str(k).lower(): v for k, v in row.items()}
        key = _key_of(spec, lower)
        assert key not in out, f"{spec.name}: key {key} twice in the mart"
        out[key] = {c.name: _typed(c, lower.get(c.name.lower())) for c in spec.columns}
    return out


def expected_history(
    events: list[wl.SourceEvent], tables: tuple[wl.TableSpec, ...] = TABLES
) -> dict[tuple[str, str], list[tuple]]:
    """(table_id, key_text) -> [(op, is_deleted, full row or None)] in source order."""
    out: dict[tuple[str, str], list[tuple]] = {}
    specs = {t.name: t for t in tables}
    for table, keys in wl.reference_history(events).items():
        spec = specs[table]
        for key, versions in keys.items():
            out[(table.lower(), wl.key_text(spec, key))] = [
                (v.op, v.is_deleted, wl.full_row(spec, v.row)) for v in versions
            ]
    return out


def _spec_row(spec: wl.TableSpec, row: dict[str, Any]) -> dict[str, Any]:
    """A state/history row map (lower-case column names) as a full row of ``spec``."""
    return {c.name: row.get(c.name.lower()) for c in spec.columns}


def history_rows(spark: Any, schema: str) -> list[Any]:
    """Every row of the pipeline's ``history`` (the columns the comparison needs)."""
    return spark.sql(f"select table_id, key_text, seq, valid_from, op, is_deleted, row from {schema}.history").collect()


def actual_history(
    spark: Any,
    schema: str,
    tables: tuple[wl.TableSpec, ...] = TABLES,
    rows: list[Any] | None = None,
    unique_seq: bool = True,
) -> dict[tuple[str, str], list[tuple]]:
    """The pipeline's ``history`` of ``tables`` in the same shape as :func:`expected_history`.

    Versions are ordered by ``valid_from`` (the order key: ``seq`` first). With
    ``unique_seq`` no two versions of a key may share a non-null ``seq`` (false for
    formats whose position is not unique, e.g. Lindorm's millisecond). ``rows``: the
    result of :func:`history_rows` when the caller already has it (then other tables'
    rows are ignored; without it every table must be one of ``tables``).
    """
    specs = {t.name.lower(): t for t in tables}
    only_mine = rows is not None
    grouped: dict[tuple[str, str], list[tuple]] = {}
    for r in history_rows(spark, schema) if rows is None else rows:
        if only_mine and r["table_id"] not in specs:
            continue
        grouped.setdefault((r["table_id"], r["key_text"]), []).append(
            (r["valid_from"], r["seq"], r["op"], bool(r["is_deleted"]), r["row"])
        )
    out: dict[tuple[str, str], list[tuple]] = {}
    for (table_id, key_txt), versions in grouped.items():
        spec = specs.get(table_id)
        assert spec is not None, f"history has a table {table_id!r} the workload never wrote"
        seqs = [v[1] for v in versions if v[1] is not None]
        if unique_seq:
            assert len(set(seqs)) == len(seqs), f"{table_id} {key_txt}: a seq appears twice in history"
        out[(table_id, key_txt)] = [
            (op, deleted, None if deleted or not row else wl.full_row(spec, _spec_row(spec, dict(row))))
            for _, _, op, deleted, row in sorted(versions, key=lambda v: v[0])
        ]
    return out


def _diff(name: str, expected: dict, actual: dict, limit: int = 5) -> str:
    """Readable summary of the first differences between two dicts."""
    lines = [f"{name}: {len(expected)} expected, {len(actual)} actual"]
    missing = [k for k in expected if k not in actual]
    extra = [k for k in actual if k not in expected]
    wrong = [k for k in expected if k in actual and expected[k] != actual[k]]
    for label, keys in (("missing", missing), ("unexpected", extra), ("different", wrong)):
        if keys:
            lines.append(f"  {len(keys)} {label}:")
            for k in keys[:limit]:
                lines.append(f"    {k!r}\n      expected {expected.get(k)!r}\n      actual   {actual.get(k)!r}")
    return "\n".join(lines)


def _summary_dict(summary: Any) -> dict[str, Any]:
    if isinstance(summary, dict):
        return summary
    if hasattr(summary, "as_dict"):
        return summary.as_dict()
    return dict(vars(summary))


# --------------------------------------------------------------------------- the test


@pytest.mark.parametrize("seed", SEEDS)
def test_pipeline_matches_reference(spark, tmp_path, seed):
    from udfs.pipeline import run_pipeline

    config_path = write_config(tmp_path, seed)
    schema = f"diff_s{seed}"
    for s in (schema, f"{schema}_marts"):
        spark.sql(f"drop database if exists {s} cascade")

    events = wl.generate(seed, N_EVENTS)
    runs = wl.deliver(events, seed, N_RUNS)
    delivered: list[wl.SourceEvent] = []
    for k, files in enumerate(runs):
        wl.write_files(tmp_path / "landing", files)
        delivered.extend(wl.delivered_events([files]))

        summary = _summary_dict(run_pipeline(config_path, spark=spark))
        n_records = sum(f.n_records for f in files)
        where = f"seed {seed} run {k}"
        assert summary["quarantined"] == 0, f"{where}: quarantined records {summary}"
        assert summary["files"] == len(files), f"{where}: {summary}"
        assert summary["records"] == n_records, f"{where}: {summary}"
        assert summary["records"] == summary["changes"] + summary["quarantined"] + summary["skipped"], where
        assert summary["skipped"] >= sum(f.n_tombstones for f in files), f"{where}: tombstones not skipped"

        state = wl.reference_state(delivered)
        for spec in TABLES:
            expected = expected_rows(spec, state)
            actual = actual_rows(spark, config_path, spec)
            assert actual == expected, f"{where}\n" + _diff(spec.name, expected, actual)
            assert expected, f"{where}: {spec.name} has no rows: the workload compares nothing"

        exp_hist = expected_history(delivered)
        act_hist = actual_history(spark, schema)
        assert act_hist == exp_hist, f"{where}\n" + _diff("history", exp_hist, act_hist)
        assert sum(map(len, exp_hist.values())) == len({e.position for e in delivered}), where
        longest = max(map(len, exp_hist.values()))
        threshold = long_history_versions(seed)
        assert threshold == 0 or longest <= threshold, f"{where}: a key's history took the long path"

    # every event was delivered by the end
    assert {e.position for e in delivered} == {e.position for e in events}


# --------------------------------------------------------------------------- other formats

FORMAT_SEEDS = SEEDS if os.environ.get("CDC_DIFF_SEEDS") else [1]
FORMAT_EVENTS = int(os.environ.get("CDC_DIFF_EVENTS", "200"))
FORMAT_RUNS = 3
FORMATS_SCHEMA = "diff_formats_s{seed}"

#: format case -> why its test is expected to fail (a bug outside the decoders; see the
#: report in the case's reason). Marked xfail(strict=True): fixing the bug turns it red.
KNOWN_FAILURES: dict[str, str] = {}

#: format cases whose ``seq`` is not unique per key (Lindorm: the change's millisecond)
NON_UNIQUE_SEQ = {"lindorm_json"}


def _case_param(case: str) -> Any:
    reason = KNOWN_FAILURES.get(case)
    marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
    return pytest.param(case, marks=marks, id=case)


def write_formats_config(root: Path, seed: int) -> Path:
    """``cdc.yml`` with the feeds and tables of every format case (landing under ``root/landing``)."""
    schema = FORMATS_SCHEMA.format(seed=seed)
    feeds = [dict(f, path=f"landing/{f['path']}") for case in wl.FORMAT_CASES for f in wl.case_feeds(case)]
    cfg = {
        "warehouse": ".cdc",
        "schema": schema,
        "marts_schema": f"{schema}_marts",
        "buckets": 4,
        # every key through the long-history refold; the Debezium runs test both paths
        "long_history_versions": 0,
        "feeds": feeds,
        "tables": {
            t.name: {"key": list(t.key), "columns": t.column_types()}
            for case in wl.FORMAT_CASES
            for t in wl.case_tables(case)
        },
    }
    for feed in feeds:
        (root / feed["path"]).mkdir(parents=True, exist_ok=True)
    path = root / "cdc.yml"
    path.write_text(yaml.safe_dump(cfg, sort_keys=False, allow_unicode=True), encoding="utf-8")
    return path


@dataclass
class FormatRun:
    """What one pipeline run of the multi-format configuration left behind."""

    audit: dict[str, dict[str, Any]]  # feed -> files, records, change_records, changes, quarantined, skipped, by_reason
    quarantine: dict[str, list[tuple[str, str]]]  # feed -> [(reason, raw record head)]
    marts: dict[str, Any]  # table name -> {_cdc_key: typed row} (or the error reading them)
    exported: dict[str, list[dict[str, Any]]]  # table name -> rows as `cdc export --with-metadata` gives them
    history: list[Any]  # history_rows()


@dataclass
class FormatRuns:
    seed: int
    events: dict[str, list[wl.SourceEvent]]  # case -> adapted events
    files: dict[str, list[list[wl.FileSpec]]]  # case -> run -> files
    runs: list[FormatRun] = field(default_factory=list)
    error: BaseException | None = None


def _audit_by_feed(spark: Any, schema: str, run_id: str) -> dict[str, dict[str, Any]]:
    rows = spark.sql(
        f"select feed, records_read, change_records, changes_emitted, quarantined, skipped, skipped_by_reason "
        f"from {schema}.audit_files where run_id = '{run_id}'"
    ).collect()
    out: dict[str, dict[str, Any]] = {}
    for r in rows:
        a = out.setdefault(
            r["feed"],
            {"files": 0, "records": 0, "change_records": 0, "changes": 0, "quarantined": 0, "skipped": 0}
            | {"by_reason": {}},
        )
        a["files"] += 1
        a["records"] += r["records_read"]
        a["change_records"] += r["change_records"]
        a["changes"] += r["changes_emitted"]
        a["quarantined"] += r["quarantined"]
        a["skipped"] += r["skipped"]
        for reason, n in (r["skipped_by_reason"] or {}).items():
            a["by_reason"][reason] = a["by_reason"].get(reason, 0) + n
    return out


def _quarantine_by_feed(spark: Any, schema: str, run_id: str) -> dict[str, list[tuple[str, str]]]:
    rows = spark.sql(f"select feed, reason, raw_record from {schema}.quarantine where run_id = '{run_id}'").collect()
    out: dict[str, list[tuple[str, str]]] = {}
    for r in rows:
        out.setdefault(r["feed"], []).append((r["reason"], (r["raw_record"] or "")[:300]))
    return out


def mart_rows_by_key_text(spec: wl.TableSpec, exported: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Mart rows (``export_rows(..., with_metadata=True)``) by their ``_cdc_key``, the
    declared columns typed. Keyed by the state's key, not by the key columns: an update
    that does not provide the key columns (Arcion realtime images) leaves them NULL in
    the row (see :func:`test_mart_rows_show_their_key`)."""
    out: dict[str, dict[str, Any]] = {}
    for row in exported:
        lower = {str(k).lower(): v for k, v in row.items()}
        key = lower["_cdc_key"]
        assert key not in out, f"{spec.name}: key {key} twice in the mart"
        out[key] = {c.name: _typed(c, lower.get(c.name.lower())) for c in spec.columns}
    return out


def expected_rows_by_key_text(spec: wl.TableSpec, state: dict[str, dict[tuple, dict]]) -> dict[str, dict[str, Any]]:
    """:func:`expected_rows` keyed by :func:`workload.key_text`. The mart shows the key
    columns from the key, also for a row whose images never provided them (an Arcion
    realtime update that arrives before the insert of its row)."""
    columns = {c.name: c for c in spec.columns}
    return {
        wl.key_text(spec, k): dict(row, **{c: _typed(columns[c], v) for c, v in zip(spec.key, k, strict=True)})
        for k, row in expected_rows(spec, state).items()
    }


@pytest.fixture(scope="module", params=FORMAT_SEEDS, ids=lambda s: f"s{s}")
def format_runs(request, spark, tmp_path_factory) -> FormatRuns:
    """Every format case's stream delivered over :data:`FORMAT_RUNS` pipeline runs of one
    configuration; after each run, the audit, quarantine, marts and history are kept.

    A pipeline failure is kept too (``error``) and re-raised by every case's test.
    """
    from udfs.export import export_rows
    from udfs.pipeline import run_pipeline

    seed = request.param
    root = tmp_path_factory.mktemp(f"formats_s{seed}")
    schema = FORMATS_SCHEMA.format(seed=seed)
    for s in (schema, f"{schema}_marts"):
        spark.sql(f"drop database if exists {s} cascade")
    config_path = write_formats_config(root, seed)
    events = {
        case: wl.adapt_events(case, wl.generate(seed, FORMAT_EVENTS, wl.case_tables(case)), seed)
        for case in wl.FORMAT_CASES
    }
    files = {case: wl.deliver_case(case, events[case], seed, FORMAT_RUNS) for case in wl.FORMAT_CASES}
    out = FormatRuns(seed, events, files)
    try:
        for k in range(FORMAT_RUNS):
            for case in wl.FORMAT_CASES:
                wl.write_files(root / "landing", files[case][k])
            summary = _summary_dict(run_pipeline(config_path, spark=spark))
            marts: dict[str, Any] = {}
            exported: dict[str, list[dict[str, Any]]] = {}
            for case in wl.FORMAT_CASES:
                for spec in wl.case_tables(case):
                    exported[spec.name] = export_rows(spark, config_path, spec.name, with_metadata=True)
                    try:
                        marts[spec.name] = mart_rows_by_key_text(spec, exported[spec.name])
                    except AssertionError as exc:  # e.g. a key twice: that case's test fails
                        marts[spec.name] = exc
            out.runs.append(
                FormatRun(
                    audit=_audit_by_feed(spark, schema, summary["run_id"]),
                    quarantine=_quarantine_by_feed(spark, schema, summary["run_id"]),
                    marts=marts,
                    exported=exported,
                    history=history_rows(spark, schema),
                )
            )
    except Exception as exc:  # noqa: BLE001 - re-raised by every case's test
        out.error = exc
    return out


@pytest.mark.parametrize("case", [_case_param(c) for c in wl.FORMAT_CASES])
def test_format_matches_reference(format_runs: FormatRuns, case: str) -> None:
    """After every run, format ``case``'s marts and history equal the reference model of
    its delivered events; its feeds' audit counts every record (skipped tombstones,
    heartbeats, DDL messages and transaction markers exactly), one change per delivered
    event, and quarantines none."""
    if format_runs.error is not None:
        raise format_runs.error
    seed = format_runs.seed
    tables = wl.case_tables(case)
    feeds = [f["name"] for f in wl.case_feeds(case)]
    delivered: list[wl.SourceEvent] = []
    for k, run in enumerate(format_runs.runs):
        files = format_runs.files[case][k]
        delivered.extend(wl.delivered_events([files]))
        where = f"{case} seed {seed} run {k}"

        for feed in feeds:
            mine = [f for f in files if wl.feed_of_path(case, f.path) == feed]
            audit = run.audit.get(
                feed, {"files": 0, "records": 0, "change_records": 0, "changes": 0, "quarantined": 0, "skipped": 0}
            )
            quarantined = run.quarantine.get(feed, [])
            assert audit["quarantined"] == 0 and not quarantined, f"{where} {feed}: quarantined {quarantined[:5]}"
            assert audit["files"] == len(mine), f"{where} {feed}: {audit}"
            assert audit["records"] == sum(f.n_records for f in mine), f"{where} {feed}: {audit}"
            # the documented balance (a record may hold several changes: DTS Canal multi-row messages)
            balance = audit["change_records"] + audit["quarantined"] + audit["skipped"]
            assert audit["records"] == balance, f"{where} {feed}: {audit}"
            assert audit["changes"] == sum(len(f.events) for f in mine), f"{where} {feed}: one change per event"
            assert audit["skipped"] == sum(f.n_skipped for f in mine), f"{where} {feed}: {audit}"
            n_heartbeats = sum(f.n_heartbeats for f in mine)
            if n_heartbeats:
                assert audit["by_reason"].get("heartbeat") == n_heartbeats, f"{where} {feed}: {audit}"
            other: dict[str, int] = {}
            for f in mine:
                for reason, n in f.other_skipped.items():
                    other[reason] = other.get(reason, 0) + n
            for reason, n in other.items():
                assert audit["by_reason"].get(reason) == n, f"{where} {feed}: {reason} {audit}"

        state = wl.reference_state(delivered)
        for spec in tables:
            expected = expected_rows_by_key_text(spec, state)
            actual = run.marts[spec.name]
            if isinstance(actual, BaseException):
                raise AssertionError(f"{where}: {actual}")
            assert actual == expected, f"{where}\n" + _diff(spec.name, expected, actual)
            assert expected, f"{where}: {spec.name} has no rows: the workload compares nothing"

        exp_hist = expected_history(delivered, tables)
        act_hist = actual_history(None, "", tables, rows=run.history, unique_seq=case not in NON_UNIQUE_SEQ)
        assert act_hist == exp_hist, f"{where}\n" + _diff("history", exp_hist, act_hist)
        assert sum(map(len, exp_hist.values())) == len({e.position for e in delivered}), where

    assert {e.position for e in delivered} == {e.position for e in format_runs.events[case]}


def _check_runs(format_runs: FormatRuns) -> None:
    """Fail a check of the runs when the runs themselves failed: a broken pipeline must
    turn every check red (never skip it), with the cause that broke it."""
    if format_runs.error is not None:
        raise AssertionError(f"the pipeline runs failed: {format_runs.error!r}") from format_runs.error


@pytest.mark.parametrize(
    "case",
    [
        pytest.param(
            c,
            id=c,
        )
        for c in wl.FORMAT_CASES
    ],
)
def test_mart_rows_show_their_key(format_runs: FormatRuns, case: str) -> None:
    """Every live mart row shows its key in the key columns (the key is known from the
    event, even when the image that created the row does not provide those columns).

    For the Arcion internal formats this happens when an update in the realtime shape
    (key in the before image only, exists 2) arrives before the insert of its row (late
    delivery): the reference model of the main test says what the pipeline keeps (only
    the provided columns), this test says what an analyst needs.
    """
    _check_runs(format_runs)
    for k, run in enumerate(format_runs.runs):
        for spec in wl.case_tables(case):
            columns = {c.name.lower(): c for c in spec.columns}
            for row in run.exported[spec.name]:
                lower = {str(c).lower(): v for c, v in row.items()}
                want = {c: _typed(columns[c], v) for c, v in json.loads(lower["_cdc_key"]).items()}
                shown = {c: _typed(columns[c], lower.get(c)) for c in want}
                assert shown == want, f"{case} seed {format_runs.seed} run {k}: {spec.name} row {row}"


def test_export_binary_is_plain_base64(format_runs: FormatRuns) -> None:
    """``cdc export`` writes binary columns as base64 (README), one line per row: no MIME
    line breaks in long values. The Lindorm HBase cells are the binary columns here."""
    _check_runs(format_runs)
    spec = wl.hbase_table()
    long_values = 0
    for k, run in enumerate(format_runs.runs):
        for row in run.exported[spec.name]:
            for c in spec.columns:
                value = row.get(c.name.lower()) if c.type == "binary" else None
                if value is None:
                    continue
                canonical = base64.b64encode(base64.b64decode(value)).decode()
                long_values += len(canonical) > 76
                assert value == canonical, f"seed {format_runs.seed} run {k}: {c.name} = {value[:120]!r}"
    assert long_values, "the stream must hold a binary value longer than one MIME line (57 bytes)"
