-- Every record of the new landing files, decoded once: one row per record with its
-- status (ok, skipped, quarantined), the reason, and the changelog rows it produced.
with

files as (
    select * from {{ ref('stg_landing__files') }}
),

read_files as (
    select
        files.*,
        cdc_read_records(source_file, framing, decoder_options) as records
    from files
),

records as (
    select
        read_files.feed,
        read_files.format,
        read_files.decoder_options,
        read_files.source_file,
        rec.record_index,
        rec.text,
        rec.error,
        rec.raw_b64,
        rec.kafka_key,
        rec.kafka_topic,
        rec.kafka_partition,
        rec.kafka_offset,
        rec.kafka_timestamp_ms
    from read_files
        lateral view explode(records) exploded as rec
),

decoded as (
    select
        records.*,
        cdc_decode(decoder_options, text, kafka_key) as result
    from records
),

final as (
    select
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
        -- the raw record is kept only where the quarantine needs it
        case
            when error is not null or result.status = 'quarantined'
                then coalesce(text, raw_b64)
        end as raw_record,
        case when error is not null or result.status = 'quarantined' then raw_b64 is not null end
            as raw_is_base64,
        case when error is null then result.changes end as changes
    from decoded
)

select * from final
