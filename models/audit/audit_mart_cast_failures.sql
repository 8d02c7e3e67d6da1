{{ config(materialized='view') }}
-- The values of the state's live rows that their mart column's type cannot hold: a
-- number past its type's range or scale, text that is no number, date or timestamp,
-- binary that is not base64. The mart shows NULL there (cdc_typed_value's try_cast, so
-- that one value does not fail every query of the view); the state keeps the text.
-- A view over the whole state, free until read: each run keeps the rows of the keys it
-- refolded in audit_run_cast_failures, which its warning reads. The mart types are
-- named in the view's text (a cast needs a literal type), read from mart_columns as
-- this model is built, after it.
{% set columns_relation = load_relation(ref('mart_columns')) if execute else none %}
{% set typed = [] %}
{% if columns_relation is not none %}
    {#- one row per column, a small table: a plain scan, made distinct and filtered here -#}
    {% set types = run_query('select spark_type from ' ~ columns_relation).columns[0].values() %}
    {% for spark_type in types | unique | sort if spark_type | lower | trim != 'string' %}
        {% do typed.append(spark_type) %}
    {% endfor %}
{% endif %}

with

state as (
    select * from {{ ref('state') }}
    where not is_deleted
),

typed_columns as (
    select * from {{ ref('mart_columns') }}
    where lower(trim(spark_type)) != 'string'
),

mart_values as (
    select
        state.table_id,
        typed_columns.mart_view,
        state.key_text,
        typed_columns.column_name,
        typed_columns.spark_type,
        -- as the mart view reads it: a key column shows the key where no image provided it
        coalesce(
            state.row[typed_columns.column_name], state.key[typed_columns.column_name]
        ) as value_text,
        state.last_event_id,
        state.last_commit_ts
    from state
    inner join typed_columns on state.table_id = typed_columns.table_id
),

final as (
    select * from mart_values
    {% if typed %}
        where
            value_text is not null
            and case spark_type
                {% for spark_type in typed %}
                    when {{ cdc_string_literal(spark_type) }}
                        then {{ cdc_typed_value('value_text', spark_type) }} is null
                {% endfor %}
                else false
            end
    {% else %}
        where false
    {% endif %}
)

select * from final
