"""Decode throughput per format: the project's path against Spark's ``from_json`` and a
single-process parse bound, over the same landing files.

project
    The SELECT of ``models/staging/landing/stg_landing__records.sql`` as dbt compiles
    it (the table function ``cdc_decode_records``, one row per record, since 2026-11-26
    12:00; ``cdc_decode_files`` -> explode before: exactly as the pipeline runs it,
    whatever the model becomes), over the format's files (its ``stg_landing__files``
    table built by dbt, filtered to the format's feed), with the changes exploded into
    changelog rows (``change.*``, as ``models/changelog/changelog.sql`` flattens them),
    written to Spark's ``noop`` sink.
project_one_task (diagnostic, the main format only)
    The same query with the model's ``repartition`` hint set to one task: every file
    read and decoded by one task, on one core, as the models did before they spread
    the file list (``macros/sql/cdc_decode_tasks.sql``). Side by side with *project*,
    it shows what the spread buys.
project_python_path (diagnostic, the formats with a columnar decoder)
    The same query as *project* with the feed option ``columnar: false`` in the files'
    decoder options: ``cdc_decode`` decodes every record with ``decode_records``
    (``to_pylist`` of the batch, one Python dict per record), as before the columnar
    decoder (``debezium_json_columnar``, ``dts_shareplex_json_columnar``). Side by side with *project*,
    it shows what the columnar path buys.
project_two_calls (diagnostic, ``debezium_json`` only)
    The records model's shape before ``cdc_decode_files`` (:func:`two_calls_sql`):
    ``cdc_read_records`` -> explode -> ``cdc_decode`` -> explode, over the same files
    and tasks. Every record's text went to the JVM and back to Python between the two
    calls. Side by side with *project*, it shows what the one call buys.
project_cached_results (diagnostic, ``debezium_json`` only)
    The same query as *project* with ``cdc_decode_records`` replaced by a copy that writes
    each file's result once as an Arrow IPC file and memory-maps it when asked again, in
    whichever worker (one untimed run fills the cache; a file decoded afresh in a timed
    run is counted in ``cache_misses``), measured after the other variants: Spark's
    cost of carrying the decoded results (the Arrow batches to the JVM, the explodes,
    the rows) with no decoding at all. The floor of any decoder that returns the
    changelog contract's rows from a Python UDF nested as the records model holds them.
project_cached_flat (diagnostic, ``debezium_json`` only)
    The same cached results, read by an Arrow UDTF over ``TABLE(files)`` (the files
    spread over the model's tasks) that yields the query's rows flat: one per change,
    no nested array crossing into the JVM and no explode there. Side by side with
    *project_cached_results*, it shows what the other physical form Spark 4 offers
    (``arrow_udtf``) would take off that floor.
project_flat_udtf (diagnostic, ``debezium_json`` only)
    The same Arrow UDTF shape decoding for real: each file read and decoded by parts
    with ``cdc_decode_records``' own function (``decode_record_batches``; until
    2026-11-27 07:00, each batch of files read whole by ``decode_files_array``), its
    rows yielded flat, one per change. Side by side with *project* (an Arrow UDTF too
    since 2026-11-26 12:00, one row per record with its changes nested), it shows what
    yielding the changelog's rows themselves would buy.
python_decode_only (diagnostic)
    The pure functions the UDFs call (``split_file`` + ``decode_records``, batches of
    2000) in the benchmark's own process, over a sample of the files: the Python cost of
    decoding, without Spark, Arrow conversion or the JVM.
native
    The hand-written Spark baseline: ``spark.read.text`` + ``from_json`` with an explicit
    schema selecting the envelope's op, before/after images (``map<string,string>``:
    Spark keeps a number's JSON text, so no value is rounded), source block and times
    (for ``kcat`` lines the payload text is parsed by a second ``from_json``), written to
    ``noop``. It decodes no logical type, builds no key, seq or event id: it is the
    floor of what Spark's own JSON reader costs for the same fields. For CSV (Arcion
    internal CSV) it is Spark's CSV reader instead (``multiLine``, the header skipped,
    every field a string; snapshot and realtime files each read with their own field
    count, then ``unionByName``): the columns as text, no images, ops or cursors.
    DTS Avro has none: Spark decodes Avro with ``from_avro`` of the ``spark-avro``
    module, which pyspark's jars do not include (and no Maven repository is reachable
    here to fetch it); its *native* figures are ``None`` with the reason.
bound_orjson
    One Python process, no Spark: read each file, split lines, ``orjson.loads`` each
    (and the ``kcat`` payload). The cost of parsing the JSON once in Python. For CSV,
    the standard library's ``csv.reader`` over each file; for DTS Avro, the values of
    each Kafka dump (``pyarrow.parquet``) read by fastavro's ``schemaless_reader`` with
    the DTS writer schema (``parser`` names which).
bound_pyarrow
    ``pyarrow.json.read_json`` of each file as one block (kcat payloads read as a
    second JSON-lines buffer): a C++ parse with type inference, one thread per file.
    ``None`` with the reason when it cannot infer one type per column. For CSV,
    ``pyarrow.csv.read_csv`` (newlines in quoted values allowed, every column a string).
    DTS Avro: ``None`` (pyarrow reads no Avro).
"""

from __future__ import annotations

import contextlib
import io
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa

from bench.data import DataSet, FormatCase
from udfs.formats import decoder_class

IMG = "map<string,string>"
_DEBEZIUM_PAYLOAD = f"before {IMG}, after {IMG}, source {IMG}, op string, ts_ms bigint"
_KCAT = "topic string, partition int, offset bigint, key string, payload string"
_CDL = (
    f"{_DEBEZIUM_PAYLOAD}, DATA_STORE string, SEG_OWNER string, TABLE_NAME string, `TIMESTAMP` bigint, "
    f"OPERATION string, transaction struct<properties: array<struct<name: string, value: bigint>>>, "
    f"unique {IMG}, data {IMG}, message_version string, message_type string"
)
_ARCION_INTERNAL = (
    "tableName struct<namespace: struct<catalog: string, schema: string>, name: string>, opType string, "
    f"cursor string, before {IMG}, after {IMG}, exists {IMG}, operationcount string"
)

_DTS_CANAL = (
    f"database string, `table` string, type string, isDdl boolean, data array<{IMG}>, old array<{IMG}>, "
    f"pkNames array<string>, mysqlType {IMG}, es bigint, ts bigint, id bigint"
)
_DTS_SHAREPLEX = (
    "meta struct<time: string, op: string, scn: string, rowid: string, trans: string, seq: bigint, size: bigint, "
    f"`table`: string, idx: string, posttime: string>, data {IMG}, key {IMG}"
)


def _wrapped(fields: str) -> str:
    """A schema for envelopes with or without ``{"schema": .., "payload": ..}``."""
    from udfs.decode import split_top_level  # the harness's code snapshot, imported late like the rest

    struct_fields = ", ".join(f.strip().replace(" ", ": ", 1) for f in split_top_level(fields))
    return f"payload struct<{struct_fields}>, {fields}"


def _pick(name: str, *alternatives: str) -> str:
    """``coalesce(e.payload.x, e.x, ...)``: the field wherever the envelope has it."""
    cols = []
    for alt in (name, *alternatives):
        cols += [f"e.payload.{alt}", f"e.{alt}"]
    return f"coalesce({', '.join(cols)}) as {name.strip('`').lower()}"


def native_select(case: FormatCase) -> tuple[str, list[str]]:
    """(schema DDL of the envelope, select expressions over ``e``) for ``case``."""
    if case.format == "cdl_json":
        cols = [
            _pick("op", "OPERATION"),
            _pick("before"),
            _pick("after", "data"),
            _pick("source"),
            _pick("ts_ms", "`TIMESTAMP`"),
            _pick("unique"),
            "coalesce(e.payload.source['table'], e.source['table'], e.payload.TABLE_NAME, e.TABLE_NAME) as tbl",
            "coalesce(e.payload.transaction, e.transaction) as transaction",
        ]
        return _wrapped(_CDL), cols
    if case.format == "arcion_internal_json":
        return _ARCION_INTERNAL, ["e.tableName", "e.opType", "e.cursor", "e.before", "e.after", "e.exists"]
    if case.format == "dts_canal_json":
        cols = ["e.database", "e.`table`", "e.type", "e.isDdl", "e.data", "e.old", "e.pkNames", "e.mysqlType"]
        return _DTS_CANAL, [*cols, "e.es", "e.ts", "e.id"]
    if case.format == "dts_shareplex_json":
        return _DTS_SHAREPLEX, ["e.meta", "e.data", "e.key"]
    # Debezium-shaped envelopes: debezium_json, arcion_kafka_json, lindorm_json
    cols = [_pick("op"), _pick("before"), _pick("after"), _pick("source"), _pick("ts_ms")]
    return _wrapped(_DEBEZIUM_PAYLOAD), cols


def sql_literal(text: str) -> str:
    """A Spark SQL string literal (as the ``cdc_string_literal`` macro writes it)."""
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def compile_records_model(config: Any) -> str:
    """The SELECT of ``models/staging/landing/stg_landing__records.sql`` as dbt compiles it
    for ``config`` (whose feeds are the benchmark's folders), after building the models
    it reads (``stg_landing__files``: the files of every feed)."""
    from udfs.pipeline import run_dbt

    run_dbt(config, "run", extra=["--select", "+stg_landing__records", "--exclude", "stg_landing__records"])
    with contextlib.redirect_stdout(io.StringIO()):  # dbt prints what it compiled
        result = run_dbt(config, "compile", extra=["--select", "stg_landing__records"])
    (node,) = [r.node for r in result.result.results if r.node.name == "stg_landing__records"]
    return node.compiled_code


def files_sql(schema: str, feed: str, decoder_options: tuple[list[str], str] | None = None) -> str:
    """The rows of ``stg_landing__files`` of ``feed``; ``decoder_options``: (the table's
    columns, the decoder options text that replaces the files' own)."""
    where = f"from `{schema}`.`stg_landing__files` where feed = {sql_literal(feed)}"
    if decoder_options is None:
        return f"(select * {where})"
    columns, text = decoder_options
    cols = [f"{sql_literal(text)} as decoder_options" if c == "decoder_options" else f"`{c}`" for c in columns]
    return f"(select {', '.join(cols)} {where})"


def python_path_options(decoder_options: str) -> str:
    """``decoder_options`` with the feed option ``columnar: false`` (the record-by-record
    path of ``cdc_decode``), as ``Config.decoder_options`` JSON (sorted keys)."""
    import json

    opts = json.loads(decoder_options)
    opts["options"] = {**(opts.get("options") or {}), "columnar": False}
    return json.dumps(opts, sort_keys=True)


#: the hint of stg_landing__records that spreads the file list over the decoding tasks
_TASKS_HINT = re.compile(r"/\*\+\s*repartition\((\d+)\)\s*\*/", re.IGNORECASE)


def model_tasks(compiled: str) -> int:
    """The number of decoding tasks the compiled records model asks for (its hint)."""
    found = _TASKS_HINT.findall(compiled)
    return int(found[0]) if found else 1


def tasks_with_files(spark: Any, files: str, tasks: int) -> int:
    """How many Spark tasks hold at least one of the files of ``files`` when the file
    list is spread over ``tasks`` partitions as the model spreads it: the tasks that
    read and decode them, as nothing repartitions the records after."""
    sql = (
        f"select count(distinct task) from (select spark_partition_id() as task "
        f"from (select /*+ REPARTITION({tasks}) */ * from {files} as f) as r) as t"
    )
    return spark.sql(sql).collect()[0][0]


def project_sql(
    compiled: str,
    schema: str,
    feed: str,
    one_task: bool = False,
    decoder_options: tuple[list[str], str] | None = None,
) -> str:
    """The project's decode path for the files of ``feed`` (see the module doc).

    ``compiled`` is :func:`compile_records_model`'s SQL; its ``stg_landing__files``
    becomes the files of ``feed`` only. ``one_task`` is the diagnostic variant
    ``project_one_task``: the model's ``repartition`` hint asks for one task.
    ``decoder_options`` replaces the files' decoder options (see :func:`files_sql`;
    ``project_python_path``).
    """
    pattern = re.compile(rf"`?{re.escape(schema)}`?\.`?stg_landing__files`?")
    code, n = pattern.subn(lambda _: files_sql(schema, feed, decoder_options), compiled)
    assert n >= 1, f"stg_landing__files not found in the compiled stg_landing__records:\n{compiled}"
    if one_task:
        code = _TASKS_HINT.sub("/*+ repartition(1) */", code)
    return f"""
with bench_records as (
{code}
)
select feed, source_file, record_index, status, reason, change.*
from bench_records lateral view outer explode(changes) exploded as change
"""


def two_calls_sql(compiled: str, schema: str, feed: str) -> str:
    """*project_two_calls* (see the module doc): the records model as it was before
    ``cdc_decode_files`` (two UDF calls, the records exploded between them), with the
    model's task count, and the bench's explode of the changes."""
    return f"""
with files as (
    select /*+ repartition({model_tasks(compiled)}) */ * from {files_sql(schema, feed)} as f
),
records as (
    select files.feed, files.source_file, files.decoder_options, rec.*
    from files lateral view outer explode(cdc_read_records(source_file, framing, decoder_options)) exploded as rec
    where exploded.rec is not null
),
decoded as (
    select records.*, cdc_decode(decoder_options, text, kafka_key, source_file, header) as result from records
),
final as (
    select
        feed, source_file, record_index,
        case when error is not null then 'quarantined' else result.status end as status,
        coalesce(error, result.reason) as reason,
        case when error is not null or result.status = 'quarantined' then coalesce(text, raw_b64) end as raw_record,
        case when error is null then result.changes end as changes
    from decoded
)
select feed, source_file, record_index, status, reason, change.*
from final lateral view outer explode(changes) exploded as change
"""


def csv_headers(case: FormatCase) -> dict[str, list[str]]:
    """The header row's names of a CSV case's files: ``{glob: names}``, snapshot files
    (``*.snapshot.csv``) and realtime files."""
    from bench.data import tables, workload

    (spec,) = tables(case)
    header = workload().arcion_csv_header
    return {
        "*.snapshot.csv": header(spec, realtime=False).split(","),
        "part-?????.csv": header(spec, realtime=True).split(","),
    }


def native_csv_frame(spark: Any, case: FormatCase, folder: Path) -> Any:
    """Spark's CSV reader over a CSV case's files (see *native* in the module doc)."""
    frames = []
    for glob, names in csv_headers(case).items():
        ddl = ", ".join(f"`{n}` string" for n in names)
        reader = spark.read.schema(ddl).options(header=True, multiLine=True, escape='"', nullValue="NULL")
        frames.append(reader.option("pathGlobFilter", glob).csv(str(folder)))
    return frames[0].unionByName(frames[1], allowMissingColumns=True)


#: why a format has no native Spark baseline here
NO_NATIVE = {
    "dts_avro": "no Avro decoder in Spark here: from_avro is in the spark-avro module, which pyspark does not ship",
}


def native_frame(spark: Any, case: FormatCase, folder: Path) -> Any:
    """The native ``from_json`` baseline as a DataFrame over ``folder`` (None for a
    format of :data:`NO_NATIVE`)."""
    from pyspark.sql import functions as F  # noqa: N812 - the usual alias

    if case.format in NO_NATIVE:
        return None
    if case.framing == "csv":
        return native_csv_frame(spark, case, folder)
    schema, cols = native_select(case)
    lines = spark.read.text(str(folder))
    if case.framing == "kcat":
        kcat = lines.select(F.from_json("value", _KCAT).alias("k")).select("k.*")
        parsed = kcat.select("topic", "partition", "offset", "key", F.from_json("payload", schema).alias("e"))
        return parsed.selectExpr("topic", "partition", "offset", "key", *cols)
    return lines.select(F.from_json("value", schema).alias("e")).selectExpr(*cols)


def _pickle_by_value() -> None:
    """The bench's UDF and UDTFs call this module's helpers: Spark's workers, which
    cannot import ``bench``, get them by value."""
    import sys

    from pyspark import cloudpickle

    cloudpickle.register_pickle_by_value(sys.modules[__name__])


CACHED_UDF = "bench_cached_decode_records"


def register_cached_decode(spark: Any, cache_dir: Path) -> None:
    """Register :data:`CACHED_UDF` (see *project_cached_results* in the module doc): an
    Arrow UDTF like ``cdc_decode_records`` whose decoded records per file are written
    once to ``cache_dir`` as an Arrow IPC file, and memory-mapped (no copy, no decode)
    by whichever worker asks again; it yields them as ``cdc_decode_records`` does, a
    chunk of records at a time. A file decoded afresh adds a line to
    ``cache_dir/misses.log``."""
    from pyspark.sql.functions import arrow_udtf

    from udfs.spark_udfs import DECODED_RECORD_ROWS_DDL

    folder = str(cache_dir)  # a local: the pickled class carries it
    cache_dir.mkdir(parents=True, exist_ok=True)
    _pickle_by_value()

    @arrow_udtf(returnType=DECODED_RECORD_ROWS_DDL)
    class BenchCachedDecodeRecords:
        def eval(self, files: pa.RecordBatch) -> Any:
            from udfs.spark_udfs import DECODE_CHUNK, record_rows

            path, framing, options = (files.column(c) for c in ("source_file", "framing", "decoder_options"))
            names = filled_cache(folder, path, framing, options)
            for file, name in zip(path.to_pylist(), names, strict=True):
                records = read_cached(name).flatten()
                for start in range(0, len(records), DECODE_CHUNK):
                    chunk = records.slice(start, DECODE_CHUNK)
                    yield record_rows(file, chunk)

    spark.udtf.register(CACHED_UDF, BenchCachedDecodeRecords)


def filled_cache(folder: str, path: pa.Array, framing: pa.Array, options: pa.Array) -> list[str]:
    """:func:`cached_paths` of the files, each file missing from the cache decoded by
    ``cdc_decode_files``' function and written there first."""
    import os

    from udfs.spark_udfs import decode_files_array

    names = cached_paths(folder, path, framing, options)
    missing = [i for i, name in enumerate(names) if not os.path.exists(name)]
    if missing:
        take = pa.array(missing, type=pa.int64())
        fresh = decode_files_array(path.take(take), framing.take(take), options.take(take))
        for j, i in enumerate(missing):
            table = pa.table({"r": fresh.slice(j, 1)})
            partial = f"{names[i]}.{os.getpid()}.tmp"  # renamed when whole: readers never see half a file
            with pa.OSFile(partial, "wb") as sink, pa.ipc.new_file(sink, table.schema) as writer:
                writer.write_table(table)
            os.replace(partial, names[i])
        with open(os.path.join(folder, "misses.log"), "a", encoding="utf-8") as fh:
            fh.write(f"{len(missing)}\n")
    return names


CACHED_FLAT_UDTF = "bench_cached_flat_changes"
#: the columns of the bench's project query (see :func:`project_sql`), flat
FLAT_PREFIX_DDL = "feed string, source_file string, record_index int, status string, reason string"


def cached_paths(folder: str, path: pa.Array, framing: pa.Array, options: pa.Array) -> list[str]:
    """Where :data:`CACHED_UDF` keeps the decoded records of each file."""
    import hashlib
    import os

    keys = zip(path.to_pylist(), framing.to_pylist(), options.to_pylist(), strict=True)
    return [os.path.join(folder, hashlib.sha256(repr(k).encode()).hexdigest() + ".arrow") for k in keys]


def read_cached(name: str) -> pa.ListArray:
    """One file's cached records (memory-mapped: no copy)."""
    return pa.ipc.open_file(pa.memory_map(name)).read_all().column("r").chunk(0)


def flat_changes(feed: pa.Array, source_file: pa.Array, nested: pa.ListArray) -> pa.RecordBatch:
    """The rows of the bench's project query (:func:`project_sql`: one per change, one
    with null change fields for a record without any) from ``cdc_decode_files``
    results, ``nested`` one list of records per file of ``feed`` / ``source_file``."""
    import numpy as np
    import pyarrow.compute as pc

    rec_file = pc.list_parent_indices(nested)
    recs = pc.list_flatten(nested)
    # struct_field, not .field(): a null struct's fields read as null
    result, error = pc.struct_field(recs, "result"), pc.struct_field(recs, "error")
    changes = pc.struct_field(result, "changes")
    # a record with a framing error has no changes, whatever its result holds (the model's
    # rule); a null record has no row at all (the model's `where rec is not null`)
    has_error = pc.is_valid(error)
    failed = has_error.to_numpy(zero_copy_only=False)
    present = pc.is_valid(recs).to_numpy(zero_copy_only=False)
    counts = pc.fill_null(pc.list_value_length(changes), 0).to_numpy(zero_copy_only=False)
    parent = pc.list_parent_indices(changes).to_numpy(zero_copy_only=False)
    kept = np.flatnonzero(~failed[parent] & present[parent])
    empty = np.flatnonzero(((counts == 0) | failed) & present)
    row_rec = np.concatenate((parent[kept], empty))
    change_at = np.concatenate((kept, np.full(len(empty), -1)))
    order = np.argsort(row_rec, kind="stable")
    row_rec, change_at = row_rec[order], change_at[order]
    rows = pa.array(row_rec, type=pa.int64())
    at = pa.array(change_at, mask=change_at < 0, type=pa.int64())
    change = pc.list_flatten(changes).take(at)
    file_rows = rec_file.take(rows)
    status = pc.if_else(has_error, "quarantined", pc.struct_field(result, "status"))
    reason = pc.coalesce(error, pc.struct_field(result, "reason"))
    columns = [
        feed.take(file_rows),
        source_file.take(file_rows),
        pc.struct_field(recs, "record_index").take(rows),
        status.take(rows),
        reason.take(rows),
        *change.flatten(),
    ]
    names = ["feed", "source_file", "record_index", "status", "reason", *[f.name for f in change.type]]
    return pa.RecordBatch.from_arrays(columns, names=names)


def register_cached_flat(spark: Any, cache_dir: Path) -> None:
    """Register :data:`CACHED_FLAT_UDTF` (*project_cached_flat* in the module doc): an
    Arrow UDTF over ``TABLE(files)`` that yields the rows of the project query flat,
    from the files :data:`CACHED_UDF` cached (no decoding, no explode in Spark)."""
    from pyspark.sql.functions import arrow_udtf

    from udfs.decode import CHANGE_FIELDS

    folder = str(cache_dir)
    _pickle_by_value()

    @arrow_udtf(returnType=f"{FLAT_PREFIX_DDL}, {CHANGE_FIELDS}")
    class BenchCachedFlatChanges:
        def eval(self, files: pa.RecordBatch) -> Any:
            paths = files.column("source_file")
            names = cached_paths(folder, paths, files.column("framing"), files.column("decoder_options"))
            if names:
                yield flat_changes(files.column("feed"), paths, pa.concat_arrays([read_cached(n) for n in names]))

    spark.udtf.register(CACHED_FLAT_UDTF, BenchCachedFlatChanges)


DECODE_FLAT_UDTF = "bench_decode_flat_changes"


def decode_flat_batches(
    feeds: pa.Array, paths: pa.Array, framings: pa.Array, options: pa.Array, **parts: Any
) -> Iterator[pa.RecordBatch]:
    """The rows of the bench's project query (:func:`flat_changes`), the files read and
    decoded by parts as ``cdc_decode_records`` reads them
    (:func:`udfs.spark_udfs.decode_record_batches`, ``parts``: its ``chunk`` and
    ``block_bytes``): one batch of flat rows per batch of decoded records."""
    from udfs.spark_udfs import decode_record_batches

    for i in range(len(paths)):
        one = [column.slice(i, 1) for column in (paths, framings, options)]
        for rows in decode_record_batches(*one, **parts):
            decoded = pa.StructArray.from_arrays(rows.columns[1:], names=rows.schema.names[1:])
            nested = pa.ListArray.from_arrays(pa.array([0, rows.num_rows], pa.int32()), decoded)
            yield flat_changes(feeds.slice(i, 1), one[0], nested)


def register_decode_flat(spark: Any) -> None:
    """Register :data:`DECODE_FLAT_UDTF` (*project_flat_udtf* in the module doc): an
    Arrow UDTF over ``TABLE(files)`` that reads and decodes each file by parts as
    ``cdc_decode_records`` does (:func:`decode_flat_batches`) and yields the project
    query's rows flat."""
    from pyspark.sql.functions import arrow_udtf

    from udfs.decode import CHANGE_FIELDS

    _pickle_by_value()

    @arrow_udtf(returnType=f"{FLAT_PREFIX_DDL}, {CHANGE_FIELDS}")
    class BenchDecodeFlatChanges:
        def eval(self, files: pa.RecordBatch) -> Any:
            yield from decode_flat_batches(
                files.column("feed"),
                files.column("source_file"),
                files.column("framing"),
                files.column("decoder_options"),
            )

    spark.udtf.register(DECODE_FLAT_UDTF, BenchDecodeFlatChanges)


def cache_misses(cache_dir: Path) -> int:
    """Files decoded afresh by :data:`CACHED_UDF` so far."""
    log = cache_dir / "misses.log"
    if not log.exists():
        return 0
    return sum(int(line) for line in log.read_text(encoding="utf-8").split())


def flat_sql(compiled: str, schema: str, feed: str, udtf: str = CACHED_FLAT_UDTF) -> str:
    """*project_cached_flat* (or, with :data:`DECODE_FLAT_UDTF`, *project_flat_udtf*):
    ``udtf`` over the files of ``feed``, spread over the model's tasks as the model
    spreads them."""
    files = files_sql(schema, feed)
    spread = f"select /*+ repartition({model_tasks(compiled)}) */ feed, source_file, framing, decoder_options"
    return f"select * from {udtf}(TABLE({spread} from {files} as f))"


def _cached_results(
    spark: Any, case: FormatCase, model: tuple[str, str, str], cache_dir: Path, sampler: Any, repeat: int
) -> tuple[float, float, int]:
    """*project_cached_results* and *project_cached_flat*: (best time of ``repeat`` runs
    of each after one that fills the cache, files decoded afresh during those runs: 0
    unless a file changed)."""
    import shutil

    register_cached_decode(spark, cache_dir)
    register_cached_flat(spark, cache_dir)
    code, n = re.subn(r"\bcdc_decode_records\(", f"{CACHED_UDF}(", model[0])
    assert n == 1, "cdc_decode_records not found once in the compiled stg_landing__records"
    frame = spark.sql(project_sql(code, *model[1:]))
    flat = spark.sql(flat_sql(*model))
    try:
        with sampler.section(f"decode:{case.name}:project_cached_results:fill"):
            timed_noop(frame)
        before = cache_misses(cache_dir)
        with sampler.section(f"decode:{case.name}:project_cached_results"):
            nested_s = min(timed_noop(frame) for _ in range(repeat))
        with sampler.section(f"decode:{case.name}:project_cached_flat"):
            flat_s = min(timed_noop(flat) for _ in range(repeat))
        return nested_s, flat_s, cache_misses(cache_dir) - before
    finally:
        shutil.rmtree(cache_dir, ignore_errors=True)


def timed_noop(df: Any) -> float:
    t0 = time.perf_counter()
    df.write.format("noop").mode("overwrite").save()
    return time.perf_counter() - t0


def bound_csv_module(data: DataSet) -> dict[str, Any]:
    """Single-process ``csv.reader`` parse of every file (*bound_orjson* for CSV)."""
    import csv

    t0 = time.perf_counter()
    parsed = 0
    for path in data.files:
        with path.open(newline="", encoding="utf-8") as fh:
            parsed += sum(1 for _ in csv.reader(fh)) - 1  # the header row
    return {"seconds": time.perf_counter() - t0, "parsed": parsed, "failed": 0, "parser": "csv"}


def bound_fastavro(data: DataSet) -> dict[str, Any]:
    """Single-process fastavro parse of every DTS Avro value of the Kafka dumps
    (*bound_orjson* for DTS Avro): the values read by ``pyarrow.parquet``, each decoded
    by ``schemaless_reader`` with the DTS writer schema."""
    import fastavro
    import pyarrow.parquet as pq

    from udfs.formats.dts_avro import writer_schema

    schema = writer_schema()
    t0 = time.perf_counter()
    parsed = failed = 0
    for path in data.files:
        for value in pq.read_table(path, columns=["value"]).column("value").to_pylist():
            if value is None:
                continue
            try:
                fastavro.schemaless_reader(io.BytesIO(value), schema)
                parsed += 1
            except (ValueError, EOFError, IndexError):
                failed += 1
    return {"seconds": time.perf_counter() - t0, "parsed": parsed, "failed": failed, "parser": "fastavro"}


def bound_orjson(data: DataSet, framing: str) -> dict[str, Any]:
    """Single-process ``orjson`` parse of every record (see the module doc)."""
    import orjson

    if framing == "csv":
        return bound_csv_module(data)
    if framing == "kafka_parquet":
        return bound_fastavro(data)
    t0 = time.perf_counter()
    parsed = failed = 0
    for path in data.files:
        for line in path.read_bytes().split(b"\n"):
            if not line.strip():
                continue
            try:
                obj = orjson.loads(line)
                if framing == "kcat" and obj.get("payload") is not None:
                    orjson.loads(obj["payload"])
                parsed += 1
            except orjson.JSONDecodeError:
                failed += 1
    return {"seconds": time.perf_counter() - t0, "parsed": parsed, "failed": failed, "parser": "orjson"}


def python_decode(
    data: DataSet, framing: str, decoder_options: str, sample: int, feed_options: dict[str, Any] | None = None
) -> dict[str, Any]:
    """The pure functions behind the UDFs, in this process, without Spark:
    ``udfs.framing.split_file`` + ``udfs.decode.decode_records`` over the first files
    of ``data`` (at least ``sample`` records; a rate per record needs no more).
    ``feed_options``: the framing's options (a CSV file's ``header``)."""
    import json

    from udfs.decode import decode_records
    from udfs.framing import split_file

    binary = decoder_class(json.loads(decoder_options)["format"]).binary_values  # DTS Avro: values as base64

    def decode(chunk: list[Any]) -> list[dict[str, Any]]:
        keys, headers = [r.kafka_key for r in chunk], [r.header for r in chunk]
        return decode_records(decoder_options, [r.text for r in chunk], keys, headers=headers)

    # the first call imports the format's modules (once per process, as in a worker)
    decode(split_file(data.files[0].read_bytes(), framing, feed_options, binary)[:1])
    t0 = time.perf_counter()
    records = changes = quarantined = 0
    for path in data.files:
        raw = split_file(path.read_bytes(), framing, feed_options, binary)
        for i in range(0, len(raw), 2000):  # the UDF's batch size
            results = decode(raw[i : i + 2000])
            changes += sum(len(r["changes"] or []) for r in results)
            quarantined += sum(r["status"] == "quarantined" for r in results)
        records += len(raw)
        if records >= sample:
            break
    seconds = time.perf_counter() - t0
    return {
        "seconds": round(seconds, 3),
        "records": records,
        "changes": changes,
        "quarantined": quarantined,  # none in the generated data: a check that it decodes
        "records_per_s": round(records / seconds, 1),
    }


def _one_block(size: int) -> Any:
    """Read options making a whole file one block: pyarrow infers each block's types
    alone and cannot merge blocks where a column was all null in the first one."""
    import pyarrow.json as pj

    return pj.ReadOptions(block_size=size + 1)


def bound_pyarrow(data: DataSet, framing: str) -> dict[str, Any]:
    """``pyarrow.json.read_json`` of every file (see the module doc)."""
    import pyarrow.json as pj

    if framing == "csv":
        return bound_pyarrow_csv(data)
    if framing == "kafka_parquet":
        return {"seconds": None, "rows": 0, "error": "pyarrow reads no Avro"}
    t0 = time.perf_counter()
    rows = 0
    try:
        for path in data.files:
            table = pj.read_json(path, read_options=_one_block(path.stat().st_size))
            if framing == "kcat":
                payloads = [p for p in table.column("payload").to_pylist() if p is not None]
                buffer = "\n".join(payloads).encode("utf-8")
                table = pj.read_json(io.BytesIO(buffer), read_options=_one_block(len(buffer)))
            rows += table.num_rows
    except Exception as exc:  # noqa: BLE001 - a type pyarrow cannot infer is a result, not a failure
        return {"seconds": None, "rows": rows, "error": f"{type(exc).__name__}: {str(exc)[:200]}"}
    return {"seconds": time.perf_counter() - t0, "rows": rows, "error": None}


def bound_pyarrow_csv(data: DataSet) -> dict[str, Any]:
    """``pyarrow.csv.read_csv`` of every file, every column a string (*bound_pyarrow*
    for CSV): the header row names the columns."""
    import pyarrow.csv as pc_csv

    t0 = time.perf_counter()
    rows = 0
    for path in data.files:
        with path.open("rb") as fh:
            names = fh.readline().decode("utf-8").rstrip("\r\n").split(",")
        table = pc_csv.read_csv(
            path,
            read_options=pc_csv.ReadOptions(block_size=path.stat().st_size + 1),
            parse_options=pc_csv.ParseOptions(newlines_in_values=True),
            convert_options=pc_csv.ConvertOptions(column_types=dict.fromkeys(names, pa.string())),
        )
        rows += table.num_rows
    return {"seconds": time.perf_counter() - t0, "rows": rows, "error": None}


def _rates(seconds: float | None, data: DataSet) -> dict[str, Any]:
    if not seconds:
        return {"seconds": seconds, "records_per_s": None, "mb_per_s": None}
    return {
        "seconds": round(seconds, 3),
        "records_per_s": round(data.records / seconds, 1),
        "mb_per_s": round(data.bytes / 1e6 / seconds, 2),
    }


def run_decode(
    spark: Any,
    case: FormatCase,
    data: DataSet,
    model: tuple[str, str, str],
    decoder_options: str,
    sampler: Any,
    repeat: int = 1,
    one_task: bool = False,
    python_sample: int = 20_000,
    cache_dir: Path | None = None,
) -> dict[str, Any]:
    """Every variant over ``data``; the best of ``repeat`` runs of each Spark variant.

    ``model`` is (compiled records model, its schema, the feed of ``data``);
    ``one_task`` adds ``project_one_task`` (see :func:`project_sql`); a format with a
    columnar decoder adds ``project_python_path`` (the same query with ``columnar:
    false``); a ``debezium_json`` case adds ``project_two_calls`` and, with
    ``cache_dir`` (a folder for the cached results, removed after),
    ``project_cached_results``.
    """
    best: dict[str, float] = {}
    frames = {"project": spark.sql(project_sql(*model))}
    native_df = native_frame(spark, case, data.folder)
    if native_df is not None:
        frames["native"] = native_df
    if one_task:
        frames["project_one_task"] = spark.sql(project_sql(*model, one_task=True))
    python_path = decoder_class(case.format).columnar_decoder is not None
    debezium = case.format == "debezium_json"
    misses = None
    if python_path:
        columns = spark.table(f"`{model[1]}`.`stg_landing__files`").columns
        override = (columns, python_path_options(decoder_options))
        frames["project_python_path"] = spark.sql(project_sql(*model, decoder_options=override))
    if debezium:
        frames["project_two_calls"] = spark.sql(two_calls_sql(*model))
        register_decode_flat(spark)
        frames["project_flat_udtf"] = spark.sql(flat_sql(*model, udtf=DECODE_FLAT_UDTF))
    for _ in range(repeat):
        for name, frame in frames.items():
            with sampler.section(f"decode:{case.name}:{name}"):
                t = timed_noop(frame)
            best[name] = min(t, best.get(name, t))
    if debezium and cache_dir is not None:
        # after the others, so the cache's files and page cache weigh on no other variant
        nested_s, flat_s, misses = _cached_results(spark, case, model, cache_dir, sampler, repeat)
        best["project_cached_results"], best["project_cached_flat"] = nested_s, flat_s
    project, native = best["project"], best.get("native")
    with sampler.section(f"decode:{case.name}:bound"):
        orj = min((bound_orjson(data, case.framing) for _ in range(repeat)), key=lambda r: r["seconds"])
        pya = bound_pyarrow(data, case.framing)
        pyd = python_decode(data, case.framing, decoder_options, python_sample, case.options)
    out = {
        "format": case.format,
        "case": case.name,
        "framing": case.framing,
        "data": data.as_dict(),
        "project": _rates(project, data),
        "project_one_task": _rates(best.get("project_one_task"), data) | {"tasks": 1 if one_task else None},
        "project_python_path": _rates(best.get("project_python_path"), data),
        "project_two_calls": _rates(best.get("project_two_calls"), data),
        "project_cached_results": _rates(best.get("project_cached_results"), data) | {"cache_misses": misses},
        "project_cached_flat": _rates(best.get("project_cached_flat"), data),
        "project_flat_udtf": _rates(best.get("project_flat_udtf"), data),
        "python_decode_only": pyd,
        "native_from_json": _rates(native, data) | {"missing": NO_NATIVE.get(case.format)},
        "bound_orjson": _rates(orj["seconds"], data) | {"failed_records": orj["failed"], "parser": orj["parser"]},
        "bound_pyarrow": _rates(pya["seconds"], data) | {"error": pya["error"]},
        "spark_tasks": {
            "project": tasks_with_files(spark, files_sql(model[1], model[2]), model_tasks(model[0])),
            "native": native_df.rdd.getNumPartitions() if native_df is not None else None,
            **({"project_one_task": 1} if one_task else {}),
        },
    }
    out["ratio_project_over_native"] = round(project / native, 2) if native else None
    # < 1: the columnar path is faster than the record-by-record one
    python_s = best.get("project_python_path")
    out["ratio_project_over_python_path"] = round(project / python_s, 2) if python_s else None
    two_calls_s = best.get("project_two_calls")
    out["ratio_project_over_two_calls"] = round(project / two_calls_s, 2) if two_calls_s else None
    # > 1: carrying the results alone costs more than Spark's own decode
    cached_s = best.get("project_cached_results")
    out["ratio_cached_results_over_native"] = round(cached_s / native, 2) if cached_s else None
    flat_s = best.get("project_cached_flat")
    out["ratio_cached_flat_over_native"] = round(flat_s / native, 2) if flat_s else None
    # < 1: the same decoding, its rows yielded flat by an Arrow UDTF, is faster
    flat_udtf_s = best.get("project_flat_udtf")
    out["ratio_flat_udtf_over_project"] = round(flat_udtf_s / project, 2) if flat_udtf_s else None
    out["ratio_flat_udtf_over_native"] = round(flat_udtf_s / native, 2) if flat_udtf_s and native else None
    out["ratio_project_over_bound_orjson"] = round(project / orj["seconds"], 2)
    out["ratio_project_over_bound_pyarrow"] = round(project / pya["seconds"], 2) if pya["seconds"] else None
    # time per record in Spark / time per record of the same Python functions alone
    out["ratio_project_over_python_decode_only"] = round(project * pyd["records_per_s"] / data.records, 2)
    return out
