{#
    Fails a `dbt run` or `dbt build`, before any model and before the run lock, in a
    Spark session where the package's functions are not registered (`udfs.spark_udfs.
    register`): dbt's `session` target started by a plain `dbt run` gets a new Spark
    session of its own, in the current folder, without them, and the run built a dozen
    models before `stg_landing__records` failed on `cdc_decode_records`. `cdc run`
    registers them in its session; `cdc serve` in the server's, for `--target thrift`.
    Called from `on-run-start`.

    Arguments: none. The functions checked are those the models call (a test keeps
    this list and the models' calls the same). Returns no SQL.
#}
{% macro cdc_require_functions() %}
    {% if not execute or flags.WHICH not in ('run', 'build') %}
        {% do return('') %}
    {% endif %}
    {% set required = ['cdc_decode_records', 'cdc_list_files', 'cdc_widest_type'] %}
    {% set listed = run_query("show user functions like 'cdc_*'").columns[0].values() | map('lower') | list %}
    {% set missing = [] %}
    {% for name in required if name not in listed %}
        {% do missing.append(name) %}
    {% endfor %}
    {% if missing %}
        {% do exceptions.raise_compiler_error(
            'the functions of the cdc package (' ~ missing | join(', ') ~ ') are not registered in this '
            ~ 'Spark session, so nothing was run: run the pipeline with `cdc run` (dbt\'s session target works '
            ~ 'inside it), or start `cdc serve` and run dbt with --target thrift'
        ) %}
    {% endif %}
    {% do return('') %}
{% endmacro %}
