{#
    When a changelog partition (`table_id`, `bucket`) has had more than `after_files`
    files appended since the last compaction, rewrite every partition that holds more
    than one file as one file. Every run appends about one file to each partition it
    touches, and every read of the changelog opens every file's footer: without
    compaction a run's reads grow with the number of runs. The project's
    `on-run-end` after a `dbt build` or `dbt run` in which nothing failed (the
    setting `compact_changelog_after_files`, 0: never), or by hand:
    `dbt run-operation cdc_compact_changelog --args '{after_files: 1}'`, which takes
    the run lock (`cdc_acquire_run_lock`): it fails while a run goes on, and a run
    fails while it goes on.

    Two steps (`cdc_changelog_compaction_stage`, then `cdc_changelog_compaction_apply`),
    logged in `changelog_compactions`, so that a crash at any point leaves the
    changelog's rows whole or recoverable by the next run's `on-run-start`. A query
    already running on the changelog (an analyst's, through `cdc serve`) may find a
    rewritten partition's old files gone.

    Arguments:
        after_files: the limit; default the setting `compact_changelog_after_files`.
        results: dbt's `results` in `on-run-end`; with a failed node, nothing is done.

    Returns: '' (a hook; the statements run here).
#}
{% macro cdc_compact_changelog(after_files=none, results=none) %}
    {% if not execute %}
        {% do return('') %}
    {% endif %}
    {% if results is not none %}
        {% if flags.WHICH not in ('build', 'run') %}
            {% do return('') %}
        {% endif %}
        {% for result in results if result.status in ('error', 'fail', 'runtime error') %}
            {% do return('') %}
        {% endfor %}
    {% endif %}
    {#- by hand, the run lock first: a run's appends beside the rewrite of a partition
        would be lost with its old files (in a run, the run holds the lock) -#}
    {% set by_hand = flags.WHICH == 'run-operation' %}
    {% if by_hand and cdc_existing_relation('changelog') is none %}
        {#- a warehouse no run has built: nothing to compact, and no schema for the lock -#}
        {% do return('') %}
    {% endif %}
    {% if by_hand and not cdc_holds_run_lock() %}
        {% do return(cdc_call_holding_run_lock(
            cdc_compact_changelog, 'run-operation cdc_compact_changelog', {'after_files': after_files})) %}
    {% endif %}
    {#- by hand, a compaction staged by a run that died is applied first, whatever the
        limit; in a run the project's on-run-start has already done so -#}
    {% if results is none %}
        {% do cdc_changelog_compaction_apply() %}
    {% endif %}
    {% set limit = cdc_settings()['compact_changelog_after_files'] if after_files is none else after_files | int %}
    {% if limit >= 1 and cdc_changelog_files_since_compaction() > limit and cdc_changelog_compaction_stage() > 0 %}
        {% do cdc_changelog_compaction_apply() %}
    {% endif %}
    {% do return('') %}
{% endmacro %}
