{#
    Where `cdc_set_session_confs` keeps the session's own value of a setting it changes
    (`spark.cdc.kept.<name>`), for `cdc_restore_session_confs` to put back: one name
    for both, so that what one writes the other finds.

    Returns: the prefix of the kept settings' names.
#}
{% macro cdc_kept_conf_prefix() %}
    {{- return('spark.cdc.kept.') -}}
{% endmacro %}
