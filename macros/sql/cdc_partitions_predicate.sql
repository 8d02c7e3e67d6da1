{#
    A predicate that selects changelog partitions by their values, one
    `(table_id = ... and bucket = ...)` term per partition joined by `or` (Spark prunes
    the partitions by it).

    Arguments:
        partitions: rows whose first two values are a `table_id` and a `bucket`.
#}
{% macro cdc_partitions_predicate(partitions) %}
    {% set terms = [] %}
    {% for partition in partitions %}
        {% do terms.append('(table_id = ' ~ cdc_string_literal(partition[0]) ~ ' and bucket = ' ~ (partition[1] | int) ~ ')') %}
    {% endfor %}
    {% do return('(' ~ (terms | join(' or ') if terms else 'false') ~ ')') %}
{% endmacro %}
