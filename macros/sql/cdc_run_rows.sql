{#
    A predicate over a model's rows for its data tests (`where: "__cdc_run_rows__"`,
    see `default__get_where_subquery`): the rows this run wrote, so that a run's
    tests cost what it wrote rather than the size of its tables. Every other row was
    tested by the run that wrote it. A changelog test that fails skips the audit rows
    that mark the run's files processed, so the next run tests those rows again; a
    state or history test that fails fails its run once (the merge is committed).

    * `changelog`: the rows loaded since the latest run that processed files began
      (`audit_files.processed_at`): that run's, and those of any run after it,
      including one that died before its audit rows; and this invocation's.
    * `state`, `history`: the rows of the keys this run refolded
      (`int_changes_to_refold`); every row after a compaction (it rewrote every key).
    * `audit_run_cast_failures`: the rows of the latest run (the latest `merge_log`
      row: this run's in a run, the last run's in a plain `dbt test`).
    * any other model: every row.

    Every row, for every model, with the setting `test_scope: all` (`cdc.yml`), or
    the dbt variable `cdc_test_scope: all` (a plain `dbt test` of whole tables).

    Arguments:
        relation: the model the test reads.

    Returns: SQL of a boolean over the model's columns (`true`: every row).
#}
{% macro cdc_run_rows(relation) %}
    {% if cdc_test_scope() == 'all' or not execute %}
        {% do return('true') %}
    {% endif %}
    {% if relation.identifier == 'changelog' %}
        {% set audit = cdc_existing_relation('audit_files') %}
        {% if audit is none %}
            {% do return('true') %}
        {% endif %}
        {#- a scalar subquery rather than a query while compiling: Spark pushes it to the
            parquet reader as it does a literal (the earlier runs' files skipped by their
            `loaded_at` statistics), and the test costs no extra round trip. Without a
            processed run yet, every row (as `int_pending_changes` without a merge). -#}
        {% do return(
            "(loaded_at >= (select coalesce(max(processed_at), timestamp '1970-01-01') from "
            ~ audit ~ ') or run_id = ' ~ cdc_string_literal(invocation_id) ~ ')'
        ) %}
    {% elif relation.identifier == 'audit_run_cast_failures' %}
        {% set merge_log = cdc_existing_relation('merge_log') %}
        {% if merge_log is none %}
            {% do return('true') %}
        {% endif %}
        {% do return('run_id = (select max_by(run_id, merged_through) from ' ~ merge_log ~ ')') %}
    {% elif relation.identifier in ('state', 'history') %}
        {% set merge_log = cdc_existing_relation('merge_log') %}
        {% set refold = cdc_existing_relation('int_changes_to_refold') %}
        {% if merge_log is none or refold is none %}
            {% do return('true') %}
        {% endif %}
        {% set refolded = '(table_id, key_text) in (select table_id, key_text from ' ~ refold ~ ')' %}
        {% set compacted_sql %}
            select count(*) from {{ merge_log }}
            where run_id = {{ cdc_string_literal(invocation_id) }} and compacted
        {% endset %}
        {% if run_query(compacted_sql).columns[0].values()[0] > 0 %}
            {% do return('true') %}
        {% endif %}
        {% do return(refolded) %}
    {% endif %}
    {% do return('true') %}
{% endmacro %}
