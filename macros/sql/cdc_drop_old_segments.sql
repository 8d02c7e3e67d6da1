{#
    Drop the partitions of a segmented table that no reader needs any more: segments
    of merges that died before their commit, and segments older than the bases kept
    for readers (`cdc_live_segments` with the setting `keep_previous_bases`, default
    1). A compaction so leaves the previous base and its segments in place: a query
    that listed them before the compaction (an analyst's, through `cdc serve`) still
    reads them, and the next compaction drops them. The post-hook of the `state` and
    `history` views, once the view reads the live segments only; while nothing was
    compacted and nothing died it only lists the (empty) set of old partitions.

    Arguments:
        identifier: `state_segments` or `history_segments`.

    Returns: '' (a hook).
#}
{% macro cdc_drop_old_segments(identifier) %}
    {% if not execute %}
        {% do return('') %}
    {% endif %}
    {% set segments = cdc_existing_relation(identifier) %}
    {% set kept = cdc_live_segments(cdc_existing_relation('merge_log'), cdc_settings()['keep_previous_bases']) %}
    {% if segments is none or not kept %}
        {% do return('') %}
    {% endif %}
    {% set kept_list = [] %}
    {% for run_id in kept %}
        {% do kept_list.append(cdc_string_literal(run_id)) %}
    {% endfor %}
    {% set old = run_query(
        'select distinct table_id, segment from ' ~ segments
        ~ ' where segment not in (' ~ kept_list | join(', ') ~ ')') %}
    {% for partition in old.rows %}
        {% do run_query(
            'alter table ' ~ segments ~ ' drop if exists partition (table_id = '
            ~ cdc_string_literal(partition[0]) ~ ', segment = ' ~ cdc_string_literal(partition[1]) ~ ')') %}
    {% endfor %}
    {% do return('') %}
{% endmacro %}
