{#
    (Re)create one typed view per source table in the marts schema, named after the
    table (`inventory.orders` -> `inventory__orders`), from the rows of the
    `mart_columns` model. Each view holds the live rows of the state, the table's
    own columns typed (a binary column also as `<column>__text`, its bytes as UTF-8
    text where they are valid UTF-8, else NULL), and the `_cdc_*` metadata columns.

    Each view's comment names its table and where its rows come from (what
    `describe table extended` and a JDBC client's table remarks show).

    A table whose view text would pass `max_view_text` characters (the embedded Derby
    metastore keeps at most 32,700; a few hundred columns reach it) gets a parquet
    table of the same name instead, rebuilt by every run.

    Arguments:
        columns_relation: the mart_columns relation (the post-hook passes `this`).
        max_view_text: the longest view text to create as a view.
#}
{% macro cdc_create_mart_views(columns_relation, max_view_text=30000) %}
    {% if not execute %}
        {% do return('') %}
    {% endif %}
    {% set settings = cdc_settings() %}
    {% set marts = cdc_quote_identifier(settings['marts_schema']) %}
    {% set state = cdc_quote_identifier(target.schema) ~ '.' ~ cdc_quote_identifier('state') %}
    {% do run_query('create database if not exists ' ~ marts) %}
    {% set rows = run_query(
        'select table_id, mart_view, column_name, spark_type from ' ~ columns_relation
        ~ ' order by table_id, coalesce(ordinal, 1000000), column_name') %}
    {% set views = {} %}
    {% for row in rows %}
        {% if row[0] not in views %}
            {% do views.update({row[0]: {'name': row[1], 'columns': []}}) %}
        {% endif %}
        {% do views[row[0]]['columns'].append((row[2], row[3])) %}
    {% endfor %}
    {% for table_id, view in views.items() %}
        {% set projections = [] %}
        {% for column in view['columns'] %}
            {# a key column shows the key, also where no image provided it (an update that
               arrived before the insert of its row) #}
            {% set value = 'coalesce(row[' ~ cdc_string_literal(column[0]) ~ '], key[' ~ cdc_string_literal(column[0]) ~ '])' %}
            {% do projections.append(cdc_typed_value(value, column[1]) ~ ' as ' ~ cdc_quote_identifier(column[0])) %}
            {% if column[1] | lower | trim == 'binary' %}
                {# raw bytes (HBase cells, bytes columns) also as text where they are valid UTF-8 #}
                {% do projections.append(
                    'try_validate_utf8(cast(' ~ cdc_typed_value('row[' ~ cdc_string_literal(column[0]) ~ ']', 'binary')
                    ~ ' as string)) as ' ~ cdc_quote_identifier(column[0] ~ '__text')) %}
            {% endif %}
        {% endfor %}
        {% set body %}
            select
                {{ projections | join(',\n                ') }}{% if projections %},{% endif %}
                last_op as _cdc_op,
                last_seq as _cdc_seq,
                last_commit_ts as _cdc_commit_ts,
                last_event_id as _cdc_event_id,
                key_text as _cdc_key
            from {{ state }}
            where table_id = {{ cdc_string_literal(table_id) }} and not is_deleted
        {% endset %}
        {% set name = marts ~ '.' ~ cdc_quote_identifier(view['name']) %}
        {% set comment = 'comment ' ~ cdc_string_literal(
            'The live rows of ' ~ table_id ~ ', one per key, each column typed as ' ~ target.schema
            ~ '.mart_columns lists it (from ' ~ target.schema ~ '.state).') %}
        {% set existing = adapter.get_relation(database=none, schema=settings['marts_schema'], identifier=view['name']) %}
        {% if body | length <= max_view_text %}
            {% if existing is not none and existing.type != 'view' %}
                {% do run_query('drop table if exists ' ~ name) %}
            {% endif %}
            {% do run_query('create or replace view ' ~ name ~ ' ' ~ comment ~ ' as ' ~ body) %}
        {% else %}
            {# too wide for the metastore's view text: a table, rebuilt by every run #}
            {% if existing is not none %}
                {% do run_query(('drop view if exists ' if existing.type == 'view' else 'drop table if exists ') ~ name) %}
            {% endif %}
            {% do run_query('create table ' ~ name ~ ' using parquet ' ~ comment ~ ' as ' ~ body) %}
        {% endif %}
    {% endfor %}
    {% do return('') %}
{% endmacro %}
