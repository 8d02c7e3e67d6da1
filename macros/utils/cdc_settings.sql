{#
    The run's settings: the `cdc` variable that `cdc run` renders from cdc.yml
    (feeds with their decoder options, tables with keys and column types, schemas,
    bucket count). Models read settings only through this macro.

    Without the variable (a plain `dbt run --target thrift` against `cdc serve`), the
    settings come from the table `<target schema>.cdc_settings`, which `cdc serve` and
    `cdc run` publish from the same cdc.yml.

    Returns: dict with keys feeds, tables, schema, marts_schema, buckets, decode_task_bytes,
    long_history_versions, compact_after_segments, compact_after_fraction,
    keep_previous_bases, compact_changelog_after_files, min_file_age_seconds, golden,
    retry_quarantine, test_scope.
#}
{% macro cdc_settings() %}
    {% set settings = var('cdc', {}) %}
    {% if not settings and execute %}
        {% set published = adapter.get_relation(database=none, schema=target.schema, identifier='cdc_settings') %}
        {% if published is not none %}
            {% set settings = fromjson(run_query('select settings from ' ~ published).columns[0].values()[0]) %}
        {% endif %}
    {% endif %}
    {% do return({
        'feeds': settings.get('feeds', []),
        'tables': settings.get('tables', {}),
        'schema': settings.get('schema', target.schema),
        'marts_schema': settings.get('marts_schema', 'marts'),
        'buckets': settings.get('buckets', 16),
        'decode_task_bytes': settings.get('decode_task_bytes', 67108864),
        'long_history_versions': settings.get('long_history_versions', 64),
        'compact_after_segments': settings.get('compact_after_segments', 8),
        'compact_after_fraction': settings.get('compact_after_fraction', 0.5),
        'keep_previous_bases': settings.get('keep_previous_bases', 1),
        'compact_changelog_after_files': settings.get('compact_changelog_after_files', 32),
        'min_file_age_seconds': settings.get('min_file_age_seconds', 0),
        'golden': settings.get('golden', false),
        'retry_quarantine': settings.get('retry_quarantine', false),
        'test_scope': settings.get('test_scope', 'run'),
    }) %}
{% endmacro %}
