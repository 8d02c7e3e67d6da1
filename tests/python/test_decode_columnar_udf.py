"""``cdc_decode`` decodes ``debezium_json`` feeds column-wise, and ``columnar: false`` does not.

* the Arrow type the columnar decoder builds is the UDF's return type (Spark's parse
  of ``DECODE_RESULT_DDL``);
* :func:`udfs.spark_udfs.decode_array` (the pure function behind ``cdc_decode``) merges
  the columnar feed's results with other feeds' rows in row order;
* through Spark (the registered UDF in SQL): the same Debezium records decoded with
  ``columnar`` true and false give identical results, equal to ``decode_records``: the
  workload (TOAST placeholders, key changes as delete + insert, deletes, Kafka Connect
  logical types) with hostile records in the same batches, so both the columnar rows
  and the fallback rows run;
* the feed option ``columnar`` is validated with the other Debezium options.
"""

from __future__ import annotations

import json
import random
from typing import Any

import pyarrow as pa
import pytest

from udfs.config import ConfigError, load_config
from udfs.decode import DECODE_RESULT_DDL, decode_records
from udfs.formats import FORMATS
from udfs.formats import debezium_json_columnar as col
from udfs.spark_udfs import columnar_feed, decode_array


def _workload_texts(seed: int = 5, events: int = 400) -> tuple[list[str], dict[str, Any]]:
    from bench.data import workload

    wl = workload()
    # half with logical types: Decimal / MicroTimestamp, base64 TOAST placeholders
    return wl.mixed_debezium_lines(seed, events, ascii_fraction=0.3), wl.debezium_table_options()


def _envelope(op: str, before: Any, after: Any, table: str = "t", **source: Any) -> dict[str, Any]:
    src = {
        "version": "2.5.0.Final",
        "connector": "postgresql",
        "name": "srv",
        "ts_ms": 1700000000000,
        "snapshot": "false",
        "db": "db",
        "schema": "public",
        "table": table,
        "txId": 7,
        "lsn": 123456,
        **source,
    }
    return {"before": before, "after": after, "source": src, "op": op, "ts_ms": 1700000000123}


def _hostile() -> list[str | None]:
    """Records the columnar path hands to ``decode_records`` (or builds directly)."""
    date_schema = {
        "type": "struct",
        "fields": [
            {
                "type": "struct",
                "optional": True,
                "field": f,
                "fields": [
                    {"type": "int32", "optional": False, "field": "id"},
                    {"type": "int32", "optional": True, "name": "io.debezium.time.Date", "field": "d"},
                ],
            }
            for f in ("before", "after")
        ],
    }
    return [
        None,  # a tombstone (null value)
        "null",
        "{not json",
        "[1, 2]",
        '{"payload": 3}',
        json.dumps({"schema": None, "payload": None}),
        json.dumps(_envelope("u", {"id": 1, "v": "a"}, {"id": 2, "v": "b"})),  # the key changes
        json.dumps(_envelope("d", {"id": 3, "v": "__debezium_unavailable_value"}, None)),
        json.dumps(_envelope("t", None, None)),  # truncate
        json.dumps(_envelope("m", None, None)),  # message: skipped
        json.dumps(_envelope("x", None, {"id": 1})),  # unknown op
        json.dumps(_envelope("c", None, {"id": 4, "nested": {"a": [1, 2]}})),
        json.dumps(_envelope("c", None, {"v": "no key column"})),
        json.dumps(_envelope("c", None, {"id": 5, "ID": 6})),  # a column twice
        json.dumps({"schema": date_schema, "payload": _envelope("c", None, {"id": 6, "d": 19000})}),
        json.dumps({"id": 7, "v": "flattened row"}),  # no envelope, no `table` option
        json.dumps(_envelope("c", None, {"id": 8, "v": "x" * 10}, table="t" * 300)),  # table name too long
        json.dumps(_envelope("c", None, {"id": 9, "v": "\ud800 lone surrogate"})),
        '{"before": null, "after": {"id": 10}, "source": {"table": "t"}, "op": "c", "op": "c"}',
    ]


def _options(tables: dict[str, Any], **options: Any) -> str:
    return json.dumps(
        {"format": "debezium_json", "framing": "lines", "options": options, "tables": tables}, sort_keys=True
    )


def _batch() -> tuple[list[str | None], dict[str, Any]]:
    from bench.columnar_decode import typed_envelopes

    texts, tables = _workload_texts()
    tables["t"] = {"key": ["id"]}
    tables["typed"] = {"key": ["id"]}  # dates, times and numerics of PostgreSQL
    hostile = _hostile()
    typed = typed_envelopes(0, 300).splitlines()
    mixed: list[str | None] = []
    for i, text in enumerate(texts):  # the hostile and typed records spread through the batch
        mixed.append(text)
        if i % 20 == 0:
            mixed.append(hostile[(i // 20) % len(hostile)])
        if i % 5 == 0 and typed:
            mixed.append(typed.pop())
    return mixed + hostile + typed, tables


def test_columnar_type_is_the_udf_return_type(spark) -> None:
    from udfs.spark_udfs import arrow_type

    assert col.DECODE_TYPE == arrow_type(DECODE_RESULT_DDL)


def test_columnar_option_routes_the_feed() -> None:
    tables = {"t": {"key": ["id"]}}
    assert columnar_feed(_options(tables)) is col.decode_debezium_columnar
    assert columnar_feed(_options(tables, columnar=True)) is col.decode_debezium_columnar
    assert columnar_feed(_options(tables, columnar=False)) is None
    assert not columnar_feed(_options(tables, columnar="no"))  # bad options: decode_records quarantines
    avro = columnar_feed(json.dumps({"format": "dts_avro", "tables": tables}))  # another format: its own
    assert avro is not None and avro.__name__ == "decode_dts_avro_columnar"
    assert not columnar_feed(json.dumps({"format": "dts_avro", "options": {"columnar": False}, "tables": tables}))
    assert not columnar_feed("{not json")
    assert not columnar_feed("{}")


def test_decode_array_merges_feeds_in_row_order() -> None:
    """Rows of a columnar feed, of the same feed with ``columnar: false``, of another
    format and with no options, interleaved: each row gets ``decode_records``' result."""
    texts, tables = _batch()
    texts = texts[:200]
    feeds = [
        _options(tables),
        _options(tables, columnar=False),
        json.dumps({"format": "dts_avro", "tables": tables}, sort_keys=True),
        None,
        "",
        _options(tables, columnar="yes"),
    ]
    rng = random.Random(1)
    opts = [feeds[0] if rng.random() < 0.6 else rng.choice(feeds) for _ in texts]
    n = len(texts)
    got = decode_array(
        pa.array(opts, pa.string()),
        pa.array(texts, pa.string()),
        pa.nulls(n, pa.string()),
        pa.array(["f"] * n, pa.string()),
        pa.nulls(n, pa.list_(pa.string())),
        col.DECODE_TYPE,
    )
    want = pa.array(
        [decode_records(o or "{}", [t], [None], ["f"], [None])[0] for o, t in zip(opts, texts, strict=True)],
        type=col.DECODE_TYPE,
    )
    assert got.type == want.type
    bad = [i for i in range(n) if not got[i].equals(want[i])]
    assert not bad, [(opts[i], texts[i], got[i].as_py(), want[i].as_py()) for i in bad[:2]]
    # one feed alone: the columnar result as is
    one = decode_array(
        pa.array([feeds[0]] * n, pa.string()),
        pa.array(texts, pa.string()),
        pa.nulls(n, pa.string()),
        pa.nulls(n, pa.string()),
        pa.nulls(n, pa.list_(pa.string())),
        col.DECODE_TYPE,
    )
    assert one.equals(pa.array(decode_records(feeds[0], texts), type=col.DECODE_TYPE))
    assert (
        len(decode_array(*(pa.array([], pa.string()),) * 4, pa.array([], pa.list_(pa.string())), col.DECODE_TYPE)) == 0
    )


def test_batch_runs_both_columnar_and_fallback_rows() -> None:
    texts, tables = _batch()
    col.decode_debezium_columnar(_options(tables), pa.array(texts, pa.string()))
    stats = dict(col.LAST_STATS)
    assert "columnar_error" not in stats, stats
    assert stats["fallback"] >= len(_hostile()) - 2, stats  # the tombstones are built directly
    assert stats["fast"] > len(texts) // 2, stats


def test_spark_udf_columnar_true_and_false_give_the_same_results(spark) -> None:
    """The registered ``cdc_decode`` in SQL, on the same records with both options."""
    texts, tables = _batch()
    on, off = _options(tables), _options(tables, columnar=False)
    keys: list[str | None] = [None] * len(texts)
    rows = []
    for i, (t, k) in enumerate(zip(texts, keys, strict=True)):
        rows.append((i, on, t, k, f"file-{i // 100}", None))
        rows.append((i, off, t, k, f"file-{i // 100}", None))
    schema = "i int, options string, text string, kafka_key string, source_file string, header array<string>"
    spark.createDataFrame(rows, schema).createOrReplaceTempView("columnar_udf_input")
    # several Arrow batches (maxRecordsPerBatch 2000) and partitions, each feed alone in some
    result = spark.sql(
        "select i, options, to_json(cdc_decode(options, text, kafka_key, source_file, header)) as r "
        "from (select * from columnar_udf_input distribute by options, i % 3)"
    ).collect()
    by_opts: dict[str, dict[int, str]] = {on: {}, off: {}}
    for row in result:
        by_opts[row["options"]][row["i"]] = row["r"]
    assert len(by_opts[on]) == len(by_opts[off]) == len(texts)
    differ = [i for i in range(len(texts)) if by_opts[on][i] != by_opts[off][i]]
    assert not differ, [(texts[i], by_opts[on][i], by_opts[off][i]) for i in differ[:2]]
    decoded = [json.loads(by_opts[on][i]) for i in range(len(texts))]
    statuses = {d["status"] for d in decoded}
    assert statuses == {"ok", "skipped", "quarantined"}, statuses
    changes = [c for d in decoded if d.get("changes") for c in d["changes"]]
    ops = {c["op"] for c in changes}
    assert {"insert", "update", "delete", "snapshot", "truncate"} <= ops, ops
    assert any("__debezium_unavailable_value" in t for t in texts if t)
    assert any(c.get("col_types") for c in changes), "logical types"
    assert any((c.get("col_types") or {}).get("born") == "date" for c in changes), "the typed table"
    assert any(len(d["changes"]) == 2 for d in decoded if d.get("changes")), "an update that changes the key"
    # and both equal decode_records, record by record
    want = decode_records(off, texts, keys, [f"file-{i // 100}" for i in range(len(texts))], [None] * len(texts))
    ref = spark.createDataFrame(
        [(i, json.dumps(w)) for i, w in enumerate(want)], "i int, w string"
    )  # through Spark's JSON too, so the texts compare
    ref.createOrReplaceTempView("columnar_udf_ref")
    ref_json = {
        r["i"]: r["r"]
        for r in spark.sql(
            f"select i, to_json(from_json(w, '{DECODE_RESULT_DDL}')) as r from columnar_udf_ref"
        ).collect()
    }
    differ = [i for i in range(len(texts)) if ref_json[i] != by_opts[on][i]]
    assert not differ, [(texts[i], ref_json[i], by_opts[on][i]) for i in differ[:2]]


#: every format with a columnar decoder (the others decode record by record)
COLUMNAR_FORMATS = sorted(name for name, decoder in FORMATS.items() if decoder.columnar_decoder)


def _config(tmp_path, options: dict[str, Any], fmt: str = "debezium_json"):
    (tmp_path / "landing").mkdir(exist_ok=True)
    cfg = {
        "feeds": [{"name": "pg", "format": fmt, "path": "landing", "options": options}],
        "tables": {"t": {"key": ["id"]}},
    }
    path = tmp_path / "cdc.yml"
    path.write_text(json.dumps(cfg))  # JSON is YAML
    return path


def test_columnar_formats() -> None:
    """The formats decoded column-wise by default (a new one joins the tests below): all."""
    expected = {"arcion_internal_json", "arcion_kafka_json", "canal_json", "cdl_json", "debezium_json"}
    expected |= {"dts_canal_json", "dts_shareplex_json", "lindorm_json", "dts_avro", "arcion_internal_csv"}
    assert set(COLUMNAR_FORMATS) == expected == set(FORMATS), COLUMNAR_FORMATS
    for fmt in COLUMNAR_FORMATS:
        assert "columnar" in FORMATS[fmt].option_names, fmt  # cdc.yml accepts the option


@pytest.mark.parametrize("fmt", COLUMNAR_FORMATS)
@pytest.mark.parametrize("value", [True, False])
def test_config_accepts_columnar_true_and_false(tmp_path, value: bool, fmt: str) -> None:
    config = load_config(_config(tmp_path, {"columnar": value}, fmt))
    options = config.decoder_options(config.feeds[0])
    assert options["options"] == {"columnar": value}
    decode = columnar_feed(json.dumps(options, sort_keys=True))
    assert (decode is not None) is value
    if value:
        module, _, function = FORMATS[fmt].columnar_decoder.partition(":")
        assert decode.__module__ == module and decode.__name__ == function


@pytest.mark.parametrize("fmt", COLUMNAR_FORMATS)
@pytest.mark.parametrize("value", ["false", "yes", 0, 1, None, [True]])
def test_config_rejects_a_columnar_that_is_not_a_boolean(tmp_path, value: Any, fmt: str) -> None:
    with pytest.raises(
        ConfigError, match=rf"feed 'pg': bad options for format {fmt}: .*columnar must be true or false"
    ):
        load_config(_config(tmp_path, {"columnar": value}, fmt))
