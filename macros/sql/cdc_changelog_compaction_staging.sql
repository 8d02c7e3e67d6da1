{#
    The staging table of one changelog compaction:
    `changelog__compaction_<compaction_id without its dashes>`, beside the changelog.
    Each compaction has a table of its own so that what a crash leaves of one never
    blocks the next: a process killed inside `drop table` may have removed the
    metastore's entry and not the folder, and Spark refuses to create a managed table
    over an existing folder (LOCATION_ALREADY_EXISTS).

    Arguments:
        changelog: the changelog's relation.
        compaction_id: the compaction's id (the dbt invocation that staged it).

    Returns: the staging table's relation.
#}
{% macro cdc_changelog_compaction_staging(changelog, compaction_id) %}
    {% set identifier = cdc_changelog_compaction_staging_base_name() ~ '_'
        ~ (compaction_id | replace('-', '') | lower) %}
    {% do return(changelog.incorporate(path={'identifier': identifier})) %}
{% endmacro %}
