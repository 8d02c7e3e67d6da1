{#
    Each feed's `min_file_age_seconds` (the feed's own in cdc.yml, else the top-level
    one), by feed name. Settings published before feeds had their own carry the
    top-level one only: their feeds take it.

    Returns: dict of feed name -> seconds (0: its new files are read at once).
#}
{% macro cdc_min_file_ages() %}
    {% set settings = cdc_settings() %}
    {% set ages = {} %}
    {% for feed in settings['feeds'] %}
        {% do ages.update({feed['name']: feed.get('min_file_age_seconds', settings['min_file_age_seconds'])}) %}
    {% endfor %}
    {{ return(ages) }}
{% endmacro %}
