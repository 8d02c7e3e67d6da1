-- Every version of every key this merge writes: the segment of the merge (see
-- cdc_merge_plan). The keys in `int_changes_to_refold` are refolded in `order_key`
-- order, which makes late, duplicated and reordered events land exactly where they
-- belong; a key's inherited changes (a row moved in from another key) are folded just
-- before the move's insert and are never versions of their own. A merge that compacts
-- (plan 'compact') also copies every other key from the resolved segments, as the last
-- merges left them, so that its segment is a new base.
-- `col_types` is set on the current version only (the state reads it there);
-- `merge_run_id` names the merge (its segment), `merge_plan` its plan.
{% set long_history_versions = cdc_settings()['long_history_versions'] %}
{% set merge_plan = cdc_merge_plan() %}

{#- Keys with more than `long_history_versions` changes take the long-history path;
    it is planned only when there is one (both paths give the same rows: the choice
    changes the cost, never the result). Compiled before the refold input exists
    (`dbt compile` on a new warehouse), both paths are planned. -#}
{% set has_long_histories = true %}
{% if execute and load_relation(ref('int_changes_to_refold')) is not none %}
    {% set long_keys_sql %}
        select count(*) from {{ ref('int_changes_to_refold') }}
        where key_versions > {{ long_history_versions }}
    {% endset %}
    {% set has_long_histories = run_query(long_keys_sql).rows[0][0] > 0 %}
{% endif %}

{#- The place of every version in its key's history, for both paths: the next
    version is the next change of the key's own (`fold_level` 0), not an inherited one. -#}
{% set version_columns %}
        lead(case when fold_level = 0 then struct(order_key, seq, commit_ts) end) ignore nulls
            over by_order as next_version,
        count_if(fold_level = 0) over upto_here as version_no,
        row_number() over by_order as fold_no,
        -- a reset (insert, snapshot, delete, truncate; see `resets`) starts the row from empty
        sum(case when resets then 1 else 0 end) over upto_here as reset_group
{% endset %}
{% set version_windows %}
    window
        by_order as (partition by table_id, key_text order by fold_anchor, fold_level desc, order_key),
        upto_here as (
            partition by table_id, key_text order by fold_anchor, fold_level desc, order_key
            rows between unbounded preceding and current row
        )
{% endset %}

with

changes as (
    select * from {{ ref('int_changes_to_refold') }}
),

-- Short histories (most keys): each version's row folds the changes up to it, a
-- window of the changes so far. That costs the square of a key's versions, so a key
-- with more than `long_history_versions` versions takes the long-history path below.
windowed as (
    select
        changes.*,
        collect_list(
            named_struct('resets', resets, 'image', after, 'cols', after_cols)
        ) over upto_here as changes_so_far,
        collect_list(
            named_struct('resets', false, 'image', col_types, 'cols', map_keys(col_types))
        ) over upto_here as types_so_far,
        {{ version_columns }}
    from changes
    where key_versions <= {{ long_history_versions }}
    {{ version_windows }}
),

{% if has_long_histories %}
-- Long histories, in time linear in their cells. Their versions, once (the shuffle
-- of the hint is shared by the CTEs below that read them):
    long_history_versions as (
        select /*+ repartition(table_id, key_text) */
            changes.*,
            {{ version_columns }}
        from changes
        where key_versions > {{ long_history_versions }}
        {{ version_windows }}
    ),

    -- every column a version provides (present in its image, or named in its columns
    -- but absent: removed from the row) ...
    long_history_cells as (
        select
            table_id,
            key_text,
            reset_group,
            fold_no,
            provided_column,
            named_struct(
                'present', coalesce(map_contains_key(after, provided_column), false),
                'value', after[provided_column]
            ) as cell
        from long_history_versions
            lateral view explode(array_distinct(after_cols)) provided as provided_column
    ),

    long_history_columns as (
        select distinct
            table_id,
            key_text,
            reset_group,
            provided_column
        from long_history_cells
    ),

    -- ... then, for every version and every column of its reset group, the cell of the
    -- latest change at or before it that provided the column ...
    long_history_grid as (
        select
            long_history_versions.table_id,
            long_history_versions.key_text,
            long_history_versions.fold_no,
            long_history_columns.provided_column,
            last(long_history_cells.cell, true) over (
                partition by
                    long_history_versions.table_id,
                    long_history_versions.key_text,
                    long_history_versions.reset_group,
                    long_history_columns.provided_column
                order by long_history_versions.fold_no
                rows between unbounded preceding and current row
            ) as cell
        from long_history_versions
        inner join long_history_columns
            on
                long_history_versions.table_id = long_history_columns.table_id
                and long_history_versions.key_text = long_history_columns.key_text
                and long_history_versions.reset_group = long_history_columns.reset_group
        left join long_history_cells
            on
                long_history_versions.table_id = long_history_cells.table_id
                and long_history_versions.key_text = long_history_cells.key_text
                and long_history_versions.fold_no = long_history_cells.fold_no
                and long_history_columns.provided_column = long_history_cells.provided_column
    ),

    -- ... and the row of a version is its present cells
    long_history_rows as (
        select
            table_id,
            key_text,
            fold_no,
            map_from_entries(collect_list(
                case when cell.present then struct(provided_column, cell.value) end
            )) as row
        from long_history_grid
        group by table_id, key_text, fold_no
    ),

    -- the declared types after a key's last change: its changes' types in order
    long_history_types as (
        select
            table_id,
            key_text,
            {{ cdc_fold_images("transform(
                array_sort(
                    collect_list(struct(fold_no, col_types)),
                    (l, r) -> case when l.fold_no < r.fold_no then -1 when l.fold_no > r.fold_no then 1 else 0 end
                ),
                x -> named_struct('resets', false, 'image', x.col_types, 'cols', map_keys(x.col_types))
            )") }} as col_types
        from long_history_versions
        group by table_id, key_text
    ),

{% endif %}

folded as (
    select
        windowed.* except (changes_so_far, types_so_far),
        {{ cdc_fold_images('windowed.changes_so_far') }} as folded_row,
        case when windowed.next_version is null then {{ cdc_fold_images('windowed.types_so_far') }} end
            as folded_types
    from windowed
    {% if has_long_histories %}
        union all
        select
            long_history_versions.*,
            coalesce(long_history_rows.row, cast(map() as map<string, string>)) as folded_row,  -- noqa: LT01
            long_history_types.col_types as folded_types
        from long_history_versions
        left join long_history_rows
            on
                long_history_versions.table_id = long_history_rows.table_id
                and long_history_versions.key_text = long_history_rows.key_text
                and long_history_versions.fold_no = long_history_rows.fold_no
        inner join long_history_types
            on
                long_history_versions.table_id = long_history_types.table_id
                and long_history_versions.key_text = long_history_types.key_text
    {% endif %}
),

refolded as (
    select
        table_id,
        key_text,
        key,
        version_no,
        event_id,
        op,
        op in ('delete', 'truncate') as is_deleted,
        case when op not in ('delete', 'truncate') then folded_row end as row,
        -- the declared types of the key's columns, on its current version only
        case when next_version is null then folded_types end as col_types,
        seq,
        order_key,
        seq as valid_from_seq,
        next_version.seq as valid_to_seq,
        order_key as valid_from,
        next_version.order_key as valid_to,
        commit_ts as valid_from_ts,
        next_version.commit_ts as valid_to_ts,
        next_version is null as is_current,
        bucket
    from folded
    -- the key's own changes (inherited ones only fed the fold)
    where fold_level = 0
),

{% if merge_plan == 'compact' %}
    -- the keys refolded above
    touched_keys as (
        select distinct
            table_id,
            key_text
        from changes
    ),

    -- Every other key, as the committed segments hold it: the current version from the
    -- state (it holds the declared types), the earlier ones from the history.
    resolved_state as (
        {{ cdc_resolve_segments(cdc_existing_relation('state_segments'), cdc_existing_relation('merge_log')) }}
    ),

    resolved_history as (
        {{ cdc_resolve_segments(cdc_existing_relation('history_segments'), cdc_existing_relation('merge_log')) }}
    ),

    untouched_current_versions as (
        select
            state.table_id,
            state.key_text,
            state.key,
            state.versions as version_no,
            state.last_event_id as event_id,
            state.last_op as op,
            state.is_deleted,
            state.row,
            state.col_types,
            state.last_seq as seq,
            state.last_order_key as order_key,
            state.last_seq as valid_from_seq,
            cast(null as string) as valid_to_seq,
            state.last_order_key as valid_from,
            cast(null as string) as valid_to,
            state.last_commit_ts as valid_from_ts,
            cast(null as timestamp) as valid_to_ts,
            true as is_current,
            state.bucket
        from resolved_state as state
        left anti join touched_keys
            on
                state.table_id = touched_keys.table_id
                and state.key_text = touched_keys.key_text
    ),

    untouched_earlier_versions as (
        select
            history.table_id,
            history.key_text,
            history.key,
            history.version_no,
            history.event_id,
            history.op,
            history.is_deleted,
            history.row,
            cast(null as map<string, string>) as col_types,  -- noqa: LT01
            history.seq,
            history.valid_from as order_key,
            history.valid_from_seq,
            history.valid_to_seq,
            history.valid_from,
            history.valid_to,
            history.valid_from_ts,
            history.valid_to_ts,
            history.is_current,
            history.bucket
        from resolved_history as history
        left anti join touched_keys
            on
                history.table_id = touched_keys.table_id
                and history.key_text = touched_keys.key_text
        where not history.is_current
    ),

{% endif %}
final as (
    select
        refolded.* except (bucket),
        {{ cdc_string_literal(invocation_id) }} as merge_run_id,
        {{ cdc_string_literal(merge_plan) }} as merge_plan,
        refolded.bucket
    from refolded
    {% if merge_plan == 'compact' %}
        union all
        select
            untouched_current_versions.* except (bucket),
            {{ cdc_string_literal(invocation_id) }} as merge_run_id,
            {{ cdc_string_literal(merge_plan) }} as merge_plan,
            untouched_current_versions.bucket
        from untouched_current_versions
        union all
        select
            untouched_earlier_versions.* except (bucket),
            {{ cdc_string_literal(invocation_id) }} as merge_run_id,
            {{ cdc_string_literal(merge_plan) }} as merge_plan,
            untouched_earlier_versions.bucket
        from untouched_earlier_versions
    {% endif %}
)

select * from final
