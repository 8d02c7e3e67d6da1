{#
    Drop the partitions of a segmented table that no reader needs any more: segments
    older than the latest committed base, and segments of merges that died before
    their commit (`cdc_live_segments`). The post-hook of the `state` and `history`
    views, once the view reads the live segments only; while nothing was compacted and
    nothing died it only lists the (empty) set of old partitions.

    Arguments:
        identifier: `state_segments` or `history_segments`.

    Returns: '' (a hook).
#}
{% macro cdc_drop_old_segments(identifier) %}
    {% if not execute %}
        {% do return('') %}
    {% endif %}
    {% set segments = cdc_existing_relation(identifier) %}
    {% set live = cdc_live_segments(cdc_existing_relation('merge_log')) %}
    {% if segments is none or not live %}
        {% do return('') %}
    {% endif %}
    {% set live_list = [] %}
    {% for run_id in live %}
        {% do live_list.append(cdc_string_literal(run_id)) %}
    {% endfor %}
    {% set old = run_query(
        'select distinct table_id, segment from ' ~ segments
        ~ ' where segment not in (' ~ live_list | join(', ') ~ ')') %}
    {% for partition in old.rows %}
        {% do run_query(
            'alter table ' ~ segments ~ ' drop if exists partition (table_id = '
            ~ cdc_string_literal(partition[0]) ~ ', segment = ' ~ cdc_string_literal(partition[1]) ~ ')') %}
    {% endfor %}
    {% do return('') %}
{% endmacro %}
