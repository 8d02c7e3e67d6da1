{#
    Turn a canonical text value of the state into its mart type.

    Arguments:
        expr: SQL expression of the text value.
        spark_type: the target type (from cdc.yml or the envelope's logical type).

    A value that does not fit its type becomes NULL in the mart (try_cast) rather
    than failing every query of the view; the text stays in the state, and
    `audit_mart_cast_failures` lists it (the same expression decides).
#}
{% macro cdc_typed_value(expr, spark_type) %}
    {{ return(adapter.dispatch('cdc_typed_value', 'cdc')(expr, spark_type)) }}
{% endmacro %}

{% macro default__cdc_typed_value(expr, spark_type) %}
    cast({{ expr }} as {{ spark_type }})
{% endmacro %}

{% macro spark__cdc_typed_value(expr, spark_type) %}
    {%- set t = spark_type | lower | trim -%}
    {%- if t == 'string' -%}
        {{ expr }}
    {%- elif t == 'binary' -%}
        try_to_binary({{ expr }}, 'base64')
    {%- else -%}
        try_cast({{ expr }} as {{ t }})
    {%- endif -%}
{% endmacro %}
