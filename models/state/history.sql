{{ config(partition_by=['table_id', 'bucket']) }}
-- One row per version of a row: valid_from / valid_to by order key (seq, then the
-- place of delivery), valid_from_ts / valid_to_ts by commit time, is_deleted for
-- deletes. Only the buckets the run touched are rewritten.
with

versions as (
    select * from {{ ref('int_row_versions_refolded') }}
),

final as (
    select
        table_id,
        key_text,
        key,
        version_no,
        event_id,
        op,
        is_deleted,
        row,
        seq,
        valid_from_seq,
        valid_to_seq,
        valid_from,
        valid_to,
        valid_from_ts,
        valid_to_ts,
        is_current,
        bucket
    from versions
)

select * from final
