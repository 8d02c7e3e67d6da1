-- Every record read is accounted for: for each processed file, records read =
-- records that produced changes + quarantined + skipped, the quarantine holds the
-- records the audit says were quarantined, and the changelog holds exactly the
-- changes the audit says the file emitted plus those of its resolved retries.
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

-- the first successful retry of a quarantined record (it is never retried again)
resolved_counts as (
    select
        source_file,
        sum(changes_emitted) as changes_from_retries
    from (
        select
            source_file,
            record_index,
            max_by(changes_emitted, retried_at) as changes_emitted
        from {{ ref('quarantine_retries') }}
        where status != 'quarantined'
        group by source_file, record_index
    ) as resolved
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
        coalesce(quarantine_counts.records_in_quarantine, 0) as records_in_quarantine,
        coalesce(resolved_counts.changes_from_retries, 0) as changes_from_retries
    from audit
    left join changelog_counts on audit.source_file = changelog_counts.source_file
    left join quarantine_counts on audit.source_file = quarantine_counts.source_file
    left join resolved_counts on audit.source_file = resolved_counts.source_file
)

select * from final
where
    records_read != change_records + quarantined + skipped
    or changes_emitted + changes_from_retries != changes_in_changelog
    or quarantined != records_in_quarantine
