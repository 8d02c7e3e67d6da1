-- Every record of the new landing files, decoded once: one row per record with its
-- status (ok, skipped, quarantined), the reason, and the changelog rows it produced.
{% set decode_tasks = cdc_decode_tasks(ref('stg_landing__files')) %}

with

-- spread over several tasks: the files are read and decoded in parallel
files as (
    select /*+ repartition({{ decode_tasks }}) */ *
    from {{ ref('stg_landing__files') }}
),

-- each file read and decoded in one call: a record's text stays in Python between the
-- two, and only a quarantined record's raw text comes back
decoded_files as (
    select
        files.*,
        cdc_decode_files(source_file, framing, decoder_options) as records
    from files
),

unresolved as (
    {{ cdc_unresolved_quarantine() }}
),

all_records as (
    select
        decoded_files.is_retry,
        decoded_files.feed,
        decoded_files.format,
        decoded_files.source_file,
        rec.record_index,
        rec.error,
        rec.raw_record,
        rec.raw_is_base64,
        rec.kafka_topic,
        rec.kafka_partition,
        rec.kafka_offset,
        rec.kafka_timestamp_ms,
        rec.result
    -- `outer`, then the null filter: for a plain explode Spark infers a filter on the
    -- array's size and pushes it below the repartition, which calls cdc_decode_files a
    -- second time, there, in a single task holding every file of the run
    from decoded_files
        lateral view outer explode(records) exploded as rec
    where exploded.rec is not null
),

-- a retried file yields only its unresolved quarantined records
decoded as (
    select * from all_records
    where not is_retry
    union all
    select all_records.*
    from all_records
    left semi join unresolved
        on
            all_records.source_file = unresolved.source_file
            and all_records.record_index = unresolved.record_index
    where all_records.is_retry
),

final as (
    select
        is_retry,
        feed,
        format,
        source_file,
        record_index,
        kafka_topic,
        kafka_partition,
        kafka_offset,
        kafka_timestamp_ms,
        case when error is not null then 'quarantined' else result.status end as status,
        coalesce(error, result.reason) as reason,
        -- the raw record: only where the quarantine needs it (cdc_decode_files)
        raw_record,
        raw_is_base64,
        case when error is null then result.changes end as changes,
        -- a DDL record (skipped as `ddl`): its statement, for ddl_log
        case when error is null then result.ddl end as ddl
    from decoded
)

select * from final
