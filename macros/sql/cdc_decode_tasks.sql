{#
    How many Spark tasks read and decode a run's landing files: the `REPARTITION`
    hint of stg_landing__records. The file list is a small table that Spark scans as
    one partition; without the hint every file of a run would be read and decoded in
    one task, on one core.

    One task per `task_bytes` of landing files, at least `min_tasks` (so every core of
    a machine gets work), never more than one task per file (a file is read, by parts,
    by one task). A task reads and decodes its files in one call of the table function
    `cdc_decode_records`.

    Arguments:
        files_relation: the relation listing the run's files (`file_size` in bytes).
        task_bytes: landing bytes per task (default 64 MiB, cdc.yml `decode_task_bytes`).
        min_tasks: the fewest tasks when there are that many files (default 8).

    Returns: an integer >= 1 (1 while dbt only parses, or compiles before the file list
    exists: `dbt compile` or sqlfluff's dbt templater on a new warehouse).
#}
{% macro cdc_decode_tasks(files_relation, task_bytes=none, min_tasks=8) %}
    {% if not execute or load_relation(files_relation) is none %}
        {% do return(1) %}
    {% endif %}
    {% set task_bytes = task_bytes or cdc_settings()['decode_task_bytes'] %}
    {% set row = run_query(
        'select count(*), coalesce(sum(file_size), 0) from ' ~ files_relation
    ).rows[0] %}
    {% set files, total_bytes = row[0] | int, row[1] | int %}
    {% set by_size = ((total_bytes + task_bytes - 1) // task_bytes) | int %}
    {% do return([[files, [min_tasks, by_size] | max] | min, 1] | max) %}
{% endmacro %}
