{#
    Whether this merge refolds whole buckets from the changelog (true) or only the
    keys its pending changes touch, copying the other keys of their buckets from the
    state and the history (false).

    Copying is safe only when the state and the history are what the last merge wrote:
    they exist, and every version the previous run's refold wrote belongs to a merge
    that completed (`merge_log` names its run, `merge_run_id`). After a merge that died
    half way (a bucket of the state or the history may be lost), or without a previous
    refold, the whole buckets are refolded: that restores what a crash lost.

    Both intermediate models call it before the refold table is replaced, so both see
    the same previous refold and take the same path.

    Returns: a boolean (true while dbt only parses).
#}
{% macro cdc_refold_whole_buckets() %}
    {% if not execute %}
        {% do return(true) %}
    {% endif %}
    {% set merge_log = cdc_existing_relation('merge_log') %}
    {% set previous_refold = cdc_existing_relation('int_row_versions_refolded') %}
    {% if merge_log is none or previous_refold is none
        or cdc_existing_relation('state') is none or cdc_existing_relation('history') is none %}
        {% do return(true) %}
    {% endif %}
    {% if 'merge_run_id' not in adapter.get_columns_in_relation(previous_refold) | map(attribute='name') | list %}
        {% do return(true) %}
    {% endif %}
    {#- every row of a refold carries the same run: one row tells -#}
    {% set unfinished_sql %}
        with previous as (
            select merge_run_id from {{ previous_refold }}
            limit 1
        )

        select count(*)
        from previous
        left anti join {{ merge_log }} as merge_log on previous.merge_run_id = merge_log.run_id
    {% endset %}
    {% do return(run_query(unfinished_sql).rows[0][0] > 0) %}
{% endmacro %}
