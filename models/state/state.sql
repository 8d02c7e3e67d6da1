{{ config(materialized='view') }}
-- The current row per (table, key): for every key, its row in the latest committed
-- segment of `state_segments` (cdc_resolve_segments). Deleted keys stay as
-- tombstones (is_deleted) so the marts can leave them out.
{{ cdc_resolve_segments(ref('state_segments'), ref('merge_log')) }}
