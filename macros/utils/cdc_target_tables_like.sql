{#
    The tables of the target schema whose names match a pattern, read from the
    metastore at the call, not from dbt's cache of relations: that cache is filled
    when the invocation begins, and misses a table another run (the run lock) or this
    invocation's own macros (a compaction's log and staging tables) created or dropped
    since. The schema is quoted; temporary views, which `show tables` lists in every
    schema, are left out.

    Arguments:
        pattern: a `show tables ... like` pattern (`*`: any characters; `|`: or).

    Returns: the tables' names, lower case.
#}
{% macro cdc_target_tables_like(pattern) %}
    {% set found = run_query(
        'show tables in ' ~ cdc_quote_identifier(target.schema) ~ ' like ' ~ cdc_string_literal(pattern)) %}
    {% set names = [] %}
    {% for row in found.rows if not row['isTemporary'] %}
        {% do names.append(row['tableName'] | lower) %}
    {% endfor %}
    {% do return(names) %}
{% endmacro %}
