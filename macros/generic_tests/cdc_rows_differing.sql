{#
    The rows that differ between two queries, as a multiset (EXCEPT ALL both ways):
    each row of the result says whether it is `missing` (expected, not actual) or
    `unexpected` (actual, not expected). Empty when the two are equal, so a dbt test
    that selects from it passes exactly when they are equal.

    Arguments:
        actual: SQL of the rows produced (same columns, same order as expected).
        expected: SQL of the expected rows.
#}
{% macro cdc_rows_differing(actual, expected) %}
    with

    actual_rows as (
        {{ actual }}
    ),

    expected_rows as (
        {{ expected }}
    ),

    missing as (
        select * from expected_rows
        except all
        select * from actual_rows
    ),

    unexpected as (
        select * from actual_rows
        except all
        select * from expected_rows
    )

    select
        'missing' as difference,
        missing.*
    from missing
    union all
    select
        'unexpected' as difference,
        unexpected.*
    from unexpected
{% endmacro %}
