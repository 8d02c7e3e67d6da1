{#
    The run that holds the run lock (`cdc_run_lock_name`), read from the metastore at
    the call, not from dbt's cache of relations (filled when this run began, it does
    not see a lock another run took since).

    Returns: the lock table's properties (`cdc.invocation_id`, `cdc.command`,
    `cdc.started_at`, `cdc.target`) as a dict, or none when no run holds the lock.
#}
{% macro cdc_run_lock_holder() %}
    {% set schema = cdc_quote_identifier(target.schema) %}
    {% set found = run_query('show tables in ' ~ schema ~ " like '" ~ cdc_run_lock_name() ~ "'") %}
    {% if found.rows | length == 0 %}
        {% do return(none) %}
    {% endif %}
    {% set holder = {} %}
    {% for row in run_query('show tblproperties ' ~ schema ~ '.' ~ cdc_run_lock_name()).rows %}
        {% do holder.update({row[0]: row[1]}) %}
    {% endfor %}
    {% do return(holder) %}
{% endmacro %}
