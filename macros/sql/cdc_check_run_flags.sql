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
    - `--threads` above 1 through the Thrift server (`cdc serve`, whose session is
      `spark.sql.hive.thriftServer.singleSession`) is refused: that single session holds
      every connection's temporary views, and one thread closing its connection dropped
      a view another thread was building from (`dbt build --threads 4`:
      `quarantine__dbt_tmp` not found, `ddl_log` failed).

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
    {#- the session `cdc serve` shares with every client; dbt's target does not say its method -#}
    {% if target.threads > 1
        and run_query('set spark.sql.hive.thriftServer.singleSession').columns[1].values()[0] == 'true' %}
        {% do exceptions.raise_compiler_error(
            'dbt through the Thrift server runs one node at a time, and --threads is ' ~ target.threads
            ~ ': the server\'s single session holds every connection\'s temporary views, and one thread '
            ~ 'closing its connection drops the views another is building from. Nothing was run. '
            ~ 'Leave --threads out (the thrift target has 1)'
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
