{#
    The log of changelog compactions, `changelog_compactions`, created when first
    needed: two rows per compaction (`compaction_id`, the dbt invocation that staged
    it), step 1 when its rows are staged, step 2 when its partitions are rewritten.
    `partitions`, `files_before` (step 1) and `rows_moved` say what it did;
    `loaded_through` is the start of the run that staged it (every row it rewrote was
    loaded by then).

    Returns: the log's relation.
#}
{% macro cdc_changelog_compactions_log() %}
    {% set relation = api.Relation.create(schema=target.schema, identifier='changelog_compactions', type='table') %}
    {% do run_query(
        'create table if not exists ' ~ relation ~ ' (compaction_id string, step int, partitions int,'
        ~ ' files_before bigint, rows_moved bigint, loaded_through timestamp, logged_at timestamp) using parquet') %}
    {% do return(relation) %}
{% endmacro %}
