{#
    The rows a generic data test reads: dbt's own macro (the test's `where` config),
    with one addition: the placeholder `__cdc_run_rows__` in `where` stands for
    `cdc_run_rows(relation)`, the rows of the tested model that this run wrote (the
    unique tests of `changelog`, `state` and `history` set it). dbt looks this macro
    up in the root project before its own (`adapter.dispatch('get_where_subquery', 'dbt')`).

    Arguments:
        relation: the model the test reads.

    Returns: the relation, or a subquery of the rows `where` keeps.
#}
{% macro default__get_where_subquery(relation) -%}
    {% set where = config.get('where') or '' %}
    {% if '__cdc_run_rows__' in where %}
        {% set where = where | replace('__cdc_run_rows__', cdc_run_rows(relation)) %}
    {% endif %}
    {% if where and where != 'true' %}
        {% do return('(select * from ' ~ relation ~ ' where ' ~ where ~ ') dbt_subquery') %}
    {% endif %}
    {% do return(relation) %}
{%- endmacro %}
