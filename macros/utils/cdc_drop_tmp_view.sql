{#
    Drop the temporary view `<model>__dbt_tmp` that dbt-spark's incremental
    materialization creates for every run after the first and leaves in the session.
    Through `cdc serve` that session is the one every analyst shares
    (`spark.sql.hive.thriftServer.singleSession`), so `show tables` listed a stray
    `changelog__dbt_tmp`, `state_segments__dbt_tmp`... for each incremental model.
    A project-wide post-hook; it renders nothing for other materializations.

    Returns: the `drop view` statement, or '' (a hook).
#}
{% macro cdc_drop_tmp_view() %}
    {%- if config.get('materialized') == 'incremental' -%}
        drop view if exists {{ this.identifier }}__dbt_tmp
    {%- endif -%}
{% endmacro %}
