{{ config(materialized='incremental', incremental_strategy='append') }}
-- The values each run wrote that their mart column's type cannot hold: the rows of
-- audit_mart_cast_failures whose key the run refolded, kept with the run's id. The
-- view lists what stands now, this table what each run found: audit_runs counts it,
-- the dbt test assert_no_mart_cast_failures and `cdc run`'s warning read the run's
-- rows. Keys a compaction only copied were reported by the runs that wrote them.
with

failures as (
    select * from {{ ref('audit_mart_cast_failures') }}
),

refolded as (
    select * from {{ ref('int_changes_to_refold') }}
),

final as (
    select
        failures.*,
        {{ cdc_string_literal(invocation_id) }} as run_id,
        {{ cdc_run_started_at() }} as found_at
    from failures
    left semi join refolded
        on
            failures.table_id = refolded.table_id
            and failures.key_text = refolded.key_text
)

select * from final
