-- The changelog rows appended after the last completed merge (its watermark in
-- `merge_log`): what this merge applies, narrowed to what finds the keys to refold.
-- A table of its own, small next to the changelog, so that the refold input reads
-- the changelog once for them instead of once in every branch that needs them.
{% set merge_log = cdc_existing_relation('merge_log') %}

with

changelog as (
    select * from {{ ref('changelog') }}
),

final as (
    select
        table_id,
        bucket,
        key_text,
        op,
        order_key
    from changelog
    {% if merge_log is not none %}
        where loaded_at > (select coalesce(max(merged_through), timestamp '1970-01-01') from {{ merge_log }})
    {% endif %}
)

select * from final
