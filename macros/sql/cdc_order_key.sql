{#
    The total order of changes of one key: the format's own position (`seq`), then
    the Kafka offset, then the file and the place in the file. Timestamps never order
    changes (same-millisecond events are common); file order breaks ties only where
    the format gives no position (e.g. snapshot rows sharing one binlog position).
    All parts are fixed-width text, so comparing the texts compares the tuples.
    A change without a position (`seq` null) sorts after every change with one: an
    event whose position could not be read is taken as the latest. Decoders give rows
    that precede all positions (Arcion Kafka snapshot rows) the lowest position.
#}
{% macro cdc_order_key(seq='seq', kafka_offset='kafka_offset', source_file='source_file',
                       record_index='record_index', row_index='row_index') %}
    concat_ws('|',
        coalesce({{ seq }}, ''),
        coalesce(lpad(cast({{ kafka_offset }} as string), 20, '0'), ''),
        {{ source_file }},
        lpad(cast({{ record_index }} as string), 12, '0'),
        lpad(cast({{ row_index }} as string), 6, '0'))
{% endmacro %}
