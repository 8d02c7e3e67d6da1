"""A command's size before its JVM starts, to choose the JVM's options.

A JVM that lives a minute and plans many small queries runs faster with
``udfs.session.SHORT_LIVED_JVM_OPTIONS`` (C1 only, the serial collector), and a first
load of millions of events slower (Spark's tasks run C1's code for minutes):
BENCHMARKS.md, "JVM options". Which of the two a ``cdc run`` is depends on the bytes of
the landing files no run has processed, and the JVM takes its options when it starts,
before Spark can list anything. So the count is made here, in Python: the feeds'
folders listed as ``cdc_list_files`` lists them, less the files ``audit_files`` records
as processed, read from the table's parquet files in the warehouse. A query command
(``cdc export``, ``sql``, ``quarantine``) is sized by the warehouse folder's bytes, all
it can read, against a limit of its own (``small_query_max_bytes``).

The count is a hint, not the run's input: the run lists and compares again in Spark
(stg_landing__files). A count that cannot be made (the table unreadable, a file gone
during the listing) keeps the JVM's defaults, and a wrong one costs time, never rows.
The serial collector is added only when none of the user's options, wherever the JVM
reads them from (cdc.yml, spark-submit's properties files, the environment, the option
files these name), selects a collector: the JVM refuses to start with two.
"""

from __future__ import annotations

import os
import re
import shlex
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from urllib.parse import unquote, urlparse

from udfs.config import Config
from udfs.session import DRIVER_JAVA_OPTIONS, SHORT_LIVED_JVM_OPTIONS, submitted_properties
from udfs.spark_udfs import list_files

#: the JVM refuses to start with two collectors selected ("Multiple garbage collectors
#: selected"): the serial one is left out when the user's options choose one
_COLLECTOR = re.compile(r"-XX:\+Use\w+GC\b")
#: the Spark settings whose options reach the driver's JVM: spark-submit puts the
#: default ones first, then the extra ones
_JVM_OPTION_SETTINGS = ("spark.driver.defaultJavaOptions", DRIVER_JAVA_OPTIONS)
#: the environment variables that reach every JVM
_JVM_OPTION_VARIABLES = ("JAVA_TOOL_OPTIONS", "JDK_JAVA_OPTIONS", "_JAVA_OPTIONS")
_WAREHOUSE_DIR = "spark.sql.warehouse.dir"
#: the options that name a file the JVM reads more options from: an ``@argfile`` (on
#: the launcher's command line and in ``JDK_JAVA_OPTIONS``), ``-XX:VMOptionsFile=``
#: (options as on the command line) and ``-XX:Flags=`` (lines of ``+UseG1GC``, without
#: ``-XX:``)
_OPTION_FILE_PREFIXES = ("@", "-XX:VMOptionsFile=", "-XX:Flags=")
#: a spark-submit argument whose value holds JVM options: ``--driver-java-options=VALUE``,
#: and ``KEY=VALUE`` of a ``--conf`` (``-c``, ``--conf=``) that sets one of the settings
_SUBMIT_JAVA_OPTIONS = re.compile(
    r"(?:--driver-java-options=|(?:--conf=)?(?:" + "|".join(map(re.escape, _JVM_OPTION_SETTINGS)) + r")=)(?P<value>.*)",
    re.DOTALL,
)
#: a ``-XX:Flags=`` file's line that sets a flag
_FLAGS_LINE = re.compile(r"(?m)^\s*(?=[+-]\w)")
#: a comment line of an argfile or an options file
_COMMENT_LINE = re.compile(r"(?m)^\s*#.*$")


def warehouse_dir(config: Config) -> Path:
    """The session's warehouse folder: ``spark.sql.warehouse.dir`` when cdc.yml's
    ``spark:`` sets it (applied last, so it wins), else ``udfs.session.build_session``'s.
    A relative one is the current folder's, as Spark qualifies it; one that is not a
    local folder (``hdfs:``, ``s3a:``) cannot be read here (``ValueError``)."""
    value = config.spark_conf.get(_WAREHOUSE_DIR)
    if value is None:
        return config.warehouse / "spark-warehouse"
    url = urlparse(value)
    if url.scheme not in ("", "file"):
        raise ValueError(f"{_WAREHOUSE_DIR} {value!r} is not a local folder")
    return Path(unquote(url.path) if url.scheme else value).resolve()


def audit_files_dir(config: Config) -> Path:
    """The folder of the ``audit_files`` table (Spark's default location of a table in
    the session's warehouse)."""
    return warehouse_dir(config) / f"{config.schema.lower()}.db" / "audit_files"


def processed_files(config: Config) -> set[str]:
    """The landing files ``audit_files`` records as processed (none before a first run)."""
    folder = audit_files_dir(config)
    if not folder.is_dir():
        return set()
    import pyarrow.dataset as ds

    # names starting with `.` or `_` (checksums, _SUCCESS) are skipped, as Spark skips them
    table = ds.dataset(folder, format="parquet").to_table(columns=["source_file"])
    return {path for path in table.column("source_file").to_pylist() if path is not None}


def new_landing_bytes(config: Config, now_us: int | None = None) -> int:
    """The bytes of the feeds' landing files that no run has processed yet, less those
    the run leaves for a later one (modified within their feed's ``min_file_age_seconds``
    of ``now_us``, the current time by default)."""
    processed = processed_files(config)
    now_us = time.time_ns() // 1000 if now_us is None else now_us
    return sum(
        size
        for feed in config.feeds
        for path, size, modified_us in list_files(str(feed.path))
        if path not in processed
        and (not feed.min_file_age_seconds or modified_us <= now_us - feed.min_file_age_seconds * 1_000_000)
    )


def short_lived_options_for(user_options: str) -> str:
    """The short-lived options as they can join ``user_options``: without the serial
    collector when the user's options select a collector."""
    if not _COLLECTOR.search(user_options):
        return SHORT_LIVED_JVM_OPTIONS
    return " ".join(opt for opt in SHORT_LIVED_JVM_OPTIONS.split() if not _COLLECTOR.fullmatch(opt))


def user_java_options(config: Config, environ: Mapping[str, str] = os.environ) -> str:
    """Every JVM option of the driver that is not the session's own or the run's:
    cdc.yml's ``spark:``, the settings of the properties files spark-submit reads (those
    it reads, as ``udfs.session.build_session`` finds them: a file it passes over gives
    the JVM nothing), ``PYSPARK_SUBMIT_ARGS`` and the JVM's environment variables, joined
    (only searched, never passed on)."""
    sources = [config.spark_conf.get(name, "") for name in _JVM_OPTION_SETTINGS]
    from_files = submitted_properties(shlex.split(environ.get("PYSPARK_SUBMIT_ARGS", "")), environ)
    sources += [from_files.get(name, "") for name in _JVM_OPTION_SETTINGS]
    sources += [environ.get(name, "") for name in ("PYSPARK_SUBMIT_ARGS", *_JVM_OPTION_VARIABLES)]
    return with_option_files(" ".join(source for source in sources if source))


def _named_option_files(options: str) -> list[tuple[str, str]]:
    """The (prefix, path) of each option of ``options`` that names an options file, the
    options split as the launcher splits them (quotes, backslashes). A value holding
    several options, as ``--driver-java-options "-Da=b @gc.args"``, is split again, as is
    the value of spark-submit's ``--conf spark.driver.defaultJavaOptions=@gc.args``; an
    ``@`` inside an option (``-Dmail=a@b``) names no file."""
    if not any(prefix in options for prefix in _OPTION_FILE_PREFIXES):
        return []  # nothing to split: quotes the JVM reads its own way stay unsplit
    named = []
    for token in shlex.split(options):
        prefix = next((prefix for prefix in _OPTION_FILE_PREFIXES if token.startswith(prefix)), None)
        submitted = _SUBMIT_JAVA_OPTIONS.fullmatch(token)
        if prefix is not None:
            named.append((prefix, token[len(prefix) :]))
        elif submitted:
            named += _named_option_files(submitted["value"])
        elif any(char.isspace() for char in token):
            named += _named_option_files(token)
    return named


def with_option_files(options: str) -> str:
    """``options`` followed by the options of every file they name for the JVM to read
    options from (``_OPTION_FILE_PREFIXES``; a relative path is the current folder's,
    where the JVM starts), and of the files those name in turn. A file that cannot be
    read raises ``OSError``, options that cannot be split ``ValueError``: the JVM would
    not start with either."""
    texts, pending, seen = [options], [options], set()
    while pending:
        for prefix, name in _named_option_files(pending.pop()):
            path = Path(name)
            if path in seen:
                continue
            seen.add(path)
            text = _COMMENT_LINE.sub("", path.read_text(encoding="utf-8", errors="replace"))
            if prefix == "-XX:Flags=":
                text = _FLAGS_LINE.sub("-XX:", text)
            texts += [text]
            pending += [text]
    return " ".join(texts)


def warehouse_bytes(config: Config) -> int:
    """The bytes of the warehouse folder's files: all a query can read (none before a
    first run)."""
    folder = warehouse_dir(config)
    return sum(size for _, size, _ in list_files(str(folder))) if folder.is_dir() else 0


def _options_by_size(
    config: Config, environ: Mapping[str, str], count: Callable[[Config], int], what: str, setting: str
) -> tuple[str, str]:
    """The short-lived options when ``count`` (bytes of ``what``) is at most the
    ``setting`` of ``config``, else none (the JVM's defaults); and a line saying why."""
    limit = getattr(config, setting)
    if limit == 0:
        return "", f"{setting} is 0: the JVM's default options"
    try:
        n_bytes = count(config)
    except (OSError, ValueError) as exc:  # pyarrow's errors are both kinds
        return "", f"the bytes of {what} could not be counted ({exc}): the JVM's default options"
    size = f"{n_bytes:,} bytes of {what}"
    if n_bytes > limit:
        return "", f"{size}, more than {setting} ({limit:,}): the JVM's default options"
    try:
        user_options = user_java_options(config, environ)
    except (OSError, ValueError) as exc:  # an unreadable file; PYSPARK_SUBMIT_ARGS that shlex cannot split
        return "", f"{size}, but the user's JVM options could not be read ({exc}): the JVM's default options"
    options = short_lived_options_for(user_options)
    return options, f"{size}, at most {setting} ({limit:,}): the JVM starts with {options}"


def run_java_options(config: Config, environ: Mapping[str, str] = os.environ) -> tuple[str, str]:
    """The JVM options a ``cdc run`` adds to the session's own (empty: the JVM's
    defaults), by the bytes of its new landing files, and a line saying why."""
    return _options_by_size(config, environ, new_landing_bytes, "new landing files", "small_run_max_bytes")


def query_java_options(config: Config, environ: Mapping[str, str] = os.environ) -> tuple[str, str]:
    """The JVM options of a query command (``cdc export``, ``sql``, ``quarantine``), by
    the bytes of the warehouse's tables (a query may read any of them) against
    ``small_query_max_bytes``, and a line saying why."""
    return _options_by_size(config, environ, warehouse_bytes, "tables in the warehouse", "small_query_max_bytes")
