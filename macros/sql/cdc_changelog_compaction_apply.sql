{#
    The second step of a changelog compaction: when the latest compaction was staged
    and not applied (`changelog_compactions` has its step 1 and not its step 2),
    rewrite each staged changelog partition from the staging table as one file, its
    rows in load order (the reads by `loaded_at` skip row groups by their statistics),
    check that each partition holds the staged rows, log step 2 ('applied') and drop
    the staging table. Otherwise it does nothing.

    The rewrite replaces the staged partitions only (dynamic partition overwrite, set
    for this statement and put back). Spark deletes a partition's old files before it
    moves the new one in: a crash in between leaves the partition short, and this
    macro, in the next run's `on-run-start` before any model reads the changelog,
    rewrites it again from the staging table (whose rows are the partition's whole
    content, checked when they were staged).

    Returns: the number of partitions rewritten.
#}
{% macro cdc_changelog_compaction_apply() %}
    {#- none while dbt parses (`execute` false) -#}
    {% set changelog = cdc_existing_relation('changelog') %}
    {% if changelog is none %}
        {% do return(0) %}
    {% endif %}
    {#- run alone by hand (`dbt run-operation cdc_changelog_compaction_apply`): under
        the run lock, as `cdc_compact_changelog` takes it, for the step only, since
        a run's appends beside the rewrite would be lost with the partitions' old
        files (in a run, or in that macro, the lock is held already) -#}
    {% if flags.WHICH == 'run-operation' and not cdc_holds_run_lock() %}
        {% do return(cdc_call_holding_run_lock(
            cdc_changelog_compaction_apply, 'run-operation cdc_changelog_compaction_apply')) %}
    {% endif %}
    {% set log_relation = cdc_changelog_compactions_log(create=false) %}
    {% if log_relation is none %}
        {% do return(0) %}
    {% endif %}
    {% set pending = run_query(
        'select compaction_id, max(rows_moved), cast(max(loaded_through) as string) from ' ~ log_relation
        ~ ' group by compaction_id having max(step) = 1') %}
    {% if pending.rows | length == 0 %}
        {% do return(0) %}
    {% endif %}
    {% set compaction_id = pending.rows[0][0] %}
    {% set staged_rows = pending.rows[0][1] %}
    {% set loaded_through = pending.rows[0][2] %}
    {% set staging = cdc_changelog_compaction_staging(changelog, compaction_id) %}
    {% set existing = cdc_changelog_compaction_staging_tables() %}
    {% set legacy_staging = cdc_changelog_compaction_staging_base_name() %}
    {% if staging.identifier not in existing and legacy_staging in existing %}
        {#- staged by a version before per-compaction names, and not applied then -#}
        {% set staging = changelog.incorporate(path={'identifier': legacy_staging}) %}
    {% endif %}

    {% set partitions = run_query(
        'select table_id, bucket, count(*) from ' ~ staging ~ ' group by table_id, bucket') %}
    {% if partitions.columns[2].values() | sum != staged_rows %}
        {% do cdc_raise_releasing_run_lock(
            'changelog compaction ' ~ compaction_id ~ ': the staging table ' ~ staging ~ ' holds '
            ~ partitions.columns[2].values() | sum ~ ' rows, ' ~ staged_rows ~ ' were staged') %}
    {% endif %}

    {% do cdc_set_session_confs({'spark.sql.sources.partitionOverwriteMode': 'dynamic'}) %}
    {% do run_query(
        'insert overwrite table ' ~ changelog ~ ' partition (table_id, bucket)'
        ~ ' select * from ' ~ staging
        ~ ' distribute by table_id, bucket sort by table_id, bucket, loaded_at, order_key') %}
    {% do cdc_restore_session_confs() %}

    {% set rewritten = run_query(
        'select count(*) from ' ~ changelog ~ ' where ' ~ cdc_partitions_predicate(partitions.rows)).rows[0][0] %}
    {% if rewritten != staged_rows %}
        {% do cdc_raise_releasing_run_lock(
            'changelog compaction ' ~ compaction_id ~ ': the rewritten partitions hold ' ~ rewritten
            ~ ' rows, ' ~ staged_rows ~ ' were staged; the staging table ' ~ staging ~ ' is kept') %}
    {% endif %}
    {% do run_query(
        'insert into ' ~ log_relation ~ ' values (' ~ cdc_string_literal(compaction_id) ~ ', 2, '
        ~ partitions.rows | length ~ ', null, ' ~ staged_rows ~ ', timestamp ' ~ cdc_string_literal(loaded_through)
        ~ ', current_timestamp())') %}
    {% do run_query('drop table if exists ' ~ staging) %}
    {% do return(partitions.rows | length) %}
{% endmacro %}
