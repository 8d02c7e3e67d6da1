{#
    The rows of a segmented table (`state_segments`, `history_segments`) as one table:
    for every key, the rows of its latest committed segment. The latest base (a
    `compacted` merge) holds every key; the segments merged after it hold the keys
    those merges refolded (all the versions of each). The live segments are looked up
    in `merge_log` when the query is compiled (`cdc_live_segments`) and named as
    literals, so Spark reads only their partitions: segments older than the base, and
    those of merges that died, are never read. A view of it is therefore recreated by
    every merge (dbt recreates views on every run), before old segments are dropped.

    Reading costs a scan of the base plus the recent segments and an anti-join with the
    recent keys (few: compaction bounds them), no shuffle of the base.

    Arguments:
        segments: the segmented relation (its `segment` column names the merge).
        merge_log: the merge_log relation, or none.

    Returns: a query of the segmented relation's columns, without `segment`.
#}
{% macro cdc_resolve_segments(segments, merge_log) %}
    {% set live = cdc_live_segments(merge_log) %}
    {% if not live %}
        select * except (segment) from {{ segments }}
        where false
    {% elif live | length == 1 %}
        select * except (segment) from {{ segments }}
        where segment = {{ cdc_string_literal(live[0]) }}
    {% else %}
        {% set recent = [] %}
        {% for run_id in live[1:] %}
            {% do recent.append(cdc_string_literal(run_id)) %}
        {% endfor %}
        with

        recent_rows as (
            select * from {{ segments }}
            where segment in ({{ recent | join(', ') }})
        ),

        -- the segment each recently merged key was last written to (merge order)
        recent_keys as (
            select
                table_id,
                key_text,
                max_by(segment, case segment
                    {% for run_id in recent %}
                        when {{ run_id }} then {{ loop.index }}
                    {% endfor %}
                end) as segment
            from recent_rows
            group by table_id, key_text
        ),

        latest_recent_rows as (
            select recent_rows.*
            from recent_rows
            left semi join recent_keys
                on
                    recent_rows.table_id = recent_keys.table_id
                    and recent_rows.key_text = recent_keys.key_text
                    and recent_rows.segment = recent_keys.segment
        ),

        base_rows as (
            select /*+ broadcast(recent_keys) */ segments.*
            from {{ segments }} as segments
            left anti join recent_keys
                on
                    segments.table_id = recent_keys.table_id
                    and segments.key_text = recent_keys.key_text
            where segments.segment = {{ cdc_string_literal(live[0]) }}
        ),

        final as (
            select * except (segment) from base_rows
            union all
            select * except (segment) from latest_recent_rows
        )

        select * from final
    {% endif %}
{% endmacro %}
