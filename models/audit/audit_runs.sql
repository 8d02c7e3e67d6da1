{{ config(materialized='view') }}
-- One row per run: the files it processed and what became of their records, the
-- tables its merge touched, the landing files it found changed, and the values it
-- wrote that their mart type cannot hold. A view over the audit tables, so it always
-- agrees with them (also after a run that was killed and run again).
with

files as (
    select * from {{ ref('audit_files') }}
),

merges as (
    select * from {{ ref('merge_log') }}
),

changed as (
    select
        run_id,
        count(*) as changed_files
    from {{ ref('audit_changed_files') }}
    group by run_id
),

cast_failures as (
    select
        run_id,
        count(*) as cast_failures
    from {{ ref('audit_run_cast_failures') }}
    group by run_id
),

per_run as (
    select
        run_id,
        min(processed_at) as processed_at,
        count(*) as files,
        sum(records_read) as records_read,
        sum(change_records) as change_records,
        sum(changes_emitted) as changes_emitted,
        sum(quarantined) as quarantined,
        sum(skipped) as skipped
    from files
    group by run_id
),

final as (
    select
        coalesce(merges.run_id, per_run.run_id) as run_id,
        coalesce(per_run.processed_at, merges.merged_through) as run_started_at,
        coalesce(per_run.files, 0) as files,
        coalesce(per_run.records_read, 0) as records_read,
        coalesce(per_run.change_records, 0) as change_records,
        coalesce(per_run.changes_emitted, 0) as changes_emitted,
        coalesce(per_run.quarantined, 0) as quarantined,
        coalesce(per_run.skipped, 0) as skipped,
        coalesce(changed.changed_files, 0) as changed_files,
        coalesce(cast_failures.cast_failures, 0) as cast_failures,
        merges.tables_touched,
        merges.run_id is not null as merged
    from per_run
    full outer join merges on per_run.run_id = merges.run_id
    left join changed on coalesce(merges.run_id, per_run.run_id) = changed.run_id
    left join cast_failures on coalesce(merges.run_id, per_run.run_id) = cast_failures.run_id
)

select * from final
