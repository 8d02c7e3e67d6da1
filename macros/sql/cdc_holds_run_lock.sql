{#
    Whether this invocation holds the run lock (`cdc_acquire_run_lock`): a `dbt run` or
    `dbt build` from its `on-run-start` on, a macro run by hand once it has taken it.
    Read from the metastore at the call (`cdc_run_lock_holder`).

    Returns: true or false.
#}
{% macro cdc_holds_run_lock() %}
    {% set holder = cdc_run_lock_holder() %}
    {% do return(holder is not none and holder.get('cdc.invocation_id') == invocation_id) %}
{% endmacro %}
