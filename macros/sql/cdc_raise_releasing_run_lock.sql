{#
    Fail with `message` after giving back the run lock this invocation holds
    (`cdc_release_run_lock`). For the errors raised while the lock is held: in
    `on-run-start` (the clock check, a staged compaction that cannot be applied) dbt
    skips `on-run-end`, and a failed `on-run-end` hook skips the hooks after it, the
    release among them; a compaction by hand has no hooks at all. Without the release a
    plain `dbt run` or `dbt run-operation` would leave its lock behind and refuse every
    later run until the lock was dropped by hand.

    Arguments:
        message: the error, as for `exceptions.raise_compiler_error`.

    Returns: nothing; it raises.
#}
{% macro cdc_raise_releasing_run_lock(message) %}
    {% do cdc_release_run_lock() %}
    {% do exceptions.raise_compiler_error(message) %}
{% endmacro %}
