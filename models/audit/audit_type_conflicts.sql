{{ config(materialized='view') }}
-- Mart columns whose declared types do not widen to one type (e.g. a column declared
-- int by some events and string by others): the mart keeps them as text, nothing is
-- lost, and this view says why. A dbt test warns while it has rows.
with

columns as (
    select * from {{ ref('mart_columns') }}
),

final as (
    select
        table_id,
        mart_view,
        column_name,
        spark_type,
        type_conflict
    from columns
    where type_conflict is not null
)

select * from final
