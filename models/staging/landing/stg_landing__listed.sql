-- Every file below every feed's landing folder, as it is now (path, size, mtime).
-- Names starting with `.` or `_` are skipped, as Spark's file sources do.
{% set settings = cdc_settings() %}

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

final as (
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
)

select * from final
