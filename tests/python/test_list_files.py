"""``cdc_list_files``: the landing files a run may read, listed as Spark lists a folder
through Hadoop's local file system (``udfs.spark_udfs.list_files``), and through a real
run: links followed, entries gone meanwhile not files, an unreadable folder an error."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from udfs.spark_udfs import list_files

GOOD = (
    '{"before":null,"after":{"id":%d,"name":"n%d"},"source":{"connector":"postgresql","db":"d","schema":"s",'
    '"table":"items","lsn":%d},"op":"c"}\n'
)


def _names(root: Path) -> list[str]:
    return [os.path.relpath(path, root) for path, _, _ in list_files(str(root))]


def test_files_are_listed_sorted_with_size_and_microsecond_mtime_hidden_names_skipped(tmp_path):
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "2.jsonl").write_text("xy")
    (tmp_path / "1.jsonl").write_text("x")
    (tmp_path / ".partial.jsonl").write_text("x")
    (tmp_path / "_SUCCESS").write_text("")
    (tmp_path / "_tmp").mkdir()
    (tmp_path / "_tmp" / "3.jsonl").write_text("x")
    os.utime(tmp_path / "1.jsonl", ns=(1_700_000_000_123_456_789, 1_700_000_000_123_456_789))
    listed = list(list_files(str(tmp_path)))
    assert listed[0] == (str(tmp_path / "1.jsonl"), 1, 1_700_000_000_123_456)
    assert [(os.path.relpath(p, tmp_path), size) for p, size, _ in listed] == [("1.jsonl", 1), ("b/2.jsonl", 2)]
    assert list(list_files(f"file:{tmp_path}")) == listed


def test_links_are_followed_and_a_folder_reached_twice_is_listed_once(tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "far.jsonl").write_text("far")
    root = tmp_path / "landing"
    root.mkdir()
    (root / "a.jsonl").write_text("a")
    (root / "linked.jsonl").symlink_to(elsewhere / "far.jsonl")
    (root / "x_folder").symlink_to(elsewhere)  # listed under its first path in sorted order ...
    (root / "y_folder").symlink_to(elsewhere)  # ... and not again under another
    (root / "z_loop").symlink_to(root)  # a loop back to the root
    (root / "nothing.jsonl").symlink_to(tmp_path / "missing.jsonl")  # a link to nothing: not a file
    listed = list(list_files(str(root)))
    assert [os.path.relpath(p, root) for p, _, _ in listed] == ["a.jsonl", "linked.jsonl", "x_folder/far.jsonl"]
    assert listed[1][1] == 3  # the size of the file the link names


def test_an_entry_gone_during_the_listing_is_not_a_file(tmp_path, monkeypatch):
    root = tmp_path / "landing"
    (root / "sub").mkdir(parents=True)
    (root / "sub" / "gone.jsonl").write_text("x")
    (root / "kept.jsonl").write_text("x")
    real_scandir = os.scandir

    def folder_deleted_meanwhile(path):  # the walk read the root, then `sub` was deleted
        if Path(path) == root / "sub":
            raise FileNotFoundError(2, "No such file or directory", str(path))
        return real_scandir(path)

    monkeypatch.setattr(os, "scandir", folder_deleted_meanwhile)
    assert _names(root) == ["kept.jsonl"]


def test_a_folder_that_cannot_be_read_fails_the_listing_naming_it(tmp_path, monkeypatch):
    """Its files would be left out without a word (``os.walk`` skips errors by default)."""
    root = tmp_path / "landing"
    (root / "locked").mkdir(parents=True)
    (root / "locked" / "1.jsonl").write_text("x")
    real_scandir = os.scandir

    def locked(path):  # CI runs as root, for whom no mode bit locks a folder
        if Path(path) == root / "locked":
            raise PermissionError(13, "Permission denied", str(path))
        return real_scandir(path)

    monkeypatch.setattr(os, "scandir", locked)
    with pytest.raises(PermissionError, match="locked"):
        _names(root)


def test_a_missing_landing_folder_fails_the_listing(tmp_path):
    with pytest.raises(FileNotFoundError, match="the landing folder .*/gone does not exist or is not a folder"):
        _names(tmp_path / "gone")
    (tmp_path / "file").write_text("x")
    with pytest.raises(FileNotFoundError, match="is not a folder"):
        _names(tmp_path / "file")


def test_a_run_reads_through_links_and_past_a_link_to_nothing(spark, make_config, tmp_path):
    """Before: a link to nothing failed every run (FileNotFoundError in the listing), and
    a linked folder's files were never read, without a word."""
    from udfs.pipeline import run_pipeline

    config = make_config([{"name": "f", "format": "debezium_json", "path": "landing/f"}], {"items": {"key": ["id"]}})
    landing = tmp_path / "landing" / "f"
    (landing / "a.jsonl").write_text(GOOD % (1, 1, 10))
    exports = tmp_path / "exports"
    exports.mkdir()
    (exports / "b.jsonl").write_text(GOOD % (2, 2, 20))
    (landing / "exports").symlink_to(exports)
    (landing / "c.jsonl").symlink_to(tmp_path / "deleted.jsonl")
    summary = run_pipeline(config, spark=spark)
    assert (summary.files, summary.records, summary.changes, summary.quarantined) == (2, 2, 2, 0)
    schema = config.read_text().split("schema: ", 1)[1].split()[0]
    read = spark.sql(f"select source_file from {schema}.audit_files order by source_file").collect()
    assert [os.path.relpath(r.source_file, landing) for r in read] == ["a.jsonl", "exports/b.jsonl"]
