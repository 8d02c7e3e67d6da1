{{ config(partition_by=['table_id', 'bucket']) }}
-- depends_on: {{ ref('stg_landing__files') }}
-- One row per row change, every format in one schema (DESIGN.md, "The changelog
-- contract"). Append-only; a record already present (same file, record and row)
-- is never appended twice, so a run that died half way can simply run again.
with

records as (
    select * from {{ ref('stg_landing__records') }}
    where status = 'ok'
),

changes as (
    select
        records.feed,
        records.format,
        records.source_file,
        records.record_index,
        records.kafka_topic,
        records.kafka_partition,
        records.kafka_offset,
        change
    from records
    lateral view explode(changes) exploded as change
),

flattened as (
    select
        feed,
        format,
        source_file,
        record_index,
        change.row_index,
        kafka_topic,
        kafka_partition,
        kafka_offset,
        change.source_db,
        change.source_schema,
        change.source_table,
        change.op,
        change.key,
        change.key_text,
        change.before,
        change.after,
        change.before_cols,
        change.after_cols,
        change.col_types,
        change.seq,
        timestamp_micros(change.commit_ts_us) as commit_ts,
        timestamp_micros(change.capture_ts_us) as capture_ts,
        change.tx_id,
        change.event_id,
        change.extras,
        change.table_id
    from changes
),

final as (
    select
        flattened.* except (table_id),
        {{ cdc_order_key() }} as order_key,
        {{ cdc_string_literal(invocation_id) }} as run_id,
        to_timestamp({{ cdc_string_literal(run_started_at.strftime('%Y-%m-%d %H:%M:%S.%f')) }}) as loaded_at,
        table_id,
        {{ cdc_bucket() }} as bucket
    from flattened
)

select final.* from final
{% if is_incremental() %}
    left anti join (
        select source_file, record_index, row_index from {{ this }}
        where source_file in (select source_file from {{ ref('stg_landing__files') }})
    ) as present
        on final.source_file = present.source_file
        and final.record_index = present.record_index
        and final.row_index = present.row_index
{% endif %}
