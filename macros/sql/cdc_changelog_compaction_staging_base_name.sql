{#
    The base name of the changelog compactions' staging tables, `changelog__compaction`:
    the one staging table of versions before per-compaction names, and the prefix of
    each compaction's own (`cdc_changelog_compaction_staging`). Kept in one place because
    the staging tables are found, and dropped, by this name
    (`cdc_changelog_compaction_staging_tables`).

    Returns: the name, lower case.
#}
{% macro cdc_changelog_compaction_staging_base_name() %}
    {% do return('changelog__compaction') %}
{% endmacro %}
