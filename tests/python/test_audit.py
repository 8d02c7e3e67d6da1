"""Accounting: every record read is a change-producing record, a quarantined one or a
skipped one (by reason), per file and per run; processed landing files that change
afterwards are reported once and not read again."""

from __future__ import annotations

import json
import os
import time

import yaml

from udfs.cli import _quarantine_query, _unknown_run_message
from udfs.config import load_config
from udfs.pipeline import dbt_vars, run_dbt, run_pipeline
from udfs.run_size import new_landing_bytes

GOOD = (
    '{"before":null,"after":{"id":%d,"name":"n%d"},"source":{"connector":"postgresql","db":"d","schema":"s",'
    '"table":"items","lsn":%d},"op":"c"}'
)


def _write(path, lines):
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def test_accounting_per_file_and_run_and_changed_files(spark, make_config, tmp_path):
    config = make_config([{"name": "f", "format": "debezium_json", "path": "landing/f"}], {"items": {"key": ["id"]}})
    schema = yaml.safe_load(config.read_text())["schema"]
    landing = tmp_path / "landing" / "f"
    _write(landing / "a.jsonl", [GOOD % (1, 1, 10), "not json", GOOD % (2, 2, 20), "null"])
    _write(
        landing / "b.jsonl",
        [GOOD % (3, 3, 30), '{"op": "m", "source": {"connector": "postgresql"}, "message": {"prefix": "x"}}'],
    )

    first = run_pipeline(config, spark=spark)
    assert (first.files, first.records, first.changes, first.quarantined, first.skipped) == (2, 6, 3, 1, 2)
    audit = {
        os.path.basename(r.source_file): r
        for r in spark.sql(f"select * from {schema}.audit_files where run_id = '{first.run_id}'").collect()
    }
    a, b = audit["a.jsonl"], audit["b.jsonl"]
    assert (a.records_read, a.change_records, a.quarantined, a.skipped) == (4, 2, 1, 1)
    assert a.skipped_by_reason == {"tombstone": 1}
    assert (b.records_read, b.change_records, b.quarantined, b.skipped) == (2, 1, 0, 1)
    assert b.skipped_by_reason == {"message": 1}
    for r in (a, b):
        assert r.records_read == r.change_records + r.quarantined + r.skipped

    run = spark.sql(f"select * from {schema}.audit_runs where run_id = '{first.run_id}'").collect()
    assert len(run) == 1
    assert (run[0].files, run[0].records_read, run[0].changes_emitted, run[0].quarantined, run[0].skipped) == (
        2,
        6,
        3,
        1,
        2,
    )
    assert run[0].merged and run[0].tables_touched == ["items"]

    q = spark.sql(_quarantine_query(schema, first.run_id)).collect()
    assert [(os.path.basename(r.source_file), r.record_index, r.raw_record) for r in q] == [("a.jsonl", 1, "not json")]
    assert q[0].reason.startswith("not JSON")

    # a processed file changes (same path, more bytes, later mtime): reported, not re-read
    time.sleep(0.01)
    _write(landing / "a.jsonl", [GOOD % (1, 1, 10), "not json", GOOD % (2, 2, 20), "null", GOOD % (9, 9, 90)])
    second = run_pipeline(config, spark=spark)
    assert (second.files, second.records, second.changed_files) == (0, 0, 1)
    assert "1 processed landing file(s) changed" in str(second)
    changed = spark.sql(f"select * from {schema}.audit_changed_files").collect()
    assert len(changed) == 1
    assert changed[0].processed_size < changed[0].current_size and changed[0].processed_run_id == first.run_id
    assert spark.sql(f"select count(*) from {schema}.changelog").collect()[0][0] == 3

    # reported once
    third = run_pipeline(config, spark=spark)
    assert third.changed_files == 0
    assert spark.sql(f"select count(*) from {schema}.audit_changed_files").collect()[0][0] == 1
    runs = spark.sql(f"select run_id, files from {schema}.audit_runs").collect()
    assert sorted(r.files for r in runs) == [0, 0, 2]

    # `cdc quarantine --since RUN` lists the records of RUN and of the runs after it, also
    # for a run that read no file (it listed nothing: only the quarantine's and the
    # audit's times were looked up); a run id the warehouse never saw is named as such
    _write(landing / "c.jsonl", ["also not json"])
    fourth = run_pipeline(config, spark=spark)
    assert (fourth.files, fourth.quarantined) == (1, 1)

    def listed(since):
        return [os.path.basename(r.source_file) for r in spark.sql(_quarantine_query(schema, since)).collect()]

    assert listed(first.run_id) == ["a.jsonl", "c.jsonl"]
    assert listed(third.run_id) == ["c.jsonl"], "a run that read no file"
    assert listed(fourth.run_id) == ["c.jsonl"]

    def rows(sql):
        return [tuple(r) for r in spark.sql(sql).collect()]

    assert _unknown_run_message(schema, third.run_id, rows) is None
    assert _unknown_run_message(schema, "no-such-run", rows) == (
        f"no run no-such-run in this warehouse; its runs: cdc sql 'select run_id from {schema}.merge_log'"
    )


def test_a_file_modified_within_min_file_age_waits_for_a_later_run(spark, make_config, tmp_path):
    """``min_file_age_seconds``: a new file modified within it of a run's start may still
    be written; it is left for a later run and reported, and the first run that finds it
    older reads it whole. Processed and retried files are not held back. A feed's own
    setting wins over the top-level one: feed ``f`` takes the top-level hour, feed ``g``
    sets 0 and its young file is read at once."""
    config = make_config(
        [
            {"name": "f", "format": "debezium_json", "path": "landing/f"},
            {"name": "g", "format": "debezium_json", "path": "landing/g", "min_file_age_seconds": 0},
        ],
        {"items": {"key": ["id"]}},
        min_file_age_seconds=3600,
    )
    schema = yaml.safe_load(config.read_text())["schema"]
    landing = tmp_path / "landing" / "f"
    two_hours_ago = time.time() - 7200
    _write(landing / "old.jsonl", [GOOD % (1, 1, 10)])
    os.utime(landing / "old.jsonl", (two_hours_ago, two_hours_ago))
    _write(landing / "young.jsonl", [GOOD % (2, 2, 20), '{"op": "c", "after": {"id": 3'])  # its writer is on it
    at_once = tmp_path / "landing" / "g" / "now.jsonl"
    _write(at_once, [GOOD % (5, 5, 50)])

    # the count that chooses the JVM's options leaves it out too
    assert new_landing_bytes(load_config(config)) == (landing / "old.jsonl").stat().st_size + at_once.stat().st_size

    first = run_pipeline(config, spark=spark)
    assert (first.files, first.records, first.quarantined, first.unsettled_files) == (2, 2, 0, 1)
    assert "1 new landing file(s) modified within min_file_age_seconds left for a later run" in str(first)
    unsettled = spark.sql(f"select * from {schema}.audit_unsettled_files").collect()
    assert [(r.feed, os.path.basename(r.source_file), r.file_size, r.run_id) for r in unsettled] == [
        ("f", "young.jsonl", (landing / "young.jsonl").stat().st_size, first.run_id)
    ]
    processed = spark.sql(f"select source_file from {schema}.audit_files order by source_file").collect()
    assert [os.path.basename(r.source_file) for r in processed] == ["old.jsonl", "now.jsonl"]

    # the writer finishes the file: still young, still left
    _write(landing / "young.jsonl", [GOOD % (2, 2, 20), GOOD % (3, 3, 30)])
    second = run_pipeline(config, spark=spark)
    assert (second.files, second.unsettled_files, second.changed_files) == (0, 1, 0)

    # an hour later it is read whole, once, and nothing is left or reported changed
    os.utime(landing / "young.jsonl", (two_hours_ago, two_hours_ago))
    third = run_pipeline(config, spark=spark)
    assert (third.files, third.records, third.changes, third.quarantined) == (1, 2, 2, 0)
    assert (third.unsettled_files, third.changed_files) == (0, 0)
    assert "min_file_age_seconds" not in str(third)
    assert spark.sql(f"select count(*) from {schema}.audit_unsettled_files").collect()[0][0] == 0
    ids = spark.sql(f"select after['id'] as id from {schema}.changelog order by id").collect()
    assert [r.id for r in ids] == ["1", "2", "3", "5"]

    # a processed file modified again is a changed file, not an unsettled one
    _write(landing / "old.jsonl", [GOOD % (1, 1, 10), GOOD % (4, 4, 40)])
    fourth = run_pipeline(config, spark=spark)
    assert (fourth.files, fourth.unsettled_files, fourth.changed_files) == (0, 0, 1)


def test_a_feed_without_its_own_wait_in_the_settings_takes_the_top_level_one(spark, make_config):
    """``cdc run`` and ``cdc serve`` publish each feed's ``min_file_age_seconds``; settings
    written before feeds had their own (by hand, or an older ``cdc_settings``) carry the
    top-level one only, and ``cdc_min_file_ages`` gives it to each feed that lacks one,
    while a feed's own still wins, 0 included."""
    config = load_config(
        make_config(
            [
                {"name": "f", "format": "debezium_json", "path": "landing/f"},
                {"name": "g", "format": "debezium_json", "path": "landing/g", "min_file_age_seconds": 0},
                {"name": "h", "format": "debezium_json", "path": "landing/h", "min_file_age_seconds": 60},
            ],
            {"items": {"key": ["id"]}},
            min_file_age_seconds=3600,
        )
    )
    settings = dbt_vars(config)["cdc"]
    del settings["feeds"][0]["min_file_age_seconds"]
    settings["min_file_age_seconds"] = 7200  # not the config's: these settings are the ones read
    events = []
    run_dbt(
        config,
        "compile",
        # the last --vars given is the one dbt takes
        extra=["--vars", json.dumps({"cdc": settings}), "--inline", "select '{{ tojson(cdc_min_file_ages()) }}'"],
        callbacks=[events.append],
    )
    (compiled,) = [event.data.compiled for event in events if event.info.name == "CompiledNode"]
    assert json.loads(compiled.strip()[len("select '") : -1]) == {"f": 7200, "g": 0, "h": 60}
