{#
    Fails a `dbt run` or `dbt build` whose start (`run_started_at`, the `loaded_at` of
    every changelog row it appends) is not after the warehouse's latest run: the latest
    start of a run that processed files (`audit_files.processed_at`) or merged
    (`merge_log.merged_through`). Called from `on-run-start`.

    Why: runs find their rows by `loaded_at` (the pending changes of a merge are the
    rows loaded after `merged_through`; the changelog's unique test reads the rows
    loaded since the latest processed run began, `cdc_run_rows`). A clock set back (a stepped NTP clock, a
    restored VM, a warehouse moved to a machine behind it) would stamp new rows before
    those watermarks, and the merge would never apply them. Failing before any model
    runs leaves the warehouse as it was; the run can be repeated once the clock is
    right.

    Other commands (`dbt test`, `dbt seed`, `dbt compile`) write no `loaded_at` and are
    not checked. Returns no SQL: the hook has nothing to execute.
#}
{% macro cdc_check_clock() %}
    {% if not execute or flags.WHICH not in ('run', 'build') %}
        {% do return('') %}
    {% endif %}
    {% set watermarks = [] %}
    {% set audit = cdc_existing_relation('audit_files') %}
    {% if audit is not none %}
        {% do watermarks.append('select max(processed_at) as at from ' ~ audit) %}
    {% endif %}
    {% set merge_log = cdc_existing_relation('merge_log') %}
    {% if merge_log is not none %}
        {% do watermarks.append('select max(merged_through) as at from ' ~ merge_log) %}
    {% endif %}
    {% if watermarks | length == 0 %}
        {% do return('') %}
    {% endif %}
    {% set latest_sql %}
        select cast(latest as string), cast({{ cdc_run_started_at() }} as string)
        from (select max(at) as latest from ({{ watermarks | join(' union all ') }}) as watermarks)
        where latest >= {{ cdc_run_started_at() }}
    {% endset %}
    {% set behind = run_query(latest_sql) %}
    {% if behind.rows | length > 0 %}
        {% do cdc_raise_releasing_run_lock(
            'the clock is behind the warehouse: this run started at ' ~ behind.rows[0][1]
            ~ ' UTC, not after the latest run in ' ~ target.schema ~ ' (' ~ behind.rows[0][0]
            ~ ' UTC). Rows are found by the time they were loaded, so this run would stamp'
            ~ ' its changes before changes already merged, and the merge would never apply'
            ~ ' them. Nothing was run; correct the clock and run again.'
        ) %}
    {% endif %}
    {% do return('') %}
{% endmacro %}
