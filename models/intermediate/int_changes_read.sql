-- The changes the merge reads, once per key and event (its first delivery): every
-- change of the keys it refolds (`is_refolded`), and of the keys their rows moved from
-- (`key_moves`), whose changes a refolded key inherits (`int_changes_to_refold`).
-- The keys refolded: those that pending changes touch (`int_pending_changes`: appended
-- after the last completed merge; a merge that died is simply redone), every key of a
-- truncated table, and the keys a refolded key's row moved to, move after move; every
-- key when the merge starts a new base (`cdc_merge_plan` is 'full').
-- A table of its own: the moves' lineage in `int_changes_to_refold` is a recursive
-- CTE, and each of its steps would plan and run these steps again.
--
-- The moves are followed by recursive CTEs, one level per move in a chain. Each move
-- links to one next (previous) move, so the rows grow with the moves walked, not with
-- the paths through them. The Spark settings the recursions need (no limits on levels
-- and rows, no dynamic partition pruning: `cdc_key_move_walk_confs`) are the model's
-- only: the session's own values come back after it, and after a failed build at the
-- run's end (`cdc_set_session_confs`).
{{ config(
    pre_hook="{{ cdc_set_session_confs(cdc_key_move_walk_confs()) }}",
    post_hook="{{ cdc_restore_session_confs() }}"
) }}
-- depends_on: {{ ref('key_moves') }}, {{ ref('int_key_move_links') }}
{% set refold_every_key = cdc_merge_plan() == 'full' %}

{#- Whether a pending change truncates a table (every key of it is then refolded);
    compiled before the pending changes exist (`dbt compile` on a new warehouse), the
    truncate branch is planned. -#}
{% set has_pending_truncates = true %}
{% if execute and load_relation(ref('int_pending_changes')) is not none %}
    {% set truncates_sql %}
        select count(*) from {{ ref('int_pending_changes') }}
        where op = 'truncate'
    {% endset %}
    {% set has_pending_truncates = run_query(truncates_sql).rows[0][0] > 0 %}
{% endif %}

{% set has_moves = cdc_has_key_moves() %}

with{% if has_moves and not refold_every_key %} recursive{% endif %}

changelog as (
    select * from {{ ref('changelog') }}
),

pending as (
    select * from {{ ref('int_pending_changes') }}
),

{% if has_moves and not refold_every_key %}
    -- every key move, with its next and previous move
    moves as (
        select * from {{ ref('int_key_move_links') }}
    ),
{% endif %}

-- the keys to refold: those with pending changes, and every key of a truncated table
-- (unused when every key is refolded)
directly_touched_keys as (  -- noqa: ST03
    select distinct
        table_id,
        key_text
    from pending
    where key_text is not null
    {% if has_pending_truncates %}
        union
        select distinct
            changelog.table_id,
            changelog.key_text
        from changelog
        where
            changelog.key_text is not null
            and changelog.table_id in (
                select table_id from pending
                where op = 'truncate'
            )
    {% endif %}
),

{% if has_moves and not refold_every_key %}
    -- Where each touched key's row changes: at each pending change, and at a pending
    -- truncate for every key of its table.
    touched_points as (
        select
            table_id,
            key_text,
            order_key
        from pending
        where key_text is not null
        {% if has_pending_truncates %}
            union all
            select
                changelog_keys.table_id,
                changelog_keys.key_text,
                pending_truncates.order_key
            from (
                select distinct
                    table_id,
                    key_text
                from changelog
                where key_text is not null
            ) as changelog_keys
            inner join (select * from pending where op = 'truncate') as pending_truncates
                on changelog_keys.table_id = pending_truncates.table_id
        {% endif %}
    ),

    -- A change reaches only the first move out of its key after it: that move's delete
    -- starts the old key afresh, so a later move out of it carries another row. Each
    -- move then reaches one next move (`int_key_move_links`). One link each way, not
    -- every later (earlier) move: the paths through keys that swap a row grow about
    -- 1.6x with each move.
    first_moves_after_points as (
        select distinct
            table_id,
            key_text as from_key_text,
            first_from_order_key as from_order_key
        from (
            select
                touched_points.table_id,
                touched_points.key_text,
                touched_points.order_key,
                min(moves.from_order_key) as first_from_order_key
            from touched_points
            inner join moves
                on
                    touched_points.table_id = moves.table_id
                    and touched_points.key_text = moves.from_key_text
                    and touched_points.order_key <= moves.from_order_key
            group by touched_points.table_id, touched_points.key_text, touched_points.order_key
        ) as first_moves
    ),

    -- the moves a touched row is carried by, move after move
    carrying_moves as (
        select moves.*
        from moves
        left semi join first_moves_after_points
            on
                moves.table_id = first_moves_after_points.table_id
                and moves.from_key_text = first_moves_after_points.from_key_text
                and moves.from_order_key = first_moves_after_points.from_order_key
        union all
        select next_moves.*
        from carrying_moves
        inner join moves as next_moves
            on
                carrying_moves.table_id = next_moves.table_id
                and carrying_moves.to_key_text = next_moves.from_key_text
                and carrying_moves.next_from_order_key = next_moves.from_order_key
    ),

    -- the keys to refold: those touched, and those their rows moved to
    touched_keys as (
        select * from directly_touched_keys
        union
        select
            table_id,
            to_key_text as key_text
        from carrying_moves
    ),

    -- A refolded key inherits, at each move into it, the old key's row since its last
    -- reset before the move; when that reset is a move into the old key, it is the
    -- previous move, whose old key's row is inherited in turn (a move whose last reset
    -- is no move reads one key more than it needs).
    inherited_moves as (
        select moves.*
        from moves
        left semi join touched_keys
            on
                moves.table_id = touched_keys.table_id
                and moves.to_key_text = touched_keys.key_text
        union all
        select previous_moves.*
        from inherited_moves
        inner join moves as previous_moves
            on
                inherited_moves.table_id = previous_moves.table_id
                and inherited_moves.from_key_text = previous_moves.to_key_text
                and inherited_moves.previous_to_order_key = previous_moves.to_order_key
    ),

    -- the keys whose changes are read: the refolded keys and the old keys they inherit
    read_keys as (  -- noqa: ST03
        select * from touched_keys
        union
        select
            table_id,
            from_key_text as key_text
        from inherited_moves
    ),
{% else %}
    touched_keys as (
        select * from directly_touched_keys
    ),

    read_keys as (  -- noqa: ST03
        select * from touched_keys
    ),
{% endif %}

keyed_changes as (
    select changelog.*
    from changelog
    {% if refold_every_key %}
        where changelog.key_text is not null
    {% else %}
        left semi join read_keys
            on
                changelog.table_id = read_keys.table_id
                and changelog.key_text = read_keys.key_text
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
    where op = 'truncate'
    {% if not refold_every_key %}
        and table_id in (select table_id from pending)
    {% endif %}
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
    select numbered_deliveries.* except (delivery_no)
    from numbered_deliveries
    where delivery_no = 1
),

final as (
    select
        deduplicated.*,
        {% if refold_every_key %}
            true as is_refolded
        {% else %}
            touched_keys.key_text is not null as is_refolded
        {% endif %}
    from deduplicated
    {% if not refold_every_key %}
        left join touched_keys
            on
                deduplicated.table_id = touched_keys.table_id
                and deduplicated.key_text = touched_keys.key_text
    {% endif %}
)

select * from final
