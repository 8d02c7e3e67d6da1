{{ config(incremental_strategy='append') }}
-- The columns and the declared types of the state's rows, as merges wrote them: what
-- `mart_columns` builds the mart views from, so that a run reads the rows its merge
-- refolded rather than every row of the state. One row per (table_id, column_name,
-- logical_type) not seen before:
--   * column_name null: the table has rows;
--   * logical_type null: a row holds the column (in `row`);
--   * otherwise: a row declares that type for the column (in `col_types`).
-- Written before `merge_log` commits the merge, so a run that dies after its merge
-- has already recorded its columns; a merge that died and is redone may add the same
-- columns again (never fewer). A column stays once seen, and a type only widens,
-- also after the rows holding them are deleted. Its first build (a new warehouse, an
-- upgrade, `--full-refresh`) reads every committed row of the state.
{% set merge_log = cdc_existing_relation('merge_log') %}

with

-- the current rows this merge refolded, in its segment (every key in a 'full' merge)
refolded_rows as (
    select segments.* except (segment)
    from {{ ref('state_segments') }} as segments
    left semi join {{ ref('int_changes_to_refold') }} as refolded
        on
            segments.table_id = refolded.table_id
            and segments.key_text = refolded.key_text
    where segments.segment = {{ cdc_string_literal(invocation_id) }}
),

rows_written as (
    {% if is_incremental() %}
        select * from refolded_rows
    {% else %}
        -- every committed row, and this merge's (not committed yet)
        select * from refolded_rows
        union all
        select * from ({{ cdc_resolve_segments(ref('state_segments'), merge_log) }}) as committed_rows
    {% endif %}
),

-- one pass over the rows: the table, each column a row holds, each declared type
observed as (
    select distinct
        table_id,
        observation.column_name,
        observation.logical_type
    from rows_written
        lateral view explode(
            concat(
                array(named_struct('column_name', cast(null as string), 'logical_type', cast(null as string))),
                transform(
                    map_keys(coalesce(row, cast(map() as map<string, string>))),  -- noqa: LT01
                    column_name -> named_struct('column_name', column_name, 'logical_type', cast(null as string))
                ),
                transform(
                    map_entries(map_filter(coalesce(col_types, cast(map() as map<string, string>)), (k, v) -> v is not null)),  -- noqa: LT01
                    declared -> named_struct('column_name', declared.key, 'logical_type', declared.value)
                )
            )
        ) observations as observation
),

final as (
    select observed.*
    from observed
    {% if is_incremental() %}
        left anti join {{ this }} as seen
            on
                observed.table_id = seen.table_id
                and observed.column_name <=> seen.column_name
                and observed.logical_type <=> seen.logical_type
    {% endif %}
)

select * from final
