{#
    The newest modification time (microseconds since the epoch) of a landing file
    that this run reads: `min_file_age_seconds` before the run's start. A file modified
    later is left for a later run, which reads it once it has stayed unchanged that
    long (a writer that writes in place may still be writing it).
#}
{% macro cdc_settled_before_us() %}
    {{- return('(unix_micros(' ~ cdc_run_started_at() ~ ') - '
        ~ (cdc_settings()['min_file_age_seconds'] * 1000000) ~ ')') -}}
{% endmacro %}
