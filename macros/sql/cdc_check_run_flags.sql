{#
    What dbt's run flags do to this project's models, in a `dbt run` or `dbt build`,
    before any model and before the run lock. Called from `on-run-start`.

    - `--empty` is refused: it builds every model from refs of no rows, and these
      models hold the warehouse's data. `merge_log` recorded a merge of nothing, and
      the next run skipped the changes a killed run had left in the changelog (shown
      by hand: the state without them).
    - `--full-refresh` keeps the rows of the models that are `full_refresh: false` in
      dbt_project.yml (the changelog's and the state's: what runs read from landing
      files, which may be gone since, and what they merged). dbt skips them silently,
      so this logs which.

    Arguments: none. Returns no SQL.
#}
{% macro cdc_check_run_flags() %}
    {% if not execute or flags.WHICH not in ('run', 'build') %}
        {% do return('') %}
    {% endif %}
    {% if flags.EMPTY %}
        {% do exceptions.raise_compiler_error(
            '--empty builds every model from no rows, and the models of the cdc project hold the '
            ~ 'warehouse\'s data: its merge log would record a merge of nothing, and the next run would skip '
            ~ 'the changes a killed run left pending. Nothing was run. To check the SQL, use `dbt compile`, '
            ~ 'or build a new warehouse'
        ) %}
    {% endif %}
    {% if flags.FULL_REFRESH %}
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
