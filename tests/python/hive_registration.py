"""Helpers of the tests of Hive's function registration (``udfs.session.
settle_hive_function_registration``): the statement that reaches it, Hive's flag, and a
call with a deadline (a registration left pending hangs whoever reaches it next)."""

from __future__ import annotations

import threading
from collections.abc import Callable

from udfs.session import HIVE_REGISTRATION_FLAG

#: a statement whose thread reaches the registration (``Hive.get`` with no Hive object of
#: its own), as the Thrift server's session close does (``SessionState.close``)
HIVE_GET_SQL = "select java_method('org.apache.hadoop.hive.ql.metadata.Hive', 'get') as hive"


def registration_flag(spark) -> int:
    """Hive's flag in the session's JVM: 0 not begun, 1 pending, 2 done."""
    class_name, field_name = HIVE_REGISTRATION_FLAG
    field = spark._jvm.java.lang.Class.forName(class_name).getDeclaredField(field_name)  # noqa: SLF001
    field.setAccessible(True)
    return int(field.get(None))  # py4j hands an AtomicInteger over as its value


def outcome_within(call: Callable[[], object], seconds: float = 120.0) -> tuple[bool, object]:
    """``call()`` in a thread of its own: whether it returned or raised within
    ``seconds``, and its result or the error it raised (None while it still runs)."""
    outcome: list[object] = []

    def target() -> None:
        try:
            outcome.append(call())
        except Exception as error:  # noqa: BLE001 - the caller asserts on it
            outcome.append(error)

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(timeout=seconds)
    return not thread.is_alive(), outcome[0] if outcome else None
