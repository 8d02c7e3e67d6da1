{#
    Quote a name that comes from data or configuration (a table or column name) as a
    Spark SQL identifier, so no name is ever pasted into SQL unquoted.

    Arguments:
        name: the identifier text; backticks inside it are doubled.
#}
{% macro cdc_quote_identifier(name) %}
    {{- return('`' ~ (name | string | replace('`', '``')) ~ '`') -}}
{% endmacro %}
