{{ config(materialized='view', post_hook="{{ cdc_drop_old_segments('state_segments') }}") }}
-- The current row per (table, key): for every key, its row in the latest committed
-- segment of `state_segments` (cdc_resolve_segments). Deleted keys stay as
-- tombstones (is_deleted) so the marts can leave them out. Recreated by every merge:
-- it names the live segments.
{{ cdc_resolve_segments(ref('state_segments'), ref('merge_log')) }}
