"""The Spark settings a model changes while it builds are the model's only.

``int_changes_read`` and ``int_changes_to_refold`` lift Spark's limits on recursive CTEs
and turn dynamic partition pruning off while they build (Spark 4.3 cannot plan it in a
recursive CTE). Through ``cdc serve`` the session is every analyst's, so the session's
own values must come back: after the model (its post-hook) and, when the model fails,
at the end of the run (the project's ``on-run-end``; dbt skips a failed model's
post-hooks). Each check starts from a setting of the user's that differs from the
model's, so a hook that left the model's value, or put back Spark's default instead of
the user's, fails it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from udfs.config import load_config
from udfs.pipeline import PipelineError, run_dbt, run_pipeline

DPP = "spark.sql.optimizer.dynamicPartitionPruning.enabled"
LEVEL_LIMIT = "spark.sql.cteRecursionLevelLimit"
ROW_LIMIT = "spark.sql.cteRecursionRowLimit"
KEPT = "spark.cdc.kept."


def _event(lsn: int, op: str, key: int, a: str | None = None, moved_from: int | None = None) -> str:
    before = {"id": moved_from} if moved_from is not None else ({"id": key} if op == "d" else None)
    after = None if op == "d" else {"id": key, "a": a}
    source = {"connector": "postgresql", "db": "d", "schema": "s", "table": "hot", "lsn": lsn, "ts_ms": lsn}
    return json.dumps({"before": before, "after": after, "source": source, "op": op, "ts_ms": lsn})


def _config(tmp_path: Path) -> Path:
    landing = tmp_path / "landing"
    landing.mkdir()
    cfg = {
        "warehouse": ".cdc",
        "schema": "session_settings",
        "marts_schema": "session_settings_marts",
        "feeds": [{"name": "hot", "format": "debezium_json", "path": str(landing)}],
        "tables": {"hot": {"key": ["id"], "columns": {"id": "bigint", "a": "string"}}},
    }
    (tmp_path / "cdc.yml").write_text(yaml.safe_dump(cfg))
    return tmp_path / "cdc.yml"


def _land(config_path: Path, name: str, lines: list[str]) -> None:
    (config_path.parent / "landing" / name).write_text("\n".join(lines) + "\n")


def _settings(spark) -> dict[str, str]:
    return {name: spark.conf.get(name) for name in (DPP, LEVEL_LIMIT, ROW_LIMIT)}


def _kept(spark) -> list[str]:
    return [r.key for r in spark.sql("set").collect() if r.key.startswith(KEPT)]


def _set(spark, values: dict[str, str]) -> dict[str, str]:
    """Set the user's own ``values`` in the session; returns them."""
    for name, value in values.items():
        spark.conf.set(name, value)
    return values


def _live_rows(spark) -> list[tuple]:
    live = spark.sql("select key['id'] as id, row['a'] as a from session_settings.state where not is_deleted")
    return [tuple(r) for r in live.collect()]


@pytest.fixture()
def user_settings(spark):
    """The session's settings before the test, put back after it (the session is shared)."""
    before = _settings(spark)
    yield
    for name, value in before.items():
        spark.conf.set(name, value)


def test_the_session_gets_its_own_settings_back_after_a_run_and_after_a_failed_model(spark, tmp_path, user_settings):
    config_path = _config(tmp_path)
    # a row that moves from key 1 to 2 and back: the merge plans its recursive CTEs
    _land(
        config_path,
        "0001.jsonl",
        [
            _event(10, "c", 1, "x"),
            _event(20, "u", 2, "y", moved_from=1),
            _event(30, "u", 1, "z", moved_from=2),
        ],
    )

    # the user's pruning on (Spark's default): the recursion models build with it off
    users = _set(spark, {DPP: "true", LEVEL_LIMIT: "37", ROW_LIMIT: "12345"})
    run_pipeline(config_path, spark=spark)
    assert _live_rows(spark) == [("1", "z")]
    assert (_settings(spark), _kept(spark)) == (users, [])

    # the user's pruning off: it stays off (the post-hook put `true` back before)
    _land(config_path, "0002.jsonl", [_event(40, "u", 3, "w", moved_from=1)])
    users = _set(spark, {DPP: "false", LEVEL_LIMIT: "50", ROW_LIMIT: "-1"})
    run_pipeline(config_path, spark=spark)
    assert _live_rows(spark) == [("3", "w")]
    assert (_settings(spark), _kept(spark)) == (users, [])

    # A model that fails after its pre-hooks ran (the table it reads is gone): its
    # post-hook is skipped, the run's end puts the user's values back.
    users = _set(spark, {DPP: "true", LEVEL_LIMIT: "64", ROW_LIMIT: "1000"})
    spark.sql("drop table session_settings.int_pending_changes")
    # (the table's error is the model's statement's, which runs after its pre-hooks)
    with pytest.raises(PipelineError, match="(?s)int_changes_read.*TABLE_OR_VIEW_NOT_FOUND"):
        run_dbt(load_config(config_path), "run", extra=["--select", "int_changes_read"])
    assert (_settings(spark), _kept(spark)) == (users, [])


def test_set_and_restore_keep_a_value_left_kept_and_unset_a_setting_the_session_lacked(spark, tmp_path, user_settings):
    """The two macros on their own (``dbt run-operation`` runs no ``on-run-end``)."""
    config = load_config(_config(tmp_path))
    never_set = "spark.cdc.test.never_set"
    users = _set(spark, {DPP: "true", LEVEL_LIMIT: "37", ROW_LIMIT: "12345"})
    # a run that died before its restore left the analyst's pruning setting kept
    spark.conf.set(KEPT + DPP, "false")

    confs = {never_set: "on", DPP: "true", LEVEL_LIMIT: "-1"}
    run_dbt(config, "run-operation", extra=["cdc_set_session_confs", "--args", json.dumps({"confs": confs})])
    assert {name: spark.conf.get(name) for name in confs} == confs
    kept = {name: spark.conf.get(name) for name in _kept(spark)}
    assert kept == {KEPT + never_set: "<undefined>", KEPT + DPP: "false", KEPT + LEVEL_LIMIT: "37"}

    run_dbt(config, "run-operation", extra=["cdc_restore_session_confs"])
    assert spark.conf.get(never_set, None) is None
    assert (_settings(spark), _kept(spark)) == ({**users, DPP: "false"}, [])
