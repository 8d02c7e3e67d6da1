-- One row per processed landing file: records read = records that produced
-- changes + quarantined + skipped (by reason). Written after every model that keeps a
-- share of the batch's records (the changelog, the quarantine, the DDL log): its row is
-- what marks a file as processed, and a file so marked is never read again.
-- depends_on: {{ ref('changelog') }}
-- depends_on: {{ ref('quarantine') }}
-- depends_on: {{ ref('ddl_log') }}
with

files as (
    select * from {{ ref('stg_landing__files') }}
    where not is_retry
),

records as (
    select * from {{ ref('stg_landing__records') }}
    where not is_retry
),

per_file as (
    select
        source_file,
        count(*) as records_read,
        count_if(status = 'ok') as change_records,
        coalesce(sum(case when status = 'ok' then size(changes) end), 0) as changes_emitted,
        count_if(status = 'quarantined') as quarantined,
        count_if(status = 'skipped') as skipped
    from records
    group by source_file
),

skip_reasons as (
    select
        source_file,
        map_from_entries(collect_list(struct(reason, n))) as skipped_by_reason
    from (
        select
            source_file,
            reason,
            count(*) as n
        from records
        where status = 'skipped'
        group by source_file, reason
    ) as skip_counts
    group by source_file
),

final as (
    select
        files.feed,
        files.format,
        files.source_file,
        files.file_size,
        timestamp_micros(files.modified_us) as file_modified_at,
        coalesce(per_file.records_read, 0) as records_read,
        coalesce(per_file.change_records, 0) as change_records,
        coalesce(per_file.changes_emitted, 0) as changes_emitted,
        coalesce(per_file.quarantined, 0) as quarantined,
        coalesce(per_file.skipped, 0) as skipped,
        coalesce(skip_reasons.skipped_by_reason, cast(map() as map <string, bigint>)) as skipped_by_reason,
        {{ cdc_string_literal(invocation_id) }} as run_id,
        {{ cdc_run_started_at() }} as processed_at
    from files
    left join per_file on files.source_file = per_file.source_file
    left join skip_reasons on files.source_file = skip_reasons.source_file
)

select final.* from final
{% if is_incremental() %}
    left anti join {{ this }} as present on final.source_file = present.source_file
{% endif %}
