-- Every primary-key change in the changelog (a "move"): the delete of the old key and
-- the insert of the new key that the decoding wrote for one change, as adjacent rows
-- (row_index n and n + 1) of one record with the same seq. The merge moves the row:
-- the new key's row is the old key's row just before the move, overlaid with what the
-- change provides (an after image without every column, e.g. Arcion's exists 0 or a
-- TOAST placeholder, keeps the rest). A small table that grows with the moves only:
-- the merge reads it to find which keys inherit from which.
-- Each run adds the moves of the changes appended since the last completed merge (the
-- rows a merge that died left are pending again), except those already here.
{% set merge_log = cdc_existing_relation('merge_log') %}

with

changelog as (
    select * from {{ ref('changelog') }}
),

moved_rows as (
    select
        feed,
        table_id,
        source_file,
        record_index,
        row_index,
        seq,
        op,
        key_text,
        order_key
    from changelog
    where
        op in ('delete', 'insert')
        and key_text is not null
    {% if is_incremental() and merge_log is not none %}
        and loaded_at > (select coalesce(max(merged_through), timestamp '1970-01-01') from {{ merge_log }})
    {% endif %}
),

moves as (
    select
        deletes.table_id,
        deletes.key_text as from_key_text,
        deletes.order_key as from_order_key,
        inserts.key_text as to_key_text,
        inserts.order_key as to_order_key
    from moved_rows as deletes
    inner join moved_rows as inserts
        on
            deletes.feed = inserts.feed
            and deletes.source_file = inserts.source_file
            and deletes.record_index = inserts.record_index
            and deletes.row_index + 1 = inserts.row_index
            and deletes.table_id = inserts.table_id
            and deletes.seq <=> inserts.seq
    where
        deletes.op = 'delete'
        and inserts.op = 'insert'
        and deletes.key_text != inserts.key_text
),

final as (
    select moves.*
    from moves
    {% if is_incremental() %}
        left anti join {{ this }} as registered
            on
                moves.table_id = registered.table_id
                and moves.to_key_text = registered.to_key_text
                and moves.to_order_key = registered.to_order_key
    {% endif %}
)

select * from final
