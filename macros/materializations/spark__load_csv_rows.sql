{#
    Load seed rows with every value exact: overrides dbt-spark's loader, which (with
    the `session` method) passes numbers through a Python float, writes NULL as the
    text 'None' and does not escape quotes or backslashes. Each value is rendered as
    a SQL string literal (NULL as null) and cast to its column type, so a seed holds
    exactly the text of its CSV file.

    Arguments:
        model: the seed node.
        agate_table: the rows dbt read from the CSV file.
#}
{% macro spark__load_csv_rows(model, agate_table) %}
    {% set batch_size = get_batch_size() %}
    {% set column_override = model['config'].get('column_types', {}) %}
    {% set column_types = [] %}
    {% for col_name in agate_table.column_names %}
        {% do column_types.append(column_override.get(col_name, adapter.convert_type(agate_table, loop.index0))) %}
    {% endfor %}
    {% set statements = [] %}
    {% for chunk in agate_table.rows | batch(batch_size) %}
        {% set values = [] %}
        {% for row in chunk %}
            {% set fields = [] %}
            {% for value in row %}
                {% do fields.append('cast(' ~ cdc_string_literal(value) ~ ' as ' ~ column_types[loop.index0] ~ ')') %}
            {% endfor %}
            {% do values.append('(' ~ fields | join(', ') ~ ')') %}
        {% endfor %}
        {% set sql = 'insert into ' ~ this.render() ~ ' values ' ~ values | join(', ') %}
        {% do adapter.add_query(sql, abridge_sql_log=True) %}
        {% if loop.index0 == 0 %}
            {% do statements.append(sql) %}
        {% endif %}
    {% endfor %}
    {# Return SQL so we can render it out into the compiled files #}
    {{ return(statements[0]) }}
{% endmacro %}
