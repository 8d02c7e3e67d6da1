{#
    Release, by hand, the run lock of a run that will never give it back: a plain
    `dbt run` or `dbt build` that was killed, or failed on Spark's own error in a hook.
    Named by the invocation the refusal names (`another run holds the warehouse ...,
    invocation <id>, ...`):

        dbt run-operation cdc_break_run_lock --args '{invocation_id: <id>}'

    Why the name: the lock is dropped only while that invocation holds it. A plain
    `drop table` drops whatever holds the lock when it runs, also a run that took it
    since the refusal was read (the dead run's lock released by `cdc run` or `cdc serve`
    at their start, then taken again). Only the narrow window between this macro's read
    of the holder and its `drop table` is left (no metastore here can make the two one
    step); `if exists` makes a lock given back in that window no error.

    It takes no lock and does not check that the named run is dead: Spark cannot tell.
    Breaking a live run's lock lets a second run start beside it.

    Arguments:
        invocation_id: the dbt invocation that holds the lock, as the refusal names it
            (or `cdc_run_lock_holder`'s `cdc.invocation_id`). Required.

    Returns: '' (the statements run here); logs what it released. No lock held is no
    error (nothing to release, said so); a lock another invocation holds is an error,
    naming that holder, and stays.
#}
{% macro cdc_break_run_lock(invocation_id=none) %}
    {% if not execute %}
        {% do return('') %}
    {% endif %}
    {% set lock = cdc_quote_identifier(target.schema) ~ '.' ~ cdc_run_lock_name() %}
    {% if invocation_id is none or (invocation_id | string | trim) == '' %}
        {% do exceptions.raise_compiler_error(
            'cdc_break_run_lock: name the run whose lock to release, as the refusal names it:'
            ~ " dbt run-operation cdc_break_run_lock --args '{invocation_id: <id>}'. Nothing was released."
        ) %}
    {% endif %}
    {#- before any run the schema does not exist, and `show tables in` it fails -#}
    {% set holder = cdc_run_lock_holder() if adapter.check_schema_exists(target.database, target.schema) else none %}
    {% if holder is none %}
        {% do log('cdc_break_run_lock: no run holds the run lock ' ~ lock ~ '; nothing released.', info=true) %}
        {% do return('') %}
    {% endif %}
    {% set held_by = 'invocation ' ~ holder.get('cdc.invocation_id', '?') ~ ' (dbt '
        ~ holder.get('cdc.command', '?') ~ ', target ' ~ holder.get('cdc.target', '?')
        ~ ', started ' ~ holder.get('cdc.started_at', '?') ~ ' UTC)' %}
    {% if holder.get('cdc.invocation_id') != (invocation_id | string) %}
        {% do exceptions.raise_compiler_error(
            'cdc_break_run_lock: the run lock ' ~ lock ~ ' is held by ' ~ held_by ~ ', not by invocation '
            ~ invocation_id ~ '. Nothing was released.'
        ) %}
    {% endif %}
    {% do run_query('drop table if exists ' ~ lock) %}
    {% do log('cdc_break_run_lock: released the run lock ' ~ lock ~ ' of ' ~ held_by ~ '.', info=true) %}
    {% do return('') %}
{% endmacro %}
