{#
    Drop the partitions of `state_segments` and `history_segments` that no reader
    needs any more: segments older than the latest committed base, and segments of
    merges that died before their commit. Run after the merge is committed
    (`merge_log`'s post-hook), so this merge's own segment is live; while nothing was
    compacted and nothing died, it only lists the (empty) set of old partitions.

    Returns: '' (a hook).
#}
{% macro cdc_drop_old_segments() %}
    {% if not execute %}
        {% do return('') %}
    {% endif %}
    {% set merge_log = cdc_existing_relation('merge_log') %}
    {% if merge_log is none %}
        {% do return('') %}
    {% endif %}
    {% set live_sql %}
        select run_id from {{ merge_log }}
        where merged_through >= (select max(merged_through) from {{ merge_log }} where compacted)
    {% endset %}
    {% set live = run_query(live_sql).columns[0].values() | list %}
    {% if not live %}
        {% do return('') %}
    {% endif %}
    {% set live_list = [] %}
    {% for run_id in live %}
        {% do live_list.append(cdc_string_literal(run_id)) %}
    {% endfor %}
    {% for identifier in ['state_segments', 'history_segments'] %}
        {% set segments = cdc_existing_relation(identifier) %}
        {% if segments is not none %}
            {% set old = run_query(
                'select distinct table_id, segment from ' ~ segments
                ~ ' where segment not in (' ~ live_list | join(', ') ~ ')') %}
            {% for partition in old.rows %}
                {% do run_query(
                    'alter table ' ~ segments ~ ' drop if exists partition (table_id = '
                    ~ cdc_string_literal(partition[0]) ~ ', segment = ' ~ cdc_string_literal(partition[1]) ~ ')') %}
            {% endfor %}
        {% endif %}
    {% endfor %}
    {% do return('') %}
{% endmacro %}
