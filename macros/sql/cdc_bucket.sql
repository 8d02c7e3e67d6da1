{#
    The bucket of a key: a stable hash of (table_id, key_text) modulo the configured
    bucket count; the changelog is partitioned by it. Table-wide changes without a
    key (truncate) go to bucket -1.
#}
{% macro cdc_bucket(table_id='table_id', key_text='key_text') %}
    case
        when {{ key_text }} is null then -1
        else cast(pmod(xxhash64({{ table_id }}, {{ key_text }}), {{ cdc_settings()['buckets'] }}) as int)
    end
{% endmacro %}
