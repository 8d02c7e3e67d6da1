-- Every record read is accounted for: for each processed file, records read =
-- records that produced changes + quarantined + skipped, and the changelog holds
-- exactly the changes the audit says the file emitted.
with

audit as (
    select * from {{ ref('audit_files') }}
),

changelog_counts as (
    select
        source_file,
        count(*) as changes_in_changelog
    from {{ ref('changelog') }}
    group by source_file
),

quarantine_counts as (
    select
        source_file,
        count(*) as records_in_quarantine
    from {{ ref('quarantine') }}
    group by source_file
),

final as (
    select
        audit.source_file,
        audit.records_read,
        audit.change_records,
        audit.quarantined,
        audit.skipped,
        audit.changes_emitted,
        coalesce(changelog_counts.changes_in_changelog, 0) as changes_in_changelog,
        coalesce(quarantine_counts.records_in_quarantine, 0) as records_in_quarantine
    from audit
    left join changelog_counts on audit.source_file = changelog_counts.source_file
    left join quarantine_counts on audit.source_file = quarantine_counts.source_file
)

select * from final
where
    records_read != change_records + quarantined + skipped
    or changes_emitted != changes_in_changelog
    or quarantined != records_in_quarantine
