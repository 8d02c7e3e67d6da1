"""Thin Spark wrappers around the pure functions, and their registration.

Every function here is a vectorized Arrow UDF (``arrow_udf``: a batch of rows in, an
Arrow array out; no row-at-a-time Python UDF) or a table function, registered under a
``cdc_`` name so dbt models and analysts call them from SQL:

``cdc_read_records(path, framing, options)``
    the records of one landing file, as ``array<struct<...>>`` (see ``RECORDS_DDL``).
``cdc_decode(options, text, kafka_key)``
    one record decoded into changelog rows (see ``udfs.decode``).
``cdc_list_files(root)``
    table function: every file below ``root`` (recursive; names starting with ``.`` or
    ``_`` are skipped, as Spark's file sources do).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa

from udfs.decode import DECODE_RESULT_DDL, decode_records
from udfs.framing import split_file

RECORDS_DDL = (
    "array<struct<record_index:int, text:string, error:string, raw_b64:string, kafka_key:string, "
    "kafka_topic:string, kafka_partition:int, kafka_offset:bigint, kafka_timestamp_ms:bigint>>"
)
LIST_FILES_DDL = "path string, size bigint, modified_us bigint"


def _arrow_type(ddl: str) -> pa.DataType:
    from pyspark.sql.pandas.types import to_arrow_type
    from pyspark.sql.types import _parse_datatype_string

    return to_arrow_type(_parse_datatype_string(ddl))


def local_path(path: str) -> str:
    return path[len("file:") :] if path.startswith("file:") else path


def read_records(paths: list[str | None], framings: list[str | None], options: list[str | None]) -> list[Any]:
    """Pure batch function behind ``cdc_read_records``."""
    out: list[Any] = []
    for path, framing, opts in zip(paths, framings, options, strict=True):
        if path is None or framing is None:
            out.append(None)
            continue
        with open(local_path(path), "rb") as fh:
            content = fh.read()
        feed_options = (json.loads(opts).get("options") or {}) if opts else {}
        out.append([r.__dict__ for r in split_file(content, framing, feed_options)])
    return out


def list_files(root: str) -> Iterator[tuple[str, int, int]]:
    """Pure generator behind ``cdc_list_files``: (absolute path, size, mtime in us), sorted."""
    root_path = Path(local_path(root))
    found = []
    for dirpath, dirnames, filenames in os.walk(root_path):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith((".", "_")))
        for name in filenames:
            if name.startswith((".", "_")):
                continue
            p = Path(dirpath) / name
            st = p.stat()
            found.append((str(p), st.st_size, st.st_mtime_ns // 1000))
    yield from sorted(found)


def register(spark: Any) -> None:
    """Register every ``cdc_`` function in ``spark`` (idempotent)."""
    from pyspark.sql.functions import arrow_udf, udtf

    records_type = _arrow_type(RECORDS_DDL)
    decode_type = _arrow_type(DECODE_RESULT_DDL)

    @arrow_udf(RECORDS_DDL)  # type: ignore[misc]
    def cdc_read_records(path: pa.Array, framing: pa.Array, options: pa.Array) -> pa.Array:
        return pa.array(read_records(path.to_pylist(), framing.to_pylist(), options.to_pylist()), type=records_type)

    @arrow_udf(DECODE_RESULT_DDL)  # type: ignore[misc]
    def cdc_decode(options: pa.Array, text: pa.Array, kafka_key: pa.Array) -> pa.Array:
        opts = options.to_pylist()
        texts = text.to_pylist()
        keys = kafka_key.to_pylist()
        results: list[Any] = [None] * len(texts)
        # A batch nearly always holds one feed: decode each feed's rows together.
        by_options: dict[str, list[int]] = {}
        for i, o in enumerate(opts):
            by_options.setdefault(o or "{}", []).append(i)
        for o, idx in by_options.items():
            decoded = decode_records(o, [texts[i] for i in idx], [keys[i] for i in idx])
            for i, r in zip(idx, decoded, strict=True):
                results[i] = r
        return pa.array(results, type=decode_type)

    @udtf(returnType=LIST_FILES_DDL)  # type: ignore[misc]
    class CdcListFiles:
        def eval(self, root: str) -> Iterator[tuple[str, int, int]]:
            yield from list_files(root)

    spark.udf.register("cdc_read_records", cdc_read_records)
    spark.udf.register("cdc_decode", cdc_decode)
    spark.udtf.register("cdc_list_files", CdcListFiles)
