-- The golden run's history equals the expected versions of every key.
{% set actual %}
    select
        key['id'] as id,
        cast(version_no as string) as version_no,
        op,
        cast(is_deleted as string) as is_deleted,
        row['name'] as name,
        row['balance'] as balance,
        row['note'] as note
    from {{ ref('history') }}
    where table_id = 'accounts'
{% endset %}

{% set expected %}
    select
        id,
        version_no,
        op,
        is_deleted,
        name,
        balance,
        note
    from {{ ref('golden_expected_history') }}
{% endset %}

{{ cdc_rows_differing(actual, expected) }}
