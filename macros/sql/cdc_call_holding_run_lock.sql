{#
    Call a macro that writes, run by hand (`dbt run-operation`), with the run lock
    held for the call only: take the lock (`cdc_acquire_run_lock`, naming `command`),
    call `step`, give the lock back (`cdc_release_run_lock`) and return what `step`
    returned. The caller calls it when this invocation does not hold the lock yet
    (`cdc_holds_run_lock`), and `step` is usually the caller itself, which then finds
    the lock held and does its work. An error the project raises in `step` gives the
    lock back first (`cdc_raise_releasing_run_lock`); Spark's own error leaves it, as
    in a run.

    Arguments:
        step: the macro to call, e.g. `cdc_changelog_compaction_stage`.
        command: what takes the lock, as the holder names it, e.g.
            'run-operation cdc_changelog_compaction_stage'.
        arguments: the keyword arguments of the call (default none).

    Returns: what `step` returned.
#}
{% macro cdc_call_holding_run_lock(step, command, arguments={}) %}
    {% do cdc_acquire_run_lock(command) %}
    {% set returned = step(**arguments) %}
    {% do cdc_release_run_lock() %}
    {% do return(returned) %}
{% endmacro %}
