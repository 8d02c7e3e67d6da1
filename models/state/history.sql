{{ config(materialized='view') }}
-- One row per version of a row: valid_from / valid_to by order key (seq, then the
-- place of delivery), valid_from_ts / valid_to_ts by commit time, is_deleted for
-- deletes. For every key, its versions in the latest committed segment of
-- `history_segments` (cdc_resolve_segments).
{{ cdc_resolve_segments(ref('history_segments'), ref('merge_log')) }}
