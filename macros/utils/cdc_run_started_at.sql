{#
    The start of this dbt invocation as a Spark timestamp (UTC, microseconds): the
    `loaded_at` / `processed_at` stamp every row a run writes.
#}
{% macro cdc_run_started_at() %}
    {{- return("to_timestamp(" ~ cdc_string_literal(run_started_at.strftime('%Y-%m-%d %H:%M:%S.%f')) ~ ")") -}}
{% endmacro %}
