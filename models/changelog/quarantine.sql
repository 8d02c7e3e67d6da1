-- Every record that could not be decoded, with the reason and the raw record (as
-- base64 where it is not valid text). Nothing is dropped silently.
with

records as (
    select * from {{ ref('stg_landing__records') }}
    where status = 'quarantined'
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
        raw_record,
        raw_is_base64,
        reason,
        {{ cdc_string_literal(invocation_id) }} as run_id,
        {{ cdc_run_started_at() }} as quarantined_at
    from records
),

batch_files as (
    select source_file from {{ ref('stg_landing__files') }}
),

-- what an earlier, interrupted run already appended for the files of this batch
present as (
    {% if is_incremental() %}
        select
            this_table.source_file,
            this_table.record_index
        from {{ this }} as this_table
        left semi join batch_files on this_table.source_file = batch_files.source_file
    {% else %}
        -- a first run: nothing appended yet
        select
            batch_files.source_file,
            cast(null as int) as record_index
        from batch_files
        where false
    {% endif %}
)

select final.* from final
left anti join present
    on
        final.source_file = present.source_file
        and final.record_index = present.record_index
