{{ config(materialized='incremental', incremental_strategy='append') }}
-- Landing files that changed after they were processed (same path, another size or
-- modification time). They are not read again (their records may already be in the
-- state): each change is reported once, with both versions, for someone to look at.
-- A dbt test warns while the run found any; `cdc run` prints the count.
-- depends_on: {{ ref('audit_files') }}
{% set processed = cdc_existing_relation('audit_files') %}

with

listed as (
    select * from {{ ref('stg_landing__listed') }}
),

processed as (
    {% if processed is not none %}
        select
            source_file,
            file_size,
            file_modified_at,
            run_id as processed_run_id
        from {{ processed }}
    {% else %}
        select
            cast(null as string) as source_file,
            cast(null as bigint) as file_size,
            cast(null as timestamp) as file_modified_at,
            cast(null as string) as processed_run_id
        where false
    {% endif %}
),

changed as (
    select
        listed.feed,
        listed.source_file,
        processed.processed_run_id,
        processed.file_size as processed_size,
        processed.file_modified_at as processed_modified_at,
        listed.file_size as current_size,
        timestamp_micros(listed.modified_us) as current_modified_at
    from listed
    inner join processed on listed.source_file = processed.source_file
    where
        listed.file_size != processed.file_size
        or timestamp_micros(listed.modified_us) != processed.file_modified_at
),

final as (
    select
        changed.*,
        {{ cdc_string_literal(invocation_id) }} as run_id,
        {{ cdc_run_started_at() }} as detected_at
    from changed
    {% if is_incremental() %}
        left anti join {{ this }} as reported
            on
                changed.source_file = reported.source_file
                and changed.current_size = reported.current_size
                and changed.current_modified_at = reported.current_modified_at
    {% endif %}
)

select * from final
