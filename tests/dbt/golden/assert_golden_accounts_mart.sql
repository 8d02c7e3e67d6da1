-- The golden run's mart equals the expected seed, row for row (values as text).
-- depends_on: {{ ref('mart_columns') }}
{% set actual %}
    select
        cast(id as string) as id,
        name,
        cast(balance as string) as balance,
        note
    from {{ cdc_quote_identifier(cdc_settings()['marts_schema']) }}.accounts
{% endset %}

{% set expected %}
    select
        id,
        name,
        balance,
        note
    from {{ ref('golden_expected_accounts') }}
{% endset %}

{{ cdc_rows_differing(actual, expected) }}
