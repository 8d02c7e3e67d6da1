{#
    The log of changelog compactions, `changelog_compactions`, created when first
    needed: two rows per compaction (`compaction_id`, the dbt invocation that staged
    it), step 1 when its rows are staged, step 2 when its partitions are rewritten.
    `partitions`, `files_before` (step 1) and `rows_moved` say what it did;
    `loaded_through` is the start of the run that staged it (every row it rewrote was
    loaded by then).

    Arguments:
        create: create the log when it does not exist (default); false: return none
            then. The log is looked up in the metastore, not in dbt's relation cache: a
            compaction earlier in this invocation may have just created it.

    Returns: the log's relation (none when it does not exist and `create` is false).
#}
{% macro cdc_changelog_compactions_log(create=true) %}
    {% set relation = api.Relation.create(schema=target.schema, identifier='changelog_compactions', type='table') %}
    {% if not create %}
        {% do return(relation if cdc_target_tables_like('changelog_compactions') else none) %}
    {% endif %}
    {% do run_query(
        'create table if not exists ' ~ relation ~ ' (compaction_id string, step int, partitions int,'
        ~ ' files_before bigint, rows_moved bigint, loaded_through timestamp, logged_at timestamp) using parquet') %}
    {% do return(relation) %}
{% endmacro %}
