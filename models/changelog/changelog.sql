{{ config(partition_by=['table_id', 'bucket']) }}
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
        {{ cdc_run_started_at() }} as loaded_at,
        table_id,
        {{ cdc_bucket() }} as bucket
    from flattened
),

batch_files as (
    select source_file from {{ ref('stg_landing__files') }}
),

-- what an earlier, interrupted run already appended for the files of this batch
present as (
    {% if is_incremental() %}
        select
            this_table.source_file,
            this_table.record_index,
            this_table.row_index
        from {{ this }} as this_table
        left semi join batch_files on this_table.source_file = batch_files.source_file
    {% else %}
        -- a first run: nothing appended yet
        select
            batch_files.source_file,
            cast(null as int) as record_index,
            cast(null as int) as row_index
        from batch_files
        where false
    {% endif %}
)

-- Rebalanced by partition before the write (AQE: partitions of about
-- spark.sql.adaptive.advisoryPartitionSizeInBytes): a run adds one file per
-- (table_id, bucket) it touches, or a few for a large batch, rather than one from
-- every task that read the decoded batch. The changelog only grows, and every read of
-- it opens every file's footer.
select /*+ rebalance(table_id, bucket) */ final.* from final
left anti join present
    on
        final.source_file = present.source_file
        and final.record_index = present.record_index
        and final.row_index = present.row_index
