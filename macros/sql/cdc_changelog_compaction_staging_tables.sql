{#
    The changelog compactions' staging tables that exist in the target schema, looked
    up in the metastore (not dbt's relation cache: a compaction earlier in this
    invocation may have created or dropped one): `changelog__compaction_` and a
    compaction id of 32 hex digits, one per compaction
    (`cdc_changelog_compaction_staging`), or `changelog__compaction` itself, the one
    staging table of versions before per-compaction names. Only names of exactly that
    form are returned: a user's own table whose name merely begins so is not one
    (the compaction drops the tables returned).

    Returns: the tables' names, lower case.
#}
{% macro cdc_changelog_compaction_staging_tables() %}
    {% set base_name = cdc_changelog_compaction_staging_base_name() %}
    {% set staging = [] %}
    {% for name in cdc_target_tables_like(base_name ~ '*') %}
        {% if modules.re.fullmatch(modules.re.escape(base_name) ~ '(_[0-9a-f]{32})?', name) %}
            {% do staging.append(name) %}
        {% endif %}
    {% endfor %}
    {% do return(staging) %}
{% endmacro %}
