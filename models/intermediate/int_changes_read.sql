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
-- The moves are followed by recursive CTEs, one level per move in a chain: no limit
-- (Spark stops at 100 by default); each level follows moves strictly later (or
-- earlier), so the recursion ends.
-- Dynamic partition pruning is off while this model builds: Spark 4.3 cannot plan it
-- inside a recursive CTE ("Found the unresolved operator: 'Filter dynamicpruning"),
-- and the recursions read the changelog. It pruned the changelog's tables only (the
-- refolded keys are in every bucket); a failed build leaves it off in the session
-- until the next one.
{{ config(
    pre_hook=[
        "set spark.sql.cteRecursionLevelLimit = -1",
        "set spark.sql.optimizer.dynamicPartitionPruning.enabled = false"
    ],
    post_hook="set spark.sql.optimizer.dynamicPartitionPruning.enabled = true"
) }}
-- depends_on: {{ ref('key_moves') }}
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
    moves as (
        select * from {{ ref('key_moves') }}
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
    -- ... and the keys their rows moved to, move after move (a move out of a key
    -- reached by a move counts only after that move) ...
    moved_to_keys as (
        select
            table_id,
            key_text,
            '' as since_order_key
        from directly_touched_keys
        union all
        select
            moves.table_id,
            moves.to_key_text as key_text,
            moves.to_order_key as since_order_key
        from moved_to_keys
        inner join moves
            on
                moved_to_keys.table_id = moves.table_id
                and moved_to_keys.key_text = moves.from_key_text
                and moved_to_keys.since_order_key < moves.from_order_key
    ),

    touched_keys as (
        select distinct
            table_id,
            key_text
        from moved_to_keys
    ),

    -- ... and whose changes are read: the refolded keys and the keys their rows moved
    -- from, move before move (a move into a key reached by a move counts only before it)
    moved_from_keys as (
        select
            table_id,
            key_text,
            cast(null as string) as until_order_key
        from touched_keys
        union all
        select
            moves.table_id,
            moves.from_key_text as key_text,
            moves.from_order_key as until_order_key
        from moved_from_keys
        inner join moves
            on
                moved_from_keys.table_id = moves.table_id
                and moved_from_keys.key_text = moves.to_key_text
                and (moved_from_keys.until_order_key is null or moves.to_order_key < moved_from_keys.until_order_key)
    ),

    read_keys as (  -- noqa: ST03
        select distinct
            table_id,
            key_text
        from moved_from_keys
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
