"""What a small daily run costs, by dbt thread count and JVM options: ``cdc run`` as a
user runs it (its own process: JVM, Spark session, dbt) over the shipped example
(``examples/shop``, 2 files, 6 changes), then again with no new files.

``python -m bench.run_overhead [--threads 1,4] [--java-options "A;B"] [--small-run-max-bytes 0,N]
[--class-archive on,off] [--rounds 2] [--out FILE.json]``

A variant is a dbt thread count with a set of JVM options (``--java-options``, passed in
``JDK_JAVA_OPTIONS``; an empty set adds none) and a ``small_run_max_bytes`` (written to
the copy's ``cdc.yml``; 0: the run keeps the JVM's defaults, above the example's bytes:
it chooses the short-lived options; not given: the setting's default) and the class
archive on or off (``--class-archive``: the set-up's archive of Spark's classes,
``udfs/class_archive.py``, or ``CDC_CLASS_ARCHIVE`` empty; not given: as set up). Each round runs every variant
in turn on a fresh copy of the example (the machine is shared and noisy: the variants
take turns, and the best of the rounds is kept). Per run: the process's wall time, the
CPU seconds of its JVM (read from ``/proc`` while it runs: the JVM is not waited for by
the process that starts it), dbt's elapsed time and the time during which at least one
dbt node ran (``run_results.json``); the JVM's CPU seconds by kind of thread (its six
busiest: the JIT compilers, the collector, Spark's tasks) are in the progress log and
the JSON. Prints a table with each variant's times over the first variant's; no
assertion.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.dbt_nodes import node_times
from bench.memory import sample_jvm_cpu
from udfs.class_archive import ARCHIVE_ENV

REPO = Path(__file__).resolve().parents[1]
RUNS = ("first run", "no new files")


def thread_kind(name: str) -> str:
    """A JVM thread's kind: its name without the number (``C2 CompilerThread1``, ``GC
    Thread#0``, ``Executor task launch worker for task 3.0 in stage 7.0``: Linux keeps 15
    characters)."""
    return re.sub(r"[\s#0-9.-]+$", "", name) or name


def start_cdc(work: Path, env: dict[str, str], *args: str) -> subprocess.Popen[str]:
    """``cdc ARGS`` in ``work`` as a user starts it, its output piped: the caller reads
    the process (its JVM is a child of it) while it runs."""
    return subprocess.Popen(
        [sys.executable, "-m", "udfs.cli", *args],
        cwd=work,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _cdc_run(work: Path, java_options: str, class_archive: str | None = None) -> dict[str, float]:
    env = {**os.environ, "PYSPARK_PYTHON": os.environ.get("PYSPARK_PYTHON", sys.executable)}
    env.pop("JDK_JAVA_OPTIONS", None)
    if java_options:
        env["JDK_JAVA_OPTIONS"] = java_options
    if class_archive == "off":
        env[ARCHIVE_ENV] = ""
    t0 = time.perf_counter()
    proc = start_cdc(work, env, "run")
    sampler, last = sample_jvm_cpu(proc)
    stdout, stderr = proc.communicate(timeout=1800)
    wall = time.perf_counter() - t0
    sampler.join()
    if proc.returncode != 0:
        raise SystemExit(f"cdc run failed in {work}:\n{stderr[-3000:]}\n{stdout[-1000:]}")
    timing = node_times(work / ".cdc" / "dbt" / "target")
    by_kind: dict[str, float] = {}
    for name, seconds in last["threads"].values():
        kind = thread_kind(name)
        by_kind[kind] = by_kind.get(kind, 0.0) + seconds
    busiest = sorted(by_kind.items(), key=lambda kv: -kv[1])[:6]
    return {
        "wall_s": round(wall, 2),
        "jvm_cpu_s": round(last["total"], 2),
        # the threads still there at the last reading: a thread that ended before it is missed
        "jvm_cpu_s_by_thread": {kind: round(seconds, 1) for kind, seconds in busiest},
        "dbt_elapsed_s": timing["dbt_elapsed_s"],
        "nodes_wall_s": timing["nodes_wall_s"],
    }


def variant_label(
    threads: int, java_options: str, small_run_max_bytes: int | None = None, class_archive: str | None = None
) -> str:
    label = f"{threads} thread(s), {java_options or 'no JDK_JAVA_OPTIONS'}"
    if small_run_max_bytes is not None:
        label += f", small_run_max_bytes {small_run_max_bytes}"
    return label if class_archive is None else f"{label}, class archive {class_archive}"


def measure(
    threads: list[int],
    java_options: list[str],
    rounds: int,
    example: Path,
    small_run_max_bytes: list[int | None] | None = None,
    class_archive: list[str | None] | None = None,
) -> dict[str, Any]:
    variants = [
        (n, opts, limit, archive)
        for archive in class_archive or [None]
        for limit in small_run_max_bytes or [None]
        for opts in java_options
        for n in threads
    ]
    best: dict[str, dict[str, dict[str, float]]] = {variant_label(*v): {} for v in variants}
    with tempfile.TemporaryDirectory(prefix="cdc-run-overhead-") as tmp:
        for r in range(rounds):
            for i, (n, opts, limit, archive) in enumerate(variants):
                label = variant_label(n, opts, limit, archive)
                work = Path(tmp) / f"r{r}-v{i}"
                shutil.copytree(example, work, ignore=shutil.ignore_patterns(".cdc"))
                with (work / "cdc.yml").open("a", encoding="utf-8") as f:
                    f.write(f"\ndbt_threads: {n}\n")
                    if limit is not None:
                        f.write(f"small_run_max_bytes: {limit}\n")
                for run in RUNS:
                    got = _cdc_run(work, opts, archive)
                    print(f"round {r + 1}, {label}, {run}: {got}", file=sys.stderr)
                    kept = best[label].get(run)
                    if kept is None or got["wall_s"] < kept["wall_s"]:
                        best[label][run] = got
                shutil.rmtree(work, ignore_errors=True)
    return {
        "example": str(example.relative_to(REPO) if example.is_relative_to(REPO) else example),
        "rounds": rounds,
        "machine": {"cpus": os.cpu_count(), "load_avg_at_end": os.getloadavg()},
        "best": best,
    }


def table(res: dict[str, Any]) -> str:
    labels = list(res["best"])
    base = res["best"][labels[0]]
    lines = [f"cdc run over {res['example']}, best of {res['rounds']} round(s), seconds (ratio to {labels[0]})"]
    columns = (
        ("wall_s", "wall"),
        ("jvm_cpu_s", "JVM CPU"),
        ("dbt_elapsed_s", "dbt elapsed"),
        ("nodes_wall_s", "nodes running"),
    )
    width = max(len(label) for label in labels)
    lines.append(f"{'variant':<{width}}  {'run':<13}" + "".join(f" {title:>14}" for _, title in columns))
    for label in labels:
        for run in RUNS:
            got, ref = res["best"][label][run], base[run]
            cells = [f"{got[k]:6.1f} ({got[k] / ref[k]:.2f}x)" if ref[k] else f"{got[k]:6.1f}" for k, _ in columns]
            lines.append(f"{label:<{width}}  {run:<13}" + "".join(f" {cell:>14}" for cell in cells))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.run_overhead", description=__doc__.splitlines()[0])
    p.add_argument("--threads", default="1,4", help="dbt thread counts, the first the reference (default %(default)s)")
    p.add_argument(
        "--java-options",
        default="",
        help="JVM option sets separated by ';', each passed in JDK_JAVA_OPTIONS; an empty set is the JVM's "
        "defaults (default: the defaults only)",
    )
    p.add_argument(
        "--small-run-max-bytes",
        help="values of cdc.yml's small_run_max_bytes separated by ',' (0: the JVM's defaults; default: the "
        "setting's default only)",
    )
    p.add_argument(
        "--class-archive", help="on, off or both ('on,off'): the set-up's class archive (default: as set up)"
    )
    p.add_argument("--rounds", type=int, default=2, help="rounds, best kept (default %(default)s)")
    p.add_argument("--example", default=str(REPO / "examples" / "shop"), help="project folder with a cdc.yml")
    p.add_argument("--out", help="also write the figures to this JSON file")
    args = p.parse_args(argv)
    threads = [int(t) for t in args.threads.split(",")]
    java_options = [opts.strip() for opts in args.java_options.split(";")]
    limits = [int(n) for n in args.small_run_max_bytes.split(",")] if args.small_run_max_bytes else None
    archives = args.class_archive.split(",") if args.class_archive else None
    if archives and not set(archives) <= {"on", "off"}:
        p.error("--class-archive takes on, off or both")
    res = measure(threads, java_options, args.rounds, Path(args.example).resolve(), limits, archives)
    print(table(res))
    if args.out:
        Path(args.out).write_text(json.dumps(res, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
