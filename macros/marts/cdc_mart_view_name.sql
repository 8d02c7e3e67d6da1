{#
    The name of a table's mart view: the table id with `.` as `__` and every other
    character that is not a letter, digit or `_` as `_` (the metastore accepts no
    more), e.g. `ld-x.default.t` -> `ld_x__default__t`. `udfs.export.mart_view_name`
    is the same rule in Python.

    Arguments:
        table_id: SQL expression of the table id.
#}
{% macro cdc_mart_view_name(table_id) %}
    regexp_replace(replace({{ table_id }}, '.', '__'), '[^A-Za-z0-9_]', '_')
{% endmacro %}
