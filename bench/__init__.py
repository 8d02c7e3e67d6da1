"""Benchmarks of the decode path, the whole pipeline and the merge (``python -m bench``).

The harness generates its own landing files, measures in one run on the same files:

* **decode**, per format: the project's decoder path (``cdc_decode_records`` in
  Spark SQL, as ``models/staging/landing`` runs it) against Spark's
  native ``from_json`` with an explicit schema and against a single-process parse
  bound (``orjson`` loop, ``pyarrow.json``);
* **end to end**: ``udfs.pipeline.run_pipeline`` per dbt node (``run_results.json``)
  against a native ``from_json`` + parquet write of the same events;
* **merge growth**: one fixed batch merged into states of growing size;
* **peak memory** of the driver JVM and the Python workers, sampled in the background;

then writes ``bench/results/<UTC time>.json`` and a PNG chart and prints a table.
See ``BENCHMARKS.md`` for the method and the analysis, ``python -m bench --help`` for
the options.
"""
