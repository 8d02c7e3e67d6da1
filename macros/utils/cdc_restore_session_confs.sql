{#
    Put back every Spark setting that `cdc_set_session_confs` changed, to the value the
    session had before (unset if it had none), and forget the kept values. A post-hook
    of the models that change settings, and the project's `on-run-end`: dbt skips a
    failed model's post-hooks, not the end of the run.

    Returns: '' (a hook; the statements run here).
#}
{% macro cdc_restore_session_confs() %}
    {%- if execute -%}
        {%- set prefix = cdc_kept_conf_prefix() -%}
        {%- set prefix_length = prefix | length -%}
        {%- for row in run_query('set').rows if row[0].startswith(prefix) -%}
            {%- set name = row[0][prefix_length:] -%}
            {%- if row[1] == '<undefined>' -%}
                {%- do run_query('reset ' ~ name) -%}
            {%- else -%}
                {%- do run_query('set ' ~ name ~ ' = ' ~ row[1]) -%}
            {%- endif -%}
            {%- do run_query('reset ' ~ row[0]) -%}
        {%- endfor -%}
    {%- endif -%}
{% endmacro %}
