"""Helpers shared by the Arcion decoder unit tests (``formats/test_arcion_*.py``): a field
by field check of one decoded change, and a small fold of changes into table state (the
merge's rules for insert, update and delete) to compare with the documented end states.

``conftest.py`` registers this module for pytest's assertion rewriting, so a failing
check shows both values as it would in the test module itself.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from udfs.contract import Change


def check(ch: Change, **expected: Any) -> None:
    """Each named field of ``ch`` equals its expected value (a failure names the field)."""
    for name, value in expected.items():
        assert getattr(ch, name) == value, name


def fold(
    changes: Iterable[Change], key_of: Callable[[Change], tuple], state: dict[tuple, dict] | None = None
) -> dict[tuple, dict]:
    """Apply changes to ``state`` (a new one by default), rows keyed by ``key_of``: insert
    replaces the row, update overlays its after_cols, delete removes."""
    state = {} if state is None else state
    for ch in changes:
        key = key_of(ch)
        if ch.op in ("insert", "snapshot"):
            state[key] = dict(ch.after)
        elif ch.op == "update":
            state.setdefault(key, {}).update({c: ch.after[c] for c in (ch.after_cols or ch.after)})
        elif ch.op == "delete":
            state.pop(key, None)
    return state
