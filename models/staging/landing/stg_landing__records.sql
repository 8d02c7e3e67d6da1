-- Every record of the new landing files, decoded once: one row per record with its
-- status (ok, skipped, quarantined), the reason, and the changelog rows it produced.
{% set decode_tasks = cdc_decode_tasks(ref('stg_landing__files')) %}

with

-- spread over several tasks: the files are read and decoded in parallel
files as (
    select /*+ repartition({{ decode_tasks }}) */
        source_file,
        framing,
        decoder_options
    from {{ ref('stg_landing__files') }}
),

-- each file read and decoded by one call of the table function, which hands its
-- records to Spark a chunk at a time, one row each: no row holds a whole file. A
-- record's text stays in Python between reading and decoding; only a quarantined
-- record's raw text comes back
records as (
    select * from cdc_decode_records(table(select * from files))
),

unresolved as (
    {{ cdc_unresolved_quarantine() }}
),

unresolved_records as (
    select distinct
        source_file,
        record_index
    from unresolved
),

-- each record with its file's feed: the list of files is the side to broadcast (Spark
-- cannot size the table function's output, and would broadcast the records instead)
all_records as (
    select /*+ broadcast(landing_files) */
        landing_files.is_retry,
        landing_files.feed,
        landing_files.format,
        records.source_file,
        records.record_index,
        records.error,
        records.raw_record,
        records.raw_is_base64,
        records.kafka_topic,
        records.kafka_partition,
        records.kafka_offset,
        records.kafka_timestamp_ms,
        records.result
    from records
    inner join {{ ref('stg_landing__files') }} as landing_files
        on records.source_file = landing_files.source_file
),

-- a retried file yields only its unresolved quarantined records (a join, not a union
-- of two filters: each branch of a union would call the table function again)
decoded as (
    select all_records.*
    from all_records
    left join unresolved_records
        on
            all_records.source_file = unresolved_records.source_file
            and all_records.record_index = unresolved_records.record_index
    where
        not all_records.is_retry
        or unresolved_records.record_index is not null
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
        -- the raw record: only where the quarantine needs it (cdc_decode_records)
        raw_record,
        raw_is_base64,
        case when error is null then result.changes end as changes,
        -- a DDL record (skipped as `ddl`): its statement, for ddl_log
        case when error is null then result.ddl end as ddl
    from decoded
)

select * from final
