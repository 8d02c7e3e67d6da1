-- Possible gaps in Arcion feeds: events whose cumulative `operationcount` does not
-- advance by exactly one from the event before, per feed and table.
--
-- What the check assumes:
-- * One Arcion extractor per table writes the events of a feed; its `operationcount`
--   (insertCount + updateCount + deleteCount + replaceCount) is cumulative and counts
--   this event too, so consecutive events of one table advance the total by one.
--   The Arcion decoders keep the counts in the changelog's `extras` (`insert_count`,
--   `update_count`, `delete_count`, `replace_count`, as text); rows without any of
--   them (Arcion's Kafka format) and rows of formats not named `arcion...` are not
--   checked.
-- * Events are ordered as the merge orders them, by the changelog's `order_key`:
--   `seq` (the Arcion cursor: binlog file number + position + logSeqNum, or dscId +
--   mutId), then where the event was read. An event without a usable cursor (no
--   `seq`) sorts after every positioned event of its table, in reading order; if that
--   is not where it happened, its count shows up here as a gap.
-- * One event is one Arcion record: the two rows of a key-changing update count once,
--   and the same record delivered twice (same cursor text) counts once.
-- * The first event of a feed and table is never a gap (nothing is known before it).
-- * Events that are not in the changelog (quarantined records) look like gaps: the
--   quarantine says why they are missing.
-- A row names the two neighbouring events; `missing_events` is how many totals were
-- skipped (0 or less: the total repeated or went back).
with

changelog as (
    select * from {{ ref('changelog') }}
),

counted as (
    select
        feed,
        table_id,
        seq,
        order_key,
        source_file,
        record_index,
        coalesce(extras['cursor'], concat(source_file, '#', cast(record_index as string))) as event_identity,
        coalesce(try_cast(extras['insert_count'] as bigint), 0)
        + coalesce(try_cast(extras['update_count'] as bigint), 0)
        + coalesce(try_cast(extras['delete_count'] as bigint), 0)
        + coalesce(try_cast(extras['replace_count'] as bigint), 0) as total
    from changelog
    where
        -- the Arcion formats' rows only: the changelog's other row groups are skipped
        -- by their `format` statistics instead of having their `extras` read every run
        format like 'arcion%'
        and (
            extras['insert_count'] is not null
            or extras['update_count'] is not null
            or extras['delete_count'] is not null
            or extras['replace_count'] is not null
        )
),

events as (
    select
        feed,
        table_id,
        total,
        min(order_key) as order_key,
        min_by(seq, order_key) as seq,
        min_by(source_file, order_key) as source_file,
        min_by(record_index, order_key) as record_index
    from counted
    group by feed, table_id, event_identity, total
),

sequenced as (
    select
        events.*,
        lag(struct(events.seq, events.source_file, events.record_index, events.total)) over (
            partition by events.feed, events.table_id order by events.order_key
        ) as previous
    from events
),

final as (
    select
        feed,
        table_id,
        previous.seq as previous_seq,
        previous.source_file as previous_source_file,
        previous.record_index as previous_record_index,
        previous.total as previous_total,
        seq,
        source_file,
        record_index,
        total,
        total - previous.total - 1 as missing_events
    from sequenced
    where previous is not null and total != previous.total + 1
)

select * from final
