-- The landing files of every feed that no earlier run has processed.
-- A file counts as processed once it has its row in `audit_files`, which is written
-- after the changelog and the quarantine: a run killed before that reads it again,
-- and the changelog and quarantine skip what they already hold. A processed file
-- that changed since (size or mtime) is not read again: `audit_changed_files`
-- reports it.
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

final as (
    select listed.*
    from listed
    left anti join processed on listed.source_file = processed.source_file
)

select * from final
