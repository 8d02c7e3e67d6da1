{#
    The session's value of a Spark setting, as `set <name>` reads it (a SQL setting's
    default when the session never set it).

    Arguments:
        name: the setting

    Returns: the value as text, or none when the session has no such setting.
#}
{% macro cdc_session_conf(name) %}
    {%- set value = run_query('set ' ~ name).rows[0][1] -%}
    {{ return(none if value == '<undefined>' else value) }}
{% endmacro %}
