{{ config(on_schema_change='append_new_columns') }}
-- One row per completed merge: changelog rows loaded up to `merged_through` are in
-- the state and the history, and the merge's segments (`run_id`) are committed:
-- the views, recreated next, read them. Written last, so a merge that dies is redone
-- and its segments are never read. `compacted`: the merge wrote a base segment (every
-- key); the views' post-hooks then drop the segments no reader needs.
-- depends_on: {{ ref('state_segments') }}
-- depends_on: {{ ref('history_segments') }}
-- depends_on: {{ ref('state_columns') }}
with

versions as (
    select * from {{ ref('int_row_versions_refolded') }}
),

changes as (
    select * from {{ ref('int_changes_to_refold') }}
),

written as (
    select
        count(distinct table_id, bucket) as buckets_rewritten,
        count(*) as versions_rewritten,
        coalesce(max(merge_plan) in ('full', 'compact'), false) as compacted
    from versions
),

-- the tables whose keys were refolded (a compaction also copies the other tables)
refolded as (
    select collect_set(table_id) as tables_touched from changes
),

final as (
    select
        {{ cdc_string_literal(invocation_id) }} as run_id,
        {{ cdc_run_started_at() }} as merged_through,
        written.buckets_rewritten,
        written.versions_rewritten,
        refolded.tables_touched,
        written.compacted
    from written
    cross join refolded
)

select * from final
