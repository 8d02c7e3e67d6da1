"""Helpers shared by the tests that look at the files under a warehouse table (the
changelog's compaction, its files per partition, the parquet timestamp layouts): a
file's local path from the URI Spark names it by, a table's files, the changelog
partition a file is in, and the ``to_json`` option that keeps every microsecond."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from urllib.parse import unquote, urlparse

#: ``to_json``'s default timestamp format stops at milliseconds
TO_JSON_MICROS = "map('timestampFormat', \"yyyy-MM-dd'T'HH:mm:ss.SSSSSSXXX\")"


def local_path(uri: str) -> Path:
    """The local file or folder a ``file:`` URI names (``inputFiles``, a table's location)."""
    return Path(unquote(urlparse(uri).path))


def table_files(spark, table: str) -> list[Path]:
    """The data files Spark reads for ``table`` (refresh the table first after a change
    outside this session's knowledge)."""
    return [local_path(uri) for uri in spark.table(table).inputFiles()]


def changelog_partition(file: Path) -> str:
    """``table_id=<id>/bucket=<n>``: the changelog partition ``file`` is in."""
    return "/".join(part for part in file.parts if part.startswith(("table_id=", "bucket=")))


def files_per_changelog_partition(spark, table: str) -> Counter:
    """How many files each partition of the changelog ``table`` holds."""
    return Counter(changelog_partition(file) for file in table_files(spark, table))
