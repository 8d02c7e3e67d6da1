"""SQL analysts: ``cdc serve`` (Spark Thrift server in the session), ``dbt run --target
thrift`` from another process, PyHive and beeline clients, ``cdc run``, ``cdc sql`` and
``cdc export`` through a running server, the safe defaults, and ``cdc run`` on a Spark standalone cluster whose
executors do not have the project installed.

Every process here is real: the server, dbt, beeline (shipped with pyspark), the
standalone master and worker (pyspark's ``spark-class``), all on 127.0.0.1.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import sysconfig
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml
from hive_registration import HIVE_GET_SQL, outcome_within

from udfs.pipeline import RUN_LOCK_TABLE, release_run_lock, run_lock_holder
from udfs.serve import cursor_fetch

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
CDC = [sys.executable, "-m", "udfs.cli"]
ENV = {**os.environ, "PYSPARK_PYTHON": sys.executable, "DBT_SEND_ANONYMOUS_USAGE_STATS": "false"}
#: a cdc command that runs longer is hung: the test fails rather than wait for CI's limit
CDC_TIMEOUT_S = 600
DPP = "spark.sql.optimizer.dynamicPartitionPruning.enabled"  # a setting the merge models change while they build

#: The mart rows as exact text, the same query through every client.
MART_SQL = (
    "select cast(id as string) as id, name, cast(balance as string) as balance, "
    "date_format(updated_at, \"yyyy-MM-dd'T'HH:mm:ss.SSSSSS\") as updated_at from marts.customers"
)
NEW_EVENT = (
    '{"before":null,"after":{"id":7,"name":"Grace Hopper","balance":"AQ==","updated_at":1700000000000007},'
    '"source":{"connector":"postgresql","db":"shop","schema":"public","table":"customers","lsn":5000,'
    '"ts_ms":1700000000200},"op":"c","ts_ms":1700000000201}\n'
)


#: the bucket (changelog partition) of the example's id 1
STATE_BUCKET_OF_ID_1 = 'select bucket from cdc.state where key_text = \'{"id":"1"}\''

#: one column of every type `cdc sql` renders: a bigint above 2^53, a 38-digit decimal,
#: a decimal zero (Spark's cast writes "0E-10"), float32, double, NaN, unicode with a
#: newline and quotes, microsecond timestamps, a date, binary, map, array, struct, null
TYPES_SQL = (
    "select cast(9007199254740993 as bigint) as big,"
    " cast('-12345678901234567890123456.000000000001' as decimal(38,12)) as dec,"
    " cast(0 as decimal(38,10)) as zero, cast(3.14 as float) as f, cast(1e10 as double) as d,"
    " double('NaN') as nan, 'Zoë 🚀\n\"q\"' as s, timestamp'2023-11-14 22:13:20.000007' as ts,"
    " timestamp_ntz'2023-11-14 22:13:20' as ntz, date'2024-02-29' as dt, cast('hi' as binary) as b,"
    " map('k', 'v') as m, array(1, 2) as a, named_struct('x', 1, 'y', null) as st, null as n, true as t,"
    " cast(7 as tinyint) as ti"
)
#: what the embedded `cdc sql TYPES_SQL` prints (test_sigterm_... checks it still does)
TYPES_LINE = (
    '{"big": 9007199254740993, "dec": "-12345678901234567890123456.000000000001", "zero": "0.0000000000",'
    ' "f": 3.14, "d": 1.0E10, "nan": "NaN", "s": "Zoë 🚀\\n\\"q\\"", "ts": "2023-11-14T22:13:20.000007Z",'
    ' "ntz": "2023-11-14T22:13:20.000000Z", "dt": "2024-02-29", "b": "aGk=", "m": "{\\"k\\":\\"v\\"}",'
    ' "a": "[1,2]", "st": "{\\"x\\":1}", "n": null, "t": true, "ti": 7}'
)
#: `cdc export customers` of the example, as the embedded path prints it
EXPORT_LINES = [
    '{"id": 1, "balance": "1.00", "updated_at": "2023-11-14T22:13:20.123456Z", "name": "Ada King"}',
    '{"id": 3, "balance": "9999999999.99", "updated_at": "2023-11-14T22:13:20.000003Z", "name": "Zoë 🚀\\nnewline"}',
    '{"id": 4, "balance": "0.00", "updated_at": "2023-11-14T22:13:20.999999Z", "name": "Katherine Johnson"}',
]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def example_copy(root: Path, name: str) -> Path:
    dest = root / name
    shutil.copytree(REPO / "examples" / "shop", dest, ignore=shutil.ignore_patterns(".cdc"))
    return dest


def cdc(
    args: list[str], cwd: Path, env: dict | None = None, timeout: int = CDC_TIMEOUT_S
) -> subprocess.CompletedProcess:
    return subprocess.run(
        CDC + args, cwd=cwd, env={**ENV, **(env or {})}, capture_output=True, text=True, timeout=timeout
    )


def embedded_rows(work: Path) -> list[dict]:
    p = cdc(["sql", MART_SQL], work)
    assert p.returncode == 0, p.stderr[-2000:]
    return sorted((json.loads(line) for line in p.stdout.splitlines() if line.startswith("{")), key=lambda r: r["id"])


def pyhive_rows_any(port: int, sql: str) -> list[dict]:
    """A query's rows by column name, in a PyHive session of its own."""
    from pyhive import hive

    with contextlib.closing(hive.connect(host="127.0.0.1", port=port, username="analyst")) as conn:
        cur = conn.cursor()
        cur.execute(sql)
        names = [d[0].split(".")[-1] for d in cur.description]
        return [dict(zip(names, row, strict=True)) for row in cur.fetchall()]


def pyhive_rows(port: int, sql: str = MART_SQL) -> list[dict]:
    return sorted(pyhive_rows_any(port, sql), key=lambda r: r["id"])


def beeline(port: int, sql: str) -> list[str]:
    p = subprocess.run(
        [
            str(BIN / "beeline"),
            "-u",
            f"jdbc:hive2://127.0.0.1:{port}/cdc",
            "--silent=true",
            "--outputformat=csv2",
            "-e",
            sql,
        ],
        env=ENV,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]
    # beeline prints its prompt before the first line of output
    lines = [re.sub(r"^\d+: jdbc:hive2://\S+> ?", "", line) for line in p.stdout.splitlines()]
    return [line for line in lines if line.strip()]


@pytest.fixture(scope="module")
def embedded_work(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the example after an embedded ``cdc run``."""
    work = example_copy(tmp_path_factory.mktemp("embedded"), "shop")
    p = cdc(["run"], work)
    assert p.returncode == 0, p.stderr[-3000:]
    return work


@pytest.fixture(scope="module")
def embedded(embedded_work: Path) -> list[dict]:
    """The mart rows of an embedded ``cdc run`` on the example."""
    rows = embedded_rows(embedded_work)
    assert len(rows) == 3
    return rows


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory):
    """A ``cdc serve`` on a free port over a fresh copy of the example (nothing run yet),
    whose warehouse holds a changelog folder that no table owns: what a run killed while
    it created the changelog leaves, and what would make the first run fail
    (LOCATION_ALREADY_EXISTS) if the server did not remove it. It also holds the run
    lock of a run killed before its end (``macros/sql/cdc_acquire_run_lock.sql``), which
    would refuse every run if the server did not release it."""
    work = example_copy(tmp_path_factory.mktemp("served"), "shop")
    killed_runs_lock = (
        "create table cdc.cdc_run_lock (held boolean) using parquet tblproperties ("
        "'cdc.invocation_id' = 'a-killed-run', 'cdc.command' = 'run', 'cdc.started_at' = '2026-12-01 23:59:59')"
    )
    p = cdc(["sql", "create schema cdc", killed_runs_lock], work, timeout=300)
    # statements with no result print only their numbers
    assert (p.returncode, p.stdout) == (0, "-- 1\n-- 2\n"), p.stderr[-3000:]
    orphan = work / ".cdc" / "spark-warehouse" / "cdc.db" / "changelog"
    orphan.mkdir(parents=True)
    (orphan / "part-00000-killed.c000.snappy.parquet").write_bytes(b"PAR1 cut short")
    port = free_port()
    log = (work / "serve.log").open("w")
    proc = subprocess.Popen(
        CDC + ["serve", "--port", str(port)],
        cwd=work,
        env=ENV,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    deadline = time.monotonic() + 300
    while "JDBC URL" not in (work / "serve.log").read_text():
        assert proc.poll() is None, (work / "serve.log").read_text()[-3000:]
        assert time.monotonic() < deadline, "cdc serve did not start"
        time.sleep(1)
    yield work, port, proc
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=120)
    log.close()


def test_dbt_over_thrift_equals_embedded_run_for_pyhive_and_beeline(server, embedded, tmp_path):
    work, port, _ = server
    out = (work / "serve.log").read_text()
    assert f"jdbc:hive2://127.0.0.1:{port}/cdc" in out and "beeline -u" in out
    orphan = work / ".cdc" / "spark-warehouse" / "cdc.db" / "changelog"
    assert f"cdc serve: removed {orphan}, a table folder no table owns" in out
    assert (
        "cdc serve: released the run lock of dbt run (invocation a-killed-run, started 2026-12-01 23:59:59 UTC), "
        "a run that did not finish"
    ) in out

    # a plain `dbt run --target thrift` from another process: settings come from the server
    p = _dbt_thrift(port, ["run"], tmp_path)
    assert p.returncode == 0, p.stdout[-4000:]

    assert pyhive_rows(port) == embedded
    # newlines and unicode survive the Thrift protocol
    assert any(r["name"] == "Zoë 🚀\nnewline" for r in pyhive_rows(port))

    counts = beeline(port, "select count(*) as n, sum(id) as s from marts.customers")
    assert counts == ["n,s", f"{len(embedded)},{sum(int(r['id']) for r in embedded)}"]
    # a package UDF over JDBC
    udf = beeline(
        port,
        "select oc.insert_count, oc.update_count from (select arcion_operationcount("
        '\'{"insertCount":3,"updateCount":12,"deleteCount":0,"replaceCount":0}\') as oc) t',
    )
    assert udf == ["insert_count,update_count", "3,12"]
    # the changelog, the history, the quarantine and the audit are there for analysts
    tables = {r["tableName"] for r in pyhive_rows_any(port, "show tables in cdc")}
    assert {"changelog", "history", "state", "quarantine", "audit_files"} <= tables


def _run_example_unless_run(work: Path, port: int) -> None:
    """``cdc run`` of the example's landing files through the server, unless an earlier
    test of the module ran it: so that each test also passes alone (``-k``) or first on
    an xdist worker, where the served warehouse has no mart yet."""
    schemas = {next(iter(r.values())) for r in pyhive_rows_any(port, "show schemas")}
    if "marts" not in schemas or not any(
        r["tableName"] == "customers" for r in pyhive_rows_any(port, "show tables in marts")
    ):
        p = cdc(["run"], work)
        assert p.returncode == 0, p.stderr[-3000:]


def run_lock(port: int) -> dict[str, str] | None:
    """The run lock's properties (``macros/sql/cdc_acquire_run_lock.sql``), if a run holds it."""
    return run_lock_holder(lambda sql: [tuple(r.values()) for r in pyhive_rows_any(port, sql)], "cdc")


def test_cdc_run_goes_through_the_running_server(server):
    from pyhive import hive

    work, port, _ = server
    _run_example_unless_run(work, port)  # the run below then reads the new file alone
    (work / "landing" / "shop_pg" / "customers-0003.jsonl").write_text(NEW_EVENT)
    # an analyst's setting in the shared session, which the merge models change while they build
    assert pyhive_rows_any(port, f"set {DPP} = false")
    # (its output to files: a pipe not read while polling could fill and stall it)
    with (work / "run.out").open("w") as out, (work / "run.err").open("w") as err:
        # One session for every poll, closed after the run. (A session closed per query
        # once hung the server's session close for good, in CI: Hive's function
        # registration, which every session now settles when it starts; see
        # test_sessions_reaching_hives_function_registration_never_hang_the_server.)
        watcher = hive.connect(host="127.0.0.1", port=port, username="analyst")
        run = subprocess.Popen(CDC + ["run"], cwd=work, env=ENV, stdout=out, stderr=err)
        try:
            fetch = functools.partial(cursor_fetch, watcher.cursor())
            # while it runs, the run holds the run lock, which every client of the server sees
            holders = []
            deadline = time.monotonic() + CDC_TIMEOUT_S
            while run.poll() is None:
                if time.monotonic() > deadline:  # a hung run fails the test, as the cdc helper's would
                    run.kill()
                    pytest.fail(f"cdc run through the server still running after {CDC_TIMEOUT_S} s")
                # (dropped at the run's end between two queries: no holder, not an error)
                holder = run_lock_holder(fetch, "cdc")
                if holder is not None and holder not in holders:
                    holders.append(holder)
                time.sleep(0.5)
        finally:
            watcher.close()
    p = subprocess.CompletedProcess(
        run.args, run.returncode, (work / "run.out").read_text(), (work / "run.err").read_text()
    )
    assert p.returncode == 0, p.stderr[-3000:]
    assert "running through it" in p.stderr
    run_ids = pyhive_rows_any(port, "select run_id from cdc.audit_files where source_file like '%customers-0003.jsonl'")
    assert [(h["cdc.invocation_id"], h["cdc.command"], h["cdc.target"]) for h in holders] == [
        (run_ids[0]["run_id"], "build", "thrift")
    ]
    assert run_lock(port) is None  # given back at the run's end
    assert pyhive_rows_any(port, f"set {DPP}") == [{"key": DPP, "value": "false"}]
    pyhive_rows_any(port, f"set {DPP} = true")
    assert "files 1, records 1, changes 1, quarantined 0" in p.stdout
    ids = [r["id"] for r in pyhive_rows(port)]
    assert "7" in ids

    # another run holding the lock (an analyst's `dbt build --target thrift`): a run
    # through the server is refused before any model, and leaves that run's lock alone
    other = (
        "'cdc.invocation_id' = 'an-analysts-run', 'cdc.command' = 'build', "
        "'cdc.started_at' = '2026-12-02 05:00:00', 'cdc.target' = 'thrift'"
    )
    pyhive_rows_any(port, f"create table cdc.cdc_run_lock (held boolean) using parquet tblproperties ({other})")
    (work / "landing" / "shop_pg" / "customers-0004.jsonl").write_text(NEW_EVENT.replace('"id":7', '"id":8'))
    refused = cdc(["run"], work)
    assert refused.returncode != 0
    assert (
        "another run holds the warehouse (the run lock `cdc`.cdc_run_lock): dbt build, "
        "invocation an-analysts-run, target thrift, started 2026-12-02 05:00:00 UTC." in refused.stderr
    ), refused.stderr[-3000:]
    assert "Nothing was run" in refused.stderr
    # and how to release it, should that run be dead (done in
    # test_a_dead_runs_lock_is_released_by_hand_naming_that_run)
    assert "`dbt run-operation cdc_break_run_lock --args '{invocation_id: an-analysts-run}'`." in refused.stderr
    assert run_lock(port)["cdc.invocation_id"] == "an-analysts-run"
    assert [r["id"] for r in pyhive_rows(port)] == ids
    assert not pyhive_rows_any(port, "select * from cdc.audit_files where source_file like '%customers-0004.jsonl'")
    # that run gone (the analyst's run ended, say)
    pyhive_rows_any(port, "drop table cdc.cdc_run_lock")
    (work / "landing" / "shop_pg" / "customers-0004.jsonl").unlink()


def test_a_sigterm_stops_a_run_through_the_server_and_gives_back_its_lock(server):
    """A scheduler stops a command with SIGTERM (Airflow's timeout, Kubernetes,
    ``timeout``). Python's default ended the process at once: a run through the server
    left its run lock, and every later run through it was refused until the lock was
    released by hand. Now the run stops as at a Ctrl-C, and the next one merges its file."""
    work, port, _ = server
    _run_example_unless_run(work, port)
    landed = work / "landing" / "shop_pg" / "customers-0005.jsonl"
    landed.write_text(NEW_EVENT.replace('"id":7', '"id":9'))
    stop = {"CDC_KILL_AFTER_NODE": "model.cdc.changelog", "CDC_KILL_SIGNAL": "TERM"}
    p = cdc(["run"], work, env=stop)
    assert p.returncode == 143, (p.returncode, p.stderr[-3000:])
    assert p.stderr.splitlines()[-1] == (
        "cdc run: stopped by SIGTERM while dbt build ran; the next run takes up its work"
    )
    assert run_lock(port) is None
    p = cdc(["run"], work)
    assert p.returncode == 0, p.stderr[-3000:]
    assert "released the run lock" not in p.stderr and "another run holds" not in p.stderr, p.stderr[-3000:]
    assert "9" in [r["id"] for r in pyhive_rows(port)]


def _served_marts(work: Path, port: int) -> list[str]:
    """The export lines expected of the served warehouse (running ``cdc run`` through the
    server first when no earlier test did): the example's, and any row an earlier test
    added, built from the exact text PyHive reads with MART_SQL."""
    _run_example_unless_run(work, port)
    lines = list(EXPORT_LINES)
    for r in pyhive_rows(port):
        if r["id"] not in ("1", "3", "4"):
            ts = r["updated_at"] and r["updated_at"] + "Z"
            row = {"id": int(r["id"]), "balance": r["balance"], "updated_at": ts, "name": r["name"]}
            lines.append(json.dumps(row, ensure_ascii=False))
    return lines


def test_cdc_sql_and_export_go_through_the_running_server(server):
    work, port, _ = server
    expected = _served_marts(work, port)

    p = cdc(["sql", TYPES_SQL, "show tables in marts", "select id, balance from marts.customers order by id"], work)
    assert p.returncode == 0, p.stderr[-3000:]
    assert f"cdc sql: the warehouse is served by `cdc serve` on 127.0.0.1:{port}; running through it" in p.stderr
    # no temporary view left behind by dbt's runs through the server (`cdc_drop_tmp_view`)
    assert p.stdout.splitlines() == [
        "-- 1",
        TYPES_LINE,
        "-- 2",
        '{"namespace": "marts", "tableName": "customers", "isTemporary": false}',
        "-- 3",
        *(line.split(', "updated_at"')[0] + "}" for line in expected),
    ], p.stdout
    assert json.loads(TYPES_LINE)["big"] == 2**53 + 1 and json.loads(TYPES_LINE)["s"] == 'Zoë 🚀\n"q"'
    # statements that are not queries run as they are, once
    p = cdc(
        [
            "sql",
            "create table default.cdc_sql_probe (x bigint, s string) using parquet",
            "insert into default.cdc_sql_probe values (9223372036854775807, 'ß\tü'), (1, null)",
            "select * from default.cdc_sql_probe order by x",
            "drop table default.cdc_sql_probe",
        ],
        work,
    )
    assert p.returncode == 0, p.stderr[-3000:]
    assert p.stdout.splitlines() == [
        "-- 1",
        "-- 2",
        "-- 3",
        '{"x": 1, "s": null}',
        '{"x": 9223372036854775807, "s": "ß\\tü"}',
        "-- 4",
    ], p.stdout

    p = cdc(["export", "customers"], work)
    assert p.returncode == 0, p.stderr[-3000:]
    assert "cdc export: the warehouse is served by `cdc serve`" in p.stderr and "running through it" in p.stderr
    assert p.stdout.splitlines() == expected, p.stdout
    assert json.loads(p.stdout.splitlines()[1])["name"] == "Zoë 🚀\nnewline"

    p = cdc(["export", "customers", "--with-metadata"], work)
    assert p.returncode == 0, p.stderr[-3000:]
    rows = [json.loads(line) for line in p.stdout.splitlines()]
    assert [r["id"] for r in rows] == [json.loads(line)["id"] for line in expected]
    assert rows[0]["_cdc_key"] == '{"id":"1"}' and rows[0]["_cdc_op"] == "update"
    assert rows[0]["_cdc_commit_ts"] == "2023-11-14T22:13:20.100000Z" and rows[0]["balance"] == "1.00"


def test_cdc_quarantine_goes_through_the_running_server(server):
    """``cdc quarantine`` while ``cdc serve`` holds the warehouse lists the quarantine
    through the server (it refused with "the warehouse is busy" before)."""
    work, port, _ = server
    bad = '{"payload": {"op": "c", "after": {"id": 8, "name": "Zoë"'  # cut short
    (work / "landing" / "shop_pg" / "customers-0099-bad.jsonl").write_text(bad + "\n")
    p = cdc(["run"], work)
    assert p.returncode == 0, p.stderr[-3000:]
    # (an earlier test of the module may have run the example's files, or not)
    assert ", quarantined 1, skipped 0;" in p.stdout, p.stdout
    p = cdc(["quarantine"], work)
    assert p.returncode == 0, p.stderr[-3000:]
    assert f"cdc quarantine: the warehouse is served by `cdc serve` on 127.0.0.1:{port}; running through it" in p.stderr
    rows = [json.loads(line) for line in p.stdout.splitlines()]
    mine = [r for r in rows if r["source_file"].endswith("customers-0099-bad.jsonl")]
    assert len(mine) == 1, rows
    assert mine[0]["record_index"] == 0 and mine[0]["raw_record"] == bad and mine[0]["raw_is_base64"] is False
    assert mine[0]["reason"].startswith("not JSON"), mine[0]
    assert mine[0]["resolved_run_id"] is None
    # --since a run id the warehouse never saw: named, not an empty list
    p = cdc(["quarantine", "--since", "no-such-run"], work)
    assert (p.returncode, p.stdout) == (2, ""), p.stderr[-3000:]
    assert p.stderr.splitlines()[-1] == (
        "cdc quarantine: no run no-such-run in this warehouse; its runs: cdc sql 'select run_id from cdc.merge_log'"
    )


def _dbt_thrift(port: int, args: list[str], tmp_path: Path, env: dict | None = None) -> subprocess.CompletedProcess:
    """A plain ``dbt <args> --target thrift`` from another process, as an analyst runs it
    (``env``: more variables, e.g. ``CDC_SCHEMA``)."""
    return subprocess.run(
        [str(BIN / "dbt"), *args, "--target", "thrift", "--profiles-dir", "profiles"]
        + ["--target-path", str(tmp_path / "target"), "--log-path", str(tmp_path / "logs")],
        cwd=REPO,
        env={**ENV, "CDC_THRIFT_PORT": str(port), **(env or {})},
        capture_output=True,
        text=True,
        timeout=CDC_TIMEOUT_S,
    )


def test_a_compaction_by_hand_goes_through_the_running_server(server, tmp_path):
    """``dbt run-operation cdc_compact_changelog --target thrift`` while ``cdc serve``
    holds the warehouse: the partition that holds more than one file becomes one file,
    every changelog row kept, logged, and the run lock given back."""
    work, port, _ = server
    changelog = work / ".cdc" / "spark-warehouse" / "cdc.db" / "changelog"
    update = NEW_EVENT.replace('"id":7', '"id":1').replace('"lsn":5000', '"lsn":{lsn}').replace('"op":"c"', '"op":"u"')
    for lsn in (6000, 6001):  # one run appends a file to id 1's partition; two when nothing ran yet
        (work / "landing" / "shop_pg" / f"customers-{lsn}.jsonl").write_text(update.replace("{lsn}", str(lsn)))
        p = cdc(["run"], work)
        assert p.returncode == 0 and "running through it" in p.stderr, p.stderr[-3000:]
        ((bucket,),) = [tuple(r.values()) for r in pyhive_rows_any(port, STATE_BUCKET_OF_ID_1)]
        files = sorted((changelog / "table_id=customers" / f"bucket={bucket}").glob("*.parquet"))
        if len(files) > 1:
            break
    assert len(files) > 1, files
    rows_sql = "select event_id, op, key_text, after, seq from cdc.changelog"
    rows = sorted(map(str, pyhive_rows_any(port, rows_sql)))

    p = _dbt_thrift(port, ["run-operation", "cdc_compact_changelog", "--args", "{after_files: 1}"], tmp_path)
    assert p.returncode == 0, p.stdout[-4000:]
    assert len(list((changelog / "table_id=customers" / f"bucket={bucket}").glob("*.parquet"))) == 1
    assert sorted(map(str, pyhive_rows_any(port, rows_sql))) == rows
    logged = pyhive_rows_any(
        port, "select compaction_id, step, files_before from cdc.changelog_compactions order by logged_at"
    )
    staged, applied = logged[-2:]
    assert (staged["step"], applied["step"]) == (1, 2) and staged["compaction_id"] == applied["compaction_id"], logged
    assert staged["files_before"] >= len(files), logged
    assert run_lock(port) is None


def test_a_dead_runs_lock_is_released_by_hand_naming_that_run(server, tmp_path):
    """``dbt run-operation cdc_break_run_lock --target thrift``, the command the refusal
    names: the lock is dropped only while the named invocation holds it; another name,
    or none, is an error that releases nothing; no lock held, or no schema yet (before
    any run), is nothing to release, said so."""
    _, port, _ = server
    pyhive_rows_any(port, "create schema if not exists cdc")  # this test alone, first on its worker
    dead = (
        "'cdc.invocation_id' = 'a-killed-run', 'cdc.command' = 'run', "
        "'cdc.started_at' = '2026-12-04 19:00:00', 'cdc.target' = 'thrift'"
    )
    pyhive_rows_any(port, f"create table cdc.cdc_run_lock (held boolean) using parquet tblproperties ({dead})")
    held_by = "invocation a-killed-run (dbt run, target thrift, started 2026-12-04 19:00:00 UTC)"

    def break_lock(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
        return _dbt_thrift(port, ["run-operation", "cdc_break_run_lock", *args], tmp_path, env)

    p = break_lock("--args", "{invocation_id: another-run}")
    assert p.returncode != 0
    assert (
        f"cdc_break_run_lock: the run lock `cdc`.cdc_run_lock is held by {held_by}, not by invocation another-run. "
        "Nothing was released." in p.stdout
    ), p.stdout[-4000:]
    assert run_lock(port)["cdc.invocation_id"] == "a-killed-run"

    p = break_lock()
    assert p.returncode != 0
    assert "cdc_break_run_lock: name the run whose lock to release" in p.stdout, p.stdout[-4000:]
    assert run_lock(port)["cdc.invocation_id"] == "a-killed-run"

    p = break_lock("--args", "{invocation_id: a-killed-run}")
    assert p.returncode == 0, p.stdout[-4000:]
    assert f"cdc_break_run_lock: released the run lock `cdc`.cdc_run_lock of {held_by}." in p.stdout
    assert run_lock(port) is None

    p = break_lock("--args", "{invocation_id: a-killed-run}")
    assert p.returncode == 0, p.stdout[-4000:]
    assert "cdc_break_run_lock: no run holds the run lock `cdc`.cdc_run_lock; nothing released." in p.stdout

    p = break_lock("--args", "{invocation_id: a-killed-run}", env={"CDC_SCHEMA": "never_run"})
    assert p.returncode == 0, p.stdout[-4000:]
    assert "no run holds the run lock `never_run`.cdc_run_lock; nothing released." in p.stdout
    assert "never_run" not in {next(iter(r.values())) for r in pyhive_rows_any(port, "show schemas")}


def test_export_of_a_table_the_marts_do_not_hold_names_those_they_do(embedded_work):
    """Spark's TABLE_OR_VIEW_NOT_FOUND, said in the words a user acts on (the embedded
    path; through a server: the next test; before any run: test_cli_errors.py)."""
    p = cdc(["export", "customer"], embedded_work)
    assert p.returncode == 1, p.stderr[-3000:]
    assert p.stderr.splitlines()[-1] == "cdc export: no table `customer` in marts; its tables are: customers"
    assert "Traceback" not in p.stderr and "org.apache" not in p.stderr, p.stderr


def _docs_columns(site: Path) -> dict[str, list[tuple[str, str]]]:
    """Each model's columns in a ``cdc docs`` site's catalog, in the table's order, with
    the type dbt-spark reads (``model.cdc.changelog``: ``[("feed", "string"), ...]``)."""
    catalog = json.loads((site / "catalog.json").read_text(encoding="utf-8"))
    return {
        uid: [(c["name"], c["type"]) for c in sorted(node["columns"].values(), key=lambda c: c["index"])]
        for uid, node in catalog["nodes"].items()
    }


def _docs_models(site: Path) -> set[str]:
    manifest = json.loads((site / "manifest.json").read_text(encoding="utf-8"))
    return {uid for uid in manifest["nodes"] if uid.startswith("model.")}


def _undocumented(site: Path) -> dict[str, list[str]]:
    """What a ``cdc docs`` site leaves blank: per model, ``(model)`` when it has no
    description, each of its tables' columns that its YAML does not describe, and each
    column its YAML describes that the table does not hold (``stale: <name>``)."""
    manifest = json.loads((site / "manifest.json").read_text(encoding="utf-8"))
    found: dict[str, list[str]] = {}
    for uid, columns in _docs_columns(site).items():
        node = manifest["nodes"][uid]
        described = [name for name, c in node["columns"].items() if c.get("description", "").strip()]
        names = [name for name, _ in columns]
        gaps = ["(model)"] if not node["description"].strip() else []
        gaps += [name for name in names if name not in described]
        gaps += [f"stale: {name}" for name in node["columns"] if name not in names]
        if gaps:
            found[uid] = gaps
    return found


def test_cdc_docs_catalogs_the_warehouses_tables_embedded_and_through_the_server(server, embedded_work, tmp_path):
    """``cdc docs``: dbt's site of the project with the catalog of the warehouse it runs
    in. Every model's table is there with its columns as Spark describes them (read
    through the server), and the embedded warehouse gives the same catalog as the served
    one; the one-file site holds it. No run lock is taken."""
    work, port, _ = server
    _run_example_unless_run(work, port)
    served_site, embedded_site = tmp_path / "served", tmp_path / "embedded"

    p = cdc(["docs", "--out", str(served_site)], work)
    assert p.returncode == 0, p.stderr[-3000:]
    assert "cdc docs: the warehouse is served by `cdc serve`" in p.stderr, p.stderr[-3000:]
    models = _docs_models(served_site)
    assert len(models) > 20, models
    assert p.stdout == (
        f"cdc docs: {served_site / 'static_index.html'}: {len(models)} models, {len(models)} of them with their "
        "tables' columns\n"
    )
    served = _docs_columns(served_site)
    assert set(served) == models
    manifest = json.loads((served_site / "manifest.json").read_text(encoding="utf-8"))
    for uid in sorted(models):
        rows = pyhive_rows_any(port, f"describe table extended cdc.{uid.removeprefix('model.cdc.')}")
        names = [row["col_name"] for row in rows]
        # the columns' section ends at the first blank or `#` row (the partition columns'
        # section repeats them)
        described = names[: next(i for i, name in enumerate(names) if not name or name.startswith("#"))]
        assert [name for name, _ in served[uid]] == described, uid
        # the model's description is its table's (or view's) comment (`persist_docs`)
        comments = [row["data_type"] for row in rows if row["col_name"] == "Comment"]
        assert comments == [manifest["nodes"][uid]["description"]], uid
    mart = pyhive_rows_any(port, "describe table extended marts.customers")
    assert [row["data_type"] for row in mart if row["col_name"] == "Comment"] == [
        "The live rows of customers, one per key, each column typed as cdc.mart_columns lists it (from cdc.state)."
    ]
    assert dict(served["model.cdc.changelog"])["kafka_offset"] == "long"
    assert run_lock(port) is None
    # the site describes every model and each column its table holds, and no other
    assert _undocumented(served_site) == {}

    p = cdc(["docs", "--out", str(embedded_site)], embedded_work)
    assert p.returncode == 0, p.stderr[-3000:]
    assert "running through it" not in p.stderr
    assert _docs_columns(embedded_site) == served
    # the site opened from a file, with no server, carries the catalog
    assert "kafka_offset" in (embedded_site / "static_index.html").read_text(encoding="utf-8")


def test_cdc_docs_before_any_run_says_the_warehouse_has_no_table_and_leaves_the_folder_alone(tmp_path):
    """Before the first run the site has every model and no table, said so; the session
    is the warehouse's, so nothing lands beside ``cdc.yml`` (a plain ``dbt docs generate``
    on the session target leaves ``metastore_db`` and ``derby.log`` in the current folder
    and an empty catalog, saying nothing). A Ctrl-C while dbt compiles is an interrupt
    (exit 130, one line), not a failure."""
    work = example_copy(tmp_path, "shop")
    before = sorted(path.name for path in work.iterdir())
    interrupt = {"CDC_KILL_AFTER_NODE": "model.cdc.changelog", "CDC_KILL_SIGNAL": "INT"}
    p = cdc(["docs"], work, env=interrupt)
    assert p.returncode == 130, p.stderr[-3000:]
    assert p.stderr.splitlines()[-1] == "cdc docs: interrupted while dbt docs generate ran", p.stderr[-3000:]

    p = cdc(["docs"], work)
    assert p.returncode == 0, p.stderr[-3000:]
    site = work / ".cdc" / "dbt" / "docs"
    models = _docs_models(site)
    assert p.stdout == (
        f"cdc docs: {site / 'static_index.html'}: {len(models)} models, 0 of them with their tables' columns; "
        "the warehouse has no run yet: `cdc run` makes the tables\n"
    )
    assert _docs_columns(site) == {}
    assert sorted(path.name for path in work.iterdir()) == sorted([*before, ".cdc"])


def test_through_the_server_failures_are_one_clear_line(server):
    work, port, _ = server
    _run_example_unless_run(work, port)
    # a configuration whose schemas no run has made, on the same warehouse (the server's)
    never_run = yaml.safe_load((work / "cdc.yml").read_text()) | {"schema": "never_run", "marts_schema": "never_mart"}
    (work / "never_run.yml").write_text(yaml.safe_dump(never_run))
    no_run_yet = f"the warehouse {(work / '.cdc').resolve()} has no run yet: `cdc run` makes its tables"
    for args, message in (
        (["sql", "select * from no_such_table"], "cdc sql: [TABLE_OR_VIEW_NOT_FOUND] The table or view"),
        (["export", "no_such_table"], "cdc export: no table `no_such_table` in marts; its tables are: "),
        (["export", "customers", "--config", "never_run.yml"], f"cdc export: {no_run_yet}"),
        (["quarantine", "--config", "never_run.yml"], f"cdc quarantine: {no_run_yet}"),
        (["sql", "use marts"], "cdc sql: USE, SET and RESET would change the session that `cdc serve` shares"),
        (["sql", "set spark.sql.ansi.enabled=false"], "cdc sql: USE, SET and RESET would change"),
    ):
        p = cdc(args, work, timeout=120)
        assert p.returncode == 1, (args, p.stdout, p.stderr)
        assert "running through it" in p.stderr
        assert message in p.stderr, (args, p.stderr)
        assert "Traceback" not in p.stderr and "org.apache" not in p.stderr, p.stderr
        if args[0] == "export" and args[1] == "no_such_table":
            listed = p.stderr.splitlines()[-1].removeprefix(message).split(", ")
            assert "customers" in listed and listed == sorted(listed), p.stderr
    # the refused USE did not change the server's session, nor did a failure leave a view behind
    assert pyhive_rows_any(port, "select current_database() as db") == [{"db": "default"}]
    assert not [r for r in pyhive_rows_any(port, "show tables") if r["tableName"].startswith("_cdc_rows_")]


def test_dbt_through_the_server_with_more_than_one_thread_is_refused_before_any_model(server, tmp_path):
    """``dbt build --threads 4 --target thrift`` failed part-way (one thread's closed
    connection dropped ``quarantine__dbt_tmp``, a view another thread built from; ``ddl_log``
    failed): refused before the run lock and any model (macros/sql/cdc_check_run_flags.sql)."""
    work, port, _ = server
    _run_example_unless_run(work, port)
    merges = pyhive_rows_any(port, "select count(*) as n from cdc.merge_log")
    p = _dbt_thrift(port, ["build", "--threads", "2"], tmp_path)
    assert p.returncode != 0, p.stdout[-4000:]
    assert "dbt through the Thrift server runs one node at a time, and --threads is 2" in p.stdout, p.stdout[-4000:]
    assert "Nothing was run. Leave --threads out (the thrift target has 1)" in p.stdout
    assert " START sql " not in p.stdout, p.stdout[-4000:]
    assert run_lock(port) is None
    assert pyhive_rows_any(port, "select count(*) as n from cdc.merge_log") == merges


def test_a_lock_given_back_while_read_through_the_server_is_no_holder(server):
    """test_run_lock_release_race.py through PyHive: the lock dropped after it was listed,
    then after its properties were read. Spark's error class reaches a Thrift client in
    the error's text (an ``OperationalError``), so the read finds no holder and the
    release releases nothing, without an error."""
    from pyhive import hive

    _, port, _ = server
    schema = "lock_race_thrift"
    with contextlib.closing(hive.connect(host="127.0.0.1", port=port, username="analyst")) as conn:
        cursor = conn.cursor()

        def fetch_dropping_lock_after(statement: str):
            def fetch(sql: str) -> list[tuple]:
                rows = cursor_fetch(cursor, sql)
                if sql.startswith(statement):  # the run holding it ends
                    cursor.execute(f"drop table if exists {schema}.{RUN_LOCK_TABLE}")
                return rows

            return fetch

        def take_lock() -> None:
            cursor.execute(
                f"create table {schema}.{RUN_LOCK_TABLE} (held boolean) using parquet"
                " tblproperties ('cdc.invocation_id' = 'a-finishing-run')"
            )

        cursor.execute(f"create schema {schema}")
        try:
            take_lock()
            assert run_lock_holder(fetch_dropping_lock_after("show tables"), schema) is None
            take_lock()
            assert (
                release_run_lock(fetch_dropping_lock_after("show tblproperties"), SimpleNamespace(schema=schema))
                is None
            )
            take_lock()  # and with the lock in place, the same read names its holder
            holder = run_lock_holder(fetch_dropping_lock_after("no statement"), schema)
            assert holder["cdc.invocation_id"] == "a-finishing-run", holder
        finally:
            cursor.execute(f"drop schema if exists {schema} cascade")


def test_sessions_reaching_hives_function_registration_never_hang_the_server(server):
    """Hive's function registration cannot succeed with pyspark's Hive jars, and a failed
    one used to leave Hive waiting for it for good (``udfs.session.
    settle_hive_function_registration``): the first statement or session close to reach
    it failed, and every later one hung, the server's ``CloseSession`` included (a CI run
    hung so). Each session here reaches it, then closes; each must return."""
    _, port, _ = server
    for attempt in range(3):
        finished, outcome = outcome_within(lambda: pyhive_rows_any(port, HIVE_GET_SQL))
        assert finished, f"session {attempt} hung in Hive's function registration"
        assert not isinstance(outcome, Exception), f"session {attempt}: {str(outcome)[:400]}"
        (row,) = outcome
        assert row["hive"].startswith("org.apache.hadoop.hive.ql.metadata.Hive@"), row


def test_locked_warehouse_gives_a_clear_message(server):
    work, port, _ = server
    # `cdc sql` and `cdc export` run through the server (above); a second server cannot
    p = cdc(["serve", "--port", str(free_port())], work, timeout=120)
    assert p.returncode == 3, p.stderr
    assert "is in use by `cdc serve`" in p.stderr and f"127.0.0.1:{port}" in p.stderr, p.stderr
    assert "Derby" not in p.stderr and "Traceback" not in p.stderr


def test_sigterm_stops_the_server_and_frees_the_warehouse(server):
    work, port, proc = server
    _run_example_unless_run(work, port)
    # what the server serves (the example's rows and those earlier tests added)
    served = len(pyhive_rows(port))
    assert served >= len(EXPORT_LINES)
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=120) == 0
    assert "cdc serve: stopping" in (work / "serve.log").read_text()
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", port), timeout=2).close()
    # the warehouse opened without the server holds the very rows it served
    p = cdc(["sql", "select count(*) as n from marts.customers", TYPES_SQL], work)
    assert p.returncode == 0 and f'{{"n": {served}}}' in p.stdout, p.stderr[-2000:]
    assert "running through it" not in p.stderr
    # the embedded path prints the very line the server path printed
    assert p.stdout.splitlines()[-1] == TYPES_LINE


def test_refuses_a_non_loopback_address_without_authentication(tmp_path):
    work = example_copy(tmp_path, "open")
    p = cdc(["serve", "--host", "0.0.0.0", "--port", str(free_port())], work, timeout=60)
    assert p.returncode == 2
    assert "refusing to listen on 0.0.0.0 without authentication" in p.stderr
    assert "hive.server2.authentication: LDAP" in p.stderr
    assert not (work / ".cdc").exists(), "nothing is started before the refusal"


# --------------------------------------------------------------------------- cluster


def _executor_python(root: Path) -> Path:
    """A Python whose environment has pyspark's dependencies but not this project.

    A new virtual environment whose ``.pth`` adds the project venv's site-packages as a
    plain path: pandas, pyarrow, pyspark import; the project's editable-install hook
    (itself a ``.pth`` there) is not processed, so ``import udfs`` fails.
    """
    venv = root / "executor-venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    site = Path(
        subprocess.check_output(
            [str(venv / "bin" / "python"), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], text=True
        ).strip()
    )
    (site / "project_deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return venv / "bin" / "python"


def test_cdc_run_on_a_standalone_cluster_without_the_project_on_executors(tmp_path, embedded):
    exec_python = _executor_python(tmp_path)
    check = subprocess.run(
        [str(exec_python), "-c", "import pandas, pyarrow, pyspark; import udfs"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert "No module named 'udfs'" in check.stderr, "the executor environment must lack the project"

    spark_class = str(BIN / "spark-class")
    master_port, worker_port = free_port(), free_port()
    env = {
        **ENV,
        "SPARK_LOCAL_IP": "127.0.0.1",
        "PYSPARK_PYTHON": str(exec_python),
        "SPARK_WORKER_DIR": str(tmp_path / "work"),
        "SPARK_LOG_DIR": str(tmp_path / "logs"),
    }
    logs = (tmp_path / "master.log").open("w"), (tmp_path / "worker.log").open("w")
    master = subprocess.Popen(
        [
            spark_class,
            "org.apache.spark.deploy.master.Master",
            "--host",
            "127.0.0.1",
            "--port",
            str(master_port),
            "--webui-port",
            str(free_port()),
        ],
        env=env,
        stdout=logs[0],
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    worker = subprocess.Popen(
        [
            spark_class,
            "org.apache.spark.deploy.worker.Worker",
            f"spark://127.0.0.1:{master_port}",
            "--host",
            "127.0.0.1",
            "--port",
            str(worker_port),
            "--webui-port",
            str(free_port()),
            "--cores",
            "2",
            "--memory",
            "2g",
        ],
        env=env,
        stdout=logs[1],
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 180
        while "Successfully registered with master" not in (tmp_path / "worker.log").read_text():
            assert worker.poll() is None and master.poll() is None, (tmp_path / "worker.log").read_text()[-3000:]
            assert time.monotonic() < deadline, (tmp_path / "worker.log").read_text()[-3000:]
            time.sleep(1)
        work = example_copy(tmp_path, "cluster")
        p = cdc(
            ["run", "--master", f"spark://127.0.0.1:{master_port}"],
            work,
            env={"PYSPARK_PYTHON": str(exec_python)},
            timeout=900,
        )
        assert p.returncode == 0, p.stderr[-4000:]
        assert "files 2, records 6, changes 6, quarantined 0" in p.stdout
        # the decoding really ran on the executors, in the environment without the project
        executor_logs = " ".join(f.read_text(errors="replace") for f in (tmp_path / "work").rglob("stderr"))
        assert "udfs.zip" in executor_logs or list((tmp_path / "work").rglob("udfs.zip")), "no executor used the zip"
    finally:
        for proc in (worker, master):
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout=60)
        for log in logs:
            log.close()
    assert embedded_rows(work) == embedded
