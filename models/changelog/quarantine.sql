-- depends_on: {{ ref('stg_landing__files') }}
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
        to_timestamp({{ cdc_string_literal(run_started_at.strftime('%Y-%m-%d %H:%M:%S.%f')) }}) as quarantined_at
    from records
)

select final.* from final
{% if is_incremental() %}
    left anti join (
        select source_file, record_index from {{ this }}
        where source_file in (select source_file from {{ ref('stg_landing__files') }})
    ) as present
        on final.source_file = present.source_file
        and final.record_index = present.record_index
{% endif %}
