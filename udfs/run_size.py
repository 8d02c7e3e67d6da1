"""A run's size before its JVM starts, to choose the JVM's options.

A JVM that lives a minute and plans many small queries runs faster with
``udfs.session.SHORT_LIVED_JVM_OPTIONS`` (C1 only, the serial collector), and a first
load of millions of events slower (Spark's tasks run C1's code for minutes):
BENCHMARKS.md, "JVM options". Which of the two a ``cdc run`` is depends on the bytes of
the landing files no run has processed, and the JVM takes its options when it starts,
before Spark can list anything. So the count is made here, in Python: the feeds'
folders listed as ``cdc_list_files`` lists them, less the files ``audit_files`` records
as processed, read from the table's parquet files in the warehouse.

The count is a hint, not the run's input: the run lists and compares again in Spark
(stg_landing__files). A count that cannot be made (the table unreadable, a file gone
during the listing) keeps the JVM's defaults, and a wrong one costs time, never rows.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path

from udfs.config import Config
from udfs.session import DRIVER_JAVA_OPTIONS, SHORT_LIVED_JVM_OPTIONS
from udfs.spark_udfs import list_files

#: the JVM refuses to start with two collectors selected ("Multiple garbage collectors
#: selected"): the serial one is left out when the user's options choose one
_COLLECTOR = re.compile(r"-XX:\+Use\w+GC\b")
#: where else a user's options reach the driver's JVM
_JVM_OPTION_VARIABLES = ("JAVA_TOOL_OPTIONS", "JDK_JAVA_OPTIONS", "_JAVA_OPTIONS")


def audit_files_dir(config: Config) -> Path:
    """The folder of the ``audit_files`` table (Spark's default location of a table in
    the session's warehouse: ``udfs.session.build_session``)."""
    return config.warehouse / "spark-warehouse" / f"{config.schema.lower()}.db" / "audit_files"


def processed_files(config: Config) -> set[str]:
    """The landing files ``audit_files`` records as processed (none before a first run)."""
    folder = audit_files_dir(config)
    if not folder.is_dir():
        return set()
    import pyarrow.dataset as ds

    # names starting with `.` or `_` (checksums, _SUCCESS) are skipped, as Spark skips them
    table = ds.dataset(folder, format="parquet").to_table(columns=["source_file"])
    return {path for path in table.column("source_file").to_pylist() if path is not None}


def new_landing_bytes(config: Config) -> int:
    """The bytes of the feeds' landing files that no run has processed yet."""
    processed = processed_files(config)
    return sum(size for feed in config.feeds for path, size, _ in list_files(str(feed.path)) if path not in processed)


def short_lived_options_for(user_options: str) -> str:
    """The short-lived options as they can join ``user_options``: without the serial
    collector when the user's options select a collector."""
    if not _COLLECTOR.search(user_options):
        return SHORT_LIVED_JVM_OPTIONS
    return " ".join(opt for opt in SHORT_LIVED_JVM_OPTIONS.split() if not _COLLECTOR.fullmatch(opt))


def run_java_options(config: Config, environ: Mapping[str, str] = os.environ) -> tuple[str, str]:
    """The JVM options a ``cdc run`` adds to the session's own (empty: the JVM's
    defaults), and a line saying why."""
    limit = config.small_run_max_bytes
    if limit == 0:
        return "", "small_run_max_bytes is 0: the JVM's default options"
    try:
        new_bytes = new_landing_bytes(config)
    except (OSError, ValueError) as exc:  # pyarrow's errors are both kinds
        return "", f"the new landing bytes could not be counted ({exc}): the JVM's default options"
    size = f"{new_bytes:,} bytes of new landing files"
    if new_bytes > limit:
        return "", f"{size}, more than small_run_max_bytes ({limit:,}): the JVM's default options"
    user_options = " ".join(
        [config.spark_conf.get(DRIVER_JAVA_OPTIONS, "")] + [environ.get(name, "") for name in _JVM_OPTION_VARIABLES]
    )
    options = short_lived_options_for(user_options)
    return options, f"{size}, at most small_run_max_bytes ({limit:,}): the JVM starts with {options}"
