-- The changes the merge refolds, once per key and event, with `key_versions` (the
-- changes of the key, inherited ones included): the changes of the refolded keys in
-- `int_changes_read`, and what they inherit through key changes.
-- A table of its own so that the refold's two paths and its copy of the untouched
-- keys each read it with a plain filter, instead of planning these steps again in
-- every branch of one query.
--
-- Key changes (`key_moves`) move the row: the new key's row is the old key's row just
-- before the move, overlaid with what the move provides. So a refolded key that a row
-- moved into gets, before the move's insert, the old key's changes since its last
-- reset (and, when that reset is itself a move, the changes before it, and so on):
-- inherited rows (`fold_level` > 0, placed at the move by `fold_anchor`) that the
-- fold reads and never writes as versions. `resets` says which changes start the row
-- from empty: the first inherited change of a move, never the move's own insert.
-- The lineage is a recursive CTE over small tables (each level follows a move strictly
-- earlier), built with the settings of `int_changes_read` (`cdc_key_move_walk_confs`).
{{ config(
    pre_hook="{{ cdc_set_session_confs(cdc_key_move_walk_confs()) }}",
    post_hook="{{ cdc_restore_session_confs() }}"
) }}
{% set resetting_ops = "('insert', 'snapshot', 'delete', 'truncate')" %}

{% set has_moves = cdc_has_key_moves() %}

with{% if has_moves %} recursive{% endif %}

refolded_changes as (
    select * except (is_refolded) from {{ ref('int_changes_read') }}
    where is_refolded
),

{% if has_moves %}
    -- every change read (of a refolded key, or of a key a row moved from)
    deduplicated as (
        select * except (is_refolded) from {{ ref('int_changes_read') }}
    ),

    moves as (
        select * from {{ ref('key_moves') }}
    ),

    touched_keys as (
        select distinct
            table_id,
            key_text
        from refolded_changes
    ),

    -- the moves whose insert is a change of a key read here (its first delivery), each
    -- with where the old key's row began: its last reset before the move, and the move
    -- into the old key that reset is, if any
    read_moves as (
        select moves.*
        from moves
        left semi join deduplicated
            on
                moves.table_id = deduplicated.table_id
                and moves.to_key_text = deduplicated.key_text
                and moves.to_order_key = deduplicated.order_key
    ),

    move_starts as (
        select
            read_moves.table_id,
            read_moves.from_key_text,
            read_moves.from_order_key,
            read_moves.to_key_text,
            read_moves.to_order_key,
            max(deduplicated.order_key) as start_order_key
        from read_moves
        left join deduplicated
            on
                read_moves.table_id = deduplicated.table_id
                and read_moves.from_key_text = deduplicated.key_text
                and read_moves.from_order_key > deduplicated.order_key
                and deduplicated.op in {{ resetting_ops }}
        group by
            read_moves.table_id,
            read_moves.from_key_text,
            read_moves.from_order_key,
            read_moves.to_key_text,
            read_moves.to_order_key
    ),

    move_parents as (
        select
            move_starts.*,
            parents.to_order_key as parent_order_key
        from move_starts
        left join read_moves as parents
            on
                move_starts.table_id = parents.table_id
                and move_starts.from_key_text = parents.to_key_text
                and move_starts.start_order_key = parents.to_order_key
    ),

    -- every move a refolded key's row inherits through, at the move into that key
    -- (`fold_anchor`), one level per move back
    lineage as (
        select
            move_parents.table_id,
            move_parents.to_key_text as key_text,
            move_parents.to_order_key as fold_anchor,
            1 as fold_level,
            move_parents.from_key_text,
            move_parents.from_order_key,
            move_parents.start_order_key,
            move_parents.parent_order_key
        from move_parents
        left semi join touched_keys
            on
                move_parents.table_id = touched_keys.table_id
                and move_parents.to_key_text = touched_keys.key_text
        union all
        select
            lineage.table_id,
            lineage.key_text,
            lineage.fold_anchor,
            lineage.fold_level + 1 as fold_level,
            move_parents.from_key_text,
            move_parents.from_order_key,
            move_parents.start_order_key,
            move_parents.parent_order_key
        from lineage
        inner join move_parents
            on
                lineage.table_id = move_parents.table_id
                and lineage.from_key_text = move_parents.to_key_text
                and lineage.parent_order_key = move_parents.to_order_key
    ),

    -- the old key's changes from its start up to the move, as changes of the new key
    inherited_changes as (
        select
            deduplicated.table_id,
            deduplicated.bucket,
            lineage.key_text,
            deduplicated.key,
            deduplicated.event_id,
            deduplicated.op,
            deduplicated.seq,
            deduplicated.order_key,
            deduplicated.commit_ts,
            deduplicated.after,
            deduplicated.after_cols,
            deduplicated.col_types,
            lineage.fold_anchor,
            lineage.fold_level
        from lineage
        inner join deduplicated
            on
                lineage.table_id = deduplicated.table_id
                and lineage.from_key_text = deduplicated.key_text
                and lineage.from_order_key > deduplicated.order_key
                and (lineage.start_order_key is null or lineage.start_order_key <= deduplicated.order_key)
    ),

    inherited_resets as (
        select
            inherited_changes.*,
            row_number() over (
                partition by table_id, key_text, fold_anchor order by fold_level desc, order_key asc
            ) = 1 as resets
        from inherited_changes
    ),

    -- the moves whose inserts inherit: they do not start the row from empty
    inheriting_inserts as (
        select distinct
            table_id,
            key_text,
            fold_anchor
        from inherited_changes
    ),

    own_changes as (
        select
            refolded_changes.*,
            refolded_changes.order_key as fold_anchor,
            0 as fold_level,
            refolded_changes.op in {{ resetting_ops }} and inheriting_inserts.fold_anchor is null as resets
        from refolded_changes
        left join inheriting_inserts
            on
                refolded_changes.table_id = inheriting_inserts.table_id
                and refolded_changes.key_text = inheriting_inserts.key_text
                and refolded_changes.order_key = inheriting_inserts.fold_anchor
    ),

    folded_changes as (
        select * from own_changes
        union all
        select * from inherited_resets
    ),
{% else %}
    folded_changes as (
        select
            refolded_changes.*,
            refolded_changes.order_key as fold_anchor,
            0 as fold_level,
            refolded_changes.op in {{ resetting_ops }} as resets
        from refolded_changes
    ),
{% endif %}

final as (
    select
        folded_changes.*,
        count(*) over (partition by table_id, key_text) as key_versions
    from folded_changes
)

select * from final
