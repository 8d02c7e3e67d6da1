"""Shared fixtures: one Spark session for the whole test run (its Hive metastore in a
temporary warehouse); each pipeline test gets its own schemas in it."""

from __future__ import annotations

import itertools
import os
import sys
from pathlib import Path

import pytest
import yaml

from udfs.session import SHORT_LIVED_JVM_OPTIONS

# helper modules whose asserts should report like a test's (imported by the tests after this)
pytest.register_assert_rewrite("change_checks")

# The suite's JVMs (each worker's Spark session, every `cdc` and bench process, the
# Thrift servers, beeline) compile with C1 only, with a code cache large enough that
# its sweeper stays idle, and collect with the serial collector
# (`udfs.session.SHORT_LIVED_JVM_OPTIONS`): each lives minutes and plans many small
# queries, where the C2 compiler and G1 took more CPU than they gave back (a third of a
# JVM's CPU went to C2). Side by side on this 2-core machine: a `cdc run` of the
# example, JVM CPU 0.5x and wall 0.73-0.80x (`python -m bench.run_overhead
# --java-options`); the key-move chain bench, JVM CPU 210 -> 120 s (BENCHMARKS.md, "JVM
# options"). Only the JIT tier and the collector change, not what Spark computes.
# Options already in JDK_JAVA_OPTIONS come after these, so they win.
SUITE_JAVA_OPTIONS = SHORT_LIVED_JVM_OPTIONS


def with_suite_java_options(current: str | None) -> str:
    """``JDK_JAVA_OPTIONS`` for the suite's JVMs: the suite's options, then ``current``'s
    (once: a test process started by a test imports this file again)."""
    if current and SUITE_JAVA_OPTIONS in current:
        return current
    return " ".join(filter(None, [SUITE_JAVA_OPTIONS, current]))


os.environ["JDK_JAVA_OPTIONS"] = with_suite_java_options(os.environ.get("JDK_JAVA_OPTIONS"))

REPO = Path(__file__).resolve().parents[2]
SHARED = REPO.parent / "shared"
CORPORA = SHARED / "corpora"
SPECS = SHARED / "specs"

_schema_numbers = itertools.count(1)


def corpus(*parts: str) -> Path:
    """A corpus file read in place; a missing corpus fails the test (never skips)."""
    path = CORPORA.joinpath(*parts)
    assert path.exists(), f"corpus file {path} is missing: ../shared/corpora must be beside the repository"
    return path


@pytest.fixture(scope="session")
def spark(tmp_path_factory: pytest.TempPathFactory):
    os.environ["PYSPARK_PYTHON"] = sys.executable
    from udfs.session import build_session

    # one session serves every pipeline test of a worker (hundreds of dbt models, a
    # 10,000-column table): more heap than Spark's 1 GB default a user's run starts with
    session = build_session(
        tmp_path_factory.mktemp("warehouse"), master="local[2]", extra_conf={"spark.driver.memory": "2g"}
    )
    yield session
    session.stop()


@pytest.fixture()
def make_config(tmp_path: Path):
    """Write a cdc.yml with unique schemas into ``tmp_path``; returns its path."""

    def make(feeds: list[dict], tables: dict | None = None, **extra) -> Path:
        n = next(_schema_numbers)
        cfg = {
            "warehouse": ".cdc",
            "schema": f"t{n}_cdc",
            "marts_schema": f"t{n}_marts",
            "feeds": feeds,
            "tables": tables or {},
            **extra,
        }
        for feed in feeds:
            (tmp_path / feed["path"]).mkdir(parents=True, exist_ok=True)
        path = tmp_path / "cdc.yml"
        path.write_text(yaml.safe_dump(cfg, sort_keys=False))
        return path

    return make


# The suite's longest files: the minutes each took on its worker in a full run of the
# suite on this 2-core machine (2026-12-07 03:55 UTC, `.ci/run` of d033d8f in a fresh
# clone, nothing else running: 137.9 worker-minutes, the workers busy 69.0 and 68.9 of
# them; every file of a minute or more). scripts/test.sh gives each of two workers one
# file at a time, in the collected order (--dist loadfile --no-loadscope-reorder): these
# files are collected first, longest first, so that the run does not end with one worker
# on a long file and the other idle. xdist's own order (the files with most tests first)
# put them last and left a worker idle for ten minutes. Files not listed follow in their
# usual order. Only the order matters: refresh the figures when a file's time moves by
# minutes (every run prints each file's minutes and each worker's at its end:
# `file_minutes_lines`).
LONGEST_FILES_MINUTES: dict[str, float] = {
    "test_changelog_compaction.py": 12.4,
    "test_bench_smoke.py": 11.8,
    "test_key_moves.py": 11.4,
    "test_thrift_server.py": 10.5,
    "test_cli_crash_idempotence.py": 10.3,
    "test_differential.py": 8.1,
    "test_merge_segments.py": 7.3,
    "test_conformance_debezium.py": 4.6,
    "test_conformance_canal.py": 4.5,
    "test_audit.py": 4.0,
    "test_hostile_input.py": 3.8,
    "test_run_java_options.py": 3.7,
    "test_large_landing_file.py": 3.0,
    "test_long_history.py": 2.8,
    "test_quarantine_retry.py": 2.8,
    "test_conformance_arcion.py": 2.7,
    "test_dbt_run_flags.py": 2.6,
    "test_state_columns.py": 2.5,
    "test_run_test_scope.py": 2.3,
    "test_decode_spread.py": 2.3,
    "test_loaded_at_watermarks.py": 1.9,
    "test_schema_evolution.py": 1.9,
    "test_session_settings.py": 1.6,
    "test_cli_errors.py": 1.6,
    "test_interrupted_session.py": 1.6,
    "test_compressed_landing_files.py": 1.6,
    "test_ddl_log_failure.py": 1.5,
    "test_pipeline_cdl_lindorm.py": 1.4,
    "test_driver_java_options.py": 1.2,
    "test_parquet_timestamps.py": 1.2,
    "test_golden.py": 1.1,
    "test_persist_docs.py": 1.1,
    "test_properties.py": 1.1,
}

TESTS_DIR = Path(__file__).resolve().parent


def listed_name(path: Path) -> str | None:
    """A test file's name as ``LONGEST_FILES_MINUTES`` names it (relative to
    ``tests/python``); ``None`` for a test outside it, named on the command line."""
    try:
        return path.relative_to(TESTS_DIR).as_posix()
    except ValueError:
        return None


def longest_files_first(items: list, minutes_by_file: dict[str, float]) -> list:
    """``items`` with the listed files' first, longest file first; a stable sort, so each
    file's tests and the files not listed keep their order."""
    return sorted(items, key=lambda item: minutes_by_file.get(listed_name(item.path), 0.0), reverse=True)


def check_listed_files_exist(minutes_by_file: dict[str, float]) -> None:
    """A renamed or removed file in the list stops the collection, naming it."""
    missing = sorted(name for name in minutes_by_file if not (TESTS_DIR / name).is_file())
    if missing:
        raise pytest.UsageError(f"conftest.LONGEST_FILES_MINUTES names files that do not exist: {missing}")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    check_listed_files_exist(LONGEST_FILES_MINUTES)
    items[:] = longest_files_first(items, LONGEST_FILES_MINUTES)


# Each test file's seconds in this run: setup, call and teardown of its tests, on the
# worker that ran it (reports reach the controlling process under xdist too); and each
# worker's, which shows how evenly the schedule shared the run.
_seconds_by_file: dict[str, float] = {}
_seconds_by_worker: dict[str, float] = {}


def file_of_test(nodeid: str, rootpath: Path) -> str:
    """The file of a test's node id, named as ``LONGEST_FILES_MINUTES`` names it
    (relative to ``tests/python``; any other path as pytest gave it)."""
    file = nodeid.split("::", 1)[0]
    return listed_name((rootpath / file).resolve()) or file


def file_minutes_lines(
    seconds_by_file: dict[str, float], minutes_by_file: dict[str, float], at_least: float = 1.0
) -> list[str]:
    """The summary printed at the end of a run: each file that took ``at_least`` minutes
    or is in ``minutes_by_file``, longest first, with its listed figure beside it, so the
    list's figures can be refreshed from any run's output."""
    minutes = {file: seconds / 60 for file, seconds in seconds_by_file.items()}
    shown = [file for file, m in minutes.items() if m >= at_least or file in minutes_by_file]
    lines = []
    for file in sorted(shown, key=lambda f: (-minutes[f], f)):
        listed = minutes_by_file.get(file)
        note = "not listed" if listed is None else f"listed {listed:.1f}"
        lines.append(f"{minutes[file]:6.1f}  {file}  ({note})")
    total = sum(minutes.values())
    lines.append(
        f"{total:6.1f}  in all, {len(minutes)} files ({len(minutes) - len(shown)} under {at_least:g} min not shown)"
    )
    return lines


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    file = report.nodeid.split("::", 1)[0]
    _seconds_by_file[file] = _seconds_by_file.get(file, 0.0) + report.duration
    worker = getattr(getattr(report, "node", None), "gateway", None)  # set by xdist
    if worker is not None:
        _seconds_by_worker[worker.id] = _seconds_by_worker.get(worker.id, 0.0) + report.duration


def pytest_terminal_summary(terminalreporter, config: pytest.Config) -> None:
    if not _seconds_by_file:
        return
    by_file = {file_of_test(file, config.rootpath): seconds for file, seconds in _seconds_by_file.items()}
    terminalreporter.write_sep("=", "minutes per test file (conftest.LONGEST_FILES_MINUTES)")
    for line in file_minutes_lines(by_file, LONGEST_FILES_MINUTES):
        terminalreporter.write_line(line)
    if _seconds_by_worker:
        busy = ", ".join(f"{worker} {seconds / 60:.1f}" for worker, seconds in sorted(_seconds_by_worker.items()))
        terminalreporter.write_line(f"minutes busy per worker: {busy}")
