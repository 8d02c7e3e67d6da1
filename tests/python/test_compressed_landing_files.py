"""Landing files compressed whole (``udfs/compression.py``): ``.gz``, ``.bz2`` and
``.zst`` files are read through their codec, as Spark's own readers read them.

* pure, no Spark: each file of ``test_decode_files``' landing (every framing but
  ``kafka_parquet``, which parquet compresses inside) compressed with each codec gives
  the records of its plain bytes, in blocks of 100 bytes and of the default size; so
  does a gzip file of several members (``cat a.gz b.gz``); data cut short, or damaged,
  fails the read naming the file and the codec;
* a real ``cdc run`` over a feed of plain and compressed files reads every record; a
  file cut short fails the run, naming it, and leaves the warehouse as it was; the
  whole file, landed later, is then read once.
"""

from __future__ import annotations

import bz2
import gzip
import json
import re
from pathlib import Path

import pyarrow as pa
import pytest
import yaml
from test_decode_files import _arrays, landing  # noqa: F401 - the fixture, shared

from udfs.compression import CODEC_BY_EXTENSION, codec_of
from udfs.pipeline import PipelineError, run_pipeline
from udfs.spark_udfs import FILE_BLOCK_BYTES, decode_record_batches

EXTENSION_OF = {codec: extension for extension, codec in CODEC_BY_EXTENSION.items()}


def _compressed(data: bytes, codec: str) -> bytes:
    if codec == "gzip":
        return gzip.compress(data)
    if codec == "bz2":
        return bz2.compress(data)
    buffer = pa.BufferOutputStream()
    with pa.CompressedOutputStream(buffer, "zstd") as out:
        out.write(data)
    return buffer.getvalue().to_pybytes()


def _rows(arrays: list[pa.Array], block_bytes: int) -> list[dict]:
    batches = decode_record_batches(*arrays, block_bytes=block_bytes)
    return pa.Table.from_batches(list(batches)).drop(["source_file"]).to_pylist()


def _with_compressed_copies(files, codec: str) -> tuple[list, list]:
    """The landing's rows without ``kafka_parquet`` files, and the same rows with each
    file compressed beside it (a CSV feed's table still taken from the path)."""
    plain, compressed = [], []
    for path, framing, options in zip(*files, strict=True):
        if path is None or framing == "kafka_parquet":
            continue
        decoder_options = json.loads(options)
        if "table_from_path" in decoder_options["options"]:
            decoder_options["options"]["table_from_path"] = r"/(?P<table>[a-z_]+)/[^/]+\.csv(\.\w+)?$"
        options = json.dumps(decoder_options, sort_keys=True)
        copy = f"{path}{EXTENSION_OF[codec]}"
        Path(copy).write_bytes(_compressed(Path(path).read_bytes(), codec))
        plain.append((path, framing, options))
        compressed.append((copy, framing, options))
    return [list(c) for c in zip(*plain, strict=True)], [list(c) for c in zip(*compressed, strict=True)]


@pytest.mark.parametrize("codec", ["gzip", "bz2", "zstd"])
def test_a_compressed_file_holds_the_records_of_its_bytes(landing, codec):  # noqa: F811
    plain, compressed = _with_compressed_copies(landing, codec)
    assert sorted(set(plain[1])) == ["csv", "documents", "kcat", "length_prefixed", "lines"]
    expected = _rows(_arrays(plain), FILE_BLOCK_BYTES)
    assert len(expected) > 300
    assert [r["record_index"] for r in expected].count(0) == len(plain[0]) - 1  # the empty file has none
    for block_bytes in (100, FILE_BLOCK_BYTES):
        assert _rows(_arrays(compressed), block_bytes) == expected, block_bytes


def test_a_gzip_file_of_several_members_is_read_whole(tmp_path):
    lines = [b'{"op":"c","after":{"id":%d},"source":{"table":"t"}}\n' % i for i in range(6)]
    (tmp_path / "whole.jsonl").write_bytes(b"".join(lines))
    (tmp_path / "members.jsonl.gz").write_bytes(gzip.compress(b"".join(lines[:2])) + gzip.compress(b"".join(lines[2:])))
    options = json.dumps({"format": "debezium_json", "framing": "lines", "options": {}, "tables": {}})
    rows = {
        name: _rows(_arrays([[str(tmp_path / name)], ["lines"], [options]]), FILE_BLOCK_BYTES)
        for name in ("whole.jsonl", "members.jsonl.gz")
    }
    assert len(rows["whole.jsonl"]) == 6
    assert rows["members.jsonl.gz"] == rows["whole.jsonl"]


def test_the_codec_is_the_names_last_extension():
    assert codec_of("/landing/a.jsonl.gz") == "gzip"
    assert codec_of("/landing/a.csv.bz2", "csv") == "bz2"
    assert codec_of("/landing/a.zst", "length_prefixed") == "zstd"
    # as Hadoop's codecs match them: the last extension, as written
    for plain in ("/landing/a.jsonl", "/landing/a.gz.jsonl", "/landing.gz/a", "/landing/a.GZ", "/landing/a.tgz"):
        assert codec_of(plain) is None, plain
    # parquet compresses inside: a kafka_parquet file is read as it is
    assert codec_of("/landing/dump.parquet.gz", "kafka_parquet") is None


@pytest.mark.parametrize(
    ("codec", "damage"), [(c, "cut short") for c in EXTENSION_OF] + [("gzip", "damaged"), ("bz2", "damaged")]
)
def test_data_that_does_not_decompress_fails_naming_the_file(tmp_path, codec, damage):
    """Records read before the damage are not kept: nothing tells them from damaged
    ones. (A zstd frame without its optional checksum can hide damage, so only its cut
    is certain to be found.)"""
    data = b"".join(b'{"op":"c","after":{"id":%d},"source":{"table":"t"}}\n' % i for i in range(20000))
    blob = bytearray(_compressed(data, codec))
    if damage == "cut short":
        del blob[len(blob) // 2 :]
    else:
        blob[len(blob) // 2] ^= 0xFF
    path = tmp_path / f"changes.jsonl{EXTENSION_OF[codec]}"
    path.write_bytes(bytes(blob))
    options = json.dumps({"format": "debezium_json", "framing": "lines", "options": {}, "tables": {}})
    message = f"^{re.escape(str(path))}: its {codec} data does not decompress \\(.+\\): the file is cut short"
    with pytest.raises(OSError, match=message):
        _rows(_arrays([[str(path)], ["lines"], [options]]), 1 << 16)


GOOD = (
    '{"before":null,"after":{"id":%d,"name":"n%d"},"source":{"connector":"postgresql","db":"d","schema":"s",'
    '"table":"items","lsn":%d},"op":"c"}\n'
)


def _changes(first: int, n: int) -> bytes:
    return "".join(GOOD % (i, i, i) for i in range(first, first + n)).encode()


def test_a_run_reads_compressed_files_and_fails_on_one_cut_short(spark, make_config, tmp_path):
    config = make_config([{"name": "f", "format": "debezium_json", "path": "landing"}], {"items": {"key": ["id"]}})
    schema = yaml.safe_load(config.read_text())["schema"]
    folder = tmp_path / "landing"
    (folder / "a.jsonl").write_bytes(_changes(1, 10))
    (folder / "b.jsonl.gz").write_bytes(_compressed(_changes(11, 10), "gzip"))
    (folder / "c.jsonl.bz2").write_bytes(_compressed(_changes(21, 10), "bz2"))
    (folder / "d.jsonl.zst").write_bytes(_compressed(_changes(31, 10), "zstd"))
    first = run_pipeline(config, spark=spark)
    assert (first.files, first.records, first.changes, first.quarantined) == (4, 40, 40, 0)
    ids = spark.sql(f"select cast(after['id'] as int) as id from {schema}.changelog order by id").collect()
    assert [r.id for r in ids] == list(range(1, 41))

    whole = _compressed(_changes(41, 5000), "gzip")
    (folder / "e.jsonl.gz").write_bytes(whole[: len(whole) // 2])
    with pytest.raises(PipelineError, match=re.escape(f"{folder / 'e.jsonl.gz'}: its gzip data does not decompress")):
        run_pipeline(config, spark=spark)
    assert spark.sql(f"select count(*) from {schema}.changelog").collect()[0][0] == 40
    assert spark.sql(f"select count(*) from {schema}.audit_files").collect()[0][0] == 4

    (folder / "e.jsonl.gz").write_bytes(whole)
    third = run_pipeline(config, spark=spark)
    assert (third.files, third.records, third.changes, third.quarantined, third.changed_files) == (1, 5000, 5000, 0, 0)
    assert spark.sql(f"select count(distinct after['id']) from {schema}.changelog").collect()[0][0] == 5040
