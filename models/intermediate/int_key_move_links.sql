-- Every key move (`key_moves`) with its links to one later and one earlier move, so
-- that the merge's recursions over the moves (`int_changes_read`) join a plain table
-- at each level, instead of planning these joins again at every level:
-- * the next move: the first move out of the new key after this move (a later move
--   out of it carries a row the key got afresh, from an insert or another move);
-- * the previous move: the latest move into the old key before this move (its last
--   reset before the move, if that reset is a move).
-- A small table, rebuilt each run from the moves only.

with

moves as (
    select * from {{ ref('key_moves') }}
),

next_moves as (
    select
        moves.table_id,
        moves.to_key_text,
        moves.to_order_key,
        min(later_moves.from_order_key) as next_from_order_key
    from moves
    inner join moves as later_moves
        on
            moves.table_id = later_moves.table_id
            and moves.to_key_text = later_moves.from_key_text
            and moves.to_order_key < later_moves.from_order_key
    group by moves.table_id, moves.to_key_text, moves.to_order_key
),

previous_moves as (
    select
        moves.table_id,
        moves.to_key_text,
        moves.to_order_key,
        max(earlier_moves.to_order_key) as previous_to_order_key
    from moves
    inner join moves as earlier_moves
        on
            moves.table_id = earlier_moves.table_id
            and moves.from_key_text = earlier_moves.to_key_text
            and moves.from_order_key > earlier_moves.to_order_key
    group by moves.table_id, moves.to_key_text, moves.to_order_key
),

final as (
    select
        moves.table_id,
        moves.from_key_text,
        moves.from_order_key,
        moves.to_key_text,
        moves.to_order_key,
        next_moves.next_from_order_key,
        previous_moves.previous_to_order_key
    from moves
    left join next_moves
        on
            moves.table_id = next_moves.table_id
            and moves.to_key_text = next_moves.to_key_text
            and moves.to_order_key = next_moves.to_order_key
    left join previous_moves
        on
            moves.table_id = previous_moves.table_id
            and moves.to_key_text = previous_moves.to_key_text
            and moves.to_order_key = previous_moves.to_order_key
)

select * from final
