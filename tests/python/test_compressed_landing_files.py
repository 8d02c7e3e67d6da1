"""Landing files compressed whole (``udfs/compression.py``): ``.gz``, ``.bz2``, ``.zst``,
``.deflate``, ``.lz4`` and ``.snappy`` files are read through their codec, as Spark's own
readers read them.

* pure, no Spark: each file of ``test_decode_files``' landing (every framing but
  ``kafka_parquet``, which parquet compresses inside) compressed with each codec gives
  the records of its plain bytes, in blocks of 100 bytes and of the default size; so
  do a gzip file of several members (``cat a.gz b.gz``), concatenated zlib streams, and
  Hadoop blocks of several chunks; data cut short, or damaged, fails the read naming
  the file and the codec, so do Hadoop block framings that do not add up; an ``.lz4``
  in the LZ4 frame format is read as such, a ``.snappy`` in Snappy's framing format
  refused saying so;
* the files Spark's own writers compress (its Hadoop codecs) read back byte for byte:
  every codec its text writer offers here, a line past the codecs' buffer, no lines;
* a real ``cdc run`` over a feed of plain and compressed files reads every record; a
  file cut short fails the run, naming it, and leaves the warehouse as it was; the
  whole file, landed later, is then read once.
"""

from __future__ import annotations

import gzip
import json
import re
import struct
import zlib
from pathlib import Path

import pyarrow as pa
import pytest
import yaml
from test_decode_files import _arrays, landing  # noqa: F401 - the fixture, shared

from bench.compressed_files import compress as _compressed
from udfs.compression import CODEC_BY_EXTENSION, codec_of, open_landing_file
from udfs.pipeline import PipelineError, run_pipeline
from udfs.spark_udfs import FILE_BLOCK_BYTES, RECORDS_TYPE, decode_record_batches, read_records, read_records_array

EXTENSION_OF = {codec: extension for extension, codec in CODEC_BY_EXTENSION.items()}


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


@pytest.mark.parametrize("codec", list(EXTENSION_OF))
def test_a_compressed_file_holds_the_records_of_its_bytes(landing, codec):  # noqa: F811
    plain, compressed = _with_compressed_copies(landing, codec)
    assert sorted(set(plain[1])) == ["csv", "documents", "kcat", "length_prefixed", "lines"]
    expected = _rows(_arrays(plain), FILE_BLOCK_BYTES)
    assert len(expected) > 300
    assert [r["record_index"] for r in expected].count(0) == len(plain[0]) - 1  # the empty file has none
    for block_bytes in (100, FILE_BLOCK_BYTES):
        assert _rows(_arrays(compressed), block_bytes) == expected, block_bytes


@pytest.mark.parametrize("codec", list(EXTENSION_OF))
def test_a_compressed_file_read_whole_holds_the_records_of_its_bytes(landing, codec):  # noqa: F811
    """``cdc_read_records`` reads a file whole (``read()``), not by parts."""
    plain, compressed = _with_compressed_copies(landing, codec)
    expected = read_records(*plain)
    assert sum(len(records) for records in expected) > 300
    assert read_records(*compressed) == expected
    assert read_records_array(*compressed, RECORDS_TYPE).equals(read_records_array(*plain, RECORDS_TYPE))


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


def _read_all(path: Path, block_bytes: int) -> bytes:
    with open_landing_file(str(path)) as fh:
        parts = []
        while part := fh.read(block_bytes):
            parts.append(part)
    return b"".join(parts)


def test_concatenated_zlib_streams_and_hadoop_blocks_of_several_chunks_are_read_whole(tmp_path):
    data = "".join(f'{{"id":{i},"text":"é😀\\n{i % 7}"}}\n' for i in range(3000)).encode()
    files = {
        "streams.jsonl.deflate": zlib.compress(data[:1000]) + zlib.compress(b"") + zlib.compress(data[1000:]),
        # blocks of 40,000 bytes, each in chunks of 9,000 (a write past the codec's buffer)
        "chunks.jsonl.lz4": _compressed(data, "lz4", block_bytes=40_000, chunk_bytes=9_000),
        "chunks.jsonl.snappy": _compressed(data, "snappy", block_bytes=40_000, chunk_bytes=9_000),
        "empty.jsonl.lz4": _compressed(b"", "lz4"),
        "empty.jsonl.deflate": zlib.compress(b""),
    }
    for name in ("chunks.jsonl.lz4", "chunks.jsonl.snappy"):  # the first block, then its first chunk's length
        block, chunk = struct.unpack(">ii", files[name][:8])
        assert block == 40_000 and chunk < 9_000, (name, block, chunk)
    for name, blob in files.items():
        (tmp_path / name).write_bytes(blob)
        for block_bytes in (1, 1000, 1 << 21):
            assert _read_all(tmp_path / name, block_bytes) == (b"" if name.startswith("empty") else data), name


def test_an_lz4_frame_file_is_read_and_a_snappy_framing_format_file_refused(tmp_path):
    import lz4.frame

    data = b"".join(b'{"op":"c","after":{"id":%d},"source":{"table":"t"}}\n' % i for i in range(5000))
    frame = tmp_path / "cli.jsonl.lz4"  # what the lz4 command writes: not Hadoop's blocks
    frame.write_bytes(lz4.frame.compress(data))
    assert _read_all(frame, 1 << 16) == data
    framed = tmp_path / "snzip.jsonl.snappy"  # Snappy's framing format: its stream identifier, then chunks
    framed.write_bytes(b"\xff\x06\x00\x00sNaPpY" + b"\x01\x09\x00\x00" + b"\x00" * 4 + b"x")
    with pytest.raises(OSError, match=f"^{re.escape(str(framed))}: a .snappy file in Snappy's framing format"):
        _read_all(framed, 1 << 16)


@pytest.mark.parametrize(
    ("blob", "reason"),
    [
        (struct.pack(">i", -5), "a block of negative length -5"),
        (struct.pack(">ii", 10, 0), "a chunk of length 0"),
        (struct.pack(">i", 0) + struct.pack(">i", 0), "data after the end of the blocks"),
        (b"\x00\x00", "the data ends inside a block's length"),
        (struct.pack(">i", 10), "the data ends inside a chunk's length"),
        (struct.pack(">ii", 10, 50) + b"12345", "the data ends inside a chunk"),
    ],
)
def test_hadoop_blocks_that_do_not_add_up_fail_naming_the_file(tmp_path, blob, reason):
    for codec in ("lz4", "snappy"):
        path = tmp_path / f"bad.jsonl.{codec}"
        path.write_bytes(blob)
        with pytest.raises(OSError, match=f"^{re.escape(str(path))}: its {codec} data does not decompress \\(") as info:
            _read_all(path, 1 << 16)
        assert reason in str(info.value), codec


def test_a_chunk_that_holds_more_than_its_block_fails(tmp_path):
    longer = _compressed(b"x" * 12, "snappy")
    path = tmp_path / "longer.jsonl.snappy"
    path.write_bytes(struct.pack(">i", 4) + longer[4:])
    with pytest.raises(OSError, match="a Snappy chunk of 12 bytes where its block holds 4 more"):
        _read_all(path, 1 << 16)
    longer = _compressed(b"x" * 12, "lz4")
    path = tmp_path / "longer.jsonl.lz4"
    path.write_bytes(struct.pack(">i", 4) + longer[4:])
    with pytest.raises(OSError, match="its lz4 data does not decompress"):
        _read_all(path, 1 << 16)


def test_the_files_sparks_writers_compress_read_back_byte_for_byte(spark, tmp_path):
    """Spark's text writer compresses with its Hadoop codecs: deflate, lz4 and snappy
    (Hadoop's block framing), gzip, bzip2 (zstd needs Hadoop's native library, absent
    here: Spark refuses it, so this file's other tests stand for it)."""
    lines = [f'{{"id":{i},"text":"é 😀 \u2028 \\n {i}"}}' for i in range(20_000)]  # U+2028 itself, an escaped newline
    lines.insert(7, "x" * 700_000 + "é" * 100_000)  # past the codecs' 256 KiB buffer: a block of several chunks
    frame = spark.createDataFrame([(line,) for line in lines], "value string").coalesce(1)
    empty = spark.createDataFrame([], "value string").coalesce(1)
    expected = ("\n".join(lines) + "\n").encode()
    for codec, extension in (
        ("deflate", ".deflate"),
        ("lz4", ".lz4"),
        ("snappy", ".snappy"),
        ("gzip", ".gz"),
        ("bzip2", ".bz2"),
    ):
        for name, rows, content in (("lines", frame, expected), ("empty", empty, b"")):
            folder = tmp_path / f"{name}_{codec}"
            rows.write.option("compression", codec).text(str(folder))
            (part,) = folder.glob("part-*")
            assert part.name.endswith(f".txt{extension}"), part.name
            assert codec_of(str(part)) == CODEC_BY_EXTENSION[extension]
            for block_bytes in (4096, 1 << 21):
                assert _read_all(part, block_bytes) == content, (codec, name, block_bytes)


def test_the_codec_is_the_names_last_extension():
    assert codec_of("/landing/a.jsonl.gz") == "gzip"
    assert codec_of("/landing/a.csv.bz2", "csv") == "bz2"
    assert codec_of("/landing/a.zst", "length_prefixed") == "zstd"
    assert codec_of("/landing/part-00000.txt.deflate") == "deflate"
    assert codec_of("/landing/part-00000.txt.lz4", "lines") == "lz4"
    assert codec_of("/landing/part-00000.csv.snappy", "csv") == "snappy"
    # as Hadoop's codecs match them: the last extension, as written
    for plain in (
        "/landing/a.jsonl",
        "/landing/a.gz.jsonl",
        "/landing.gz/a",
        "/landing/a.GZ",
        "/landing/a.tgz",
        "/landing/a.xz",
    ):
        assert codec_of(plain) is None, plain
    # parquet compresses inside: a kafka_parquet file is read as it is
    assert codec_of("/landing/dump.parquet.gz", "kafka_parquet") is None


@pytest.mark.parametrize(
    ("codec", "damage"),
    [(c, "cut short") for c in EXTENSION_OF] + [(c, "damaged") for c in ("gzip", "bz2", "deflate")],
)
def test_data_that_does_not_decompress_fails_naming_the_file(tmp_path, codec, damage):
    """Records read before the damage are not kept: nothing tells them from damaged
    ones. (A zstd frame without its optional checksum, and Hadoop's lz4 and snappy
    blocks, which have none, can hide damage inside their data, so only a cut is
    certain to be found.)"""
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
    (folder / "f.jsonl.deflate").write_bytes(_compressed(_changes(41, 10), "deflate"))
    (folder / "g.jsonl.lz4").write_bytes(_compressed(_changes(51, 10), "lz4"))
    (folder / "h.jsonl.snappy").write_bytes(_compressed(_changes(61, 10), "snappy"))
    first = run_pipeline(config, spark=spark)
    assert (first.files, first.records, first.changes, first.quarantined) == (7, 70, 70, 0)
    ids = spark.sql(f"select cast(after['id'] as int) as id from {schema}.changelog order by id").collect()
    assert [r.id for r in ids] == list(range(1, 71))

    whole = _compressed(_changes(71, 5000), "gzip")
    (folder / "e.jsonl.gz").write_bytes(whole[: len(whole) // 2])
    with pytest.raises(PipelineError, match=re.escape(f"{folder / 'e.jsonl.gz'}: its gzip data does not decompress")):
        run_pipeline(config, spark=spark)
    assert spark.sql(f"select count(*) from {schema}.changelog").collect()[0][0] == 70
    assert spark.sql(f"select count(*) from {schema}.audit_files").collect()[0][0] == 7

    (folder / "e.jsonl.gz").write_bytes(whole)
    third = run_pipeline(config, spark=spark)
    assert (third.files, third.records, third.changes, third.quarantined, third.changed_files) == (1, 5000, 5000, 0, 0)
    assert spark.sql(f"select count(distinct after['id']) from {schema}.changelog").collect()[0][0] == 5070
