"""The printed table and the PNG chart of a results document (see :mod:`bench.run`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def _num(value: Any, digits: int = 0) -> str:
    if value is None:
        return "-"
    if isinstance(value, float) and digits:
        return f"{value:,.{digits}f}"
    return f"{value:,.0f}" if isinstance(value, (int, float)) else str(value)


def _table(headers: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headers)]
    line = "  ".join(h.ljust(w) if i == 0 else h.rjust(w) for i, (h, w) in enumerate(zip(headers, widths, strict=True)))
    out = [line, "-" * len(line)]
    for r in rows:
        out.append(
            "  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths, strict=True)))
        )
    return "\n".join(out)


def _upgrade(res: dict[str, Any]) -> dict[str, Any]:
    """Results written before the models spread the decode had a ``project_spread``
    variant (the spread as a diagnostic) and no ``project_one_task``: shown as ``-``."""
    for d in res["decode"]:
        d.setdefault("project_one_task", {"records_per_s": None})
        d.setdefault("project_python_path", {"records_per_s": None})
    return res


def format_tables(res: dict[str, Any]) -> str:
    """Every section of ``res`` as plain-text tables."""
    res = _upgrade(res)
    meta = res["meta"]
    parts = [
        f"cdc bench {meta['started_utc']}  wall {meta['wall_s']:.0f} s  {meta['cpu_count']} cores  "
        f"master {meta['spark']['master']}  load avg start/end {meta['load_avg_start'][0]:.1f}/"
        f"{meta['load_avg_end'][0]:.1f}"
    ]
    rows = [
        [
            d["case"],
            _num(d["data"]["records"]),
            _num(d["data"]["bytes"] / 1e6, 1),
            _num(d["project"]["records_per_s"]),
            _num(d["project"]["mb_per_s"], 2),
            _num(d["project_one_task"]["records_per_s"]),
            _num(d["project_python_path"]["records_per_s"]),
            _num((d.get("project_two_calls") or {}).get("records_per_s")),
            _num((d.get("project_cached_results") or {}).get("records_per_s")),
            _num((d.get("project_cached_flat") or {}).get("records_per_s")),
            _num((d.get("project_flat_udtf") or {}).get("records_per_s")),
            _num(d["python_decode_only"]["records_per_s"]),
            _num(d["native_from_json"]["records_per_s"]),
            _num(d["native_from_json"]["mb_per_s"], 1),
            _num(d["bound_orjson"]["records_per_s"]),
            _num(d["bound_pyarrow"]["records_per_s"]),
        ]
        for d in res["decode"]
    ]
    parts += [
        "",
        "DECODE throughput, records/s (project: cdc_decode_records as the models run it; 1 task: the "
        "same with every file in one task, as before the spread; python path: the same with columnar: false, "
        "decode_records per record; two calls: cdc_read_records, explode, cdc_decode, as before "
        "cdc_decode_files; cached: the same with each file's result memory-mapped from an earlier run, "
        "Spark's cost of carrying the results; cached flat: the same results yielded as flat rows by an Arrow UDTF; "
        "flat UDTF: the files decoded for real in such an Arrow UDTF; "
        "python only: decode_records in one process)",
        _table(
            [
                "format",
                "records",
                "MB",
                "project",
                "proj MB/s",
                "1 task",
                "python path",
                "two calls",
                "cached",
                "cached flat",
                "flat UDTF",
                "python only",
                "native from_json",
                "native MB/s",
                "orjson",
                "pyarrow",
            ],
            rows,
        ),
    ]
    csv_cases = [d["case"] for d in res["decode"] if d["bound_orjson"].get("parser") == "csv"]
    if csv_cases:
        parts.append(
            f"  ({', '.join(csv_cases)}: native is Spark's CSV reader, orjson the csv module, pyarrow pyarrow.csv)"
        )
    for d in res["decode"]:
        if d["native_from_json"].get("missing"):
            parser = d["bound_orjson"].get("parser")
            parts.append(f"  ({d['case']}: {d['native_from_json']['missing']}; orjson is {parser}, pyarrow none)")

    def ratio(value: Any) -> str:
        return "-" if value is None else f"{value:,.1f}x"

    def ratio2(value: Any) -> str:
        return "-" if value is None else f"{value:,.2f}x"

    rows = [
        [
            d["case"],
            ratio(d["ratio_project_over_native"]),
            ratio(d["ratio_project_over_bound_orjson"]),
            ratio(d["ratio_project_over_bound_pyarrow"]),
            ratio(d["ratio_project_over_python_decode_only"]),
            ratio2(d.get("ratio_project_over_python_path")),
            ratio2(d.get("ratio_project_over_two_calls")),
            ratio2(d.get("ratio_cached_results_over_native")),
            ratio2(d.get("ratio_cached_flat_over_native")),
            ratio2(d.get("ratio_flat_udtf_over_project")),
            ratio(d.get("cpu_ratio_project_over_native")),
            "/".join("-" if n is None else str(n) for n in d["spark_tasks"].values()),
        ]
        for d in res["decode"]
    ]
    parts += [
        "",
        "DECODE ratios: time of the project path / time of the other (how many times slower)",
        _table(
            [
                "format",
                "project/native",
                "project/orjson",
                "project/pyarrow",
                "project/python only",
                "project/python path",
                "project/two calls",
                "cached/native",
                "cached flat/native",
                "flat UDTF/project",
                "CPU project/native",
                "tasks (project/native/1 task)",
            ],
            rows,
        ),
    ]
    e = res["end_to_end"]
    stage_rows = [[f"{stage} (busy)", _num(sec, 1)] for stage, sec in e["stages_s"].items() if sec]
    stage_rows += [
        ["nodes running (wall)", _num(e["nodes_wall_s"], 1) if "nodes_wall_s" in e else "-"],
        ["dbt overhead (parse, metastore)", _num(e["dbt_overhead_s"], 1)],
        ["run_pipeline total", _num(e["project_wall_s"], 1)],
        ["native from_json + parquet", _num(e["native_decode_parquet_s"], 1)],
    ]
    parts += [
        "",
        f"END TO END ({_num(e['data']['records'])} records, {_num(e['data']['bytes'] / 1e6, 1)} MB; "
        f"{_num(e['project_records_per_s'])} records/s vs native {_num(e['native_records_per_s'])} records/s; "
        f"project/native {e['ratio_project_over_native']}x, models only {e['ratio_models_only_over_native']}x; "
        f"landing files read and decoded in {e.get('decode_tasks', '-')} task(s); "
        f"dbt threads {e.get('dbt_threads') or 1}: a stage's busy seconds overlap the others' when more than one)",
        _table(["stage", "seconds"], stage_rows),
    ]
    m = res["merge_growth"]
    rows = [
        [
            _num(st["state_rows"]),
            _num(st["changelog_rows_before_batch"]),
            f"{_num(st['batch_changes'])} ({_num(st['batch_late'])} late)",
            _num(st["merge_s"], 1),
            _num(st.get("merge_cpu_s"), 1),
            _num(st.get("compact_merge_s"), 1),
            _num(st.get("compact_merge_cpu_s"), 1),
            _num(st.get("read_state_s"), 1),
            _num(st.get("read_base_s"), 1),
            _num((st.get("tests_wall_s") or {}).get("all"), 1),
            _num((st.get("tests_wall_s") or {}).get("run"), 1),
            _num(st.get("mart_columns_s"), 1),
            _num((st.get("columns_read_s") or {}).get("state_columns"), 2),
            _num((st.get("columns_read_s") or {}).get("state"), 2),
            _num(st["batch_decode_s"], 1),
            _num(st["initial_merge_s"], 1),
            _num(st.get("initial_merge_cpu_s"), 1),
            _num(st["versions_rewritten"]),
            "ok" if st["check_ok"] else "FAILED",
        ]
        for st in m["steps"]
    ]
    ratios = ", ".join(
        f"{r['from']:,} -> {r['to']:,}: {r['merge_time_ratio']}x time, {r.get('merge_cpu_ratio', '-')}x CPU"
        f" (compacting: {r.get('compact_merge_time_ratio', '-')}x time; full read of the state view: "
        f"{r.get('read_state_time_ratio', '-')}x; tests of every row "
        f"{(r.get('tests_time_ratio') or {}).get('all', '-')}x, of the run's rows "
        f"{(r.get('tests_time_ratio') or {}).get('run', '-')}x; mart_columns "
        f"{r.get('mart_columns_time_ratio', '-')}x, its columns read from state_columns "
        f"{(r.get('columns_read_time_ratio') or {}).get('state_columns', '-')}x, from the whole state "
        f"{(r.get('columns_read_time_ratio') or {}).get('state', '-')}x)"
        for r in m["ratios"]
    )
    parts += [
        "",
        "MERGE GROWTH (one batch into a state of S rows; merge = key moves + changes to refold + refold + segments "
        "+ state_columns + views "
        f"+ merge_log, fastest of {m.get('repeat', 1)} batches per path; merge: the models' path, a segment of the "
        f"batch's keys appended; compact: every other key copied into a new base, copy on write; read: a full read of "
        "the state view, base + one segment, against the base alone; tests: the wall time of `dbt test` of the "
        "changelog and the merge's models after the batch, the unique tests reading every row or the run's rows, "
        "test_scope all / run; marts: the mart_columns node after the batch, views included, and its read of the "
        f"columns from state_columns against the same read from the whole state) {ratios or '-'}  "
        "(target <= 2x per 10x)",
        _table(
            [
                "state S",
                "changelog",
                "batch",
                "merge s",
                "merge CPU s",
                "compact s",
                "compact CPU s",
                "read state s",
                "read base s",
                "tests all s",
                "tests run s",
                "marts s",
                "cols state_columns s",
                "cols whole state s",
                "decode s",
                "initial merge s",
                "initial CPU s",
                "versions rewritten",
                "check",
            ],
            rows,
        ),
    ]
    hot = res.get("hot_key") or {"steps": []}
    rows = [
        [
            _num(st["versions"]),
            _num(st["long_merge_s"], 1),
            _num(st["window_merge_s"], 1),
            f"{st['window_over_long']:,.1f}x",
            "ok" if st["long_row_ok"] and st["window_row_ok"] else "FAILED",
        ]
        for st in hot["steps"]
    ]
    if rows:
        parts += [
            "",
            "HOT KEY (one key with N versions, one run per path; merge s = the merge nodes: the refold, its input, "
            "state + history; long: the long-history path, the default past 64 versions; window: the window path)",
            _table(["versions", "long merge s", "window merge s", "window/long", "final row"], rows),
        ]
    mem = res["memory"]
    rows = [
        [
            label,
            f"{_num(p['jvm_peak_rss_mib'])} ({_num(p.get('jvm_rss_at_start_mib'))})",
            f"{_num(p['python_workers_peak_rss_sum_mib'])} ({_num(p.get('python_workers_rss_sum_at_start_mib'))})",
            _num(p["python_worker_peak_rss_max_mib"]),
            _num(p["python_workers_alive_max"]),
            _num(p.get("wall_s"), 1),
            _num(p.get("cpu_s"), 1),
        ]
        for label, p in mem["sections"].items()
    ]
    parts += [
        "",
        "PEAK MEMORY AND CPU PER SECTION (CPU s: user + system of the bench process, the JVM and the Python "
        "workers; on a shared machine steadier than wall time)",
        f"MiB, sampled every {mem['sampler_interval_s']} s; VmHWM over the run: JVM "
        f"{_num(mem['jvm_vmhwm_mib'])}, largest Python worker {_num(mem['python_worker_vmhwm_max_mib'])}, "
        f"bench driver {_num(mem['bench_driver_python_vmhwm_mib'])}",
        _table(
            [
                "section",
                "JVM RSS (at start)",
                "workers RSS sum (at start)",
                "worker RSS max",
                "workers",
                "wall s",
                "CPU s",
            ],
            rows,
        ),
    ]
    return "\n".join(parts)


def write_chart(res: dict[str, Any], path: Path) -> None:
    """A 2x2 PNG: decode throughput, end-to-end stages, merge growth, peak memory."""
    res = _upgrade(res)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, 2, figsize=(13, 9.5))
    fig.suptitle(
        f"cdc bench {res['meta']['started_utc']} ({res['meta']['cpu_count']} cores, "
        f"load avg {res['meta']['load_avg_start'][0]:.1f})",
        fontsize=11,
    )

    ax = axes[0][0]
    variants = [
        ("project", "project (as the models)"),
        ("project_one_task", "project, one task"),
        ("project_python_path", "project, columnar: false"),
        ("project_cached_results", "cached: carrying the rows, no decoding"),
        ("project_cached_flat", "cached, flat rows (Arrow UDTF)"),
        ("project_flat_udtf", "decoded in an Arrow UDTF, flat rows"),
        ("python_decode_only", "decode_records, 1 process"),
        ("native_from_json", "Spark from_json (CSV: its CSV reader)"),
        ("bound_orjson", "orjson (CSV: csv, Avro: fastavro), 1 process"),
        ("bound_pyarrow", "pyarrow.json (CSV: pyarrow.csv)"),
    ]
    cases = [d["case"] for d in res["decode"]]
    width = 0.8 / len(variants)
    for i, (key, label) in enumerate(variants):
        values = [(d.get(key) or {}).get("records_per_s") or 0 for d in res["decode"]]
        ax.bar([x + i * width for x in range(len(cases))], values, width, label=label)
    # the format names are long: slanted and anchored at their right end, they do not overlap
    ax.set_xticks([x + 0.4 - width / 2 for x in range(len(cases))], cases, rotation=30, ha="right", fontsize=8)
    ax.set_yscale("log")
    ax.set_ylim(top=ax.get_ylim()[1] * 8)  # room for the legend
    ax.set_ylabel("records / s (log)")
    ax.set_title("decode throughput", fontsize=10)
    ax.legend(fontsize=7, ncol=3, loc="upper center")

    ax = axes[0][1]
    e = res["end_to_end"]
    left = 0.0
    for stage, sec in e["stages_s"].items():
        if sec and sec > 0:
            ax.barh(2, sec, left=left, label=stage)
            left += sec
    # the run's wall time: nodes running (overlapping with dbt threads) and dbt's own time
    nodes_wall = e.get("nodes_wall_s", left)
    ax.barh(1, nodes_wall, color="tab:cyan", label="nodes running")
    ax.barh(1, e["dbt_overhead_s"], left=nodes_wall, color="tab:olive", label="dbt overhead")
    ax.barh(0, e["native_decode_parquet_s"], color="grey", label="native from_json + parquet")
    ax.set_yticks([0, 1, 2], ["native", "run_pipeline", f"node busy ({e.get('dbt_threads') or 1} threads)"])
    ax.set_xlabel("seconds")
    ax.set_title(f"end to end, {e['data']['records']:,} records", fontsize=10)
    ax.legend(fontsize=7, loc="lower right")

    ax = axes[1][0]
    m = res["merge_growth"]
    xs = [st["state_rows"] for st in m["steps"]]
    ys = [st["merge_s"] for st in m["steps"]]
    ax.plot(xs, ys, "o-", label="merge of one batch, wall s")
    for x, y in zip(xs, ys, strict=True):
        ax.annotate(f"{y:.1f} s", (x, y), textcoords="offset points", xytext=(5, -12), fontsize=8)
    cpu = [st.get("merge_cpu_s") for st in m["steps"]]
    if all(cpu):
        ax.plot(xs, cpu, "s-", label="merge of one batch, CPU s (dbt run of the merge models)")
    compact = [st.get("compact_merge_s") for st in m["steps"]]
    if all(compact):
        ax.plot(xs, compact, "x-", label="compacting merge of one batch, wall s (copy on write)")
    reads = [st.get("read_state_s") for st in m["steps"]]
    if all(reads):
        ax.plot(xs, reads, "d-.", label="full read of the state view, wall s")
    initial = [st["initial_merge_s"] for st in m["steps"]]
    ax.plot(xs, initial, "^:", label="initial merge of the S snapshot rows, wall s")
    if xs:
        import math

        target = [ys[0] * 2 ** math.log10(x / xs[0]) for x in xs]
        ax.plot(xs, target, "--", color="grey", label="target: x2 per 10x state")
    ax.set_xscale("log")
    ax.set_ylim(bottom=0)
    ax.set_xlabel("state rows (log)")
    ax.set_ylabel("seconds")
    ax.set_title(f"merge growth, batch {m['batch']:,} ({m['late_fraction']:.0%} late)", fontsize=10)
    ax.legend(fontsize=7)

    ax = axes[1][1]
    groups: dict[str, dict[str, float]] = {}
    for label, peak in res["memory"]["sections"].items():
        parts = label.split(":")
        group = f"decode: {parts[-1]}" if parts[0] == "decode" else label
        if parts[0] == "merge" and len(parts) == 3:
            group = f"merge: {parts[-1]}"
        g = groups.setdefault(group, {"jvm": 0.0, "workers": 0.0})
        g["jvm"] = max(g["jvm"], peak["jvm_peak_rss_mib"])
        # reused workers keep what an earlier section grew them to: show the growth
        start = peak.get("python_workers_rss_sum_at_start_mib") or 0.0
        g["workers"] = max(g["workers"], peak["python_workers_peak_rss_sum_mib"] - start)
    labels = list(groups)
    ax.barh(range(len(labels)), [groups[g]["jvm"] for g in labels], 0.4, label="driver JVM RSS")
    ax.barh(
        [i + 0.4 for i in range(len(labels))],
        [groups[g]["workers"] for g in labels],
        0.4,
        label="Python workers RSS (sum), growth within the section",
    )
    ax.set_yticks([i + 0.2 for i in range(len(labels))], labels, fontsize=7)
    ax.invert_yaxis()
    ax.set_xlabel("MiB")
    ax.set_title(
        f"memory (largest Python worker {res['memory']['python_worker_vmhwm_max_mib'] or 0:,.0f} MiB)", fontsize=10
    )
    ax.legend(fontsize=7)

    fig.tight_layout()
    fig.savefig(path, dpi=72)
    plt.close(fig)
