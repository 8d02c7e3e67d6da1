"""Sessions cut short: Ctrl-C while a query runs, SIGTERM and SIGHUP to the whole process
group (a scheduler's stop, a closed terminal) and before the session's handler is set, a
first run stopped while Derby created the metastore. Each runs in a process of its own
(the signal goes to it; the metastore is read as the session starts).

Ctrl-C (SIGINT) while the main thread waits on the JVM: the job is cancelled, and the
interrupt gets out without Py4J's tracebacks (``udfs.session.cancel_jobs_on_interrupt``).
pyspark's own handler cancels from the interrupted thread, on the Py4J connection that
is waiting for the query's answer: the cancel failed ("reentrant call"), the job ran on,
and four tracebacks were printed.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from own_session import REPO, run_script_and_stderr

from udfs.session import set_aside_unfinished_metastore
from udfs.warehouse_lock import WarehouseUnusableError

#: a session, and a query whose one task sleeps far longer than the test waits, so only a
#: cancel ends it: a helper thread interrupts the main thread once the job runs (the main
#: thread is then inside the collect's JVM call; ``{interrupt}``, Ctrl-C unless given),
#: and ``outcome`` says how the collect ended; ``{before}`` runs before the query,
#: ``{after}`` after it
INTERRUPTED_QUERY = """
import json, os, signal, sys, threading, time
from pathlib import Path
from udfs.session import build_session

spark = build_session(Path(sys.argv[1]))
tracker = spark.sparkContext.statusTracker()
{before}
def interrupt_once_running():
    while not tracker.getActiveJobsIds():
        time.sleep(0.1)
    {interrupt}

threading.Thread(target=interrupt_once_running, daemon=True).start()
try:
    spark.range(1).selectExpr("java_method('java.lang.Thread', 'sleep', bigint(600000)) as slept").collect()
    outcome = "finished"
except KeyboardInterrupt:
    outcome = "interrupted"
{after}
"""

#: how the query is interrupted unless a test says otherwise: Ctrl-C, to this process
CTRL_C = "os.kill(os.getpid(), signal.SIGINT)"

#: after the interrupted query: Spark's active jobs polled until none is left
POLL_JOBS = """
polls = []
for _ in range(120):
    polls.append(list(tracker.getActiveJobsIds()))
    if not polls[-1]:
        break
    time.sleep(0.5)
"""
#: the interrupted query, then the polled jobs
SCRIPT = INTERRUPTED_QUERY.format(
    before="",
    interrupt=CTRL_C,
    after=POLL_JOBS + 'print("RESULT " + json.dumps({"outcome": outcome, "active_jobs": polls}), flush=True)',
)


ENV = {**os.environ, "PYSPARK_PYTHON": sys.executable, "PYTHONPATH": str(REPO)}


@pytest.mark.parametrize("pin_thread", ["true", "false"])
def test_an_interrupt_during_a_query_cancels_its_job_without_tracebacks(tmp_path, pin_thread):
    """``PYSPARK_PIN_THREAD=false``: Py4J's pooled client, whose own clean-up of an
    interrupted call failed (``AttributeError``: its connections have no
    ``shutdown_socket``); the interrupt gets out all the same."""
    result, stderr = run_script_and_stderr(
        SCRIPT, str(tmp_path / "warehouse"), cwd=tmp_path, env={"PYSPARK_PIN_THREAD": pin_thread}
    )
    assert result["outcome"] == "interrupted"
    # cancelled: no job is left (pyspark's handler left it running for its ten minutes)
    assert result["active_jobs"][-1] == [], result["active_jobs"]
    assert "Traceback" not in stderr and "reentrant call" not in stderr, stderr[-3000:]


#: a helper thread waits in a JVM call (a Phaser of two parties: its one arrival holds it)
#: while the main thread's query is interrupted; once the job is gone the script reads how
#: many arrivals the Phaser has, then arrives itself to let the helper go
OTHER_THREAD_SCRIPT = INTERRUPTED_QUERY.format(
    interrupt=CTRL_C,
    before="""
phaser = spark._jvm.java.util.concurrent.Phaser(2)
phases = []

def wait_in_the_jvm():
    phases.append(phaser.arriveAndAwaitAdvance())

helper = threading.Thread(target=wait_in_the_jvm, daemon=True)
helper.start()
while phaser.getArrivedParties() < 1:
    time.sleep(0.1)
""",
    after="""
for _ in range(120):
    if not tracker.getActiveJobsIds():
        break
    time.sleep(0.5)
time.sleep(2)  # the interrupted call's JVM thread has long read whatever py4j sent after it
arrived = phaser.getArrivedParties()
phase = phaser.getPhase()
if phase == 0:
    phaser.arrive()
helper.join(60)
print("RESULT " + json.dumps({"outcome": outcome, "arrived": arrived, "phase": phase, "helper": phases}), flush=True)
""",
)


@pytest.mark.parametrize("pin_thread", ["true", "false"])
def test_an_interrupt_leaves_another_threads_jvm_call_alone(tmp_path, pin_thread):
    """py4j's own clean-up of an interrupted call sends the JVM a "shut down this socket"
    command, which the JVM applies to every Py4J connection (it matches the gateway's
    port, which they all share). A call another thread was waiting on lost its connection,
    and py4j sent it again (here: a second arrival, so the Phaser advanced on the helper's
    two arrivals alone); a connection opened just then failed to authenticate ("Answer
    from Java side is empty", after the first test's interrupt in a CI run)."""
    result, stderr = run_script_and_stderr(
        OTHER_THREAD_SCRIPT, str(tmp_path / "warehouse"), cwd=tmp_path, env={"PYSPARK_PIN_THREAD": pin_thread}
    )
    assert result["outcome"] == "interrupted"
    # the helper's one call arrived once, and waited on the main thread's arrival
    assert (result["arrived"], result["phase"]) == (1, 0), result
    # and its call returned (the phase it advanced to) once the main thread arrived
    assert result["helper"] == [1], result
    assert "Traceback" not in stderr, stderr[-3000:]


#: the query interrupted by a signal to the script's whole process group (its JVM in it), as
#: a scheduler stops a command (Airflow, systemd, ``timeout``) and a closed terminal does;
#: the signal's default disposition, as a shell starts a command; then, once the job is
#: gone, one more query: the JVM it needs must still run
GROUP_SIGNAL_SCRIPT = """
import signal
signal.signal(signal.SIG{name}, signal.SIG_DFL)
""" + INTERRUPTED_QUERY.format(
    before="",
    interrupt="os.killpg(0, signal.SIG{name})",
    after=POLL_JOBS
    + """
from udfs.session import interrupt_outcome
after = spark.sql("select 41 + 1 as answer").collect()[0].answer
print("RESULT " + json.dumps({{"outcome": outcome, "active_jobs": polls, "after": after,
      "how": interrupt_outcome()}}), flush=True)
""",
)


@pytest.mark.parametrize("name, how", [("TERM", ["stopped by SIGTERM", 143]), ("HUP", ["stopped by SIGHUP", 129])])
def test_a_stop_signal_to_the_process_group_interrupts_as_ctrl_c_and_leaves_the_jvm_running(tmp_path, name, how):
    """The JVM was signalled too and ended at once (SIGTERM and SIGHUP end a JVM, which
    runs its shutdown hooks): nothing was left to cancel the job with, or to give back a
    run lock with. It starts ignoring them now (``udfs.session._jvm_ignoring_stop_signals``),
    as pyspark starts it ignoring SIGINT, and ends with the process still."""
    result, stderr = run_script_and_stderr(
        GROUP_SIGNAL_SCRIPT.format(name=name), str(tmp_path / "warehouse"), cwd=tmp_path, own_process_group=True
    )
    assert result["outcome"] == "interrupted"
    assert result["active_jobs"][-1] == [], result["active_jobs"]
    assert result["after"] == 42
    assert result["how"] == how
    assert "Traceback" not in stderr, stderr[-3000:]


#: SIGTERM to a command whose session has not yet set its handler (``cdc``'s own, set as it
#: starts: a session starting), while the main thread waits in a JVM call (a Phaser of
#: two parties); then one more JVM call on a new connection
EARLY_SIGTERM_SCRIPT = """
import json, os, signal, threading, time
from udfs.session import interrupt_on_signals, interrupt_outcome

interrupt_on_signals()
from pyspark.sql import SparkSession

spark = SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false").getOrCreate()
phaser = spark._jvm.java.util.concurrent.Phaser(2)

def stop_once_waiting():
    while phaser.getArrivedParties() < 1:
        time.sleep(0.1)
    os.kill(os.getpid(), signal.SIGTERM)

threading.Thread(target=stop_once_waiting, daemon=True).start()
try:
    phaser.arriveAndAwaitAdvance()
    outcome = "finished"
except KeyboardInterrupt:
    outcome = "interrupted"
after = spark.range(3).count()
phaser.arrive()
print("RESULT " + json.dumps({"outcome": outcome, "after": after, "how": interrupt_outcome()}), flush=True)
"""


def test_a_sigterm_before_the_session_sets_its_handler_interrupts_a_jvm_call_without_tracebacks(tmp_path):
    """``cdc``'s first handler (``udfs.session.interrupt_on_signals``) raised
    ``KeyboardInterrupt`` and no more: a signal while a session started printed Py4J's
    tracebacks of the interrupted call, and of its clean-up (``BrokenPipeError``)."""
    result, stderr = run_script_and_stderr(EARLY_SIGTERM_SCRIPT, cwd=tmp_path)
    assert result == {"outcome": "interrupted", "after": 3, "how": ["stopped by SIGTERM", 143]}
    assert "Traceback" not in stderr, stderr[-3000:]


#: a command started as ``nohup`` starts it (SIGHUP ignored), then sent SIGHUP and SIGTERM
NOHUP_SCRIPT = """
import json, os, signal, time
signal.signal(signal.SIGHUP, signal.SIG_IGN)
from udfs.session import interrupt_on_signals, interrupt_outcome

interrupt_on_signals()
outcome = []
for sig in (signal.SIGHUP, signal.SIGTERM):
    try:
        os.kill(os.getpid(), sig)
        time.sleep(1)  # a handler runs before this ends
        outcome.append("went on")
    except KeyboardInterrupt:
        outcome.append("stopped")
ignored = signal.getsignal(signal.SIGHUP) is signal.SIG_IGN
print("RESULT " + json.dumps({"outcome": outcome, "hup_ignored": ignored, "how": interrupt_outcome()}), flush=True)
"""


def test_a_command_started_ignoring_sighup_keeps_ignoring_it(tmp_path):
    """``nohup cdc run``: a closed terminal's SIGHUP must not stop it; SIGTERM still does."""
    result, _ = run_script_and_stderr(NOHUP_SCRIPT, cwd=tmp_path)
    assert result == {"outcome": ["went on", "stopped"], "hup_ignored": True, "how": ["stopped by SIGTERM", 143]}


#: a session on a warehouse (its first), its databases listed
START = """
import json, sys
from pathlib import Path
from udfs.session import build_session

spark = build_session(Path(sys.argv[1]))
spark.sql("create database if not exists probe")
print("RESULT " + json.dumps([r[0] for r in spark.sql("show databases").collect()]), flush=True)
"""


def _kill_while_the_metastore_is_created(warehouse: Path) -> None:
    """A first session killed (SIGKILL, as a Ctrl-C's Py4J clean-up interrupts Derby too)
    as soon as ``metastore_db`` appears: Derby has not finished it."""
    for _ in range(3):  # Derby writes the database's files for a second or more: one kill lands
        proc = subprocess.Popen(
            [sys.executable, "-c", START, str(warehouse)],
            env=ENV,
            start_new_session=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        while not (warehouse / "metastore_db").is_dir() and proc.poll() is None:
            time.sleep(0.01)
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        if not (warehouse / "metastore_db" / "service.properties").exists():
            return
        shutil.rmtree(warehouse)
    pytest.fail("each kill landed after Derby finished the metastore")


def test_a_metastore_whose_creation_was_cut_short_is_set_aside_and_made_anew(tmp_path):
    """Every session after such a kill failed ("Unable to instantiate
    SessionHiveMetaStoreClient"): Derby opens no database without its service.properties."""
    warehouse = tmp_path / "warehouse"
    _kill_while_the_metastore_is_created(warehouse)
    databases, stderr = run_script_and_stderr(START, str(warehouse), cwd=tmp_path)
    assert "probe" in databases
    (aside,) = warehouse.glob("metastore_db.unfinished-*")
    assert f"set aside as {aside.name}, and made anew" in stderr
    assert (warehouse / "metastore_db" / "service.properties").exists()
    # the next session opens the new one as it is
    databases, stderr = run_script_and_stderr(START, str(warehouse), cwd=tmp_path)
    assert "probe" in databases and "set aside" not in stderr
    assert list(warehouse.glob("metastore_db.unfinished-*")) == [aside]


def test_an_unopenable_metastore_beside_tables_is_refused_not_replaced(tmp_path):
    """Without ``service.properties`` Derby opens nothing; with tables in the tables'
    folder the metastore may have registered them, so nothing is renamed."""
    warehouse = tmp_path / "warehouse"
    (warehouse / "metastore_db" / "seg0").mkdir(parents=True)
    (warehouse / "spark-warehouse" / "cdc.db").mkdir(parents=True)
    with pytest.raises(WarehouseUnusableError) as err:
        set_aside_unfinished_metastore(warehouse)
    assert f"the warehouse's metastore {warehouse / 'metastore_db'} has no service.properties" in str(err.value)
    assert f"the tables' folder {warehouse / 'spark-warehouse'} may hold tables" in str(err.value)
    elsewhere = tmp_path / "tables"
    (elsewhere / "x.db").mkdir(parents=True)
    for tables_dir in (str(elsewhere), elsewhere.as_uri(), "hdfs://namenode:8020/warehouse"):
        with pytest.raises(WarehouseUnusableError, match="may hold tables"):
            set_aside_unfinished_metastore(warehouse, tables_dir)
    assert sorted(p.name for p in warehouse.iterdir()) == ["metastore_db", "spark-warehouse"]
    # a finished metastore, or none, is left as it is
    (warehouse / "metastore_db" / "service.properties").write_text("")
    assert set_aside_unfinished_metastore(warehouse) is None
    assert set_aside_unfinished_metastore(tmp_path / "new") is None
    assert sorted(p.name for p in warehouse.iterdir()) == ["metastore_db", "spark-warehouse"]
