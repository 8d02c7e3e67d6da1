{{ config(severity='warn') }}
-- Warns when this run found landing files that changed after they were processed
-- (same path, another size or mtime): they are not read again, see audit_changed_files.
select * from {{ ref('audit_changed_files') }}
where run_id = {{ cdc_string_literal(invocation_id) }}
