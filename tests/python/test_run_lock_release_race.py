"""The run lock given back while it is being read or released (``udfs.pipeline``).

Reading the holder takes two statements (``show tables``, then ``show tblproperties``)
and releasing a killed run's lock a third (``drop table``). A client that polls the
holder through a server (the Thrift tests do, while a dbt run takes and gives back the
lock) or a release that another one beat must see "no holder", not Spark's
TABLE_OR_VIEW_NOT_FOUND. Here the lock is really dropped between the statements, in
the shared session, by a ``fetch`` that does so after the statement named.
"""

from __future__ import annotations

import uuid
from types import SimpleNamespace

import pytest

from udfs.pipeline import RUN_LOCK_TABLE, release_run_lock, run_lock_holder


def fetch_dropping_lock_after(spark, schema: str, statement: str):
    """``fetch(sql)`` that drops the lock, as the run holding it does when it ends,
    right after the first statement that begins with ``statement``."""
    dropped = []

    def fetch(sql: str) -> list:
        rows = spark.sql(sql).collect()
        if sql.startswith(statement) and not dropped:
            spark.sql(f"drop table {schema}.{RUN_LOCK_TABLE}")
            dropped.append(sql)
        return rows

    return fetch, dropped


@pytest.fixture()
def locked_schema(spark):
    """A schema whose run lock a run holds; as the configuration ``release_run_lock``
    reads (its schema)."""
    config = SimpleNamespace(schema=f"lock_race_{uuid.uuid4().hex[:8]}")
    spark.sql(f"create database {config.schema}")
    spark.sql(
        f"create table {config.schema}.{RUN_LOCK_TABLE} (held boolean) using parquet"
        " tblproperties ('cdc.invocation_id' = 'a-finishing-run', 'cdc.command' = 'build')"
    )
    yield config
    spark.sql(f"drop database {config.schema} cascade")


def test_a_lock_given_back_between_listing_and_properties_has_no_holder(spark, locked_schema):
    schema = locked_schema.schema
    fetch, dropped = fetch_dropping_lock_after(spark, schema, "show tables")
    assert run_lock_holder(fetch, schema) is None
    assert dropped  # the lock was listed, then gone when its properties were read
    # with the lock in place, the same read names its holder
    spark.sql(f"create table {schema}.{RUN_LOCK_TABLE} (held boolean) using parquet tblproperties ('cdc.x' = 'y')")
    assert run_lock_holder(lambda sql: spark.sql(sql).collect(), schema)["cdc.x"] == "y"


def test_a_lock_released_first_by_another_is_not_released_again(spark, locked_schema):
    schema = locked_schema.schema
    fetch, dropped = fetch_dropping_lock_after(spark, schema, "show tblproperties")
    assert release_run_lock(fetch, locked_schema) is None
    assert dropped
    assert run_lock_holder(lambda sql: spark.sql(sql).collect(), schema) is None


@pytest.mark.parametrize("statement", ["show tblproperties", "drop table"])
def test_other_errors_of_the_read_and_the_release_are_raised(spark, locked_schema, statement):
    def failing_fetch(sql: str) -> list:
        if sql.startswith(statement):
            raise RuntimeError("[INTERNAL_ERROR] the metastore went away")
        return spark.sql(sql).collect()

    with pytest.raises(RuntimeError, match="INTERNAL_ERROR"):
        release_run_lock(failing_fetch, locked_schema)
    assert run_lock_holder(lambda sql: spark.sql(sql).collect(), locked_schema.schema) is not None  # still held
