-- Every version of every key in the state buckets that pending changes touch.
-- Pending = appended after the last completed merge (`merge_log`); a merge that died
-- is simply redone. The keys the pending changes touch (every key of a truncated
-- table) are refolded from the changelog in `order_key` order, which makes late,
-- duplicated and reordered events land exactly where they belong. The other keys of
-- those buckets are copied from the state and the history as the last merge left
-- them, so a merge costs the history of the keys it touches plus a copy of the
-- buckets, not a refold of every change of the buckets.
-- When the last merge may have died half way (or a merge table is missing), the
-- whole buckets are refolded from the changelog instead: that restores a bucket a
-- crash lost. `col_types` is set on the current version only (the state reads it there).
{% set merge_log = cdc_existing_relation('merge_log') %}
{% set resetting_ops = "('insert', 'snapshot', 'delete', 'truncate')" %}
{% set pending_filter %}
    {% if merge_log is not none %}
        where loaded_at > (select coalesce(max(merged_through), timestamp '1970-01-01') from {{ merge_log }})
    {% endif %}
{% endset %}
{% set long_history_versions = cdc_settings()['long_history_versions'] %}
{% set long_candidates_inlined = cdc_settings()['long_history_named_keys'] %}

{#- The long-history path costs scans of its own: it is planned only when some key may
    pass the threshold in this refold (its versions in the state, plus its pending
    changes, plus the pending truncates). Both paths give the same rows, so which key
    takes which path changes the cost, never the result. When the candidate keys are
    few (up to `long_history_named_keys`) they are named in the query: the filter on
    the window's partition columns reaches the changelog scan, and each path reads and
    sorts only its own keys. Otherwise keys are routed by their versions, which costs
    the refold's windows a second time. -#}
{% set state_relation = cdc_existing_relation('state') %}
{% set has_long_histories = true %}
{% if execute %}
    {% set long_keys_sql %}
        with

        pending as (
            select
                table_id,
                key_text,
                op
            from {{ ref('changelog') }}
            {{ pending_filter }}
        ),

        pending_keys as (
            select
                table_id,
                key_text,
                count(*) as changes
            from pending
            where key_text is not null
            group by table_id, key_text
        ),

        known_keys as (
            {% if state_relation is not none %}
                select
                    table_id,
                    key_text,
                    versions
                from {{ state_relation }}
            {% else %}
                select
                    cast(null as string) as table_id,
                    cast(null as string) as key_text,
                    cast(null as int) as versions
                where false
            {% endif %}
        )

        select
            coalesce(known_keys.table_id, pending_keys.table_id) as table_id,
            coalesce(known_keys.key_text, pending_keys.key_text) as key_text
        from known_keys
        full outer join pending_keys
            on
                known_keys.table_id = pending_keys.table_id
                and known_keys.key_text = pending_keys.key_text
        where
            coalesce(known_keys.versions, 0) + coalesce(pending_keys.changes, 0)
            + (select count(*) from pending where op = 'truncate') > {{ long_history_versions }}
        limit {{ long_candidates_inlined + 1 }}
    {% endset %}
    {% set candidates = run_query(long_keys_sql).rows %}
    {% set has_long_histories = candidates | length > 0 %}
{% endif %}
{% if not has_long_histories %}
    {% set long_path = 'false' %}
{% elif candidates is defined and candidates | length <= long_candidates_inlined %}
    {% set long_path %}
        coalesce((table_id, key_text) in (
            {%- for row in candidates -%}
                ({{ cdc_string_literal(row[0]) }}, {{ cdc_string_literal(row[1]) }}){{ ", " if not loop.last }}
            {%- endfor -%}
        ), false)
    {% endset %}
{% else %}
    {% set long_path = 'key_versions > ' ~ long_history_versions %}
{% endif %}
{% set window_path = 'not (' ~ long_path.strip() ~ ')' %}

{#- Copying the untouched keys is safe only when the state and the history are what
    the last merge wrote: every version the previous run's refold wrote belongs to a
    merge that completed (merge_log names its run). -#}
{% set history_relation = cdc_existing_relation('history') %}
{% set refold_whole_buckets = true %}
{% if execute and merge_log is not none and state_relation is not none and history_relation is not none %}
    {% set previous_refold = cdc_existing_relation(this.identifier) %}
    {% if previous_refold is not none
        and 'merge_run_id' in adapter.get_columns_in_relation(previous_refold) | map(attribute='name') | list %}
        {#- every row of a refold carries the same run: one row tells -#}
        {% set unfinished_sql %}
            with previous as (
                select merge_run_id from {{ previous_refold }}
                limit 1
            )

            select count(*)
            from previous
            left anti join {{ merge_log }} as merge_log on previous.merge_run_id = merge_log.run_id
        {% endset %}
        {% set refold_whole_buckets = run_query(unfinished_sql).rows[0][0] > 0 %}
    {% endif %}
{% endif %}

with

changelog as (
    select * from {{ ref('changelog') }}
),

pending as (
    select
        table_id,
        bucket,
        key_text,
        op
    from changelog
    {{ pending_filter }}
),

truncated_tables as (
    select distinct table_id from pending
    where op = 'truncate'
),

touched as (
    select distinct
        table_id,
        bucket
    from pending
    where bucket >= 0
    union
    select distinct
        changelog.table_id,
        changelog.bucket
    from changelog
    inner join truncated_tables on changelog.table_id = truncated_tables.table_id
    where changelog.bucket >= 0
),

-- the keys to refold: those with pending changes, and every key of a truncated table
touched_keys as (
    select distinct
        table_id,
        key_text
    from pending
    where key_text is not null
    union
    select distinct
        changelog.table_id,
        changelog.key_text
    from changelog
    inner join truncated_tables on changelog.table_id = truncated_tables.table_id
    where changelog.key_text is not null
),

keyed_changes as (
    select changelog.*
    from changelog
    {% if refold_whole_buckets %}
        left semi join touched
            on
                changelog.table_id = touched.table_id
                and changelog.bucket = touched.bucket
    {% else %}
        left semi join touched_keys
            on
                changelog.table_id = touched_keys.table_id
                and changelog.key_text = touched_keys.key_text
    {% endif %}
),

keys_first_seen as (
    select
        table_id,
        key_text,
        bucket,
        first(key) as key,
        min(order_key) as first_order_key
    from keyed_changes
    group by table_id, key_text, bucket
),

truncates as (
    select * from changelog
    where op = 'truncate' and table_id in (select table_id from touched)
),

-- A truncate deletes every key that existed before it.
truncate_deletes as (
    select
        keys_first_seen.table_id,
        keys_first_seen.bucket,
        keys_first_seen.key_text,
        keys_first_seen.key,
        truncates.event_id,
        'truncate' as op,
        truncates.seq,
        truncates.order_key,
        truncates.commit_ts,
        cast(null as map<string, string>) as after,  -- noqa: LT01
        cast(null as array<string>) as after_cols,
        cast(map() as map<string, string>) as col_types  -- noqa: LT01
    from keys_first_seen
    inner join truncates
        on
            keys_first_seen.table_id = truncates.table_id
            and keys_first_seen.first_order_key < truncates.order_key
),

all_changes as (
    select
        table_id,
        bucket,
        key_text,
        key,
        event_id,
        op,
        seq,
        order_key,
        commit_ts,
        after,
        after_cols,
        col_types
    from keyed_changes
    union all
    select * from truncate_deletes
),

-- The same event delivered twice (same event_id) counts once, at its first place.
numbered_deliveries as (
    select
        all_changes.*,
        row_number() over (
            partition by table_id, key_text, event_id order by order_key
        ) as delivery_no
    from all_changes
),

deduplicated as (
    select
        numbered_deliveries.* except (delivery_no),
        count(*) over (partition by table_id, key_text) as key_versions
    from numbered_deliveries
    where delivery_no = 1
),

-- Short histories (most keys): each version's row folds the changes up to it, a
-- window of the changes so far. That costs the square of a key's versions, so a key
-- with more than `long_history_versions` versions takes the long-history path below
-- (its window list stays empty here).
windowed as (
    select
        deduplicated.*,
        collect_list(
            case
                when {{ window_path }}
                    then named_struct('resets', op in {{ resetting_ops }}, 'image', after, 'cols', after_cols)
            end
        ) over upto_here as changes_so_far,
        collect_list(
            case
                when {{ window_path }}
                    then named_struct('resets', false, 'image', col_types, 'cols', map_keys(col_types))
            end
        ) over upto_here as types_so_far,
        lead(order_key) over by_order as next_order_key,
        lead(seq) over by_order as next_seq,
        lead(commit_ts) over by_order as next_commit_ts,
        row_number() over by_order as version_no,
        -- a reset (insert, snapshot, delete, truncate) starts the row from empty
        sum(case when op in {{ resetting_ops }} then 1 else 0 end) over upto_here as reset_group
    from deduplicated
    window
        by_order as (partition by table_id, key_text order by order_key),
        upto_here as (
            partition by table_id, key_text order by order_key
            rows between unbounded preceding and current row
        )
),

{% if has_long_histories %}
-- Long histories, in time linear in their cells. Their versions, once (the shuffle
-- of the hint is shared by the CTEs below that read them):
long_history_versions as (
    select /*+ repartition(table_id, key_text) */
        windowed.* except (changes_so_far, types_so_far)
    from windowed
    where {{ long_path }}
),

-- every column a version provides (present in its image, or named in its columns
-- but absent: removed from the row) ...
long_history_cells as (
    select
        table_id,
        key_text,
        reset_group,
        version_no,
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
        long_history_versions.version_no,
        long_history_columns.provided_column,
        last(long_history_cells.cell, true) over (
            partition by
                long_history_versions.table_id,
                long_history_versions.key_text,
                long_history_versions.reset_group,
                long_history_columns.provided_column
            order by long_history_versions.version_no
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
            and long_history_versions.version_no = long_history_cells.version_no
            and long_history_columns.provided_column = long_history_cells.provided_column
),

-- ... and the row of a version is its present cells
long_history_rows as (
    select
        table_id,
        key_text,
        version_no,
        map_from_entries(collect_list(
            case when cell.present then struct(provided_column, cell.value) end
        )) as row
    from long_history_grid
    group by table_id, key_text, version_no
),

-- the declared types after a key's last change: its changes' types in order
long_history_types as (
    select
        table_id,
        key_text,
        {{ cdc_fold_images("transform(
            array_sort(
                collect_list(struct(version_no, col_types)),
                (l, r) -> case when l.version_no < r.version_no then -1 when l.version_no > r.version_no then 1 else 0 end
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
        case when windowed.next_order_key is null then {{ cdc_fold_images('windowed.types_so_far') }} end
            as folded_types
    from windowed
    where {{ window_path }}
    {% if has_long_histories %}
    union all
    select
        long_history_versions.*,
        coalesce(long_history_rows.row, cast(map() as map<string, string>)) as folded_row,
        long_history_types.col_types as folded_types
    from long_history_versions
    left join long_history_rows
        on
            long_history_versions.table_id = long_history_rows.table_id
            and long_history_versions.key_text = long_history_rows.key_text
            and long_history_versions.version_no = long_history_rows.version_no
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
        case when next_order_key is null then folded_types end as col_types,
        seq,
        order_key,
        seq as valid_from_seq,
        next_seq as valid_to_seq,
        order_key as valid_from,
        next_order_key as valid_to,
        commit_ts as valid_from_ts,
        next_commit_ts as valid_to_ts,
        next_order_key is null as is_current,
        bucket
    from folded
),

{% if not refold_whole_buckets %}
-- The untouched keys of the touched buckets, as the last merge left them: the current
-- version from the state (it holds the declared types), the earlier ones from the history.
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
    from {{ state_relation }} as state
    left semi join touched
        on
            state.table_id = touched.table_id
            and state.bucket = touched.bucket
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
    from {{ history_relation }} as history
    left semi join touched
        on
            history.table_id = touched.table_id
            and history.bucket = touched.bucket
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
        refolded.bucket
    from refolded
    {% if not refold_whole_buckets %}
        union all
        select
            untouched_current_versions.* except (bucket),
            {{ cdc_string_literal(invocation_id) }} as merge_run_id,
            untouched_current_versions.bucket
        from untouched_current_versions
        union all
        select
            untouched_earlier_versions.* except (bucket),
            {{ cdc_string_literal(invocation_id) }} as merge_run_id,
            untouched_earlier_versions.bucket
        from untouched_earlier_versions
    {% endif %}
)

select * from final
