"""The Spark session of a warehouse: local[*] (or a master URL), Hive metastore in
embedded Derby under the warehouse folder, UTC, the ``cdc_`` functions registered."""

from __future__ import annotations

import os
import re
import shlex
import signal
import sys
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from udfs.class_archive import class_archive_java_options
from udfs.config import Config

#: Spark's driver logging for the ``cdc`` commands (quiet start-up, warnings kept).
LOG4J2 = (Path(__file__).parent / "conf" / "log4j2.properties").as_uri()


#: The driver JVM's options (local mode: the only JVM; its executor runs inside it).
DRIVER_JAVA_OPTIONS = "spark.driver.extraJavaOptions"

#: JVM options for a JVM that lives a few minutes and plans many small queries: C1 only
#: (C2's code never pays back its compiling there; it took a third of such a JVM's CPU),
#: a code cache large enough that its sweeper stays idle (C1 alone shrinks it to 48 MB),
#: the serial collector. The test suite's JVMs and the SQL linter's run with them, a
#: ``cdc run`` whose new landing files are small (``small_run_max_bytes``,
#: udfs/run_size.py) and a query command on a warehouse that is not too large
#: (``small_query_max_bytes``): side by side, a run of up to 100k changes took
#: 0.70-0.82x the wall time with them, but a first load of 1M 1.28x, Spark's tasks
#: running C1's code for minutes; a query 0.73-0.85x up to a 1.3 GB warehouse
#: (BENCHMARKS.md, "JVM options").
SHORT_LIVED_JVM_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:ReservedCodeCacheSize=256m -XX:+UseSerialGC"


def driver_java_options(warehouse: Path, user_options: str | None = None, run_options: str = "") -> str:
    """The driver JVM's options: the session's own (Derby's home, so its ``derby.log``
    lands in the warehouse; the ``cdc`` commands' logging), those chosen for the run
    (``run_options``: ``udfs.run_size.run_java_options`` or ``query_java_options``), then the user's
    (``spark.driver.extraJavaOptions`` in ``cdc.yml``'s ``spark:``).

    Why both: Spark takes one value for the setting, and a user's value set as is would
    replace the session's (``derby.log`` in the current folder, Spark's INFO logging
    at start-up). The JVM takes the last of two same options, so the user's win.

    The session's own are quoted as Spark's launcher splits the value (quotes and
    backslashes, as a shell): a warehouse whose path holds a blank (``My Projects/``)
    would otherwise be cut into two options, and the JVM take the rest for its main
    class. The user's are theirs, already written for that split.
    """
    own = " ".join(
        shlex.quote(option) for option in (f"-Dderby.system.home={warehouse}", f"-Dlog4j2.configurationFile={LOG4J2}")
    )
    return " ".join(part for part in (own, run_options.strip(), (user_options or "").strip()) if part)


#: the blanks of Java's properties format (``java.util.Properties.load``)
_PROPERTIES_BLANKS = " \t\f"
#: an escape of Java's properties format: ``\uXXXX``, ``\t``, ``\n``, ``\r``, ``\f``, else the character itself
_PROPERTIES_ESCAPE = re.compile(r"\\(u[0-9A-Fa-f]{4}|.)", re.DOTALL)
_PROPERTIES_ESCAPED = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}


def _properties_lines(text: str) -> Iterator[str]:
    """The logical lines of a properties file: blank and comment lines (``#`` or ``!``
    first) dropped, a line ending in an odd number of backslashes continued by the next,
    whose leading blanks are dropped (a continuation line is never a comment)."""
    pending = None
    for line in re.split(r"\r\n|\r|\n", text):
        line = line.lstrip(_PROPERTIES_BLANKS)
        if pending is None and (not line or line[0] in "#!"):
            continue
        backslashes = len(line) - len(line.rstrip("\\"))
        if backslashes % 2:
            pending = (pending or "") + line[:-1]
            continue
        yield (pending or "") + line
        pending = None
    if pending:
        yield pending


def _properties_unescaped(text: str) -> str:
    def unescaped(match: re.Match[str]) -> str:
        if match[1] == "u":  # Java refuses the file ("Malformed \\uxxxx encoding."), as spark-submit does
            raise ValueError(f"a malformed \\uxxxx escape in {text!r}, which Java (so spark-submit) refuses")
        return chr(int(match[1][1:], 16)) if len(match[1]) == 5 else _PROPERTIES_ESCAPED.get(match[1], match[1])

    return _PROPERTIES_ESCAPE.sub(unescaped, text)


def spark_properties(properties_file: Path) -> dict[str, str]:
    """The settings of a Spark properties file, read as ``java.util.Properties.load``
    reads it (spark-submit's way): ``key value``, ``key=value`` or ``key: value``; ``#``
    and ``!`` start comment lines; a trailing backslash continues a line; escapes
    (``\\=``, ``\\ ``, ``\\t``, ``\\uXXXX``); of a key set twice, the last. Empty for a file
    that is not there; ``ValueError`` naming the file for a ``\\u`` without four hex
    digits, which Java refuses."""
    if not properties_file.is_file():
        return {}
    settings = {}
    for line in _properties_lines(properties_file.read_text(encoding="utf-8", errors="replace")):
        end, escaped = 0, False
        while end < len(line) and (escaped or line[end] not in f"=:{_PROPERTIES_BLANKS}"):
            escaped = not escaped and line[end] == "\\"
            end += 1
        value = line[end:].lstrip(_PROPERTIES_BLANKS)
        if value[:1] in ("=", ":"):
            value = value[1:].lstrip(_PROPERTIES_BLANKS)
        try:
            settings[_properties_unescaped(line[:end])] = _properties_unescaped(value)
        except ValueError as exc:
            raise ValueError(f"{properties_file}: {exc}") from None
    return settings


def spark_defaults_file(environ: Mapping[str, str]) -> Path:
    """``spark-defaults.conf`` of ``SPARK_CONF_DIR``, else of ``$SPARK_HOME/conf``
    (pyspark's own folder when ``SPARK_HOME`` is unset)."""
    if environ.get("SPARK_CONF_DIR"):
        return Path(environ["SPARK_CONF_DIR"]) / "spark-defaults.conf"
    from pyspark.find_spark_home import _find_spark_home

    return Path(environ.get("SPARK_HOME") or _find_spark_home()) / "conf" / "spark-defaults.conf"


def submitted_properties(submit_args: list[str], environ: Mapping[str, str]) -> dict[str, str]:
    """The settings spark-submit reads from properties files, given its arguments: the
    last ``--properties-file``'s alone, over ``spark-defaults.conf``'s with
    ``--load-spark-defaults``; ``spark-defaults.conf``'s without one (Spark 4's launcher:
    seen in the options of sessions started without the session's own)."""
    named = [
        submit_args[n + 1] if arg == "--properties-file" else arg.partition("=")[2]
        for n, arg in enumerate(submit_args)
        if (arg == "--properties-file" and n + 1 < len(submit_args)) or arg.startswith("--properties-file=")
    ]
    if not named:
        return spark_properties(spark_defaults_file(environ))
    defaults = spark_properties(spark_defaults_file(environ)) if "--load-spark-defaults" in submit_args else {}
    return {**defaults, **spark_properties(Path(named[-1]))}


def submitted_driver_java_options(submit_args: str) -> tuple[str, str | None]:
    """``submit_args`` (``PYSPARK_SUBMIT_ARGS``) without the arguments that set the
    driver's extra JVM options (``--driver-java-options VALUE`` or ``=VALUE``; ``--conf``
    or ``-c spark.driver.extraJavaOptions=VALUE``, ``--conf=...``), and the value that
    spark-submit would take of them (the last), or None when none does (then
    ``submit_args`` unchanged). Arguments that cannot be split are left to pyspark,
    which fails on them with shlex's error."""
    try:
        args = shlex.split(submit_args)
    except ValueError:
        return submit_args, None
    kept: list[str] = []
    value = None
    n = 0
    while n < len(args):
        arg, following = args[n], args[n + 1] if n + 1 < len(args) else ""
        if arg == "--driver-java-options" and n + 1 < len(args):
            value, n = following, n + 2
        elif arg.startswith("--driver-java-options="):
            value, n = arg.partition("=")[2], n + 1
        elif arg in ("--conf", "-c") and following.startswith(f"{DRIVER_JAVA_OPTIONS}="):
            value, n = following.partition("=")[2], n + 2
        elif arg.startswith(f"--conf={DRIVER_JAVA_OPTIONS}="):
            value, n = arg.partition("=")[2].partition("=")[2], n + 1
        else:
            kept.append(arg)
            n += 1
    return (submit_args, None) if value is None else (shlex.join(kept), value)


#: the locale a JVM is started in when the caller's charset is not UTF-8
UTF8_LOCALE = "C.UTF-8"
_UTF8 = re.compile(r"utf-?8", re.IGNORECASE)


def utf8_locale(environ: Mapping[str, str]) -> dict[str, str]:
    """The locale variables to set so that a JVM started with ``environ`` takes file
    names and text as UTF-8; none when its locale's charset is UTF-8 already.

    Java 17 takes both charsets from the locale (``LC_ALL``, else ``LC_CTYPE``, else
    ``LANG``; the one of file names, ``sun.jnu.encoding``, cannot be set by an option).
    In the C locale it is ASCII: a table whose name is not ASCII failed the changelog's
    write (``TASK_WRITE_FAILED``: its partition folder cannot be named), and a warehouse
    under a non-ASCII folder failed the JVM's start. Only the charset changes:
    ``LC_CTYPE``, or ``LC_ALL`` when that is what the locale comes from.
    """
    for name in ("LC_ALL", "LC_CTYPE", "LANG"):
        if value := environ.get(name):  # an empty variable is not set
            return {} if _UTF8.search(value) else {"LC_ALL" if name == "LC_ALL" else "LC_CTYPE": UTF8_LOCALE}
    return {"LC_CTYPE": UTF8_LOCALE}


@contextmanager
def _environment(changes: Mapping[str, str | None]) -> Iterator[None]:
    """The environment variables ``changes`` names set to its values (None: unset)
    while the JVM starts (pyspark passes the environment to it)."""
    before = {name: os.environ.get(name) for name in changes}
    for name, value in changes.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value
    try:
        yield
    finally:
        for name, value in before.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


@contextmanager
def _jvm_ignoring_stop_signals() -> Iterator[None]:
    """The JVM pyspark starts meanwhile starts with SIGTERM and SIGHUP ignored, as
    pyspark starts it with SIGINT ignored (its ``launch_gateway``, whose ``Popen`` this
    wraps). A scheduler's stop (Airflow, systemd, ``timeout``) and a closed terminal
    signal the command's whole process group, the JVM with it: the JVM ended at once,
    and the command's own handling of the signal (:func:`cancel_jobs_on_interrupt`)
    found no JVM to cancel its jobs or give back the run lock with. The JVM still ends
    with the command: pyspark's gateway exits when its stdin closes."""
    import pyspark.java_gateway as gateway

    popen = gateway.Popen

    def popen_ignoring_stop_signals(*args: Any, **kwargs: Any) -> Any:
        pyspark_preexec = kwargs.get("preexec_fn")

        def preexec() -> None:  # in the child, before it runs spark-submit: no window in this process
            if pyspark_preexec is not None:
                pyspark_preexec()
            for sig in STOP_SIGNALS:
                signal.signal(sig, signal.SIG_IGN)

        return popen(*args, **{**kwargs, "preexec_fn": preexec})

    gateway.Popen = popen_ignoring_stop_signals
    try:
        yield
    finally:
        gateway.Popen = popen


#: Spark's fallback for a partition filter the Hive metastore fails on (see build_session).
PARTITION_FILTER_FALLBACK = "spark.sql.hive.metastorePartitionPruningFallbackOnException"


def build_session(
    config: Config | Path,
    master: str | None = None,
    extra_conf: dict[str, str] | None = None,
    run_java_options: str = "",
) -> Any:
    """Start (or reuse) the Spark session for a warehouse folder (or ``config``'s).

    ``spark:`` settings of the configuration and ``extra_conf`` are applied last (the
    driver's JVM options after the session's own and ``run_java_options``, with those a
    properties file and ``PYSPARK_SUBMIT_ARGS`` set: :func:`driver_java_options`,
    :func:`submitted_driver_java_options`; all of them only when no session is running). With a
    master that is not local, the ``udfs`` package is shipped to the executors with the
    job (``addPyFile``), so they need only pyspark's own dependencies.
    """
    # Executors must run the same interpreter as the driver (pandas, pyarrow).
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    from udfs.spark_udfs import register

    active = SparkSession.getActiveSession()
    if active is not None:
        settle_hive_function_registration(active)
        register(active)
        return active
    master = master or os.environ.get("CDC_SPARK_MASTER", "local[*]")
    if master.startswith("local"):
        # A local session serves nobody else: bind the driver to the loopback address.
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    # crash tests (CDC_KILL_DURING_DECODE) kill the driver's process group from a worker
    os.environ["CDC_DRIVER_PGID"] = str(os.getpgid(0))
    wh = config.warehouse if isinstance(config, Config) else Path(config)
    wh.mkdir(parents=True, exist_ok=True)
    conf = dict(config.spark_conf) if isinstance(config, Config) else {}
    conf.update(extra_conf or {})
    if aside := set_aside_unfinished_metastore(wh, conf.get("spark.sql.warehouse.dir")):
        print(
            f"cdc: the warehouse's metastore was never finished (a first run stopped while Derby created it): "
            f"set aside as {aside.name}, and made anew",
            file=sys.stderr,
        )
    # spark-submit takes one value of the driver's extra options: one set in
    # PYSPARK_SUBMIT_ARGS (which pyspark passes after the session's settings) would
    # replace the session's own options, and the session's would replace one set in a
    # properties file, as they would one set in cdc.yml. So all are joined, in
    # spark-submit's order (a properties file's, cdc.yml's, PYSPARK_SUBMIT_ARGS', taken
    # out of the arguments) after the session's own: the JVM takes the last of two same
    # options, so the user's still win.
    submit_args = os.environ.get("PYSPARK_SUBMIT_ARGS")
    submitted = None
    if submit_args is not None:
        submit_args, submitted = submitted_driver_java_options(submit_args)
    try:
        arguments = shlex.split(submit_args or "")
    except ValueError:  # arguments shlex cannot split: pyspark fails on them itself
        arguments = None
    # a properties file Java refuses raises here, naming it (spark-submit's error does not)
    from_file = None if arguments is None else submitted_properties(arguments, os.environ).get(DRIVER_JAVA_OPTIONS)
    user_java_options = " ".join(part for part in (from_file, conf.pop(DRIVER_JAVA_OPTIONS, None), submitted) if part)
    # Spark's classes mapped from the set-up's archive (udfs/class_archive.py): before the
    # run's options and the user's, so that a user's -Xshare:off still wins
    run_java_options = " ".join(filter(None, [class_archive_java_options(), run_java_options.strip()]))
    builder = (
        SparkSession.builder.appName("cdc")
        .master(master)
        .config("spark.sql.warehouse.dir", str(wh / "spark-warehouse"))
        .config(
            "spark.hadoop.javax.jdo.option.ConnectionURL", f"jdbc:derby:;databaseName={wh / 'metastore_db'};create=true"
        )
        .config(DRIVER_JAVA_OPTIONS, driver_java_options(wh, user_java_options, run_java_options))
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.sources.partitionOverwriteMode", "dynamic")
        # timestamps as INT64 microseconds, not INT96 (Spark's default, deprecated in
        # parquet): the same values, with row-group min/max statistics, so the run's
        # reads of its own changelog rows (`loaded_at` after the last merge, the rows a
        # run tests) skip the files earlier runs wrote instead of reading them all
        .config("spark.sql.parquet.outputTimestampType", "TIMESTAMP_MICROS")
        .config("spark.sql.shuffle.partitions", os.environ.get("CDC_SHUFFLE_PARTITIONS", "8"))
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        # a long-lived session (cdc serve, a test run) keeps the plans of its last SQL
        # executions even without the UI; the refold's plans are large, and 1,000 of
        # them (Spark's default) fill a 1 GB driver
        .config("spark.sql.ui.retainedExecutions", "50")
        .config("spark.ui.retainedJobs", "100")
        .config("spark.ui.retainedStages", "100")
        .config("spark.sql.execution.arrow.maxRecordsPerBatch", "2000")
        # base64() as one line: no MIME line breaks in exported binary values
        .config("spark.sql.chunkBase64String.enabled", "false")
        # a partition filter the metastore fails on is applied by Spark to every
        # partition instead of failing the query: Hive answers a filter on an integer
        # partition column (the changelog's `bucket`) only through its direct SQL, and
        # when that fails (it did once, in a loaded test run) its fallback refuses it
        # (INTERNAL_ERROR_HIVE_METASTORE_PARTITION_FILTER). Same rows, a slower listing.
        .config(PARTITION_FILTER_FALLBACK, "true")
        .enableHiveSupport()
    )
    for name, value in conf.items():
        builder = builder.config(name, value)
    # the JVM (and the Python workers it starts) in a UTF-8 locale, whatever the caller's
    with _environment({"PYSPARK_SUBMIT_ARGS": submit_args, **utf8_locale(os.environ)}), _jvm_ignoring_stop_signals():
        spark = builder.getOrCreate()
    if not master.startswith("local"):
        spark.sparkContext.addPyFile(str(package_zip(wh)))
    log_level = os.environ.get("CDC_SPARK_LOG_LEVEL", "ERROR")
    spark.sparkContext.setLogLevel(log_level)
    quiet_pyspark_error_logs(log_level)
    cancel_jobs_on_interrupt(spark, log_level)
    settle_hive_function_registration(spark)
    register(spark)
    return spark


#: pyspark's loggers that print every SQL error it raises once more, as a JSON line
#: holding the JVM's whole stack trace (``PySparkException._log_exception``)
PYSPARK_ERROR_LOGGERS = ("SQLQueryContextLogger", "DataFrameQueryContextLogger")
#: ``CDC_SPARK_LOG_LEVEL`` values at which those lines are kept
_VERBOSE_LOG_LEVELS = ("ALL", "TRACE", "DEBUG", "INFO")


def quiet_pyspark_error_logs(log_level: str) -> None:
    """Silence :data:`PYSPARK_ERROR_LOGGERS` unless ``log_level`` (``CDC_SPARK_LOG_LEVEL``)
    is ``INFO`` or finer: the commands report an error in one line of their own
    (``cdc sql: [TABLE_OR_VIEW_NOT_FOUND] ...``), which pyspark preceded with 7 KB of
    JSON and Java frames."""
    import logging

    from pyspark.logger import PySparkLogger

    level = logging.WARN if log_level.upper() in _VERBOSE_LOG_LEVELS else logging.CRITICAL  # WARN: pyspark's own
    for name in PYSPARK_ERROR_LOGGERS:
        PySparkLogger.getLogger(name).setLevel(level)  # its own class: pyspark logs through it with fields


def set_aside_unfinished_metastore(warehouse: Path, tables_dir: str | None = None) -> Path | None:
    """Rename a ``metastore_db`` whose creation never finished, so that Derby makes it
    anew; return its new path (``None``: nothing to do).

    Derby writes ``service.properties`` as a database's creation ends; a first run
    interrupted (Ctrl-C, a kill) while it created the metastore left the folder without
    it, and every later session failed ("Unable to instantiate
    SessionHiveMetaStoreClient": Derby boots no database without the file). Such a
    metastore registered nothing, so only an empty tables' folder (``tables_dir``,
    ``spark.sql.warehouse.dir``, else the warehouse's ``spark-warehouse``) is made
    anew; with tables there, its loss is the user's to judge:
    :class:`~udfs.warehouse_lock.WarehouseUnusableError`, naming both.
    """
    import time
    from urllib.parse import unquote, urlparse

    from udfs.warehouse_lock import WarehouseUnusableError

    metastore = warehouse / "metastore_db"
    if not metastore.is_dir() or (metastore / "service.properties").exists():
        return None
    url = urlparse(tables_dir or "")
    tables = Path(unquote(url.path)) if tables_dir and url.scheme in ("", "file") else warehouse / "spark-warehouse"
    if (tables_dir and url.scheme not in ("", "file")) or (tables.is_dir() and any(tables.iterdir())):
        raise WarehouseUnusableError(
            f"the warehouse's metastore {metastore} has no service.properties (its creation never finished, or "
            f"the file was lost), and Derby cannot open it; the tables' folder {tables_dir or tables} may hold "
            "tables it registered: restore metastore_db from a backup, or move both aside to start anew"
        )
    aside = warehouse / f"metastore_db.unfinished-{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}"
    metastore.rename(aside)
    return aside


#: the longest an interrupt (Ctrl-C) waits for Spark's jobs to be cancelled before it
#: gets out: a JVM too busy to answer sooner must not hold the command
CANCEL_WAIT_SECONDS = 10.0


def cancel_jobs_on_interrupt(spark: Any, log_level: str) -> None:
    """Replace pyspark's SIGINT handler (Ctrl-C) with one that cancels Spark's jobs from
    a thread of its own, then raises ``KeyboardInterrupt``, as pyspark's does; SIGTERM
    and SIGHUP get the same handler (:func:`handle_interrupt_signals`).

    pyspark's handler cancels from the interrupted thread. When that thread was waiting
    on the JVM (the landing listing, a metastore call, a query's collect), the cancel is
    a second call on the same Py4J connection, which fails ("reentrant call inside
    BufferedReader"): the job ran on in the JVM, and Py4J logged both failures'
    tracebacks before the interrupt got out. A thread of its own gets a connection of
    its own (tests/python/test_interrupted_session.py). Py4J's traceback of the
    interrupted call itself (``KeyboardInterrupt while sending command.``, on the root
    logger) is dropped too, unless ``log_level`` is verbose: the commands say
    ``interrupted`` in one line. Only the main thread can set a signal handler; from
    another, pyspark's handler is not set either, and nothing changes.
    """
    from py4j.protocol import Py4JError

    if threading.current_thread() is not threading.main_thread():
        return
    context = spark.sparkContext

    def cancel_jobs() -> None:
        try:
            context.cancelAllJobs()
        except (Py4JError, AttributeError):  # the JVM gone, a stopped context: no job is left to cancel
            pass

    handle_interrupt_signals(_interrupt_handler(cancel_jobs))
    _drop_py4j_interrupt_tracebacks_unless_verbose(log_level)


def interrupt_on_signals() -> None:
    """Ctrl-C, SIGTERM and SIGHUP raise ``KeyboardInterrupt`` from the start of a
    command, with the interrupted Py4J call closed and its tracebacks dropped (a session
    started meanwhile: its JVM's calls), until a session sets its own handler, which also
    cancels Spark's jobs (:func:`cancel_jobs_on_interrupt`; a command through the server
    has none). Python's default for SIGTERM and SIGHUP ends the process at once: a run
    through ``cdc serve`` left its run lock, and every later run was refused until it was
    released by hand; an interrupted run gives it back (tests/python/test_thrift_server.py)."""
    handle_interrupt_signals(_interrupt_handler())
    _drop_py4j_interrupt_tracebacks_unless_verbose(os.environ.get("CDC_SPARK_LOG_LEVEL", "ERROR"))


def _interrupt_handler(cancel_jobs: Any = None) -> Any:
    """A signal handler that raises ``KeyboardInterrupt``, first running ``cancel_jobs``
    (if any) in a thread of its own, for at most :data:`CANCEL_WAIT_SECONDS`."""

    def interrupt(signum: int, frame: Any) -> None:
        _note_interrupt(signum)
        if cancel_jobs is not None:
            canceller = threading.Thread(target=cancel_jobs, name="cdc-cancel-jobs", daemon=True)
            canceller.start()
            canceller.join(CANCEL_WAIT_SECONDS)
        # Py4J's clean-up of the call this interrupts asks the JVM to shut down its socket,
        # and the JVM shuts down every Py4J connection (it matches the gateway's port, which
        # they all share): another thread's waiting call was sent again, and a connection
        # opened just then failed ("Answer from Java side is empty"); with
        # PYSPARK_PIN_THREAD=false the clean-up itself fails (AttributeError). Closed here,
        # the connection is the only one to end, and Py4J's clean-up, finding no socket,
        # does nothing (tests/python/test_interrupted_session.py).
        connection = _interrupted_py4j_connection(frame)
        if connection is not None:
            connection.close()
            connection.socket = None  # the pooled client's close() keeps it; the clean-up tests it
        raise KeyboardInterrupt

    return interrupt


def _drop_py4j_interrupt_tracebacks_unless_verbose(log_level: str) -> None:
    import logging

    for name in _PY4J_LOGGERS:
        logger = logging.getLogger(name)
        logger.removeFilter(_drop_py4j_interrupt_tracebacks)  # set again (a session built): added once
        if log_level.upper() not in _VERBOSE_LOG_LEVELS:
            logger.addFilter(_drop_py4j_interrupt_tracebacks)


def _interrupted_py4j_connection(frame: Any) -> Any:
    """The Py4J connection the interrupted thread was using, or ``None``: the innermost
    frame's connection, as ``self`` (a connection's ``send_command``) or as ``connection``
    (the client's ``send_command``, either side of that call)."""
    from py4j.clientserver import ClientServerConnection
    from py4j.java_gateway import GatewayConnection

    while frame is not None:
        for candidate in (frame.f_locals.get("self"), frame.f_locals.get("connection")):
            if isinstance(candidate, (ClientServerConnection, GatewayConnection)):
                return candidate
        frame = frame.f_back
    return None


#: the stop of a scheduler or service manager (Airflow's timeout, Kubernetes, systemd,
#: ``timeout``), a closed terminal
STOP_SIGNALS = (signal.SIGTERM, signal.SIGHUP)
#: the signals that interrupt a command: Ctrl-C and the stop signals
INTERRUPT_SIGNALS = (signal.SIGINT, *STOP_SIGNALS)


def handle_interrupt_signals(handler: Any) -> None:
    """``handler`` for the interrupt signals, but a stop signal this process was started
    ignoring stays ignored (``nohup``'s SIGHUP: the command goes on, as asked). SIGINT
    is taken whatever it was, as pyspark takes it."""
    for sig in INTERRUPT_SIGNALS:
        if sig == signal.SIGINT or signal.getsignal(sig) is not signal.SIG_IGN:
            signal.signal(sig, handler)


def start_resource_tracker_deaf_to_sighup() -> None:
    """Start multiprocessing's resource tracker (dbt's locks start it, a process in the
    command's group) with SIGHUP blocked, which it keeps: Python's tracker ignores SIGINT
    and SIGTERM only, so a closed terminal's SIGHUP to the group ended it, and dbt's next
    lock started another, with a warning and tracebacks. A SIGHUP sent meanwhile waits
    for this process's unblocking; nothing is lost."""
    from multiprocessing import resource_tracker

    blocked = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGHUP})
    try:
        resource_tracker.ensure_running()
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, blocked)


def interrupt_outcome() -> tuple[str, int]:
    """How a command ended by an interrupt says so, and its exit status (128 + the
    signal's number, as a shell's): ``interrupted``, 130 for SIGINT (also when Python's
    own handler raised it), ``stopped by SIGTERM``, 143, ``stopped by SIGHUP``, 129."""
    signum = _INTERRUPT_SIGNAL[0] if _INTERRUPT_SIGNAL else signal.SIGINT
    how = "interrupted" if signum == signal.SIGINT else f"stopped by {signal.Signals(signum).name}"
    return how, 128 + signum


def _note_interrupt(signum: int) -> None:
    if not _INTERRUPT_SIGNAL:
        _INTERRUPT_SIGNAL.append(signum)


#: the first interrupt's signal, once one came (:func:`_interrupt_handler`)
_INTERRUPT_SIGNAL: list[int] = []
#: the loggers Py4J logs an interrupted call's tracebacks on: the root logger
#: (``logging.exception`` in ``java_gateway``) and its modules' own
_PY4J_LOGGERS = ("", "py4j.java_gateway", "py4j.clientserver")


def _drop_py4j_interrupt_tracebacks(record: Any) -> bool:
    """A log record to keep: any but Py4J's tracebacks of a JVM call an interrupt cut
    short, and of its clean-up after one (a connection whose JVM side was closed)."""
    error = record.exc_info[0] if record.exc_info else None
    interrupted = error is not None and (issubclass(error, KeyboardInterrupt) or bool(_INTERRUPT_SIGNAL))
    return not (interrupted and f"{os.sep}py4j{os.sep}" in record.pathname)


#: Hive's flag of its one-time function registration, and the value meaning done.
HIVE_REGISTRATION_FLAG = ("org.apache.hadoop.hive.ql.metadata.Hive", "didRegisterAllFuncs")
HIVE_REGISTRATION_DONE = 2


def settle_hive_function_registration(spark: Any) -> None:
    """Mark Hive's one-time registration of permanent functions done in this JVM.

    Why: the first ``Hive.get`` on a thread without a Hive object of its own registers
    Hive's functions (``Hive.registerAllFunctionsOnce``), which loads Hive's
    ``FunctionRegistry``; in the Hive jars pyspark ships that class cannot load (it needs
    LLAP classes that are not there: ``NoClassDefFoundError ... LlapSigner$Signable``).
    Hive resets its flag after an ``Exception`` but not after an ``Error``, so the flag
    stays "pending" for good, and every later registration waits for it forever. The
    Thrift server takes that path when it closes a session (``SessionState.close``), and
    ``cdc serve`` then hung on a client's disconnect, and every later one; plain SQL takes
    it too (``java_method('org.apache.hadoop.hive.ql.metadata.Hive', 'get')``).

    Spark resolves functions through its own catalog and never reads Hive's registry,
    so nothing is lost when the registration is skipped. The flag is private: it is set
    through a method handle (py4j would hand back the field's value as a plain int).
    """
    jvm = spark._jvm  # noqa: SLF001
    gateway = spark.sparkContext._gateway  # noqa: SLF001
    class_name, field_name = HIVE_REGISTRATION_FLAG
    field = jvm.java.lang.Class.forName(class_name).getDeclaredField(field_name)
    field.setAccessible(True)
    handles = jvm.java.lang.invoke.MethodHandles
    lookup = handles.publicLookup()
    int_type = jvm.java.lang.Integer.TYPE
    set_value = lookup.findVirtual(
        jvm.java.lang.Class.forName("java.util.concurrent.atomic.AtomicInteger"),
        "set",
        jvm.java.lang.invoke.MethodType.methodType(jvm.java.lang.Void.TYPE, int_type),
    )
    # set(flag, value) with the flag read by the getter: one call, in the JVM
    args = gateway.new_array(jvm.java.lang.Object, 1)
    args[0] = HIVE_REGISTRATION_DONE
    handles.foldArguments(set_value, lookup.unreflectGetter(field)).invokeWithArguments(args)


def package_zip(where: Path) -> Path:
    """A zip of the ``udfs`` package (sources only) for the executors of a cluster."""
    import zipfile

    package = Path(__file__).resolve().parent
    target = where / "udfs.zip"
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as zf:
        for path in sorted(package.rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts:
                zf.write(path, Path("udfs") / path.relative_to(package))
    return target
