{{ config(severity='warn') }}
-- Values that their mart column's type cannot hold: NULL in the mart, text in the
-- state. The ones the run wrote (audit_run_cast_failures; `cdc run` prints their
-- count), or, with the test scope `all`, every one the state holds now
-- (audit_mart_cast_failures).
-- depends_on: {{ ref('audit_mart_cast_failures') }}
-- depends_on: {{ ref('audit_run_cast_failures') }}
{% if cdc_test_scope() == 'all' %}
    select * from {{ ref('audit_mart_cast_failures') }}
{% else %}
    select * from {{ ref('audit_run_cast_failures') }}
    where {{ cdc_run_rows(ref('audit_run_cast_failures')) }}
{% endif %}
