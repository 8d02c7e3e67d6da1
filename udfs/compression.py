"""Landing files compressed whole (``changes.jsonl.gz``), as replication tools, Kafka
Connect's storage sinks and Spark's own writers (``compression`` of the text, JSON and
CSV writers) write them: read through their codec, chosen by the name's last extension
as Spark's Hadoop codecs choose it, case as written, as Hadoop matches it:

* ``.gz`` gzip (concatenated members too); ``.bz2`` bzip2; ``.zst`` Zstandard;
* ``.deflate``: zlib streams (Hadoop's ``DefaultCodec``; concatenated streams too);
* ``.lz4`` and ``.snappy``: Hadoop's block framing (``Lz4Codec``, ``SnappyCodec``:
  blocks of their decompressed length, 4 bytes big-endian, then chunks of a 4-byte
  length and raw compressed bytes; a block of length 0 is the end, Hadoop's empty
  file). A ``.lz4`` file that starts with the LZ4 *frame* magic (what the ``lz4``
  command writes, which Hadoop cannot read) is read as a frame stream instead (as
  Hadoop's blocks, those bytes would start a block of exactly 69,356,824 bytes). A
  ``.snappy`` file in Snappy's own *framing format* (``snzip``, python-snappy's
  streams) fails the read saying so: it is not read.

Decisions:

* The framing then cuts the decompressed bytes as it cuts a plain file's, block by
  block: a compressed file is never held whole. A ``length_prefixed`` file, whose
  reader needs its size and skips records too large to hold, is first decompressed
  into a temporary file.
* ``kafka_parquet`` files are read as they are: parquet compresses its own pages, so a
  ``.gz`` there is not the whole file's codec (such a file is quarantined, as any file
  that is not a Kafka dump).
* Data that does not decompress (cut short, as by a writer still at work, or
  damaged) fails the read with an ``OSError`` naming the file and the codec: records
  read before the damage cannot be told apart from damaged ones (a cut CSV row may
  still parse), so none of the file is kept and the run fails, as Spark's own readers
  do (``min_file_age_seconds`` holds back files still being written).
* The file's size (``audit_files.file_size``, the decode tasks' spread) stays its size
  on disk.
"""

from __future__ import annotations

import os
import shutil
import struct
import tempfile
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import BinaryIO

#: the codec of a landing file, by its name's last extension
CODEC_BY_EXTENSION = {
    ".gz": "gzip",
    ".bz2": "bz2",
    ".zst": "zstd",
    ".deflate": "deflate",
    ".lz4": "lz4",
    ".snappy": "snappy",
}
#: codecs read through pyarrow's streams (its names)
_ARROW_STREAM_CODECS = ("gzip", "bz2", "zstd")
#: the first bytes of an LZ4 frame (``lz4`` command), of a Snappy framing-format stream
_LZ4_FRAME_MAGIC = b"\x04\x22\x4d\x18"
_SNAPPY_FRAMING_MAGIC = b"\xff\x06\x00\x00sNaPpY"
#: framings whose files are not decompressed (parquet compresses inside)
UNCOMPRESSED_FRAMINGS = ("kafka_parquet",)
#: the bytes copied at a time into the temporary file of a sized read
_COPY_BYTES = 1 << 20


def codec_of(path: str, framing: str | None = None) -> str | None:
    """The codec ``path`` is read through (None: read as it is)."""
    if framing in UNCOMPRESSED_FRAMINGS:
        return None
    dot = path.rfind(".")
    return CODEC_BY_EXTENSION.get(path[dot:]) if dot > path.rfind("/") else None


class _Decompressed:
    """The decompressed bytes of a file, read as a plain file reads: ``read(n)``
    returns ``n`` bytes unless the data ends (the framings take a short read for the
    end); an error of the codec names the file."""

    def __init__(self, stream: BinaryIO, path: str, codec: str) -> None:
        self._stream, self._path, self._codec = stream, path, codec

    def read(self, n: int = -1) -> bytes:
        whole = n < 0  # the rest of the data (``read()``), a part at a time
        try:
            parts, wanted = [], n
            while (whole or wanted > 0) and (part := self._stream.read(_COPY_BYTES if whole else wanted)):
                parts.append(part)
                wanted -= len(part)
            return b"".join(parts)
        except (OSError, EOFError, ValueError) as exc:  # pyarrow: OSError, ArrowInvalid (a ValueError)
            raise OSError(
                f"{self._path}: its {self._codec} data does not decompress ({exc}): the file is cut short "
                "(still being written?) or damaged; none of it is read"
            ) from exc


class _ZlibStreams:
    """The bytes of concatenated zlib streams (Hadoop's ``.deflate``), ``read(n)`` at
    most ``n`` at a time; data that ends inside a stream is an error."""

    def __init__(self, fh: BinaryIO) -> None:
        self._fh, self._inflate, self._input, self._started = fh, zlib.decompressobj(), b"", False

    def read(self, n: int) -> bytes:
        while True:
            data = self._inflate.unconsumed_tail  # what the last call left for want of room
            if not data:
                data, self._input = self._input, b""
            if not data and not (data := self._fh.read(_COPY_BYTES)):
                if self._started:
                    raise ValueError("the data ends inside a zlib stream")
                return b""
            self._started = True
            try:
                out = self._inflate.decompress(data, n)
            except zlib.error as exc:
                raise ValueError(str(exc)) from exc
            if self._inflate.eof:  # the next stream, if any, starts in what is left
                self._input, self._inflate, self._started = self._inflate.unused_data, zlib.decompressobj(), False
            if out:
                return out


def _lz4_chunk(chunk: bytes, most: int) -> bytes:
    import lz4.block

    try:  # a raw LZ4 block expands at most about 255 times
        return lz4.block.decompress(chunk, uncompressed_size=min(most, 256 * len(chunk) + 64))
    except lz4.block.LZ4BlockError as exc:
        raise ValueError(str(exc)) from exc


def _snappy_chunk(chunk: bytes, most: int) -> bytes:
    import pyarrow as pa

    size, shift = 0, 0  # a raw Snappy block starts with its decompressed length, a varint
    for byte in chunk[:5]:
        size |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            break
    else:
        raise ValueError("a Snappy chunk without its length")
    if size > most:
        raise ValueError(f"a Snappy chunk of {size} bytes where its block holds {most} more")
    return pa.Codec("snappy").decompress(chunk, decompressed_size=size, asbytes=True)


class _HadoopBlocks:
    """The bytes of Hadoop's block framing (``.lz4``, ``.snappy``), ``read(n)`` at
    most ``n`` at a time, a chunk decompressed at a time; a block whose chunks do not
    add up to its length, or data cut inside a block, is an error."""

    def __init__(self, fh: BinaryIO, decompress_chunk: Callable[[bytes, int], bytes]) -> None:
        self._fh, self._decompress_chunk = fh, decompress_chunk
        self._block_left, self._out, self._ended = 0, b"", False

    def _exactly(self, n: int, what: str) -> bytes:
        data = self._fh.read(n)
        if len(data) != n:
            raise ValueError(f"the data ends inside {what}")
        return data

    def read(self, n: int) -> bytes:
        while not self._out:
            if self._block_left == 0:
                header = self._fh.read(4)
                if not header or self._ended:
                    if header:
                        raise ValueError("data after the end of the blocks (a block of length 0)")
                    return b""
                if len(header) < 4:
                    raise ValueError("the data ends inside a block's length")
                (self._block_left,) = struct.unpack(">i", header)
                if self._block_left < 0:
                    raise ValueError(f"a block of negative length {self._block_left}")
                self._ended = self._block_left == 0
                continue
            (size,) = struct.unpack(">i", self._exactly(4, "a chunk's length"))
            if size <= 0:
                raise ValueError(f"a chunk of length {size}")
            self._out = self._decompress_chunk(self._exactly(size, "a chunk"), self._block_left)
            if not self._out or len(self._out) > self._block_left:
                raise ValueError("a block's chunks do not add up to its length")
            self._block_left -= len(self._out)
        out, self._out = self._out[:n], self._out[n:]
        return out


@contextmanager
def _codec_stream(path: str, codec: str) -> Iterator[BinaryIO]:
    """The decompressed bytes of ``path`` as a stream (``read(n)``: at most ``n``)."""
    import pyarrow as pa

    if codec in _ARROW_STREAM_CODECS:
        with pa.input_stream(path, compression=codec) as stream:
            yield stream  # type: ignore[misc]
        return
    with open(path, "rb") as fh:
        start = fh.read(len(_SNAPPY_FRAMING_MAGIC))
        fh.seek(0)
        if codec == "deflate":
            yield _ZlibStreams(fh)  # type: ignore[misc]
        elif codec == "lz4" and start.startswith(_LZ4_FRAME_MAGIC):
            with pa.input_stream(path, compression="lz4") as stream:
                yield stream  # type: ignore[misc]
        elif codec == "snappy" and start == _SNAPPY_FRAMING_MAGIC:
            raise OSError(
                f"{path}: a .snappy file in Snappy's framing format (snzip, python-snappy's streams); "
                "the .snappy files read are Hadoop's block framing (Spark's and Hadoop's writers); none of it is read"
            )
        else:
            yield _HadoopBlocks(fh, _lz4_chunk if codec == "lz4" else _snappy_chunk)  # type: ignore[misc]


@contextmanager
def open_landing_file(path: str, framing: str | None = None) -> Iterator[BinaryIO]:
    """``path`` opened for reading its bytes, decompressed when its name says so
    (:func:`codec_of`)."""
    codec = codec_of(path, framing)
    if codec is None:
        with open(path, "rb") as fh:
            yield fh
        return
    with _codec_stream(path, codec) as stream:
        yield _Decompressed(stream, path, codec)  # type: ignore[misc]


@contextmanager
def open_sized_landing_file(path: str, framing: str | None = None) -> Iterator[tuple[BinaryIO, int]]:
    """``path`` opened as :func:`open_landing_file` opens it, seekable, and the size of
    its (decompressed) bytes: a compressed file is decompressed into a temporary file
    first."""
    if codec_of(path, framing) is None:
        with open(path, "rb") as fh:
            yield fh, os.fstat(fh.fileno()).st_size
        return
    with tempfile.TemporaryFile(prefix="cdc-landing-") as spooled:
        with open_landing_file(path, framing) as source:
            shutil.copyfileobj(source, spooled, _COPY_BYTES)  # type: ignore[misc]
        size = spooled.tell()
        spooled.seek(0)
        yield spooled, size  # type: ignore[misc]
