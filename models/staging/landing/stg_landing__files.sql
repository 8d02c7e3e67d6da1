-- The landing files of every feed that no earlier run has processed, and, in a
-- `--retry-quarantine` run, the processed files that hold unresolved quarantined
-- records (`is_retry`; only those records are decoded again, see
-- stg_landing__records).
-- A file counts as processed once it has its row in `audit_files`, which is written
-- after the changelog and the quarantine: a run killed before that reads it again,
-- and the changelog and quarantine skip what they already hold. A processed file
-- that changed since (size or mtime) is not read again: `audit_changed_files`
-- reports it. A new file modified within its feed's `min_file_age_seconds` of the
-- run's start is left for a later run (`audit_unsettled_files` reports it): a writer
-- may still be writing it.
{% set settings = cdc_settings() %}
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
            file_modified_at
        from {{ processed }}
    {% else %}
        select
            cast(null as string) as source_file,
            cast(null as bigint) as file_size,
            cast(null as timestamp) as file_modified_at
        where false
    {% endif %}
),

new_files as (
    select
        listed.*,
        false as is_retry
    from listed
    left anti join processed on listed.source_file = processed.source_file
    {% if cdc_min_file_ages().values() | select('gt', 0) | list %}
        where listed.modified_us <= {{ cdc_settled_before_us('listed.feed') }}
    {% endif %}
),

unresolved as (
    {{ cdc_unresolved_quarantine() }}
),

-- a file that changed since it was processed is never read again, not even to retry
retry_files as (
    select
        listed.*,
        true as is_retry
    from listed
    inner join processed
        on
            listed.source_file = processed.source_file
            and listed.file_size = processed.file_size
            and timestamp_micros(listed.modified_us) = processed.file_modified_at
    left semi join unresolved
        on listed.source_file = unresolved.source_file
    {% if not settings['retry_quarantine'] %}
        where false
    {% endif %}
),

final as (
    select * from new_files
    union all
    select * from retry_files
)

select * from final
