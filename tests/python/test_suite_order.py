"""The suite's own schedule (``conftest.longest_files_first``): the longest files are
handed to the pytest workers first; nothing else about the collected order changes.
And its JVMs' options (``conftest.SUITE_JAVA_OPTIONS``): C1 only, a code cache its
sweeper leaves alone and the serial collector, in the workers' Spark sessions and every
JVM their tests start."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest
from conftest import (
    SUITE_JAVA_OPTIONS,
    TESTS_DIR,
    check_listed_files_exist,
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
