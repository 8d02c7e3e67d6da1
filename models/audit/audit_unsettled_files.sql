-- The new landing files this run left for a later one: modified within their feed's
-- `min_file_age_seconds` of its start, so a writer may still be writing them. They
-- are read by the first run that finds them older. Rebuilt every run; `cdc run`
-- prints the count.
{% set processed = cdc_existing_relation('audit_files') %}

with

listed as (
    select * from {{ ref('stg_landing__listed') }}
),

processed as (
    {% if processed is not none %}
        select source_file from {{ processed }}
    {% else %}
        select cast(null as string) as source_file
        where false
    {% endif %}
),

-- not processed (by an earlier run or this one) and too young: the files this run
-- reads are older, whether `audit_files` holds them yet or not
unsettled as (
    select
        listed.feed,
        listed.source_file,
        listed.file_size,
        timestamp_micros(listed.modified_us) as file_modified_at
    from listed
    left anti join processed on listed.source_file = processed.source_file
    {% if cdc_min_file_ages().values() | select('gt', 0) | list %}
        where listed.modified_us > {{ cdc_settled_before_us('listed.feed') }}
    {% else %}
        where false
    {% endif %}
),

final as (
    select
        unsettled.*,
        {{ cdc_string_literal(invocation_id) }} as run_id,
        {{ cdc_run_started_at() }} as detected_at
    from unsettled
)

select * from final
