{#
    Fold a key's ordered changes into the row image after the last of them.

    Arguments:
        changes: an array<struct<resets boolean, image map<string,string>,
                 cols array<string>>> in change order.

    Each change sets the columns it provides (`cols`) and keeps the others;
    a change that `resets` (insert, snapshot, delete, truncate) starts from an empty
    row. A provided column whose value is null sets NULL; a column absent from `cols`
    is never read from `image`, so "not provided" and "set to NULL" stay apart.
#}
{% macro cdc_fold_images(changes) %}
    aggregate(
        {{ changes }},
        cast(map() as map<string, string>),
        (acc, x) -> map_concat(
            case
                when x.resets then cast(map() as map<string, string>)
                else map_filter(acc, (k, v) -> not array_contains(coalesce(x.cols, array()), k))
            end,
            map_filter(coalesce(x.image, cast(map() as map<string, string>)),
                       (k, v) -> array_contains(coalesce(x.cols, array()), k))
        )
    )
{% endmacro %}
