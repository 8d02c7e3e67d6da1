{#
    Give back the run lock this run took (`cdc_acquire_run_lock`). Called last in
    `on-run-end`, which dbt runs after failed models too; also by a compaction by hand
    (`dbt run-operation`) and before an error raised while the lock is held
    (`cdc_raise_releasing_run_lock`). A lock another run holds (this run was refused
    it) is left alone.

    Returns: '' (a hook; the statements run here).
#}
{% macro cdc_release_run_lock() %}
    {% if not execute or flags.WHICH not in ('run', 'build', 'run-operation') %}
        {% do return('') %}
    {% endif %}
    {% if cdc_holds_run_lock() %}
        {% do run_query('drop table ' ~ cdc_quote_identifier(target.schema) ~ '.' ~ cdc_run_lock_name()) %}
    {% endif %}
    {% do return('') %}
{% endmacro %}
