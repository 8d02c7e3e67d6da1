{# Whether any primary key ever changed (a row in `key_moves`): the models that follow
   the moves plan their recursive CTEs only then. Compiled before `key_moves` exists
   (`dbt compile` on a new warehouse, or while parsing), moves are planned.
   Returns: a boolean. #}
{% macro cdc_has_key_moves() %}
    {% if execute and load_relation(ref('key_moves')) is not none %}
        {% set moves_sql %}
            select count(*) from {{ ref('key_moves') }}
        {% endset %}
        {{ return(run_query(moves_sql).rows[0][0] > 0) }}
    {% endif %}
    {{ return(true) }}
{% endmacro %}
