"""Widening of declared column types (schema evolution of the mart), pure."""

from __future__ import annotations

import pyarrow as pa
import pytest

from udfs.spark_udfs import widest_type_array
from udfs.types import widest_type


@pytest.mark.parametrize(
    ("declared", "expected"),
    [
        (["int"], "int"),
        (["int", "bigint"], "bigint"),
        (["tinyint", "smallint", "int"], "int"),
        (["INTEGER", "int"], "int"),
        (["decimal(10,2)", "decimal(12,4)"], "decimal(12,4)"),
        (["decimal(10,2)", "decimal(10,4)"], "decimal(12,4)"),  # 8 integer digits, 4 fraction digits
        (["int", "decimal(5,2)"], "decimal(12,2)"),
        (["bigint", "decimal(38,0)"], "decimal(38,0)"),
        (["float", "double"], "double"),
        (["int", "double"], "double"),
        (["date", "timestamp"], "timestamp"),
        (["string", "string"], "string"),
        (["decimal(38,10)", "decimal(38,10)"], "decimal(38,10)"),
        ([" decimal( 12 , 2 ) "], "decimal(12,2)"),
    ],
)
def test_types_that_widen(declared, expected):
    assert widest_type(declared) == (expected, None)
    assert widest_type(list(reversed(declared))) == (expected, None)


@pytest.mark.parametrize(
    "declared",
    [
        ["int", "string"],
        ["bigint", "double"],  # a double cannot hold every bigint
        ["decimal(10,2)", "float"],
        ["binary", "string"],
        ["timestamp", "timestamp_ntz"],
        ["decimal(38,0)", "decimal(38,10)"],  # would need 48 digits
        ["boolean", "int"],
    ],
)
def test_types_that_do_not_widen_become_text_with_the_reason(declared):
    spark_type, conflict = widest_type(declared)
    assert spark_type == "string"
    assert conflict and all(t in conflict for t in declared)


def test_no_declared_type_is_text_without_conflict():
    assert widest_type([]) == ("string", None)
    assert widest_type([None, ""]) == ("string", None)


def test_arrow_batch_function_keeps_nulls_and_order():
    out = widest_type_array(pa.array([["int", "bigint"], None, ["int", "string"], []], pa.list_(pa.string())))
    assert out.to_pylist() == [
        {"spark_type": "bigint", "conflict": None},
        None,
        {"spark_type": "string", "conflict": "cannot widen int, string: int and string"},
        {"spark_type": "string", "conflict": None},
    ]
