{#
    The newest modification time (microseconds since the epoch) of a landing file
    that this run reads: its feed's `min_file_age_seconds` (`cdc_min_file_ages`)
    before the run's start. A file modified later is left for a later run, which reads
    it once it has stayed unchanged that long (a writer that writes in place may still
    be writing it).

    Arguments:
        feed_column: the SQL expression of a row's feed name (`listed.feed`).
#}
{% macro cdc_settled_before_us(feed_column) %}
    {%- set cases = [] -%}
    {%- for feed, seconds in cdc_min_file_ages().items() -%}
        {%- do cases.append('when ' ~ cdc_string_literal(feed) ~ ' then ' ~ (seconds * 1000000)) -%}
    {%- endfor -%}
    {{- return('(unix_micros(' ~ cdc_run_started_at() ~ ') - case ' ~ feed_column ~ ' '
        ~ cases | join(' ') ~ ' else 0 end)') -}}
{% endmacro %}
