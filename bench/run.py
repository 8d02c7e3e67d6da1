"""``python -m bench``: generate the data, run every measurement in one Spark session,
write ``<out>/<UTC time>.json`` and ``.png``, print the table.

Sizes (default / ``--full``, the sizes of the performance issue): decode 200k / 2M
Debezium events and 50k / 500k events of each other format, end to end 100k / 1M
events, merge growth into states of 100k, 1M / 100k, 1M, 10M rows (the issue's sizes,
10M behind ``--full``) with a batch of 10k changes (20% late), hot key of 1k, 4k / 1k, 4k,
8k versions. Every size has its own option. The default takes 10-15 minutes on a shared
2-core machine; the full sizes take hours and more memory (``--driver-memory``).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench.data import FORMAT_CASES, REPO, DataSet, tables_config, write_dataset

DEFAULTS = {
    "events": 200_000,
    "other_events": 50_000,
    "e2e_events": 100_000,
    "state_sizes": "100000,1000000",
    "merge_batch": 10_000,
    "hot_key_versions": "1000,4000",
}
FULL = {
    "events": 2_000_000,
    "other_events": 500_000,
    "e2e_events": 1_000_000,
    "state_sizes": "100000,1000000,10000000",
    "merge_batch": 10_000,
    "hot_key_versions": "1000,4000,8000",
}


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m bench", description=__doc__.splitlines()[0])
    p.add_argument(
        "--full", action="store_true", help="the issue's sizes (2M decode, 1M end to end, 100k/1M/10M state)"
    )
    p.add_argument("--events", type=int, help=f"Debezium events for decode (default {DEFAULTS['events']:,})")
    p.add_argument(
        "--other-events",
        type=int,
        help=f"events of each other format for decode (default {DEFAULTS['other_events']:,}; 0: Debezium only)",
    )
    p.add_argument("--formats", default=",".join(FORMAT_CASES), help="decode formats (default: %(default)s)")
    p.add_argument("--e2e-events", type=int, help=f"events end to end (default {DEFAULTS['e2e_events']:,})")
    p.add_argument("--state-sizes", help=f"state sizes of the merge growth (default {DEFAULTS['state_sizes']})")
    p.add_argument("--merge-batch", type=int, help=f"changes per merged batch (default {DEFAULTS['merge_batch']:,})")
    p.add_argument(
        "--merge-repeat", type=int, default=2, help="batches merged per state size, fastest kept (default %(default)s)"
    )
    p.add_argument(
        "--hot-key-versions",
        help=f"versions of the one key of the hot-key merge (default {DEFAULTS['hot_key_versions']}; 0: skip)",
    )
    p.add_argument("--late-fraction", type=float, default=0.2, help="late changes in a batch (default %(default)s)")
    p.add_argument("--events-per-file", type=int, default=10_000, help="events per landing file (default %(default)s)")
    p.add_argument("--repeat", type=int, default=1, help="decode runs per variant, best kept (default %(default)s)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--master", default=os.environ.get("CDC_SPARK_MASTER", "local[*]"))
    p.add_argument("--driver-memory", help="spark.driver.memory (default: Spark's, as `cdc run`)")
    p.add_argument("--work", help="folder for the generated data and warehouse (default: a temporary folder)")
    p.add_argument("--keep-work", action="store_true", help="keep the generated data and warehouse")
    p.add_argument("--out", default=str(REPO / "bench" / "results"), help="results folder (default bench/results)")
    p.add_argument("--report", metavar="JSON", help="only print the table of a results file and redraw its chart")
    args = p.parse_args(argv)
    sizes = FULL if args.full else DEFAULTS
    for name, value in sizes.items():
        if getattr(args, name) is None:
            setattr(args, name, value)
    args.state_sizes = [int(s) for s in str(args.state_sizes).split(",") if s.strip()]
    args.hot_key_versions = [int(s) for s in str(args.hot_key_versions).split(",") if s.strip() and int(s) > 0]
    args.formats = [f.strip() for f in args.formats.split(",") if f.strip()]
    unknown = [f for f in args.formats if f not in FORMAT_CASES]
    if unknown:
        p.error(f"unknown format(s) {', '.join(unknown)}; known: {', '.join(FORMAT_CASES)}")
    if "debezium_json" not in args.formats:
        args.formats.insert(0, "debezium_json")
    if sorted(args.state_sizes) != args.state_sizes or len(args.state_sizes) < 2:
        p.error("--state-sizes: at least two sizes, increasing")
    return args


#: the most landing bytes the *1 task* diagnostic reads (one Arrow batch of their text)
ONE_TASK_MAX_BYTES = 1_500_000_000


def _write_config(path: Path, warehouse: Path, schema: str, feeds: list[dict[str, Any]], tables: dict) -> Any:
    import yaml

    from udfs.config import load_config

    cfg = {
        "warehouse": str(warehouse),
        "schema": schema,
        "marts_schema": f"{schema}_marts",
        "feeds": feeds,
        "tables": tables,
    }
    path.write_text(yaml.safe_dump(cfg, sort_keys=False, allow_unicode=True), encoding="utf-8")
    return load_config(path)


#: what a pipeline run reads from the repository: the package and the dbt project
SNAPSHOT_PATHS = ("udfs", "models", "macros", "seeds", "tests/dbt", "profiles", "dbt_project.yml")
#: the harness's modules :func:`main` uses after the snapshot (some import ``udfs``, so
#: not before it); :func:`load_harness` imports them all at once
HARNESS_MODULES = (
    "bench.data",
    "bench.memory",
    "bench.decode",
    "bench.e2e",
    "bench.merge",
    "bench.hot_key",
    "bench.report",
)


def load_harness() -> None:
    """Import :data:`HARNESS_MODULES` now, right after the snapshot: a module imported
    only when its section starts would be read from the working tree then, and an edit
    of ``bench/`` during a run would change (or break) the run's later sections."""
    import importlib

    for name in HARNESS_MODULES:
        importlib.import_module(name)


def snapshot_code(work: Path) -> tuple[Path, str]:
    """Copy the package and the dbt project into ``work/code`` and import them from there.

    A long run then measures one version of the code, even when the working tree is
    edited while it runs (the Python workers import ``udfs`` when a task starts). The
    driver finds the copy first on ``sys.path``, the workers through ``PYTHONPATH``,
    and ``udfs.pipeline`` runs dbt on the copied project (its ``PROJECT_DIR``). The
    process also moves into the copy: Spark starts its workers with ``python -m
    pyspark.daemon`` in the driver's folder, and ``-m`` puts that folder first on their
    ``sys.path``, ahead of ``PYTHONPATH`` (from the repository, they would import the
    working tree).
    Returns the copy and a digest of its files.
    """
    import hashlib

    assert "udfs" not in sys.modules, "snapshot_code must run before udfs is imported"
    root = work / "code"
    for rel in SNAPSHOT_PATHS:
        src = REPO / rel
        if src.is_dir():
            shutil.copytree(src, root / rel, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, root / rel)
    digest = hashlib.sha256()
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        digest.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes())
    sys.path.insert(0, str(root))
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(root), os.environ.get("PYTHONPATH")) if p)
    os.chdir(root)
    return root, digest.hexdigest()[:16]


def _worker_udfs_dir(spark: Any) -> Path:
    """The folder a Python worker imports ``udfs`` from (one task)."""

    def where(_: Any) -> list[str]:
        import udfs

        return [str(Path(udfs.__file__).resolve().parent)]

    (folder,) = spark.sparkContext.parallelize([0], 1).mapPartitions(where).collect()
    return Path(folder)


def _git() -> dict[str, Any]:
    try:
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True, text=True, check=True)
        dirty = subprocess.run(["git", "status", "--porcelain"], cwd=REPO, capture_output=True, text=True, check=True)
        return {"commit": head.stdout.strip(), "dirty": bool(dirty.stdout.strip())}
    except (OSError, subprocess.CalledProcessError):
        return {"commit": None, "dirty": None}


def _versions() -> dict[str, str]:
    from importlib.metadata import version

    names = (
        "pyspark",
        "pyarrow",
        "pandas",
        "numpy",
        "numba",
        "msgspec",
        "orjson",
        "dbt-core",
        "dbt-spark",
        "matplotlib",
    )
    return {n: version(n) for n in names}


def _progress(d: dict[str, Any]) -> str:
    """One format's decode figures for the progress log: the variants it has, no zero
    for one it does not."""
    labels = {
        "project": "project",
        "project_python_path": "python path",
        "project_two_calls": "two calls",
        "project_cached_results": "cached results",
        "project_cached_flat": "cached flat",
        "project_flat_udtf": "flat UDTF",
        "native_from_json": "native",
        "bound_orjson": d["bound_orjson"].get("parser") or "orjson",
    }
    rates = {label: (d.get(key) or {}).get("records_per_s") for key, label in labels.items()}
    return ", ".join(f"{label} {rate:,.0f} r/s" for label, rate in rates.items() if rate)


def _add_cpu(decode: list[dict], e2e: dict, sections: dict[str, dict]) -> None:
    """Copy the CPU seconds of the sampler's sections next to the wall times."""

    def cpu(label: str) -> float | None:
        return sections.get(label, {}).get("cpu_s")

    for d in decode:
        d["cpu_s"] = {
            v: cpu(f"decode:{d['case']}:{v}")
            for v in (
                "project",
                "project_one_task",
                "project_python_path",
                "project_two_calls",
                "project_cached_results",
                "project_cached_flat",
                "project_flat_udtf",
                "native",
            )
        }
        project, native = d["cpu_s"]["project"], d["cpu_s"]["native"]
        d["cpu_ratio_project_over_native"] = round(project / native, 2) if project and native else None
    e2e["cpu_s"] = {"project": cpu("e2e:project"), "native": cpu("e2e:native")}


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.report:
        from bench.report import format_tables, write_chart

        path = Path(args.report)
        res = json.loads(path.read_text(encoding="utf-8"))
        write_chart(res, path.with_suffix(".png"))
        print(format_tables(res))
        return 0
    started = datetime.now(UTC)
    t_start = time.perf_counter()
    load_start = os.getloadavg()
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("CDC_DBT_QUIET", "1")
    out_dir = Path(args.out).resolve()  # absolute: the run moves into its code snapshot
    out_dir.mkdir(parents=True, exist_ok=True)
    work_parent = Path(args.work).resolve() if args.work else None
    if work_parent:
        work_parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="cdc-bench-", dir=work_parent))
    started_in = Path.cwd()
    warehouse = work / "warehouse"
    code, code_digest = snapshot_code(work)
    load_harness()
    from udfs.formats.compiled import warm_up

    warm_up()  # the copy's numba cache filled before the Python workers start, so no timed run compiles
    git_at_snapshot = _git()  # the commit the copied code came from (the tree may move on during the run)

    from bench.memory import MemorySampler

    sampler = MemorySampler().start()
    spark = None
    try:
        # ------------------------------------------------------------------ data
        t0 = time.perf_counter()
        cases = [FORMAT_CASES[f] for f in args.formats]
        decode_sets: dict[str, DataSet] = {}
        for i, case in enumerate(cases):
            n = args.events if case.name == "debezium_json" else args.other_events
            if n > 0:
                decode_sets[case.name] = write_dataset(
                    case, work / "decode" / case.name, n, args.seed + i, args.events_per_file
                )
        warmup = write_dataset(FORMAT_CASES["debezium_json"], work / "warmup", 200, args.seed + 97)
        e2e_set = write_dataset(
            FORMAT_CASES["debezium_json"],
            work / "e2e" / "landing",
            args.e2e_events,
            args.seed + 50,
            args.events_per_file,
        )
        generate_s = time.perf_counter() - t0
        print(f"bench: data generated in {generate_s:.0f} s under {work}", file=sys.stderr)

        used = [FORMAT_CASES["debezium_json"], *(FORMAT_CASES[n] for n in decode_sets)]
        decode_cfg = _write_config(
            work / "decode.yml",
            warehouse,
            "bench_decode",
            [
                {"name": "warmup", "format": "debezium_json", "path": str(warmup.folder), "framing": "lines"},
                *(
                    {"name": f"decode_{n}", "format": FORMAT_CASES[n].format, "path": str(ds.folder)}
                    | {"framing": FORMAT_CASES[n].framing}
                    | ({"options": FORMAT_CASES[n].options} if FORMAT_CASES[n].options else {})
                    for n, ds in decode_sets.items()
                ),
            ],
            tables_config(used),
        )
        e2e_cfg = _write_config(
            work / "e2e.yml",
            warehouse,
            "bench_e2e",
            [{"name": "e2e", "format": "debezium_json", "path": str(e2e_set.folder), "framing": "lines"}],
            tables_config([FORMAT_CASES["debezium_json"]]),
        )
        merge_landing = work / "merge" / "landing"
        merge_landing.mkdir(parents=True)
        merge_cfg = _write_config(
            work / "merge.yml",
            warehouse,
            "bench_merge",
            [{"name": "bench_merge", "format": "debezium_json", "path": str(merge_landing), "framing": "lines"}],
            {"inventory.customers": {"key": ["id"]}},
        )

        # ------------------------------------------------------------------ session
        from udfs.session import build_session

        extra = {"spark.driver.memory": args.driver_memory} if args.driver_memory else {}
        with sampler.section("session start"):
            t0 = time.perf_counter()
            spark = build_session(e2e_cfg, master=args.master, extra_conf=extra)
            session_s = time.perf_counter() - t0
        import udfs.pipeline

        assert udfs.pipeline.PROJECT_DIR == code, f"udfs imported from {udfs.pipeline.PROJECT_DIR}, not {code}"
        worker_udfs = _worker_udfs_dir(spark)
        assert worker_udfs == code / "udfs", f"the Python workers import udfs from {worker_udfs}, not {code / 'udfs'}"
        options = {f.name: json.dumps(decode_cfg.decoder_options(f), sort_keys=True) for f in decode_cfg.feeds}

        # ------------------------------------------------------------------ decode
        from bench.decode import compile_records_model, native_frame, project_sql, run_decode, timed_noop

        with sampler.section("decode:setup"):
            t0 = time.perf_counter()
            records_sql = compile_records_model(decode_cfg)
            decode_setup_s = time.perf_counter() - t0
        with sampler.section("warm-up"):
            t0 = time.perf_counter()
            timed_noop(spark.sql(project_sql(records_sql, decode_cfg.schema, "warmup")))
            timed_noop(native_frame(spark, FORMAT_CASES["debezium_json"], warmup.folder))
            warmup_s = time.perf_counter() - t0
        decode = []
        for name, ds in decode_sets.items():
            print(f"bench: decode {name} ({ds.records:,} records)", file=sys.stderr)
            # one task reads every file into one Arrow batch of text, whose 32-bit offsets
            # hold under 2 GiB: past that the diagnostic cannot run (the models' tasks
            # hold `decode_task_bytes`, 64 MiB, each)
            one_task = name == "debezium_json" and ds.bytes <= ONE_TASK_MAX_BYTES
            project = (records_sql, decode_cfg.schema, f"decode_{name}")
            d = run_decode(
                spark,
                FORMAT_CASES[name],
                ds,
                project,
                options[f"decode_{name}"],
                sampler,
                args.repeat,
                one_task,
                cache_dir=work / f"decoded-cache-{name}",
            )
            if name == "debezium_json" and not one_task:
                d["project_one_task"]["skipped"] = f"{ds.bytes:,} bytes of files: over one Arrow batch's 2 GiB of text"
            decode.append(d)
            print(f"bench:   {_progress(d)}", file=sys.stderr)

        # ------------------------------------------------------------------ end to end
        from bench.e2e import run_e2e

        print(f"bench: end to end ({e2e_set.records:,} records)", file=sys.stderr)
        e2e = run_e2e(spark, e2e_cfg, e2e_set, work, sampler)
        print(f"bench:   run_pipeline {e2e['project_wall_s']:.0f} s, stages {e2e['stages_s']}", file=sys.stderr)

        # ------------------------------------------------------------------ merge growth
        from bench.merge import run_merge_growth

        print(f"bench: merge growth (states {args.state_sizes}, batch {args.merge_batch:,})", file=sys.stderr)
        merge = run_merge_growth(
            spark,
            merge_cfg,
            merge_landing,
            args.state_sizes,
            args.merge_batch,
            args.late_fraction,
            args.seed,
            sampler,
            args.merge_repeat,
        )
        # ------------------------------------------------------------------ hot key
        from bench.hot_key import run_hot_key

        print(f"bench: hot key (versions {args.hot_key_versions})", file=sys.stderr)
        hot_key = run_hot_key(spark, work, warehouse, args.hot_key_versions, sampler)
        conf = spark.sparkContext.getConf()
        spark_meta = {
            "master": spark.sparkContext.master,
            "default_parallelism": spark.sparkContext.defaultParallelism,
            "driver_memory": conf.get("spark.driver.memory", "1g (Spark default)"),
            "shuffle_partitions": spark.conf.get("spark.sql.shuffle.partitions"),
            "arrow_max_records_per_batch": spark.conf.get("spark.sql.execution.arrow.maxRecordsPerBatch"),
        }
    finally:
        sampler.stop()
        if spark is not None:
            spark.stop()
        os.chdir(started_in)
        if not args.keep_work:
            shutil.rmtree(work, ignore_errors=True)

    memory = sampler.result()
    _add_cpu(decode, e2e, memory["sections"])
    wall = time.perf_counter() - t_start
    res = {
        "meta": {
            "started_utc": started.strftime("%Y-%m-%dT%H:%M:%SZ"),
            "wall_s": round(wall, 1),
            "cpu_count": os.cpu_count(),
            "load_avg_start": [round(x, 2) for x in load_start],
            "load_avg_end": [round(x, 2) for x in os.getloadavg()],
            "platform": platform.platform(),
            "python": platform.python_version(),
            "versions": _versions(),
            "git": git_at_snapshot,
            "code_snapshot_sha256": code_digest,
            "spark": spark_meta,
            "options": {k: v for k, v in vars(args).items() if k not in ("work", "out")},
            "generate_data_s": round(generate_s, 1),
            "session_start_s": round(session_s, 1),
            "decode_setup_s": round(decode_setup_s, 1),
            "warmup_s": round(warmup_s, 1),
        },
        "decode": decode,
        "end_to_end": e2e,
        "merge_growth": merge,
        "hot_key": hot_key,
        "memory": memory,
    }
    stamp = started.strftime("%Y-%m-%dT%H%M%SZ")
    json_path = out_dir / f"{stamp}.json"
    json_path.write_text(json.dumps(res, indent=1) + "\n", encoding="utf-8")
    from bench.report import format_tables, write_chart

    png_path = out_dir / f"{stamp}.png"
    write_chart(res, png_path)
    print(format_tables(res))
    print(f"\nresults: {json_path}\nchart:   {png_path}")
    return 0
