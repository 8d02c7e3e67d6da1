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

from hive_registration import HIVE_GET_SQL, outcome_within, registration_flag

from udfs.session import HIVE_REGISTRATION_DONE, settle_hive_function_registration


def test_a_started_session_has_settled_the_registration_and_reaching_it_returns(spark):
    assert registration_flag(spark) == HIVE_REGISTRATION_DONE
    for attempt in range(2):
        # each from a thread of its own, with a deadline: a pending registration hangs
        finished, outcome = outcome_within(lambda: spark.sql(HIVE_GET_SQL).collect())
        assert finished, f"statement {attempt} hung in Hive's function registration"
        assert not isinstance(outcome, Exception), f"statement {attempt}: {str(outcome)[:400]}"
        (row,) = outcome
        assert row.hive.startswith("org.apache.hadoop.hive.ql.metadata.Hive@"), row
    settle_hive_function_registration(spark)  # again: a session reused by build_session
    assert registration_flag(spark) == HIVE_REGISTRATION_DONE
