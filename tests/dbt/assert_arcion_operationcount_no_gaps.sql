-- Warns (never fails the build) when an Arcion feed's cumulative operationcount does
-- not advance by one between consecutive events of a table: evidence of a missing,
-- quarantined or misordered event. The rows name the two neighbouring events; see
-- models/audit/arcion_operationcount_gaps.sql for what the check assumes.
{{ config(severity='warn') }}

select * from {{ ref('arcion_operationcount_gaps') }}
