-- One row per completed merge: changelog rows loaded up to `merged_through` are in
-- the state and the history. Written last, so a run that dies before it is redone.
-- depends_on: {{ ref('state') }}
-- depends_on: {{ ref('history') }}
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
        collect_set(table_id) as tables_touched
    from versions
)

select * from final
