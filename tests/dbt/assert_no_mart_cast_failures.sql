{{ config(severity='warn') }}
-- Values of the rows this run wrote that their mart column's type cannot hold: NULL in
-- the mart, text in the state (audit_mart_cast_failures). `cdc run` prints the count.
select * from {{ ref('audit_mart_cast_failures') }}
where {{ cdc_run_rows(ref('audit_mart_cast_failures')) }}
