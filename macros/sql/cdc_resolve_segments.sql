{#
    The rows of a segmented table (`state_segments`, `history_segments`) as one table:
    for every key, the rows of its latest committed segment. A segment is committed
    when its merge is in `merge_log`; the latest base (a `compacted` merge) holds every
    key, and the segments merged after it hold the keys those merges refolded (all the
    versions of each). Segments older than the base, and segments of merges that died,
    are never read.

    Reading costs a scan of the base plus the recent segments, and an anti-join with
    the recent keys (few: compaction bounds them), no shuffle of the base.

    Arguments:
        segments: the segmented relation (its `segment` column names the merge).
        merge_log: the merge_log relation.

    Returns: a query of the segmented relation's columns, without `segment`.
#}
{% macro cdc_resolve_segments(segments, merge_log) %}
    with

    committed as (
        select
            run_id as segment,
            merged_through,
            coalesce(compacted, false) as is_base
        from {{ merge_log }}
    ),

    latest_base as (
        select max(merged_through) as merged_through from committed
        where is_base
    ),

    live_segments as (
        select committed.*
        from committed
        inner join latest_base on committed.merged_through >= latest_base.merged_through
    ),

    recent_segments as (
        select * from live_segments
        where not is_base
    ),

    base_segment as (
        select * from live_segments
        where is_base
    ),

    recent_rows as (
        select
            segments.*,
            recent_segments.merged_through as segment_merged_through
        from {{ segments }} as segments
        inner join recent_segments on segments.segment = recent_segments.segment
    ),

    -- the segment each recently merged key was last written to
    recent_keys as (
        select
            table_id,
            key_text,
            max_by(segment, segment_merged_through) as segment
        from recent_rows
        group by table_id, key_text
    ),

    latest_recent_rows as (
        select recent_rows.* except (segment_merged_through)
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
        left semi join base_segment on segments.segment = base_segment.segment
        left anti join recent_keys
            on
                segments.table_id = recent_keys.table_id
                and segments.key_text = recent_keys.key_text
    ),

    final as (
        select * except (segment) from base_rows
        union all
        select * except (segment) from latest_recent_rows
    )

    select * from final
{% endmacro %}
