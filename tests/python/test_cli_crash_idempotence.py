"""The ``cdc`` command end to end, as a user runs it (separate processes):

* the README's main job on the shipped example (``examples/shop``);
* a run with no new files changes nothing;
* runs killed with SIGKILL, one stopped by SIGTERM (to its process group) after the
  changelog's append and one interrupted (SIGINT, Ctrl-C) in the middle of the merge,
  then one full run, end exactly where one clean run ends.
  The clean run is serial (``dbt_threads: 1``), the others run dbt's nodes four at a
  time (the default): the same tables either way. The kills are taken in turn in one
  warehouse, each run starting from what the killed run before it left (a crash while
  recovering from a crash): during the decode, then between models at each chosen
  place, then at a random time. One warehouse for all of them, because each killed
  run costs a run, where a warehouse of its own would add a clean rerun and a dump of
  every table;
* a wrong configuration fails before any work with a message naming the problem.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
CDC = [sys.executable, "-m", "udfs.cli"]

DUMPS = {
    "state": "select table_id, key_text, row, is_deleted, last_seq, last_event_id, last_op from cdc.state",
    "history": (
        "select table_id, key_text, event_id, op, row, valid_from_seq, valid_to_seq, is_deleted, is_current "
        "from cdc.history"
    ),
    "changelog": (
        "select regexp_extract(source_file, '[^/]+$', 0) as file, record_index, row_index, event_id, op, "
        "key_text, before, after, after_cols, seq, commit_ts from cdc.changelog"
    ),
    "quarantine": "select regexp_extract(source_file, '[^/]+$', 0) as file, record_index, reason from cdc.quarantine",
    "audit": (
        "select regexp_extract(source_file, '[^/]+$', 0) as file, records_read, change_records, changes_emitted, "
        "quarantined, skipped from cdc.audit_files"
    ),
}


def child_env(extra: dict | None = None) -> dict:
    """The environment of a ``cdc`` process: this one's, its Python for the workers, ``extra``."""
    return {**os.environ, "PYSPARK_PYTHON": sys.executable, **(extra or {})}


def cdc(args: list[str], cwd: Path, env: dict | None = None, timeout: int = 600) -> subprocess.CompletedProcess:
    return subprocess.run(CDC + args, cwd=cwd, env=child_env(env), capture_output=True, text=True, timeout=timeout)


def example_copy(tmp_path: Path, name: str) -> Path:
    dest = tmp_path / name
    shutil.copytree(REPO / "examples" / "shop", dest, ignore=shutil.ignore_patterns(".cdc"))
    return dest


def dbt_threads_of_last_run(cwd: Path) -> int:
    results = json.loads((cwd / ".cdc" / "dbt" / "target" / "run_results.json").read_text())
    return results["args"]["threads"]


def dump(cwd: Path) -> dict[str, list[str]]:
    """Every table's rows (as JSON lines, sorted), from one ``cdc sql`` process."""
    p = cdc(["sql", *DUMPS.values()], cwd)
    assert p.returncode == 0, p.stderr[-3000:]
    out: dict[str, list[str]] = {name: [] for name in DUMPS}
    names = iter(DUMPS)
    current = None
    for line in p.stdout.splitlines():
        if line.startswith("-- "):
            current = next(names)
        elif line.startswith("{") and current:
            out[current].append(line)
    assert all(out[name] for name in ("state", "history", "changelog", "audit")), out
    return {name: sorted(rows) for name, rows in out.items()}


@pytest.fixture(scope="module")
def clean_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    work = example_copy(tmp_path_factory.mktemp("clean"), "shop")
    with (work / "cdc.yml").open("a", encoding="utf-8") as f:
        f.write("dbt_threads: 1\n")  # the reference: one node at a time
    p = cdc(["run", "--print-tables"], work)
    assert p.returncode == 0, p.stderr[-3000:]
    assert dbt_threads_of_last_run(work) == 1
    return work, {"stdout": p.stdout, "dump": dump(work)}


def test_main_job_on_example_prints_summary_and_tables(clean_run):
    _, result = clean_run
    out = result["stdout"]
    assert "files 2, records 6, changes 6, quarantined 0, skipped 0; tables touched: customers" in out
    rows = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    assert rows == [
        {"id": 1, "balance": "1.00", "updated_at": "2023-11-14T22:13:20.123456Z", "name": "Ada King"},
        {"id": 3, "balance": "9999999999.99", "updated_at": "2023-11-14T22:13:20.000003Z", "name": "Zoë 🚀\nnewline"},
        {"id": 4, "balance": "0.00", "updated_at": "2023-11-14T22:13:20.999999Z", "name": "Katherine Johnson"},
    ]


def test_run_without_new_files_changes_nothing(clean_run):
    work, result = clean_run
    p = cdc(["run"], work)
    assert p.returncode == 0, p.stderr[-3000:]
    assert "files 0, records 0, changes 0" in p.stdout
    assert dump(work) == result["dump"]


# Where a run is killed between models, in the order the models build: after the
# landing files are read; after the changelog is written, and the audit; in the middle
# of the merge; after the state, and after the history (before the marts and the tests).
KILL_AFTER_NODES = (
    "model.cdc.stg_landing__records",
    "model.cdc.changelog",
    "model.cdc.audit_files",
    "model.cdc.int_changes_to_refold",
    "model.cdc.state",
    "model.cdc.history",
)


def _killed_run_in_own_group(work: Path, env: dict[str, str], kill_after_s: float | None = None) -> tuple[int, str]:
    """``cdc run`` as the leader of a new process group (a kill from the decoding UDF
    takes the group); after ``kill_after_s`` seconds, if given, the test kills the group.
    Its return code and the end of its stderr."""
    log = work.parent / "killed_run.stderr"  # beside the project, not in it
    with log.open("w", encoding="utf-8") as err:
        proc = subprocess.Popen(
            CDC + ["run"],
            cwd=work,
            env=child_env(env),
            stdout=subprocess.DEVNULL,
            stderr=err,
            start_new_session=True,
        )
        if kill_after_s is not None:
            time.sleep(kill_after_s)
            os.killpg(proc.pid, signal.SIGKILL)
        rc = proc.wait(timeout=600)
    return rc, log.read_text(encoding="utf-8")[-2000:]


def test_sigkill_during_decode_between_models_and_at_a_random_time_and_a_sigint_then_rerun_equals_clean_run(
    tmp_path, clean_run
):
    _, clean = clean_run
    work = example_copy(tmp_path, "killed")
    # First, from the untouched warehouse (the decode runs only while files are new):
    # the decoding UDF kills the run's whole process group (driver, JVM, Python workers).
    rc, err = _killed_run_in_own_group(work, {"CDC_KILL_DURING_DECODE": "1"})
    assert rc == -signal.SIGKILL, ("during decode", rc, err)
    for node in KILL_AFTER_NODES:
        p = cdc(["run"], work, env={"CDC_KILL_AFTER_NODE": node})
        assert p.returncode == -signal.SIGKILL, (node, p.returncode, p.stderr[-2000:])
    # Long enough for Spark and dbt to be mid-build on this machine, short of the end;
    # a fast machine may finish first (0), but the run must not fail.
    rc, err = _killed_run_in_own_group(work, {}, kill_after_s=float(os.environ.get("CDC_TEST_KILL_SECONDS", "30")))
    assert rc in (-signal.SIGKILL, 0), ("at a random time", rc, err)
    # A scheduler's stop after the changelog's append: SIGTERM to the run's whole process
    # group, its JVM with it (Airflow's timeout, systemd, `timeout`). Handled as a Ctrl-C:
    # the run says so, exits 143 and gives back its run lock. Python's default ended the
    # process at once; the command alone handling it, the JVM ended at once instead, with
    # its tracebacks, and the run lock stayed: the next run released it.
    stop = {"CDC_KILL_AFTER_NODE": "model.cdc.changelog", "CDC_KILL_SIGNAL": "TERM", "CDC_KILL_GROUP": "1"}
    rc, err = _killed_run_in_own_group(work, stop)
    assert rc == 143, (rc, err)
    assert err.splitlines()[-1] == "cdc run: stopped by SIGTERM while dbt build ran; the next run takes up its work"
    assert "Traceback" not in err and "Exception" not in err, err
    # A user's Ctrl-C in the middle of the merge: pyspark cancels Spark's jobs and dbt
    # stops; the run says so in one line, exits as a shell's interrupted command does,
    # and gives back its run lock (the next run finds none to release).
    interrupt = {"CDC_KILL_AFTER_NODE": "model.cdc.int_changes_to_refold", "CDC_KILL_SIGNAL": "INT"}
    p = cdc(["run"], work, env=interrupt)
    assert p.returncode == 130, (p.returncode, p.stderr[-3000:])
    assert p.stderr.splitlines()[-1] == "cdc run: interrupted while dbt build ran; the next run takes up its work"
    assert "cdc run failed" not in p.stderr, p.stderr[-3000:]
    assert "released the run lock" not in p.stderr, p.stderr[-3000:]  # the stopped run's
    p = cdc(["run"], work)
    assert p.returncode == 0, p.stderr[-3000:]
    assert "released the run lock" not in p.stderr, p.stderr[-3000:]
    assert dbt_threads_of_last_run(work) == 4
    assert dump(work) == clean["dump"]


def test_wrong_config_fails_before_any_work_naming_the_problem(tmp_path):
    (tmp_path / "landing").mkdir()
    cases = {
        "format: nope\n    path: landing": "unknown format 'nope'",
        "format: debezium_json\n    path: missing": "does not exist",
    }
    for feed, message in cases.items():
        (tmp_path / "cdc.yml").write_text(f"feeds:\n  - name: f\n    {feed}\ntables: {{t: {{key: [id]}}}}\n")
        p = cdc(["run"], tmp_path, timeout=60)
        assert p.returncode == 2 and message in p.stderr, p.stderr
        assert not (tmp_path / ".cdc").exists()
    (tmp_path / "cdc.yml").write_text(
        "feeds:\n  - name: f\n    format: debezium_json\n    path: landing\ntables: {t: {}}\n"
    )
    p = cdc(["run"], tmp_path, timeout=60)
    assert p.returncode == 2 and "table 't' has no key" in p.stderr, p.stderr
    # a warehouse whose folder cannot be made (under a file): named, before any work
    (tmp_path / "a_file").write_text("")
    (tmp_path / "cdc.yml").write_text(
        "warehouse: a_file/.cdc\nfeeds:\n  - name: f\n    format: debezium_json\n    path: landing\n"
    )
    warehouse = tmp_path / "a_file" / ".cdc"
    for command in (["run"], ["sql", "select 1"], ["serve"]):
        p = cdc(command, tmp_path, timeout=60)
        assert p.returncode == 2, p.stderr
        assert p.stderr.splitlines() == [
            f"cdc {command[0]}: the warehouse {warehouse} cannot be used: Not a directory: {warehouse}; "
            "set warehouse: to a folder this user can create and write"
        ]
