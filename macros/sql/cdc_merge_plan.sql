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
    {% set live = cdc_live_segments(merge_log) %}
    {% if not live
        or cdc_existing_relation('state_segments') is none
        or cdc_existing_relation('history_segments') is none %}
        {% do return('full') %}
    {% endif %}
    {% set quoted = [] %}
    {% for run_id in live %}
        {% do quoted.append(cdc_string_literal(run_id)) %}
    {% endfor %}
    {% set versions_sql %}
        select
            sum(case when run_id = {{ quoted[0] }} then versions_rewritten else 0 end) as base_versions,
            sum(case when run_id = {{ quoted[0] }} then 0 else versions_rewritten end) as segment_versions
        from {{ merge_log }}
        where run_id in ({{ quoted | join(', ') }})
    {% endset %}
    {% set row = run_query(versions_sql).rows[0] %}
    {% set settings = cdc_settings() %}
    {#- the live segments after the base (cdc_live_segments lists those that wrote versions) -#}
    {% if live | length - 1 >= settings['compact_after_segments']
        or (row[1] or 0) > settings['compact_after_fraction'] * (row[0] or 0) %}
        {% do return('compact') %}
    {% endif %}
    {% do return('append') %}
{% endmacro %}
