"""A ``cdc`` command that fails says why in one line of its own.

* A query (``cdc sql: [ERROR_CLASS] message``), in its embedded session as through a
  server (test_thrift_server.py): pyspark logged every SQL error it raised once more, a
  JSON line of about 7 KB with the JVM's stack trace, before it
  (``udfs.session.quiet_pyspark_error_logs``). ``CDC_SPARK_LOG_LEVEL=INFO`` keeps
  pyspark's line, for a user who wants the trace.
* ``cdc serve`` on a port another process listens on, or on no port, is refused before
  its session starts (``udfs.serve.check_port``); it was a Java stack trace. One taken
  while the session started is refused as the Thrift server fails to bind it.
* ``cdc export`` and ``cdc quarantine`` before any run say so, not Spark's
  TABLE_OR_VIEW_NOT_FOUND (a table name the marts do not hold: test_thrift_server.py).
* A JVM that exits as it starts (``--master`` Spark does not know) leaves its own reason
  and one line of the command's, not pyspark's traceback.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

CDC = [sys.executable, "-m", "udfs.cli"]
MISSING = (
    "cdc sql: [TABLE_OR_VIEW_NOT_FOUND] The table or view `default`.`no_such_table` cannot be found. "
    "Verify the spelling and correctness of the schema and catalog."
)


def _write_config(tmp_path: Path) -> None:
    (tmp_path / "landing").mkdir(exist_ok=True)
    feeds = [{"name": "dbz", "format": "debezium_json", "path": "landing"}]
    (tmp_path / "cdc.yml").write_text(yaml.safe_dump({"feeds": feeds, "tables": {"t": {"key": ["id"]}}}))


def _cdc(
    tmp_path: Path, *args: str, env: dict[str, str] | None = None, timeout: int = 600
) -> subprocess.CompletedProcess:
    _write_config(tmp_path)
    return subprocess.run(
        [*CDC, *args, "--config", "cdc.yml"],
        cwd=tmp_path,
        env={**os.environ, "PYSPARK_PYTHON": sys.executable, **(env or {})},
        capture_output=True,
        text=True,
        timeout=timeout,
    )


@pytest.mark.parametrize("log_level", [None, "INFO"])
def test_a_failing_query_is_one_line_unless_the_log_level_asks_for_more(tmp_path, log_level):
    env = {"CDC_SPARK_LOG_LEVEL": log_level} if log_level else {}
    p = _cdc(tmp_path, "sql", "select 1 as one", "select * from default.no_such_table", env=env)
    assert p.returncode == 1, p.stderr[-3000:]
    assert p.stdout == '-- 1\n{"one": 1}\n-- 2\n', "the statements before the failing one printed their rows"
    assert [line for line in p.stderr.splitlines() if line.startswith("cdc sql: [")] == [MISSING], p.stderr[-3000:]
    logged = "SQLQueryContextLogger" in p.stderr and "org.apache.spark.sql.AnalysisException" in p.stderr
    assert logged == (log_level == "INFO"), p.stderr[-3000:]
    if log_level is None:
        assert p.stderr.splitlines()[-1] == MISSING
        assert "org.apache" not in p.stderr and "Traceback" not in p.stderr, p.stderr[-3000:]


def test_serve_on_a_port_another_process_listens_on_is_refused_before_its_session(tmp_path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        p = _cdc(tmp_path, "serve", "--port", str(port), timeout=60)
    assert p.returncode == 2, p.stderr[-3000:]
    assert p.stderr.splitlines() == [
        f"cdc serve: cannot listen on 127.0.0.1:{port}: Address already in use; another server listens there? "
        "choose another --port"
    ]
    assert not (tmp_path / ".cdc" / "metastore_db").exists(), "no session was started"
    for bad in ("0", "70000"):
        p = _cdc(tmp_path, "serve", "--port", bad, timeout=60)
        assert (p.returncode, p.stderr) == (2, f"cdc serve: --port {bad} is not a port (1 to 65535)\n")


#: ``cdc serve`` as the command runs it, but with the port taken after ``check_port``
#: looked: the session's start takes seconds, in which another process can bind it
PORT_TAKEN_DURING_START = """
import socket, sys
import udfs.serve
from udfs.cli import main
udfs.serve.check_port = lambda host, port: None
with socket.socket() as taken:
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    print(taken.getsockname()[1], flush=True)
    sys.exit(main(["serve", "--port", str(taken.getsockname()[1]), "--config", "cdc.yml"]))
"""


def test_serve_on_a_port_taken_while_its_session_started_is_refused_in_one_line(tmp_path):
    _write_config(tmp_path)
    p = subprocess.run(
        [sys.executable, "-c", PORT_TAKEN_DURING_START],
        cwd=tmp_path,
        env={**os.environ, "PYSPARK_PYTHON": sys.executable},
        capture_output=True,
        text=True,
        timeout=300,
    )
    port = p.stdout.splitlines()[0]
    assert p.returncode == 2, p.stderr[-3000:]
    assert p.stderr.splitlines()[-1] == (
        f"cdc serve: cannot listen on 127.0.0.1:{port}: Address already in use; another server listens there? "
        "choose another --port"
    )
    assert "Traceback" not in p.stderr and "org.apache" not in p.stderr, p.stderr[-3000:]
    assert (tmp_path / ".cdc" / "metastore_db").exists(), "the session had started"


def test_a_jvm_that_exits_as_it_starts_leaves_its_reason_and_one_line(tmp_path):
    p = _cdc(tmp_path, "run", "--master", "nowhere://x", timeout=120)
    assert p.returncode == 1, p.stderr[-3000:]
    assert "Master must either be yarn or start with spark, k8s, or local" in p.stderr, p.stderr[-3000:]
    assert "Traceback" not in p.stderr, p.stderr[-3000:]
    assert p.stderr.splitlines()[-1] == "cdc run: Spark's JVM exited as it started; its reason is above"


def test_export_and_quarantine_before_any_run_say_so(tmp_path):
    no_run_yet = f"the warehouse {(tmp_path / '.cdc').resolve()} has no run yet: `cdc run` makes its tables"
    for args in (["export", "t"], ["quarantine"], ["quarantine", "--since", "a-run"]):
        p = _cdc(tmp_path, *args)
        assert p.returncode == 1, p.stderr[-3000:]
        assert p.stdout == ""
        assert p.stderr.splitlines()[-1] == f"cdc {args[0]}: {no_run_yet}", p.stderr[-3000:]
        assert "TABLE_OR_VIEW_NOT_FOUND" not in p.stderr and "Traceback" not in p.stderr, p.stderr[-3000:]
