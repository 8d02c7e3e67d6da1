{{ config(materialized='incremental', incremental_strategy='append') }}
-- One row per quarantined record decoded again by a `cdc run --retry-quarantine`:
-- its new status (ok, skipped or still quarantined), the reason and the changes it
-- now emits. A record whose retry succeeded is resolved: it is in the changelog once
-- (the changelog never appends a record twice) and is not retried again.
-- depends_on: {{ ref('changelog') }}
-- depends_on: {{ ref('quarantine') }}
with

records as (
    select * from {{ ref('stg_landing__records') }}
    where is_retry
),

final as (
    select
        feed,
        source_file,
        record_index,
        status,
        reason,
        coalesce(size(changes), 0) as changes_emitted,
        {{ cdc_string_literal(invocation_id) }} as run_id,
        {{ cdc_run_started_at() }} as retried_at
    from records
)

select * from final
