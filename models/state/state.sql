{{ config(partition_by=['table_id', 'bucket']) }}
-- The current row per (table, key). Deleted keys stay as tombstones
-- (is_deleted) so the mart can leave them out and a bucket whose keys were all
-- deleted is still rewritten. Only the buckets the run touched are rewritten.
with

versions as (
    select * from {{ ref('int_row_versions_refolded') }}
    where is_current
),

final as (
    select
        table_id,
        key_text,
        key,
        row,
        col_types,
        is_deleted,
        op as last_op,
        event_id as last_event_id,
        seq as last_seq,
        order_key as last_order_key,
        valid_from_ts as last_commit_ts,
        version_no as versions,
        bucket
    from versions
)

select * from final
