{{ config(post_hook="{{ cdc_create_mart_views(this) }}") }}
-- The columns of every mart view and their Spark types: the type set in cdc.yml,
-- else the widest of the types the envelopes declared (udfs/types.py: int widens to
-- bigint, decimal precision grows; types that do not widen give string and a row in
-- audit_type_conflicts), else string. The columns and declared types are those the
-- state's rows have held (`state_columns`, a small table each merge adds to), so a
-- run does not read the whole state here. Config
-- columns keep their config order; other columns follow by name. The post-hook
-- (re)creates one typed view per table in the marts schema from these rows.
-- depends_on: {{ ref('state') }}
{% set settings = cdc_settings() %}

with

state_columns as (
    select * from {{ ref('state_columns') }}
),

seen as (
    select distinct
        table_id,
        column_name
    from state_columns
    where column_name is not null and logical_type is null
),

declared as (
    select
        table_id,
        column_name,
        cdc_widest_type(collect_set(logical_type)) as widened
    from state_columns
    where logical_type is not null
    group by table_id, column_name
),

configured as (
    {% set rows = [] %}
    {% for table_id, table in settings['tables'].items() %}
        {% for column in table['columns'] %}
            {% do rows.append('(' ~ cdc_string_literal(table_id) ~ ', ' ~ cdc_string_literal(column[0]) ~ ', '
                ~ cdc_string_literal(column[1]) ~ ', ' ~ loop.index ~ ')') %}
        {% endfor %}
    {% endfor %}
    {% if rows %}
        select * from values {{ rows | join(', ') }} as configured_columns (table_id, column_name, spark_type, ordinal)
    {% else %}
        select
            cast(null as string) as table_id,
            cast(null as string) as column_name,
            cast(null as string) as spark_type,
            cast(null as int) as ordinal
        where false
    {% endif %}
),

known_tables as (
    select table_id from state_columns
    union
    select table_id from configured
),

all_columns as (
    select
        table_id,
        column_name
    from seen
    union
    select
        table_id,
        column_name
    from configured
),

final as (
    select
        all_columns.table_id,
        {{ cdc_mart_view_name('all_columns.table_id') }} as mart_view,
        all_columns.column_name,
        coalesce(configured.spark_type, declared.widened.spark_type, 'string') as spark_type,
        configured.ordinal,
        -- declared types that do not widen to one: the column is text (audit_type_conflicts)
        case when configured.spark_type is null then declared.widened.conflict end as type_conflict
    from all_columns
    inner join known_tables on all_columns.table_id = known_tables.table_id
    left join configured
        on
            all_columns.table_id = configured.table_id
            and all_columns.column_name = configured.column_name
    left join declared
        on
            all_columns.table_id = declared.table_id
            and all_columns.column_name = declared.column_name
)

select * from final
