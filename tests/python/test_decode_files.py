"""``cdc_decode_files`` (each landing file read and decoded in one call, what
``stg_landing__records`` runs) gives what ``cdc_read_records`` exploded into
``cdc_decode`` gave, record by record.

* pure, no Spark: :func:`udfs.spark_udfs.decode_files_array` against the plain
  formulation (``read_records``: one dict per record, then ``decode_records`` of each
  record with its file and header), Arrow-equal. The files: Debezium JSON lines decoded
  column-wise and with ``columnar: false`` (workload events with invalid JSON, an
  envelope without ``op`` and a line that is not UTF-8 among them), Arcion CSV with a
  header row and the table taken from the file's path, Kafka dumps as parquet (Debezium
  text values with keys and a tombstone, DTS Avro binary values, and a parquet file
  that is not a Kafka dump), the same envelopes as ``kcat`` lines, DTS Avro values
  ``length_prefixed`` (a truncated one last), pretty-printed ``documents`` (a value
  cut short last), an empty file and a null path;
* the raw record comes out only for a quarantined record (a framing error or a
  ``quarantined`` result), base64 where the bytes are not UTF-8, and a framing error
  has no result;
* a file whose records hold more text than an Arrow string column can is one
  quarantined record that says so (the limit lowered for the test);
* through Spark: the registered function in SQL against the two functions composed in
  SQL; the Arrow types are Spark's parse of the DDL;
* ``cdc_decode_records`` (the table function the models run): the same records as
  ``decode_files_array``, one row each with its file, in batches of the chunk size
  (a file's last: the rest) that never span two files, with every framing but
  ``kafka_parquet`` read in blocks of 100 bytes and of the default size
  (pure), and in SQL over ``TABLE(...)``. The blocks themselves:
  ``test_lines_blocks.py``, ``test_csv_blocks.py``, ``test_documents_blocks.py``,
  ``test_length_prefixed_framing.py``.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from udfs.decode import decode_records
from udfs.spark_udfs import (
    DECODE_CHUNK,
    DECODED_RECORDS_DDL,
    DECODED_RECORDS_TYPE,
    FILE_BLOCK_BYTES,
    RECORDS_DDL,
    RECORDS_TYPE,
    decode_files_array,
    decode_record_batches,
    read_records,
)

CURSOR = '"{""extractorId"":0,""timestamp"":1,""extractionTimestamp"":2,""log"":""b.000010"",""position"":%d,""v"":2}"'


def _debezium_lines(seed: int = 11, events: int = 300) -> tuple[bytes, dict[str, Any]]:
    from bench.data import workload

    wl = workload()
    lines = [text.encode() for text in wl.mixed_debezium_lines(seed, events, ascii_fraction=0.3)]
    lines[7:7] = [b"not json", b'{"before": null, "after": {"id": 1}}', b"\xff\xfe not utf-8", b"   "]
    return b"\n".join(lines) + b"\n", wl.debezium_table_options()


def _options(fmt: str, framing: str, options: dict[str, Any], tables: dict[str, Any]) -> str:
    return json.dumps({"format": fmt, "framing": framing, "options": options, "tables": tables}, sort_keys=True)


def _kafka_dump(values: list[bytes | None], keys: list[bytes | None] | None = None, **columns: pa.Array) -> bytes:
    """A parquet Kafka dump (Spark's Kafka source layout) of ``values``."""
    import io

    import pyarrow.parquet as pq

    n = len(values)
    table = {
        "key": pa.array(keys or [None] * n, pa.binary()),
        "value": pa.array(values, pa.binary()),
        "topic": pa.array(["shop"] * n),
        "partition": pa.array([3] * n, pa.int32()),
        "offset": pa.array(range(100, 100 + n), pa.int64()),
        "timestamp": pa.array([2176914361503 + i for i in range(n)], pa.timestamp("ms", tz="UTC")),
    }
    table.update(columns)
    out = io.BytesIO()
    pq.write_table(pa.table(table), out)
    return out.getvalue()


def _avro_insert(i: int) -> bytes:
    from udfs.formats.dts_avro import encode_record, typed

    return encode_record(
        {
            "version": 1,
            "id": i,
            "sourceTimestamp": 1600161894,
            "sourcePosition": f"{i}@mysql-bin.000003",
            "sourceTxid": str(i),
            "source": {"sourceType": "MySQL", "version": "5.7"},
            "operation": "INSERT",
            "objectName": "shop.orders",
            "fields": [{"name": "id", "dataTypeNumber": 0}],
            "beforeImages": None,
            "afterImages": [typed("Integer", {"precision": 8, "value": str(i)})],
        }
    )


@pytest.fixture(scope="module")
def landing(tmp_path_factory) -> tuple[list[str | None], list[str | None], list[str | None]]:
    """(paths, framings, options) of the test's files, one row per file."""
    root: Path = tmp_path_factory.mktemp("landing")
    content, tables = _debezium_lines()
    (root / "dbz.json").write_bytes(content)
    (root / "empty.json").write_bytes(b"")
    (root / "region").mkdir()
    (root / "region" / "part-0001.csv").write_text('r_regionkey,r_name,r_comment\n0,AFRICA,"lar, deposits"\n1,A,NULL\n')
    (root / "region" / "part-0002.csv").write_text(
        "r_regionkey_NEW,r_regionkey_OLD,r_regionkey_EXISTS,r_name_NEW,r_name_OLD,r_name_EXISTS,"
        "r_comment_NEW,r_comment_OLD,r_comment_EXISTS,op,cursor,operationcount\n"
        f'NULL,1,2,NULL,NULL,0,"new ""comment""",NULL,1,U,{CURSOR % 500},x\n'
        "1,2\n"
    )
    # a Kafka dump of the same envelopes: keys, a tombstone, a value that is not UTF-8
    lines = content.split(b"\n")[:40]
    (root / "dbz.parquet").write_bytes(_kafka_dump([*lines, None], [b'{"id":1}', b"\xff", *[None] * 39]))
    kcat = [
        json.dumps({"topic": "shop", "partition": 0, "offset": i, "ts": 2176914361503, "payload": line.decode()})
        for i, line in enumerate(lines)
        if b"\xff" not in line
    ]
    (root / "dbz.kcat").write_text("\n".join(kcat) + "\n")
    (root / "not_a_dump.parquet").write_bytes(_kafka_dump([b"{}"], [None], offset=pa.array(["7"])))
    (root / "avro.parquet").write_bytes(_kafka_dump([_avro_insert(1), b"\x00\xff", None, _avro_insert(2)]))
    # the Avro values length-prefixed, a length running past the end of the file last
    prefixed = b"".join(len(v).to_bytes(4, "big") + v for v in (_avro_insert(3), b"\x00\xff", _avro_insert(4)))
    (root / "avro.bin").write_bytes(prefixed + (500).to_bytes(4, "big") + b"cut")
    # the first envelopes pretty-printed one after another, a value cut short last
    pretty = [json.dumps(json.loads(line), indent=2, ensure_ascii=False) for line in lines[:20] if _is_json(line)]
    (root / "dbz.pretty.json").write_text("\n".join(pretty) + '\n{"op": "c", "after": {"id"')
    dbz = _options("debezium_json", "lines", {}, tables)
    dbz_rows = _options("debezium_json", "lines", {"columnar": False}, tables)
    dbz_kafka = _options("debezium_json", "kafka_parquet", {}, tables)
    avro = _options("dts_avro", "kafka_parquet", {}, {"shop.orders": {"key": ["id"]}})
    csv = _options(
        "arcion_internal_csv",
        "csv",
        {"header": True, "table_from_path": r"/(?P<table>[a-z_]+)/[^/]+\.csv$"},
        {"region": {"key": ["r_regionkey"]}},
    )
    rows = [
        (str(root / "dbz.json"), "lines", dbz),
        (str(root / "region" / "part-0001.csv"), "csv", csv),
        (None, "lines", dbz),
        (str(root / "dbz.json"), "lines", dbz_rows),
        (str(root / "empty.json"), "lines", dbz),
        (str(root / "region" / "part-0002.csv"), "csv", csv),
        (str(root / "dbz.parquet"), "kafka_parquet", dbz_kafka),
        (str(root / "not_a_dump.parquet"), "kafka_parquet", dbz_kafka),
        (str(root / "avro.parquet"), "kafka_parquet", avro),
        (str(root / "dbz.kcat"), "kcat", _options("debezium_json", "kcat", {}, tables)),
        (str(root / "avro.bin"), "length_prefixed", avro),
        (str(root / "dbz.pretty.json"), "documents", _options("debezium_json", "documents", {}, tables)),
    ]
    return [r[0] for r in rows], [r[1] for r in rows], [r[2] for r in rows]


def _is_json(line: bytes) -> bool:
    try:
        json.loads(line)
    except ValueError:
        return False
    return True


def _reference(paths: list[str | None], framings: list[str | None], options: list[str | None]) -> pa.Array:
    """The plain formulation: every record a dict, decoded one at a time."""
    out: list[Any] = []
    for records, path, opts in zip(read_records(paths, framings, options), paths, options, strict=True):
        if records is None:
            out.append(None)
            continue
        rows = []
        for r in records:
            result = None
            if r["error"] is None:
                (result,) = decode_records(opts, [r["text"]], [r["kafka_key"]], [path], [r["header"]])
            quarantined = r["error"] is not None or result["status"] == "quarantined"
            raw = r["text"] if r["text"] is not None else r["raw_b64"]
            rows.append(
                {
                    "record_index": r["record_index"],
                    "error": r["error"],
                    "raw_record": raw if quarantined else None,
                    "raw_is_base64": (r["raw_b64"] is not None) if quarantined else None,
                    **{k: r[k] for k in ("kafka_topic", "kafka_partition", "kafka_offset", "kafka_timestamp_ms")},
                    "result": result,
                }
            )
        out.append(rows)
    return pa.array(out, type=DECODED_RECORDS_TYPE)


def _arrays(landing: Any) -> list[pa.Array]:
    return [pa.array(column, type=pa.string()) for column in landing]


def test_same_records_as_read_then_decode(landing) -> None:
    got = decode_files_array(*_arrays(landing))
    expected = _reference(*landing)
    assert got.type == DECODED_RECORDS_TYPE
    assert len(got) == 12 and got.is_null().to_pylist() == [False, False, True, *[False] * 9]
    for i in range(len(expected)):
        assert got[i].equals(expected[i]), (i, landing[0][i])
    assert got.equals(expected)
    # every branch ran: ok, quarantined by the decoder, a framing error, a skipped or not
    records = got.flatten().to_pylist()
    statuses = [None if r["result"] is None else r["result"]["status"] for r in records]
    assert statuses.count("ok") > 500 and statuses.count("quarantined") >= 4, statuses
    debezium_lines = got[0].values.to_pylist() + got[3].values.to_pylist()
    not_utf8 = [r for r in debezium_lines if r["error"] is not None and r["raw_is_base64"]]
    assert [(r["result"], r["raw_record"]) for r in not_utf8] == [(None, "//4gbm90IHV0Zi04")] * 2  # the line's base64
    assert all(r["raw_record"] is None for r, s in zip(records, statuses, strict=True) if s == "ok")
    assert [r["raw_record"] for r, s in zip(records, statuses, strict=True) if s == "quarantined"].count(
        "not json"
    ) == 4  # in both Debezium files, the Kafka dump and the kcat file of their first lines
    csv_rows = got[1].values.to_pylist()
    assert [dict(c["after"])["r_name"] for r in csv_rows for c in r["result"]["changes"]] == ["AFRICA", "A"]
    # the Kafka dumps: every message a record with its metadata, exact milliseconds
    dump = got[6].values.to_pylist()
    assert [r["kafka_offset"] for r in dump] == list(range(100, 141))
    assert {(r["kafka_topic"], r["kafka_partition"]) for r in dump} == {("shop", 3)}
    assert [r["kafka_timestamp_ms"] for r in dump][:2] == [2176914361503, 2176914361504]
    assert [r["result"]["status"] for r in dump[-1:]] == ["skipped"]  # the tombstone
    (bad,) = [r for r in dump if r["error"] is not None]  # the value that is not UTF-8
    assert (bad["error"], bad["raw_record"], bad["raw_is_base64"]) == (
        "invalid UTF-8 at byte 0",
        "//4gbm90IHV0Zi04",
        True,
    )
    (not_a_dump,) = got[7].values.to_pylist()
    assert not_a_dump["error"] == "column 'offset' is string, not an integer" and not_a_dump["raw_is_base64"]
    avro_rows = got[8].values.to_pylist()
    assert [r["result"]["status"] for r in avro_rows] == ["ok", "quarantined", "skipped", "ok"]
    prefixed_rows = got[10].values.to_pylist()
    assert [r["result"] and r["result"]["status"] for r in prefixed_rows] == ["ok", "quarantined", "ok", None]
    assert prefixed_rows[-1]["error"] == "truncated: 500 bytes announced, 3 left" and prefixed_rows[-1]["raw_is_base64"]
    pretty_rows = got[11].values.to_pylist()
    assert [r["result"]["status"] for r in pretty_rows[:-1]].count("ok") >= 15
    assert pretty_rows[-1]["error"].startswith("not JSON: Expecting ") and pretty_rows[-1]["result"] is None
    assert pretty_rows[-1]["raw_record"] == '{"op": "c", "after": {"id"'
    kcat_rows = got[9].values.to_pylist()  # the first lines as kcat messages, the one not UTF-8 left out
    assert [r["kafka_offset"] for r in kcat_rows] == [i for i in range(40) if i != 9]
    assert [r["result"]["status"] for r in kcat_rows].count("ok") >= 30
    assert [dict(r["result"]["changes"][0]["after"]) for r in (avro_rows[0], avro_rows[3])] == [
        {"id": "1"},
        {"id": "2"},
    ]
    assert avro_rows[1]["raw_record"] == "AP8=" and avro_rows[1]["raw_is_base64"]  # the value as base64


def test_chunks_do_not_change_the_result(landing) -> None:
    arrays = _arrays(landing)
    assert DECODE_CHUNK >= 300
    assert decode_files_array(*arrays, chunk=7).equals(decode_files_array(*arrays))


def test_no_files(landing) -> None:
    empty = pa.array([], type=pa.string())
    assert decode_files_array(empty, empty, empty).equals(pa.array([], type=DECODED_RECORDS_TYPE))


@pytest.mark.parametrize(
    ("chunk", "block_bytes", "whole_files"),
    [(7, 100, False), (DECODE_CHUNK, 100, False), (DECODE_CHUNK, FILE_BLOCK_BYTES, False), (7, 100, True)],
)
def test_record_batches_hold_the_same_records(landing, chunk, block_bytes, whole_files) -> None:
    arrays = _arrays(landing)
    nested = decode_files_array(*arrays)
    batches = list(decode_record_batches(*arrays, chunk=chunk, block_bytes=block_bytes, whole_files=whole_files))
    assert batches and all(0 < b.num_rows <= chunk for b in batches)
    # full chunks whatever the blocks: only a file's last batch is smaller
    sizes = [(b.column("source_file")[0].as_py(), b.num_rows) for b in batches]
    assert all(n == chunk for (file, n), (following, _) in itertools.pairwise(sizes) if file == following)
    # a batch belongs to one file, and the files come in their order, null path skipped
    files = [b.column("source_file").unique().to_pylist() for b in batches]
    assert all(len(f) == 1 for f in files)
    with_records = [
        path for path, records in zip(landing[0], nested, strict=True) if records.is_valid and records.values
    ]
    assert [path for path, _ in itertools.groupby(f[0] for f in files)] == with_records
    rows = pa.Table.from_batches(batches)
    assert rows.column("source_file").to_pylist() == [
        path for path, records in zip(landing[0], nested, strict=True) if records.is_valid for _ in records.values
    ]
    assert rows.drop(["source_file"]).to_pylist() == nested.flatten().to_pylist()
    assert rows.schema.remove(0) == pa.schema(list(DECODED_RECORDS_TYPE.value_type))


def test_record_batches_of_no_files_and_of_null_paths() -> None:
    empty = pa.array([], type=pa.string())
    assert list(decode_record_batches(empty, empty, empty)) == []
    nulls = pa.array([None, "x"], type=pa.string())
    assert list(decode_record_batches(nulls, pa.array(["lines", None]), nulls)) == []


def test_record_rows_in_sql_same_as_the_array_per_file(spark, landing) -> None:
    rows = list(zip(*landing, strict=True))
    frame = spark.createDataFrame(rows, "source_file string, framing string, decoder_options string")
    frame.createOrReplaceTempView("landing_files")
    table_function = spark.sql(
        """
        select source_file, record_index, error, raw_record, raw_is_base64, kafka_offset, to_json(result)
        from cdc_decode_records(table(select /*+ repartition(3) */ * from landing_files))
        """
    )
    per_file = spark.sql(
        """
        select source_file, rec.record_index, rec.error, rec.raw_record, rec.raw_is_base64, rec.kafka_offset,
            to_json(rec.result)
        from landing_files lateral view explode(cdc_decode_files(source_file, framing, decoder_options)) x as rec
        """
    )
    got, expected = sorted(map(tuple, table_function.collect())), sorted(map(tuple, per_file.collect()))
    assert len(got) > 600
    assert got == expected
    assert [f.name for f in table_function.schema.fields][:2] == ["source_file", "record_index"]


def test_types_are_sparks_parse_of_the_ddl(spark) -> None:
    from udfs.spark_udfs import arrow_type

    assert arrow_type(DECODED_RECORDS_DDL) == DECODED_RECORDS_TYPE
    assert arrow_type(RECORDS_DDL) == RECORDS_TYPE


def test_in_sql_same_as_the_two_functions_composed(spark, landing) -> None:
    rows = list(zip(*landing, strict=True))
    spark.createDataFrame(rows, "path string, framing string, options string").createOrReplaceTempView("files")
    fused = spark.sql(
        """
        select path, options, rec.record_index, rec.error, rec.raw_record, rec.raw_is_base64,
            to_json(rec.result) as result
        from files lateral view explode(cdc_decode_files(path, framing, options)) x as rec
        """
    )
    composed = spark.sql(
        """
        select path, options, rec.record_index, rec.error,
            case when rec.error is not null or r.status = 'quarantined' then coalesce(rec.text, rec.raw_b64) end,
            case when rec.error is not null or r.status = 'quarantined' then rec.raw_b64 is not null end,
            case when rec.error is null then to_json(r) end
        from (
            select path, options, rec, cdc_decode(options, rec.text, rec.kafka_key, path, rec.header) as r
            from files lateral view explode(cdc_read_records(path, framing, options)) x as rec
        )
        """
    )
    got, expected = sorted(map(tuple, fused.collect())), sorted(map(tuple, composed.collect()))
    assert len(got) > 600
    assert got == expected


def test_a_file_past_the_text_limit_is_one_framing_error(tmp_path, monkeypatch) -> None:
    """A file whose records hold more text than an Arrow string column can (2 GiB - 1
    byte; lowered here) is one quarantined record that says so, whether its lines are
    cut by Arrow (valid UTF-8) or by ``split_file`` (a line that is not UTF-8); a file
    under the limit beside it decodes as before."""
    import udfs.spark_udfs as spark_udfs
    from udfs.framing import split_file
    from udfs.spark_udfs import read_records_array

    content, tables = _debezium_lines(events=40)
    valid = b"\n".join(line for line in content.split(b"\n") if b"\xff" not in line)
    files = {"valid.json": valid, "not_utf8.json": content, "small.json": content.split(b"\n")[0] + b"\n"}
    for name, data in files.items():
        (tmp_path / name).write_bytes(data)
    text_bytes = {
        name: sum(len(r.text.encode()) for r in split_file(data, "lines", {}) if r.text) for name, data in files.items()
    }
    limit = text_bytes["small.json"] + 1
    assert min(text_bytes["valid.json"], text_bytes["not_utf8.json"]) > limit
    monkeypatch.setattr(spark_udfs, "MAX_FILE_TEXT_BYTES", limit)

    paths = [str(tmp_path / name) for name in files]
    opts = _options("debezium_json", "lines", {}, tables)
    got = decode_files_array(*_arrays((paths, ["lines"] * 3, [opts] * 3))).to_pylist()
    for name, records in zip(list(files)[:2], got[:2], strict=True):
        (record,) = records
        assert record["error"] == (
            f"file too large: its records hold {text_bytes[name]:,} bytes of text, more than the {limit:,} one "
            "landing file may hold (Arrow's 32-bit offsets); split the file"
        ), name
        assert (record["record_index"], record["result"], record["raw_record"]) == (0, None, None), name
    (small,) = got[2]
    assert small["error"] is None and small["result"]["status"] == "ok"
    # cdc_read_records gives the same framing error
    read = read_records_array(paths, ["lines"] * 3, [opts] * 3, RECORDS_TYPE).to_pylist()
    assert [[r["error"] for r in records] for records in read[:2]] == [[got[0][0]["error"]], [got[1][0]["error"]]]


@pytest.mark.parametrize("binary", [False, True])
def test_a_kafka_dump_past_the_text_limit_is_one_framing_error(monkeypatch, binary) -> None:
    """The column-wise ``kafka_parquet`` path counts its values' text (base64 for a
    binary format) against the limit as ``split_kafka_parquet``'s path does."""
    import udfs.spark_udfs as spark_udfs
    from udfs.spark_udfs import file_records_struct

    content = _kafka_dump([b"x" * 30, "é".encode() * 15])  # 60 bytes of text; base64: 40 + 40
    size = 80 if binary else 60
    opts = json.dumps({"format": "dts_avro" if binary else "debezium_json"})
    struct_type = RECORDS_TYPE.value_type
    monkeypatch.setattr(spark_udfs, "MAX_FILE_TEXT_BYTES", size - 1)
    (record,) = file_records_struct(content, "kafka_parquet", opts, struct_type).to_pylist()
    assert record["error"] == (
        f"file too large: its records hold {size} bytes of text, more than the {size - 1} one landing file may hold "
        "(Arrow's 32-bit offsets); split the file"
    )
    monkeypatch.setattr(spark_udfs, "MAX_FILE_TEXT_BYTES", size)
    assert [r["error"] for r in file_records_struct(content, "kafka_parquet", opts, struct_type).to_pylist()] == [
        None,
        None,
    ]


def test_a_kcat_file_past_the_text_limit_is_one_framing_error(monkeypatch) -> None:
    """The column-wise ``kcat`` path counts its payloads' UTF-8 bytes against the limit
    as ``split_kcat``'s path does (here 30 ASCII and 15 two-byte characters: 60 bytes)."""
    import udfs.spark_udfs as spark_udfs
    from udfs.spark_udfs import file_records_struct, kcat_struct

    content = b'{"payload":"' + b"x" * 30 + b'"}\n{"payload":"' + "é".encode() * 15 + b'"}\n'
    struct_type = RECORDS_TYPE.value_type
    assert kcat_struct(content, struct_type) is not None  # the column-wise path takes it
    monkeypatch.setattr(spark_udfs, "MAX_FILE_TEXT_BYTES", 59)
    (record,) = file_records_struct(content, "kcat", None, struct_type).to_pylist()
    assert record["error"] == (
        "file too large: its records hold 60 bytes of text, more than the 59 one landing file may hold "
        "(Arrow's 32-bit offsets); split the file"
    )
    monkeypatch.setattr(spark_udfs, "MAX_FILE_TEXT_BYTES", 60)
    assert [r["error"] for r in file_records_struct(content, "kcat", None, struct_type).to_pylist()] == [None, None]
