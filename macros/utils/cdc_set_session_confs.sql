{#
    Set Spark SQL settings while one model builds (a pre-hook), keeping the session's
    values for `cdc_restore_session_confs` to put back (the model's post-hook, and the
    project's `on-run-end`, which also runs after a model failed). Through `cdc serve`
    the session is every analyst's (`spark.sql.hive.thriftServer.singleSession`): a
    model's setting must not outlive the model, nor overwrite the analyst's own.

    A value is kept in the session as `spark.cdc.kept.<name>` (`cdc_kept_conf_prefix`),
    only when none is kept yet: a value left by a run that died before its restore is
    the analyst's, not this model's. A setting the session does not have is kept as
    `<undefined>`, and the restore unsets it.

    Arguments:
        confs: the settings while the model builds, name -> value (e.g.
            `cdc_key_move_walk_confs()`)

    Returns: '' (a hook; the statements run here).
#}
{% macro cdc_set_session_confs(confs) %}
    {%- if execute -%}
        {%- set prefix = cdc_kept_conf_prefix() -%}
        {%- set kept = [] -%}
        {%- for row in run_query('set').rows if row[0].startswith(prefix) -%}
            {%- do kept.append(row[0]) -%}
        {%- endfor -%}
        {%- for name, value in confs.items() -%}
            {%- if (prefix ~ name) not in kept -%}
                {%- set session_value = cdc_session_conf(name) -%}
                {%- do run_query('set ' ~ prefix ~ name ~ ' = ' ~ ('<undefined>' if session_value is none else session_value)) -%}
            {%- endif -%}
            {%- do run_query('set ' ~ name ~ ' = ' ~ value) -%}
        {%- endfor -%}
    {%- endif -%}
{% endmacro %}
