{#
    How this merge writes the state and the history, which are kept merge-on-read:
    each merge appends one segment (a partition per table) holding every version of
    the keys it refolded, and the views `state` and `history` read, per key, its
    latest committed segment (`cdc_resolve_segments`).

      'full'    no committed base segment yet (a new warehouse, a warehouse from before
                segments, or a first merge that died): every key of the changelog is
                refolded into a new base segment.
      'compact' the segments since the base passed `compact_after_segments`, or their
                versions passed `compact_after_fraction` of the base's: the touched
                keys are refolded and every other key is copied from the resolved
                segments, into a new base (the older segments are dropped once the
                merge is committed, `cdc_drop_old_segments`).
      'append'  the touched keys are refolded into a segment of their own: a merge
                costs its keys' changes, not the size of the state.

    A segment counts once its run is in `merge_log` (the merge's commit, written last),
    so a merge that dies leaves a segment nobody reads, and its changes are redone.
    Both intermediate models call it before anything of this merge is written, so
    they take the same plan.

    Returns: 'full', 'compact' or 'append' ('full' while dbt only parses).
#}
{% macro cdc_merge_plan() %}
    {% if not execute %}
        {% do return('full') %}
    {% endif %}
    {% set merge_log = cdc_existing_relation('merge_log') %}
    {% if merge_log is none
        or cdc_existing_relation('state_segments') is none
        or cdc_existing_relation('history_segments') is none %}
        {% do return('full') %}
    {% endif %}
    {% if 'compacted' not in adapter.get_columns_in_relation(merge_log) | map(attribute='name') | list %}
        {% do return('full') %}
    {% endif %}
    {% set segments_sql %}
        with base as (
            select
                merged_through,
                versions_rewritten
            from {{ merge_log }}
            where compacted
            order by merged_through desc
            limit 1
        )

        select
            (select count(*) from base) as bases,
            count(merge_log.run_id) as segments,
            coalesce(sum(merge_log.versions_rewritten), 0) as segment_versions,
            (select max(versions_rewritten) from base) as base_versions
        from {{ merge_log }} as merge_log
        inner join base on merge_log.merged_through > base.merged_through
        where merge_log.versions_rewritten > 0
    {% endset %}
    {% set row = run_query(segments_sql).rows[0] %}
    {% if row[0] == 0 %}
        {% do return('full') %}
    {% endif %}
    {% set settings = cdc_settings() %}
    {% if row[1] >= settings['compact_after_segments']
        or row[2] > settings['compact_after_fraction'] * (row[3] or 0) %}
        {% do return('compact') %}
    {% endif %}
    {% do return('append') %}
{% endmacro %}
