{#
    persist_docs on Spark, with an incremental model's table comment kept up to date.
    dbt-spark writes a relation's comment only in the statement that creates it
    (`comment_clause`), so the table of an incremental model (the changelog, the state's
    segments, the audit tables) kept the description it was created with. Here such a
    table whose comment differs from its model's description gets it (`comment on
    table`). The comment it has is read from dbt's relation cache (Spark's `show table
    extended`, listed as the run starts): a run whose descriptions did not change issues
    no statement. Tables and views built anew by each run, and a table this run created,
    have their comment from the creating statement. The column comments are dbt-spark's,
    unchanged (none on parquet tables).

    Arguments:
        relation: the model's relation.
        model: the model's node.
        for_relation: whether to write the relation's comment.
        for_columns: whether to write the columns' comments.
#}
{% macro spark__persist_docs(relation, model, for_relation=true, for_columns=true) %}
    {% if for_relation and config.persist_relation_docs() and model.description
        and config.get('materialized') in ('incremental', 'snapshot') %}
        {% set cached = adapter.get_relation(
            database=relation.database, schema=relation.schema, identifier=relation.identifier) %}
        {#- Spark's table information, a line per item: `Comment: <comment>`, then the
            next item's line (`Statistics: `, `Location: `...; so an older comment that
            is the description and lines of that form is taken for it) -#}
        {% set information = cached.information if cached is not none else none %}
        {% set commented = (information or '').split('\nComment: ', 1) %}
        {% set kept = commented | length == 2 and commented[1].startswith(model.description ~ '\n')
            and modules.re.match('[A-Z][A-Za-z ]*: ', commented[1][model.description | length + 1:]) %}
        {% if information and not kept %}
            {% do run_query('comment on table ' ~ relation ~ ' is ' ~ cdc_string_literal(model.description)) %}
        {% endif %}
    {% endif %}
    {% do dbt.spark__persist_docs(relation, model, for_relation, for_columns) %}
{% endmacro %}
