{#
    The run's settings: the `cdc` variable that `cdc run` renders from cdc.yml
    (feeds with their decoder options, tables with keys and column types, schemas,
    bucket count). Models read settings only through this macro.

    Returns: dict with keys feeds, tables, schema, marts_schema, buckets.
#}
{% macro cdc_settings() %}
    {% set settings = var('cdc', {}) %}
    {% do return({
        'feeds': settings.get('feeds', []),
        'tables': settings.get('tables', {}),
        'schema': settings.get('schema', target.schema),
        'marts_schema': settings.get('marts_schema', 'marts'),
        'buckets': settings.get('buckets', 16),
    }) %}
{% endmacro %}
