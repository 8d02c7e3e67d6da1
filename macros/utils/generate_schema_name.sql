{#
    Custom schemas are used as written (`marts`), not prefixed with the target
    schema: analysts query `marts.customers`. The marts schema comes from cdc.yml.
#}
{% macro generate_schema_name(custom_schema_name, node) -%}
    {%- if custom_schema_name is none -%}
        {{ target.schema }}
    {%- elif custom_schema_name == 'marts' -%}
        {{ cdc_settings()['marts_schema'] }}
    {%- else -%}
        {{ custom_schema_name | trim }}
    {%- endif -%}
{%- endmacro %}
