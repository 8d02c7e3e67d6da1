{{ config(
    on_schema_change='append_new_columns',
    post_hook="{{ cdc_drop_old_segments() }}",
) }}
-- One row per completed merge: changelog rows loaded up to `merged_through` are in
-- the state and the history, and the merge's segments (`run_id`) are committed:
-- the views read them from now on. Written last, so a merge that dies is redone and
-- its segments are never read. `compacted`: the merge wrote a base segment (every
-- key); the post-hook then drops the segments no reader needs.
-- depends_on: {{ ref('state_segments') }}
-- depends_on: {{ ref('history_segments') }}
with

versions as (
    select * from {{ ref('int_row_versions_refolded') }}
),

final as (
    select
        {{ cdc_string_literal(invocation_id) }} as run_id,
        {{ cdc_run_started_at() }} as merged_through,
        count(distinct table_id, bucket) as buckets_rewritten,
        count(*) as versions_rewritten,
        collect_set(table_id) as tables_touched,
        coalesce(max(merge_plan) in ('full', 'compact'), false) as compacted
    from versions
)

select * from final
