{#
    The name of the run lock, a table of the project's schema that a `dbt run` or
    `dbt build` holds from its start to its end, and a compaction by hand while it
    runs (`cdc_acquire_run_lock`, `cdc_release_run_lock`). `udfs/pipeline.py`
    (`RUN_LOCK_TABLE`) names it too, to release the lock of a run that did not finish.

    Returns: the table's name.
#}
{% macro cdc_run_lock_name() %}
    {{- return('cdc_run_lock') -}}
{% endmacro %}
