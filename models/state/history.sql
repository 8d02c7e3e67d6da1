{{ config(materialized='view', post_hook="{{ cdc_drop_old_segments('history_segments') }}") }}
-- One row per version of a row: valid_from / valid_to by order key (seq, then the
-- place of delivery), valid_from_ts / valid_to_ts by commit time, is_deleted for
-- deletes. For every key, its versions in the latest committed segment of
-- `history_segments` (cdc_resolve_segments). Recreated by every merge: it names the
-- live segments.
{{ cdc_resolve_segments(ref('history_segments'), ref('merge_log')) }}
