{#
    The first step of a changelog compaction: copy the rows of every changelog
    partition (`table_id`, `bucket`) that holds more than one file into the
    compaction's staging table (`cdc_changelog_compaction_staging`, created like the
    changelog), check that every row was copied, and log the step (step 1) in
    `changelog_compactions`, with the run's start as `loaded_through`: every row of
    the changelog was loaded by then, so after the compaction the files a partition
    holds are at most one from before it and those appended since
    (`cdc_changelog_files_since_compaction`).
    From that log row on, `cdc_changelog_compaction_apply` can rewrite the partitions
    from the staging table, and does so again after a crash (the next run's
    `on-run-start`): the staged rows are the partitions' whole content, so the rewrite
    may be repeated. Before the log row nothing of the changelog has changed: a
    crash only leaves a staging table, which the next compaction drops (a compaction
    staged and logged is applied before any other is staged: by the run's
    `on-run-start`, or first by `cdc_compact_changelog` when called by hand).

    Returns: the number of partitions staged (0: nothing to compact, nothing logged).
#}
{% macro cdc_changelog_compaction_stage() %}
    {#- none while dbt parses (`execute` false) -#}
    {% set changelog = cdc_existing_relation('changelog') %}
    {% if changelog is none %}
        {% do return(0) %}
    {% endif %}
    {#- run alone by hand (`dbt run-operation cdc_changelog_compaction_stage`): under
        the run lock, as `cdc_compact_changelog` takes it, for the step only, since
        a run's appends beside it would be missing from the staged partitions, and
        lost when they are rewritten (in a run, or in that macro, the lock is held already) -#}
    {% if flags.WHICH == 'run-operation' and not cdc_holds_run_lock() %}
        {% do return(cdc_call_holding_run_lock(
            cdc_changelog_compaction_stage, 'run-operation cdc_changelog_compaction_stage')) %}
    {% endif %}
    {% set staging = cdc_changelog_compaction_staging(changelog, invocation_id) %}
    {% set log = cdc_changelog_compactions_log() %}

    {% set crowded = run_query(
        'select table_id, bucket, count(distinct _metadata.file_path) as files, count(*) as n_rows'
        ~ ' from ' ~ changelog ~ ' group by table_id, bucket'
        ~ ' having count(distinct _metadata.file_path) > 1 order by table_id, bucket') %}
    {% if crowded.rows | length == 0 %}
        {% do return(0) %}
    {% endif %}

    {% set files_before = crowded.columns[2].values() | sum %}
    {% set expected_rows = crowded.columns[3].values() | sum %}
    {% set predicate = cdc_partitions_predicate(crowded.rows) %}

    {% for leftover in cdc_changelog_compaction_staging_tables() %}
        {% do run_query('drop table if exists ' ~ changelog.incorporate(path={'identifier': leftover})) %}
    {% endfor %}
    {% do run_query('create table ' ~ staging ~ ' like ' ~ changelog) %}
    {% do run_query('insert into ' ~ staging ~ ' select * from ' ~ changelog ~ ' where ' ~ predicate) %}
    {% set staged_rows = run_query('select count(*) from ' ~ staging).rows[0][0] %}
    {% if staged_rows != expected_rows %}
        {% do cdc_raise_releasing_run_lock(
            'changelog compaction: ' ~ staged_rows ~ ' rows staged from ' ~ crowded.rows | length
            ~ ' partitions holding ' ~ expected_rows ~ ' rows; the changelog is unchanged') %}
    {% endif %}
    {% do run_query(
        'insert into ' ~ log ~ ' values (' ~ cdc_string_literal(invocation_id) ~ ', 1, '
        ~ crowded.rows | length ~ ', ' ~ files_before ~ ', ' ~ staged_rows ~ ', '
        ~ cdc_run_started_at() ~ ', current_timestamp())') %}
    {% do return(crowded.rows | length) %}
{% endmacro %}
