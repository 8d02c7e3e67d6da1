{{ config(partition_by=['table_id', 'segment']) }}
-- Every version of every key a merge refolded, in that merge's segment (a partition
-- per table, named by the merge's run): merge-on-read, see cdc_merge_plan. Read it
-- through the `history` view.
with

versions as (
    select * from {{ ref('int_row_versions_refolded') }}
),

final as (
    select
        table_id,
        key_text,
        key,
        version_no,
        event_id,
        op,
        is_deleted,
        row,
        seq,
        valid_from_seq,
        valid_to_seq,
        valid_from,
        valid_to,
        valid_from_ts,
        valid_to_ts,
        is_current,
        bucket,
        merge_run_id as segment
    from versions
)

select * from final
