{#
    The Spark settings the models that follow key moves with recursive CTEs
    (`int_changes_read`, `int_changes_to_refold`) need while they build, for
    `cdc_set_session_confs`:
    - no limit on a recursion's levels or rows: a chain has one level per move, and a
      bulk key change of a large table moves more than Spark's default 1M rows (its
      100-level limit would stop a row moved 100 times); each level follows a move
      strictly later (or earlier), so the recursion ends;
    - dynamic partition pruning off: Spark 4.3 cannot plan it inside a recursive CTE
      ("Found the unresolved operator: 'Filter dynamicpruning"), and the recursions
      read the changelog. It pruned only the changelog's tables (the refolded keys are
      in every bucket).

    Returns: a mapping of setting name -> value.
#}
{% macro cdc_key_move_walk_confs() %}
    {{ return({
        'spark.sql.cteRecursionLevelLimit': '-1',
        'spark.sql.cteRecursionRowLimit': '-1',
        'spark.sql.optimizer.dynamicPartitionPruning.enabled': 'false',
    }) }}
{% endmacro %}
