"""The suite's own schedule (``conftest.longest_files_first``): the longest files are
handed to the pytest workers first; nothing else about the collected order changes.
And its JVMs' options (``conftest.SUITE_JAVA_OPTIONS``): C1 only, a code cache its
sweeper leaves alone and the serial collector, in the workers' Spark sessions and every
JVM their tests start."""

from __future__ import annotations

import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from conftest import (
    SUITE_JAVA_OPTIONS,
    TESTS_DIR,
    check_listed_files_exist,
    file_minutes_lines,
    file_of_test,
    longest_files_first,
    with_suite_java_options,
)


@dataclass
class Item:
    path: Path
    name: str


def _items(*spec: tuple[str, str]) -> list[Item]:
    return [Item(TESTS_DIR / file, name) for file, name in spec]


def test_listed_files_go_first_longest_first_each_files_tests_in_their_order() -> None:
    items = _items(
        ("formats/test_a.py", "a1"),
        ("test_short.py", "s1"),
        ("test_b.py", "b1"),
        ("test_long.py", "l1"),
        ("test_short.py", "s2"),
        ("test_long.py", "l2"),
        ("test_b.py", "b2"),
    )
    ordered = longest_files_first(items, {"test_long.py": 12.0, "test_short.py": 3.5})
    assert [i.name for i in ordered] == ["l1", "l2", "s1", "s2", "a1", "b1", "b2"]


def test_a_file_outside_the_tests_folder_keeps_its_place() -> None:
    items = [Item(Path("/elsewhere/test_x.py"), "x"), *_items(("test_long.py", "l1"))]
    assert [i.name for i in longest_files_first(items, {"test_long.py": 1.0})] == ["l1", "x"]


def test_a_listed_file_that_does_not_exist_stops_the_collection_naming_it() -> None:
    check_listed_files_exist({"test_suite_order.py": 1.0, "formats/test_debezium_json.py": 1.0})
    with pytest.raises(pytest.UsageError, match=r"\['test_renamed\.py'\]"):
        check_listed_files_exist({"test_suite_order.py": 1.0, "test_renamed.py": 2.0})


def test_each_files_minutes_are_printed_longest_first_with_its_listed_figure() -> None:
    seconds = {"test_long.py": 600.0, "test_new.py": 150.0, "test_short.py": 30.0, "formats/test_tiny.py": 6.0}
    lines = file_minutes_lines(seconds, {"test_long.py": 12.0, "test_short.py": 3.5, "test_gone.py": 2.0})
    assert lines == [
        "  10.0  test_long.py  (listed 12.0)",
        "   2.5  test_new.py  (not listed)",
        "   0.5  test_short.py  (listed 3.5)",  # listed: shown although under a minute
        "  13.1  in all, 4 files (1 under 1 min not shown)",
    ]


def test_a_tests_file_is_named_as_the_list_names_it() -> None:
    root = TESTS_DIR.parents[1]
    assert file_of_test("tests/python/test_cli.py::test_x[a::b]", root) == "test_cli.py"
    assert file_of_test("tests/python/formats/test_debezium_json.py::test_y", root) == "formats/test_debezium_json.py"
    assert file_of_test("elsewhere/test_z.py::test_z", root) == "elsewhere/test_z.py"


def test_a_run_under_two_workers_ends_with_each_files_and_each_workers_minutes() -> None:
    """The hooks, wired as `scripts/test.sh` runs the suite: the controlling process
    prints the summary, from the workers' reports."""
    run = subprocess.run(
        [sys.executable, "-m", "pytest", f"{TESTS_DIR / 'test_suite_order.py'}::{_ONE_PURE_TEST}",
         f"{TESTS_DIR / 'test_config.py'}", "-q", "-n", "2", "--dist", "loadfile", "-p", "no:cacheprovider"],
        cwd=TESTS_DIR.parents[1], capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert run.returncode == 0, run.stdout + run.stderr
    summary = run.stdout.split("minutes per test file (conftest.LONGEST_FILES_MINUTES)", 1)[1]
    assert re.search(r"^ +\d+\.\d  in all, 2 files \(2 under 1 min not shown\)$", summary, re.M), summary
    assert re.search(r"^minutes busy per worker: gw0 \d+\.\d, gw1 \d+\.\d$", summary, re.M), summary


_ONE_PURE_TEST = "test_a_tests_file_is_named_as_the_list_names_it"


def test_the_suites_java_options_come_first_once_and_the_users_after() -> None:
    assert with_suite_java_options(None) == with_suite_java_options("") == SUITE_JAVA_OPTIONS
    mine = with_suite_java_options("-XX:TieredStopAtLevel=4")
    assert mine == f"{SUITE_JAVA_OPTIONS} -XX:TieredStopAtLevel=4"  # the user's last: the JVM takes the last
    assert with_suite_java_options(mine) == mine  # a test process importing conftest again adds nothing


def test_the_workers_spark_session_runs_c1_only_with_the_serial_collector(spark) -> None:
    jvm = spark._jvm  # noqa: SLF001
    management = jvm.java.lang.management.ManagementFactory
    arguments = list(management.getRuntimeMXBean().getInputArguments())
    assert set(SUITE_JAVA_OPTIONS.split()) <= set(arguments), arguments
    # the serial collector's two generations, not G1's
    collectors = sorted(str(bean.getName()) for bean in management.getGarbageCollectorMXBeans())
    assert collectors == ["Copy", "MarkSweepCompact"], collectors
