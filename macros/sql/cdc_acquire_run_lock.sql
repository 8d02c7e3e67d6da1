{#
    Take the run lock for this `dbt run` or `dbt build`, or fail before any model when
    another run holds it. Called from `on-run-start`; `cdc_release_run_lock` (the
    `on-run-end`) gives it back.

    Why: through `cdc serve` every client shares one warehouse, and nothing else stops
    two runs at once (`cdc run` twice, or an analyst's `dbt run --target thrift` beside
    a scheduled `cdc run`). Both would read the same pending changes, and their appends,
    merges and compactions would interleave. The embedded `cdc run` holds the warehouse
    alone (`udfs/warehouse_lock.py`); the lock keeps a run through the server so too.

    The lock is a table whose creation is the claim: `create table` without `if not
    exists` fails when the table is there, and the metastore makes one creation win.
    Its properties name the holder (`cdc_run_lock_holder`). A run killed before its
    `on-run-end` leaves the lock: `cdc run` and `cdc serve` release it when they start
    (each then holds the warehouse alone), and `cdc run` releases its own when dbt
    fails. An error the project raises while the lock is held gives it back first
    (`cdc_raise_releasing_run_lock`); a plain dbt run killed, or failing on Spark's
    own error in a hook, leaves it, to be released by hand as the error says
    (`cdc_break_run_lock`, naming that run).

    Other commands (`dbt test`, `dbt seed`, `dbt compile`) write no state and take no
    lock. A macro that writes when run by hand takes it itself for its call
    (`cdc_call_holding_run_lock`), naming itself: `dbt run-operation
    cdc_compact_changelog`, and either step of a compaction run alone
    (`cdc_changelog_compaction_stage`, `cdc_changelog_compaction_apply`).

    Arguments:
        command: what takes the lock, as the holder names it; default the dbt command
            of this run or build (the hook). Another command takes the lock only when
            named, e.g. 'run-operation cdc_compact_changelog'.

    Returns: '' (a hook; the statements run here).
#}
{% macro cdc_acquire_run_lock(command=none) %}
    {% if not execute or (command is none and flags.WHICH not in ('run', 'build')) %}
        {% do return('') %}
    {% endif %}
    {% set lock = cdc_quote_identifier(target.schema) ~ '.' ~ cdc_run_lock_name() %}
    {% set holder = cdc_run_lock_holder() %}
    {% if holder is not none and holder.get('cdc.invocation_id') == invocation_id %}
        {#- taken already by this invocation (a run whose own hook calls the macro) -#}
        {% do return('') %}
    {% endif %}
    {% if holder is not none %}
        {% do exceptions.raise_compiler_error(
            'another run holds the warehouse (the run lock ' ~ lock ~ '): dbt '
            ~ holder.get('cdc.command', '?') ~ ', invocation ' ~ holder.get('cdc.invocation_id', '?')
            ~ ', target ' ~ holder.get('cdc.target', '?') ~ ', started '
            ~ holder.get('cdc.started_at', '?') ~ ' UTC. Two runs at once would read the same'
            ~ ' pending changes and interleave their writes. Nothing was run; run again when'
            ~ ' it has finished. A killed run leaves its lock: `cdc run` without a server, or'
            ~ ' `cdc serve` when it starts, releases it; else, once that run is known to be dead:'
            ~ " `dbt run-operation cdc_break_run_lock --args '{invocation_id: "
            ~ holder.get('cdc.invocation_id', '?') ~ "}'`."
        ) %}
    {% endif %}
    {% set properties = {
        'cdc.invocation_id': invocation_id,
        'cdc.command': flags.WHICH if command is none else command,
        'cdc.started_at': run_started_at.strftime('%Y-%m-%d %H:%M:%S'),
        'cdc.target': target.name,
    } %}
    {% set property_list = [] %}
    {% for name, value in properties.items() %}
        {% do property_list.append(cdc_string_literal(name) ~ ' = ' ~ cdc_string_literal(value)) %}
    {% endfor %}
    {% do run_query(
        'create table ' ~ lock ~ ' (held boolean) using parquet'
        ~ " comment 'held by a running dbt run or build (cdc_acquire_run_lock)'"
        ~ ' tblproperties (' ~ property_list | join(', ') ~ ')'
    ) %}
    {% do return('') %}
{% endmacro %}
