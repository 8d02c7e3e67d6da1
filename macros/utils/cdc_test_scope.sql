{#
    Which rows the scoped data tests read: `run` (the rows this run wrote, see
    `cdc_run_rows`) or `all` (every row). The dbt variable `cdc_test_scope` (a plain
    `dbt test --vars '{cdc_test_scope: all}'`) before the setting `test_scope` of cdc.yml.

    Returns: 'run' or 'all'.
#}
{% macro cdc_test_scope() %}
    {% do return(var('cdc_test_scope', none) or cdc_settings().test_scope) %}
{% endmacro %}
