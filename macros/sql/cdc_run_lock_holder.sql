{#
    The run that holds the run lock (`cdc_run_lock_name`), read from the metastore at
    the call (`cdc_target_tables_like`), not from dbt's cache of relations (filled when
    this run began, it does not see a lock another run took since).

    Returns: the lock table's properties (`cdc.invocation_id`, `cdc.command`,
    `cdc.started_at`, `cdc.target`) as a dict, or none when no run holds the lock.
#}
{% macro cdc_run_lock_holder() %}
    {% if not cdc_target_tables_like(cdc_run_lock_name()) %}
        {% do return(none) %}
    {% endif %}
    {% set holder = {} %}
    {% set lock = cdc_quote_identifier(target.schema) ~ '.' ~ cdc_run_lock_name() %}
    {% for row in run_query('show tblproperties ' ~ lock).rows %}
        {% do holder.update({row[0]: row[1]}) %}
    {% endfor %}
    {% do return(holder) %}
{% endmacro %}
