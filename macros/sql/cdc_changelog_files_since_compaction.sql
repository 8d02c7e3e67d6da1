{#
    The most files appended to one changelog partition since the last compaction
    (since its `loaded_through`; every file when none was applied yet): the check at
    a run's end whether to compact. The files are told apart by the rows they hold
    (`_metadata.file_path`), and the rows loaded before the last compaction are not
    read: the compacted files hold them in load order, and their `loaded_at`
    statistics let Spark skip them whole. So the check reads what the runs since
    appended, not the whole changelog.

    Returns: a number of files (0 for an empty or missing changelog).
#}
{% macro cdc_changelog_files_since_compaction() %}
    {#- none while dbt parses (`execute` false) -#}
    {% set changelog = cdc_existing_relation('changelog') %}
    {% if changelog is none %}
        {% do return(0) %}
    {% endif %}
    {% set since = none %}
    {% set log = cdc_changelog_compactions_log(create=false) %}
    {% if log is not none %}
        {% set since = run_query(
            'select cast(max(loaded_through) as string) from ' ~ log ~ ' where step = 2').rows[0][0] %}
    {% endif %}
    {% set files = run_query(
        'select coalesce(max(files), 0) from (select count(distinct _metadata.file_path) as files'
        ~ ' from ' ~ changelog
        ~ (' where loaded_at > timestamp ' ~ cdc_string_literal(since) if since is not none else '')
        ~ ' group by table_id, bucket)').rows[0][0] %}
    {% do return(files | int) %}
{% endmacro %}
