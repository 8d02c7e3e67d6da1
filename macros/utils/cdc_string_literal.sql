{#
    A Spark SQL string literal for any text (paths, JSON decoder options, table ids):
    backslashes and single quotes are escaped.

    Arguments:
        text: the value; none renders as null.
#}
{% macro cdc_string_literal(text) %}
    {%- if text is none -%}
        {{- return('null') -}}
    {%- endif -%}
    {{- return("'" ~ (text | string | replace('\\', '\\\\') | replace("'", "\\'")) ~ "'") -}}
{% endmacro %}
