-- The landing files of every feed that no earlier run has processed.
-- A file counts as processed once it has its row in `audit_files`, which is written
-- after the changelog and the quarantine: a run killed before that reads it again,
-- and the changelog and quarantine skip what they already hold.
{% set settings = cdc_settings() %}
{% set processed = cdc_existing_relation('audit_files') %}

with

{% for feed in settings['feeds'] %}
listed_{{ loop.index }} as (
    select
        {{ cdc_string_literal(feed['name']) }} as feed,
        {{ cdc_string_literal(feed['format']) }} as format,
        {{ cdc_string_literal(feed['framing']) }} as framing,
        {{ cdc_string_literal(feed['decoder_options']) }} as decoder_options,
        path as source_file,
        size as file_size,
        modified_us
    from cdc_list_files({{ cdc_string_literal(feed['path']) }})
),
{% endfor %}

listed as (
    {% for feed in settings['feeds'] %}
        select * from listed_{{ loop.index }}
        {% if not loop.last %}union all{% endif %}
    {% else %}
        select
            cast(null as string) as feed,
            cast(null as string) as format,
            cast(null as string) as framing,
            cast(null as string) as decoder_options,
            cast(null as string) as source_file,
            cast(null as bigint) as file_size,
            cast(null as bigint) as modified_us
        where false
    {% endfor %}
),

processed as (
    {% if processed is not none %}
        select source_file from {{ processed }}
    {% else %}
        select cast(null as string) as source_file where false
    {% endif %}
),

final as (
    select listed.*
    from listed
    left anti join processed on listed.source_file = processed.source_file
)

select * from final
