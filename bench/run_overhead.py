"""What a small daily run costs, by dbt thread count: ``cdc run`` as a user runs it (its
own process: JVM, Spark session, dbt) over the shipped example (``examples/shop``, 2
files, 6 changes), then again with no new files.

``python -m bench.run_overhead [--threads 1,4] [--rounds 2] [--out FILE.json]``

Each round runs every thread count in turn on a fresh copy of the example (the machine
is shared and noisy: the counts take turns, and the best of the rounds is kept). Per
run: the process's wall time, dbt's elapsed time and the time during which at least one
dbt node ran (``run_results.json``). Prints a table with each count's times over the
first count's; no assertion.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.dbt_nodes import node_times

REPO = Path(__file__).resolve().parents[1]
RUNS = ("first run", "no new files")


def _cdc_run(work: Path) -> dict[str, float]:
    env = {**os.environ, "PYSPARK_PYTHON": os.environ.get("PYSPARK_PYTHON", sys.executable)}
    t0 = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "udfs.cli", "run"], cwd=work, env=env, capture_output=True, text=True, timeout=1800
    )
    wall = time.perf_counter() - t0
    if done.returncode != 0:
        raise SystemExit(f"cdc run failed in {work}:\n{done.stderr[-3000:]}")
    timing = node_times(work / ".cdc" / "dbt" / "target")
    return {"wall_s": round(wall, 2), "dbt_elapsed_s": timing["dbt_elapsed_s"], "nodes_wall_s": timing["nodes_wall_s"]}


def measure(threads: list[int], rounds: int, example: Path) -> dict[str, Any]:
    best: dict[int, dict[str, dict[str, float]]] = {n: {} for n in threads}
    with tempfile.TemporaryDirectory(prefix="cdc-run-overhead-") as tmp:
        for r in range(rounds):
            for n in threads:
                work = Path(tmp) / f"r{r}-t{n}"
                shutil.copytree(example, work, ignore=shutil.ignore_patterns(".cdc"))
                with (work / "cdc.yml").open("a", encoding="utf-8") as f:
                    f.write(f"\ndbt_threads: {n}\n")
                for run in RUNS:
                    got = _cdc_run(work)
                    print(f"round {r + 1}, {n} thread(s), {run}: {got}", file=sys.stderr)
                    kept = best[n].get(run)
                    if kept is None or got["wall_s"] < kept["wall_s"]:
                        best[n][run] = got
                shutil.rmtree(work, ignore_errors=True)
    return {
        "example": str(example.relative_to(REPO) if example.is_relative_to(REPO) else example),
        "rounds": rounds,
        "machine": {"cpus": os.cpu_count(), "load_avg_at_end": os.getloadavg()},
        "best": {str(n): best[n] for n in threads},
    }


def table(res: dict[str, Any]) -> str:
    counts = list(res["best"])
    base = res["best"][counts[0]]
    lines = [
        f"cdc run over {res['example']}, best of {res['rounds']} round(s), seconds (ratio to {counts[0]} thread(s))"
    ]
    lines.append(f"{'threads':>7}  {'run':<13} {'wall':>12} {'dbt elapsed':>14} {'nodes running':>14}")
    for n in counts:
        for run in RUNS:
            got, ref = res["best"][n][run], base[run]
            cells = [f"{got[k]:6.1f} ({got[k] / ref[k]:.2f}x)" for k in ("wall_s", "dbt_elapsed_s", "nodes_wall_s")]
            lines.append(f"{n:>7}  {run:<13} {cells[0]:>12} {cells[1]:>14} {cells[2]:>14}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.run_overhead", description=__doc__.splitlines()[0])
    p.add_argument("--threads", default="1,4", help="dbt thread counts, the first the reference (default %(default)s)")
    p.add_argument("--rounds", type=int, default=2, help="rounds, best kept (default %(default)s)")
    p.add_argument("--example", default=str(REPO / "examples" / "shop"), help="project folder with a cdc.yml")
    p.add_argument("--out", help="also write the figures to this JSON file")
    args = p.parse_args(argv)
    threads = [int(t) for t in args.threads.split(",")]
    res = measure(threads, args.rounds, Path(args.example).resolve())
    print(table(res))
    if args.out:
        Path(args.out).write_text(json.dumps(res, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
