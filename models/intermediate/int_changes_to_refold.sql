-- The changes the merge refolds, once per key and event, with `key_versions` (the
-- changes of the key): every change of the keys that pending changes touch (every
-- key of a truncated table), or every change of every key when the merge starts a
-- new base (`cdc_merge_plan` is 'full'). Pending (`int_pending_changes`) = appended after the last
-- completed merge; a merge that died is simply redone.
-- A table of its own so that the refold's two paths and its copy of the untouched
-- keys each read it with a plain filter, instead of planning these steps again in
-- every branch of one query.
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

with

changelog as (
    select * from {{ ref('changelog') }}
),

pending as (
    select * from {{ ref('int_pending_changes') }}
),

-- the keys to refold: those with pending changes, and every key of a truncated table
-- (unused when every key is refolded)
touched_keys as (  -- noqa: ST03
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

keyed_changes as (
    select changelog.*
    from changelog
    {% if refold_every_key %}
        where changelog.key_text is not null
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
        count(*) over (partition by table_id, key_text) as key_versions
    from deduplicated
)

select * from final
