"""The unique tests of the changelog, the state and the history, and the changelog's
``accepted_values`` test of ``op``, read the rows the run wrote (``test_scope: run``,
the default; ``macros/sql/cdc_run_rows.sql``), or every row (``test_scope: all``).

Two runs over a Debezium feed (file ``a``: keys 1 and 2; file ``b``: key 2 again and
key 3), then rows copied inside the tables by hand, as a bug would (the changelog's
copies with an ``op`` no decoder writes): a copy of a row the first run wrote is
outside the second run's scope (its tests pass, a test of every row fails); a copy of
a row the second run wrote fails its tests. The failing tests are named in the error.
"""

from __future__ import annotations

import dataclasses

import yaml

from udfs.config import load_config
from udfs.pipeline import PipelineError, run_dbt, run_pipeline

EVENT = (
    '{"before":null,"after":{"id":%d,"name":"n%d"},"source":{"connector":"postgresql","db":"d","schema":"s",'
    '"table":"items","lsn":%d},"op":"%s"}'
)
SCOPED_TESTS = (
    "test.cdc.unique_changelog_",
    "test.cdc.accepted_values_changelog_op_",
    "test.cdc.unique_state_",
    "test.cdc.unique_history_",
)


def _land(path, events):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(EVENT % e for e in events) + "\n", encoding="utf-8")


def _failing_tests(config) -> set[str]:
    """The run-scoped tests ``dbt test`` of the three models' generic tests fails (none:
    it passes). The singular tests are left out: the copies unbalance the audit's counts."""
    models = ("changelog", "state", "history")
    try:
        run_dbt(config, "test", extra=["--select", *(f"{m},test_type:generic" for m in models)])
    except PipelineError as exc:
        failed = {name for name in SCOPED_TESTS if name in str(exc)}
        assert failed, str(exc)[-3000:]  # only the run-scoped tests may fail here
        return failed
    return set()


def _copy_rows(spark, table: str, where: str, op: str | None = None) -> None:
    """Copy the rows of ``table`` that ``where`` selects, with ``op`` in place of their
    ``op`` if given."""
    n = spark.sql(f"select count(*) from {table} where {where}").first()[0]
    assert n >= 1, (table, where)
    columns = ", ".join(f"'{op}' as op" if op and c == "op" else f"`{c}`" for c in spark.table(table).columns)
    spark.sql(f"insert into {table} select {columns} from {table} where {where}")


def test_scoped_tests_read_the_rows_of_the_run_or_every_row(spark, make_config, tmp_path):
    path = make_config([{"name": "f", "format": "debezium_json", "path": "landing/f"}], {"items": {"key": ["id"]}})
    schema = yaml.safe_load(path.read_text())["schema"]
    config = load_config(path)
    every_row = dataclasses.replace(config, test_scope="all")
    landing = tmp_path / "landing" / "f"
    _land(landing / "a.jsonl", [(1, 1, 10, "c"), (2, 2, 20, "c")])
    first = run_pipeline(config, spark=spark)
    _land(landing / "b.jsonl", [(2, 22, 30, "u"), (3, 3, 40, "c")])
    second = run_pipeline(config, spark=spark)
    assert (first.changes, second.changes) == (2, 2)
    assert _failing_tests(config) == set() and _failing_tests(every_row) == set()

    # key 1 was refolded by the first run only: its state and history rows are in the
    # first run's segment; a.jsonl's changelog rows were loaded by the first run
    base = f"segment = '{first.run_id}' and key_text not in (select key_text from {schema}.state_segments " + (
        f"where segment = '{second.run_id}')"
    )
    _copy_rows(spark, f"{schema}.changelog", f"run_id = '{first.run_id}' and record_index = 0", op="upsert")
    _copy_rows(spark, f"{schema}.state_segments", base)
    _copy_rows(spark, f"{schema}.history_segments", base)
    assert spark.sql(f"select count(*) from {schema}.state").first()[0] == 4  # key 1 twice
    assert _failing_tests(config) == set()
    assert _failing_tests(every_row) == set(SCOPED_TESTS)

    # key 3 was refolded by the second run, b.jsonl loaded by it
    latest = f"segment = '{second.run_id}' and key_text like '%3%'"
    _copy_rows(spark, f"{schema}.changelog", f"run_id = '{second.run_id}' and record_index = 1", op="upsert")
    _copy_rows(spark, f"{schema}.state_segments", latest)
    _copy_rows(spark, f"{schema}.history_segments", latest)
    assert _failing_tests(config) == set(SCOPED_TESTS)
