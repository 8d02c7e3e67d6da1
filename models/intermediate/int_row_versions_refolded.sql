-- Every version of every key in the state buckets that pending changes touch,
-- refolded from the changelog in `order_key` order. Pending = appended after the
-- last completed merge (`merge_log`); a merge that died is simply redone.
-- Refolding whole buckets from the changelog makes late, duplicated and reordered
-- events land exactly where they belong, and restores a bucket a crash lost.
{% set merge_log = cdc_existing_relation('merge_log') %}
{% set resetting_ops = "('insert', 'snapshot', 'delete', 'truncate')" %}

with

changelog as (
    select * from {{ ref('changelog') }}
),

pending as (
    select
        table_id,
        bucket,
        op
    from changelog
    {% if merge_log is not none %}
        where loaded_at > (select coalesce(max(merged_through), timestamp '1970-01-01') from {{ merge_log }})
    {% endif %}
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

keyed_changes as (
    select changelog.*
    from changelog
    left semi join touched
        on
            changelog.table_id = touched.table_id
            and changelog.bucket = touched.bucket
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
    select * from numbered_deliveries
    where delivery_no = 1
),

windowed as (
    select
        deduplicated.*,
        collect_list(named_struct(
            'resets', op in {{ resetting_ops }},
            'image', after,
            'cols', after_cols
        )) over upto_here as changes_so_far,
        collect_list(named_struct(
            'resets', false,
            'image', col_types,
            'cols', map_keys(col_types)
        )) over upto_here as types_so_far,
        lead(order_key) over by_order as next_order_key,
        lead(seq) over by_order as next_seq,
        lead(commit_ts) over by_order as next_commit_ts,
        row_number() over by_order as version_no
    from deduplicated
    window
        by_order as (partition by table_id, key_text order by order_key),
        upto_here as (
            partition by table_id, key_text order by order_key
            rows between unbounded preceding and current row
        )
),

final as (
    select
        table_id,
        key_text,
        key,
        version_no,
        event_id,
        op,
        op in ('delete', 'truncate') as is_deleted,
        case when op not in ('delete', 'truncate') then {{ cdc_fold_images('changes_so_far') }} end as row,
        {{ cdc_fold_images('types_so_far') }} as col_types,
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
    from windowed
)

select * from final
