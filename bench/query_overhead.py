"""What a query command costs with the JVM's options chosen by the warehouse's size:
``cdc export``, ``cdc sql`` and ``cdc quarantine`` as a user runs them (their own
process: JVM, Spark session), over a warehouse built by one ``cdc run``.

``python -m bench.query_overhead [--events N] [--example FOLDER] [--rounds 3] [--out FILE.json]``

The project is the shipped example (``examples/shop``) or, with ``--events N``, N
generated Debezium events (``bench.data.write_dataset``, the end-to-end workload, seed
51, files of 10k events). One ``cdc run`` builds its warehouse; then each round runs
every query with ``small_query_max_bytes: 0`` (the JVM's defaults) and with a limit above
the warehouse's bytes (the short-lived options chosen), taking turns, and keeps the best
wall time of the rounds. Per command: the wall time and its JVM's CPU seconds (read
from ``/proc`` while it runs). Prints each query's times and their ratio; no assertion.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.memory import sample_jvm_cpu
from bench.run_overhead import start_cdc

REPO = Path(__file__).resolve().parents[1]
#: small_query_max_bytes of the two variants: never, and always (above any warehouse here)
VARIANTS = {"defaults": 0, "short-lived": 2**62}


def _generated_project(folder: Path, events: int) -> None:
    import yaml

    from bench.data import FORMAT_CASES, tables_config, write_dataset

    case = FORMAT_CASES["debezium_json"]
    write_dataset(case, folder / "landing", events, seed=51)
    feeds = [{"name": "events", "format": "debezium_json", "path": "landing", "framing": "lines"}]
    config = {"warehouse": ".cdc", "feeds": feeds, "tables": tables_config([case])}
    (folder / "cdc.yml").write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")


def _cdc(work: Path, config: Path, *args: str) -> dict[str, Any]:
    """One ``cdc`` command in its own process: wall time, its JVM's CPU seconds, the
    lines it printed."""
    env = {**os.environ, "PYSPARK_PYTHON": os.environ.get("PYSPARK_PYTHON", sys.executable)}
    env.pop("JDK_JAVA_OPTIONS", None)
    t0 = time.perf_counter()
    proc = start_cdc(work, env, *args, "--config", str(config))
    sampler, last = sample_jvm_cpu(proc)
    stdout, stderr = proc.communicate(timeout=1800)
    wall = time.perf_counter() - t0
    sampler.join()
    if proc.returncode != 0:
        raise SystemExit(f"cdc {args[0]} failed in {work}:\n{stderr[-3000:]}")
    why = next((line for line in stderr.splitlines() if line.startswith(f"cdc {args[0]}: ")), "")
    return {"wall_s": round(wall, 2), "jvm_cpu_s": round(last["total"], 2), "lines": stdout.count("\n"), "why": why}


def measure(project: Path, rounds: int) -> dict[str, Any]:
    from udfs.config import load_config
    from udfs.run_size import warehouse_bytes

    with tempfile.TemporaryDirectory(prefix="cdc-query-overhead-") as tmp:
        work = Path(tmp) / "project"
        shutil.copytree(project, work, ignore=shutil.ignore_patterns(".cdc"))
        built = _cdc(work, work / "cdc.yml", "run")
        print(f"built the warehouse: {built}", file=sys.stderr)
        config = load_config(work / "cdc.yml")
        configs = {}
        for variant, limit in VARIANTS.items():
            path = work / f"cdc.{variant}.yml"
            path.write_text(
                (work / "cdc.yml").read_text(encoding="utf-8") + f"\nsmall_query_max_bytes: {limit}\n", encoding="utf-8"
            )
            configs[variant] = path
        table = sorted(config.tables)[0]
        queries = {
            f"export {table}": ("export", table),
            "sql: changes by op": (
                "sql",
                f"select op, count(*) as n, count(distinct event_id) as events from `{config.schema}`.changelog "
                "group by op order by op",
            ),
            "quarantine": ("quarantine",),
        }
        best: dict[str, dict[str, dict[str, Any]]] = {name: {} for name in queries}
        for r in range(rounds):
            for name, args in queries.items():
                for variant, path in configs.items():
                    got = _cdc(work, path, *args)
                    print(f"round {r + 1}, {name}, {variant}: {got}", file=sys.stderr)
                    kept = best[name].get(variant)
                    if kept is None or got["wall_s"] < kept["wall_s"]:
                        best[name][variant] = got
        return {
            "project": str(project.relative_to(REPO) if project.is_relative_to(REPO) else project),
            "warehouse_bytes": warehouse_bytes(config),
            "rounds": rounds,
            "machine": {"cpus": os.cpu_count(), "load_avg_at_end": os.getloadavg()},
            "best": best,
        }


def table(res: dict[str, Any]) -> str:
    lines = [
        f"query commands over {res['project']} ({res['warehouse_bytes']:,} bytes of tables), "
        f"best of {res['rounds']} round(s), seconds",
        f"{'query':<28} {'lines':>7} {'defaults':>9} {'short-lived':>12} {'ratio':>6} "
        f"{'JVM CPU':>8} {'short-lived':>12} {'ratio':>6}",
    ]
    for name, got in res["best"].items():
        d, s = got["defaults"], got["short-lived"]
        cpu_ratio = f"{s['jvm_cpu_s'] / d['jvm_cpu_s']:.2f}x" if d["jvm_cpu_s"] else "-"
        lines.append(
            f"{name:<28} {d['lines']:>7} {d['wall_s']:>9.1f} {s['wall_s']:>12.1f} {s['wall_s'] / d['wall_s']:>5.2f}x "
            f"{d['jvm_cpu_s']:>8.1f} {s['jvm_cpu_s']:>12.1f} {cpu_ratio:>6}"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.query_overhead", description=__doc__.splitlines()[0])
    p.add_argument("--events", type=int, default=0, help="generated Debezium events (default: the example)")
    p.add_argument("--example", default=str(REPO / "examples" / "shop"), help="project folder with a cdc.yml")
    p.add_argument("--rounds", type=int, default=3, help="rounds, best kept (default %(default)s)")
    p.add_argument("--out", help="also write the figures to this JSON file")
    args = p.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="cdc-query-project-") as tmp:
        project = Path(args.example).resolve()
        if args.events:
            project = Path(tmp)
            _generated_project(project, args.events)
        res = measure(project, args.rounds)
    if args.events:
        res["project"] = f"{args.events:,} generated Debezium events"
    print(table(res))
    if args.out:
        Path(args.out).write_text(json.dumps(res, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
