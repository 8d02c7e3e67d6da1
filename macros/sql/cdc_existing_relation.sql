{#
    The relation of a model of this project when it already exists in the warehouse,
    else none. Used where a model must read a table that runs later in the DAG
    (the audit of processed files, the merge watermark) without a cycle in `ref`.

    Arguments:
        identifier: the table name in the target schema.
#}
{% macro cdc_existing_relation(identifier) %}
    {% if not execute %}
        {% do return(none) %}
    {% endif %}
    {% do return(adapter.get_relation(database=none, schema=target.schema, identifier=identifier)) %}
{% endmacro %}
