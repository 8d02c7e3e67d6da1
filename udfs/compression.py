"""Landing files compressed whole (``changes.jsonl.gz``), as replication tools and Kafka
Connect's storage sinks write them: read through their codec, chosen by the name's last
extension as Spark's Hadoop codecs choose it (``.gz`` gzip, concatenated members too;
``.bz2`` bzip2; ``.zst`` Zstandard; case as written, as Hadoop matches it).

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
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from typing import BinaryIO

#: the codec of a landing file, by its name's last extension (pyarrow's codec names)
CODEC_BY_EXTENSION = {".gz": "gzip", ".bz2": "bz2", ".zst": "zstd"}
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
        try:
            if n < 0:
                return self._stream.read()
            parts, wanted = [], n
            while wanted > 0 and (part := self._stream.read(wanted)):
                parts.append(part)
                wanted -= len(part)
            return b"".join(parts)
        except (OSError, EOFError, ValueError) as exc:  # pyarrow: OSError, ArrowInvalid (a ValueError)
            raise OSError(
                f"{self._path}: its {self._codec} data does not decompress ({exc}): the file is cut short "
                "(still being written?) or damaged; none of it is read"
            ) from exc


@contextmanager
def open_landing_file(path: str, framing: str | None = None) -> Iterator[BinaryIO]:
    """``path`` opened for reading its bytes, decompressed when its name says so
    (:func:`codec_of`)."""
    codec = codec_of(path, framing)
    if codec is None:
        with open(path, "rb") as fh:
            yield fh
        return
    import pyarrow as pa

    with pa.input_stream(path, compression=codec) as stream:
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
