{{ config(materialized='incremental', incremental_strategy='append') }}
-- Schema changes the sources reported (Canal `isDdl`, DTS Avro DDL records, ...): never
-- applied as DML, kept here for analysts, one row per DDL record. Like the changelog,
-- a record is never appended twice, so an interrupted run can simply run again.
with

records as (
    select * from {{ ref('stg_landing__records') }}
    where ddl is not null
),

final as (
    select
        feed,
        format,
        source_file,
        record_index,
        ddl.source_db,
        ddl.source_schema,
        ddl.source_table,
        ddl.sql as sql_text,
        timestamp_micros(ddl.commit_ts_us) as commit_ts,
        {{ cdc_string_literal(invocation_id) }} as run_id,
        {{ cdc_run_started_at() }} as logged_at
    from records
)

select final.* from final
{% if is_incremental() %}
    left anti join {{ this }} as present
        on
            final.source_file = present.source_file
            and final.record_index = present.record_index
{% endif %}
