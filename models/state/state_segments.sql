{{ config(partition_by=['table_id', 'segment']) }}
-- The current row of every key a merge refolded, in that merge's segment (a partition
-- per table, named by the merge's run): merge-on-read, see cdc_merge_plan. Deleted
-- keys stay as tombstones (is_deleted). Read it through the `state` view.
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
        bucket,
        merge_run_id as segment
    from versions
)

select * from final
