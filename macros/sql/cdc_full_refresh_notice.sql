{#
    Says, in a `dbt run` or `dbt build` given `--full-refresh`, which models keep their
    rows: those configured `full_refresh: false` in dbt_project.yml (the changelog's
    and the state's, what runs read from landing files that may be gone since, and
    what they merged). dbt itself skips them silently; the others (staging,
    intermediate, audit tables, `state_columns`, marts) are rebuilt. Called from
    `on-run-start`.

    Arguments: none. Returns no SQL.
#}
{% macro cdc_full_refresh_notice() %}
    {% if execute and flags.FULL_REFRESH and flags.WHICH in ('run', 'build') %}
        {% set kept = [] %}
        {% for node in graph.nodes.values()
            if node.resource_type == 'model' and node.config.materialized == 'incremental'
            and node.config.full_refresh == false %}
            {% do kept.append(node.name) %}
        {% endfor %}
        {% do log(
            'cdc: --full-refresh keeps the rows of ' ~ kept | sort | join(', ')
            ~ ' (full_refresh: false: they hold what runs read from landing files, which may be gone,'
            ~ ' and what they merged); it rebuilds the other models. A new warehouse and every landing'
            ~ ' file rebuild everything.',
            info=true
        ) %}
    {% endif %}
    {% do return('') %}
{% endmacro %}
