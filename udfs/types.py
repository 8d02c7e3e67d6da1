"""Schema evolution of mart columns: the one Spark type that holds every type a column
was declared with (``col_types`` of its changes), or text when there is none.

Rules (the mart column is typed with the result; the state keeps text, so nothing is
ever lost, and a value that does not fit its type would become NULL in the mart, which
is why a type that cannot widen falls back to ``string``):

* one type: itself;
* integers widen to the larger one (``tinyint`` < ``smallint`` < ``int`` < ``bigint``);
* decimals widen to keep every integer digit and every fraction digit of both:
  ``decimal(max(p1-s1, p2-s2) + max(s1, s2), max(s1, s2))``; an integer joins a decimal
  as ``decimal(3|5|10|19, 0)``; past 38 digits the column cannot widen;
* ``float`` widens to ``double``; an integer of at most 32 bits joins a float or a
  double as ``double`` (exact); a ``bigint`` or a decimal with a float is a conflict;
* ``date`` widens to ``timestamp``; ``timestamp`` and ``timestamp_ntz`` stay apart;
* anything else (``string`` with a number, ``binary`` with ``string``, ...) is a
  conflict: the column is ``string`` in the mart and ``audit_type_changes`` lists it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

_DECIMAL = re.compile(r"^decimal\(\s*(\d+)\s*,\s*(\d+)\s*\)$")
_INT_RANK = {"tinyint": 0, "smallint": 1, "int": 2, "integer": 2, "bigint": 3}
#: digits of each integer type as a decimal
_INT_DIGITS = {"tinyint": 3, "smallint": 5, "int": 10, "integer": 10, "bigint": 19}
MAX_DECIMAL_DIGITS = 38


class TypeConflict(ValueError):  # noqa: N818 - a result, not an error condition
    """Two declared types of one column have no common type that loses nothing."""


def _normalize(spark_type: str) -> str:
    t = re.sub(r"\s+", "", spark_type.strip().lower())
    if t == "integer":
        return "int"
    if t == "decimal":
        return "decimal(10,0)"
    return t


def _decimal(t: str) -> tuple[int, int] | None:
    if t in _INT_DIGITS:
        return _INT_DIGITS[t], 0
    m = _DECIMAL.match(t)
    return (int(m.group(1)), int(m.group(2))) if m else None


def widen_pair(a: str, b: str) -> str:
    """The widest of two normalized types; raise :class:`TypeConflict` when there is none."""
    if a == b:
        return a
    if a in _INT_RANK and b in _INT_RANK:
        return a if _INT_RANK[a] >= _INT_RANK[b] else b
    da, db = _decimal(a), _decimal(b)
    if da and db:
        scale = max(da[1], db[1])
        digits = max(da[0] - da[1], db[0] - db[1]) + scale
        if digits > MAX_DECIMAL_DIGITS:
            raise TypeConflict(f"{a} and {b} need {digits} digits")
        return f"decimal({digits},{scale})"
    floats = {"float", "double"}
    if {a, b} <= floats:
        return "double"
    for x, y in ((a, b), (b, a)):
        if x in floats and y in ("tinyint", "smallint", "int"):
            return "double"
    if {a, b} == {"date", "timestamp"}:
        return "timestamp"
    raise TypeConflict(f"{a} and {b}")


def widest_type(types: Iterable[str | None]) -> tuple[str, str | None]:
    """The mart type of a column declared with ``types`` and the conflict, if any.

    Returns ``(type, None)`` when the types widen to one, ``("string", reason)`` when
    they do not, and ``("string", None)`` for no declared type at all.

    >>> widest_type(["int", "bigint"])
    ('bigint', None)
    >>> widest_type(["decimal(10,2)", "decimal(12,4)"])
    ('decimal(12,4)', None)
    >>> widest_type(["int", "string"])[0]
    'string'
    """
    declared = sorted({_normalize(t) for t in types if t})
    if not declared:
        return "string", None
    result = declared[0]
    try:
        for t in declared[1:]:
            result = widen_pair(result, t)
    except TypeConflict as exc:
        return "string", f"cannot widen {', '.join(declared)}: {exc}"
    return result, None
