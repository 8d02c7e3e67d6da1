{{ config(severity='warn') }}
-- Warns while a mart column is kept as text because its declared types do not widen.
select * from {{ ref('audit_type_conflicts') }}
