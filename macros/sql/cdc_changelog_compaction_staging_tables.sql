{#
    The changelog compactions' staging tables that exist in the target schema, looked
    up in the metastore (not dbt's relation cache: a compaction earlier in this
    invocation may have created or dropped one). Their names begin with
    `changelog__compaction`: one per compaction (`cdc_changelog_compaction_staging`),
    or `changelog__compaction` itself, the one staging table of versions before
    per-compaction names.

    Returns: the tables' names, lower case.
#}
{% macro cdc_changelog_compaction_staging_tables() %}
    {% set found = run_query('show tables in ' ~ target.schema ~ " like 'changelog__compaction*'") %}
    {% do return(found.columns['tableName'].values() | map('lower') | list) %}
{% endmacro %}
