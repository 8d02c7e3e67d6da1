"""Hive's one-time function registration, settled when a session starts
(``udfs.session.settle_hive_function_registration``).

In the Hive jars pyspark ships, the registration fails with an ``Error`` (Hive's
``FunctionRegistry`` needs LLAP classes that are not there), which leaves Hive's flag
"pending" for good: the first thread to reach it failed, and every later one waited
forever. The Thrift server reaches it when it closes a session, and a CI run of
``cdc serve`` hung so (``test_thrift_server.py`` checks the server). Here, the session
every pipeline test shares (built by ``build_session``, as ``cdc run``, ``cdc sql`` and
``cdc serve`` build theirs).
"""

from __future__ import annotations

import threading

from udfs.session import HIVE_REGISTRATION_DONE, HIVE_REGISTRATION_FLAG, settle_hive_function_registration

#: a statement whose task thread reaches the registration (``Hive.get`` with no Hive object)
HIVE_GET_SQL = "select java_method('org.apache.hadoop.hive.ql.metadata.Hive', 'get') as hive"


def registration_flag(spark) -> int:
    """Hive's flag in the session's JVM: 0 not begun, 1 pending, 2 done."""
    class_name, field_name = HIVE_REGISTRATION_FLAG
    field = spark._jvm.java.lang.Class.forName(class_name).getDeclaredField(field_name)  # noqa: SLF001
    field.setAccessible(True)
    return int(field.get(None))  # py4j hands an AtomicInteger over as its value


def _rows_or_error(spark, outcome: list[object]) -> None:
    try:
        outcome.append(spark.sql(HIVE_GET_SQL).collect())
    except Exception as error:  # noqa: BLE001 - the test asserts on it
        outcome.append(error)


def test_a_started_session_has_settled_the_registration_and_reaching_it_returns(spark):
    assert registration_flag(spark) == HIVE_REGISTRATION_DONE
    for attempt in range(2):
        # each from a thread of its own, with a deadline: a pending registration hangs
        outcome: list[object] = []
        statement = threading.Thread(target=_rows_or_error, args=(spark, outcome), daemon=True)
        statement.start()
        statement.join(timeout=120)
        assert not statement.is_alive(), f"statement {attempt} hung in Hive's function registration"
        assert not isinstance(outcome[0], Exception), f"statement {attempt}: {str(outcome[0])[:400]}"
        ((row,),) = outcome
        assert row.hive.startswith("org.apache.hadoop.hive.ql.metadata.Hive@"), row
    settle_hive_function_registration(spark)  # again: a session reused by build_session
    assert registration_flag(spark) == HIVE_REGISTRATION_DONE
