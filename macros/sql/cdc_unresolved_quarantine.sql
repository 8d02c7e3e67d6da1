{#
    SQL of the quarantined records not resolved yet: (feed, source_file, record_index)
    of every `quarantine` row without a later successful retry in `quarantine_retries`.
    Reads the tables as they are before this run (they are written later in the DAG),
    so it is empty on the first run.
#}
{% macro cdc_unresolved_quarantine() %}
    {% set quarantined = cdc_existing_relation('quarantine') %}
    {% set retries = cdc_existing_relation('quarantine_retries') %}
    {% if quarantined is none %}
        select
            cast(null as string) as feed,
            cast(null as string) as source_file,
            cast(null as int) as record_index
        where false
    {% else %}
        select distinct
            quarantined.feed,
            quarantined.source_file,
            quarantined.record_index
        from {{ quarantined }} as quarantined
        {% if retries is not none %}
            left anti join (
                select
                    source_file,
                    record_index
                from {{ retries }}
                where status != 'quarantined'
            ) as resolved
                on
                    quarantined.source_file = resolved.source_file
                    and quarantined.record_index = resolved.record_index
        {% endif %}
    {% endif %}
{% endmacro %}
