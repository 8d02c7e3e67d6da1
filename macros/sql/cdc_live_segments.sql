{#
    The committed segments readers need, oldest first: the latest base (a `compacted`
    merge in `merge_log`) and every merge committed after it that wrote versions.
    Segments older than the base, and those of merges that died before their commit,
    are not listed. With `previous_bases`, the segments of that many earlier bases
    and of the merges committed onto them are listed too: those a query that started
    before the latest compactions may still be reading (`cdc_drop_old_segments`).

    Arguments:
        merge_log: the merge_log relation, or none (no merge yet).
        previous_bases: earlier bases to list with their segments (default 0).

    Returns: a list of run ids, the oldest listed base first; empty without a
    committed base or while dbt only parses.
#}
{% macro cdc_live_segments(merge_log, previous_bases=0) %}
    {% if not execute or merge_log is none %}
        {% do return([]) %}
    {% endif %}
    {#- a `ref` names the relation whether or not it exists yet -#}
    {% set merge_log = load_relation(merge_log) %}
    {% if merge_log is none %}
        {% do return([]) %}
    {% endif %}
    {% if 'compacted' not in adapter.get_columns_in_relation(merge_log) | map(attribute='name') | list %}
        {% do return([]) %}
    {% endif %}
    {#- the oldest of the latest `previous_bases` + 1 bases (the latest one alone by default) -#}
    {% set live_sql %}
        select run_id from {{ merge_log }}
        where
            merged_through >= (
                select min(merged_through) from (
                    select merged_through from {{ merge_log }}
                    where compacted
                    order by merged_through desc
                    limit {{ previous_bases + 1 }}
                )
            )
            and (compacted or versions_rewritten > 0)
        order by merged_through
    {% endset %}
    {% do return(run_query(live_sql).columns[0].values() | list) %}
{% endmacro %}
