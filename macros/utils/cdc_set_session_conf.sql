{#
    Set a Spark SQL setting while one model builds (a pre-hook), keeping the session's
    value for `cdc_restore_session_confs` to put back (the model's post-hook, and the
    project's `on-run-end`, which also runs after a model failed). Through `cdc serve`
    the session is every analyst's (`spark.sql.hive.thriftServer.singleSession`): a
    model's setting must not outlive the model, nor overwrite the analyst's own.

    The kept value goes into the session as `spark.cdc.kept.<name>`, only when none is
    kept yet: a value left by a run that died before its restore is the analyst's,
    not this model's.

    Arguments:
        name: the setting, e.g. `spark.sql.optimizer.dynamicPartitionPruning.enabled`
        value: its value while the model builds

    Returns: the `set` statement (a hook).
#}
{% macro cdc_set_session_conf(name, value) %}
    {%- if execute -%}
        {%- set kept_name = 'spark.cdc.kept.' ~ name -%}
        {%- if cdc_session_conf(kept_name) is none -%}
            {%- do run_query('set ' ~ kept_name ~ ' = ' ~ cdc_session_conf(name)) -%}
        {%- endif -%}
    {%- endif -%}
    set {{ name }} = {{ value }}
{% endmacro %}
