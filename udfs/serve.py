"""``cdc serve``: the warehouse's Spark session and the Spark Thrift server in one process.

The Thrift server (HiveThriftServer2) runs inside the session that registered the
package's UDFs, with ``spark.sql.hive.thriftServer.singleSession``, so every client
(``dbt --target thrift``, beeline, PyHive, any Hive JDBC/ODBC driver) sees the same
tables and the same functions. The run's settings are published in the table
``<schema>.cdc_settings``, so a plain ``dbt run --target thrift`` finds them.

Safe defaults: it listens on 127.0.0.1; binding any other address is refused unless
the Thrift server's own authentication is configured (``spark:`` settings of
``cdc.yml``, see the README).
"""

from __future__ import annotations

import ipaddress
import socket
import sys
import threading
import time
from typing import Any

from udfs.config import Config
from udfs.warehouse_lock import hold

#: HiveServer2 authentication modes that authenticate nobody.
OPEN_AUTH_MODES = ("NONE", "NOSASL")


class ServeRefusedError(RuntimeError):
    """A configuration ``cdc serve`` will not start with; the message says how to fix it."""


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_bind(config: Config, host: str) -> None:
    """Refuse a non-loopback address while the server would authenticate nobody."""
    auth = config.spark_conf.get("hive.server2.authentication", "NONE").upper()
    if not is_loopback(host) and auth in OPEN_AUTH_MODES:
        raise ServeRefusedError(
            f"refusing to listen on {host} without authentication (hive.server2.authentication is {auth}): "
            "anyone who reaches the port could read and change the warehouse. Configure LDAP in cdc.yml, e.g.\n"
            "  spark:\n"
            "    hive.server2.authentication: LDAP\n"
            "    hive.server2.authentication.ldap.url: ldaps://ldap.example.com\n"
            "    hive.server2.authentication.ldap.baseDN: ou=people,dc=example,dc=com\n"
            "or listen on 127.0.0.1 (the default) and reach it through an SSH tunnel."
        )


def check_port(host: str, port: int) -> None:
    """Refuse a port out of range, or one another process listens on, before the session
    starts (a start takes a while, and the Thrift server's own failure is a Java stack
    trace); a port that only holds closing connections is free, as the server takes it."""
    if not 1 <= port <= 65535:
        raise ServeRefusedError(f"--port {port} is not a port (1 to 65535)")
    try:
        family, kind, proto, _, address = socket.getaddrinfo(
            host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )[0]
    except socket.gaierror as exc:
        raise ServeRefusedError(f"cannot listen on {host}: {exc.strerror}") from None
    with socket.socket(family, kind, proto) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as Java's server sockets on Linux
        try:
            probe.bind(address)
        except OSError as exc:
            raise ServeRefusedError(_port_taken(host, port, exc.strerror)) from None


def _port_taken(host: str, port: int, reason: str) -> str:
    return f"cannot listen on {host}:{port}: {reason}; another server listens there? choose another --port"


def _java_cause(exc: BaseException, class_name: str) -> str | None:
    """The message of the first exception of class ``class_name`` in the Java cause
    chain of a Py4J error, if there is one."""
    cause = getattr(exc, "java_exception", None)
    while cause is not None:
        if cause.getClass().getName() == class_name:
            return str(cause.getMessage() or class_name)
        cause = cause.getCause()
    return None


def publish_settings(spark: Any, config: Config) -> None:
    """Store the run's dbt settings in ``<schema>.cdc_settings`` for plain ``dbt`` runs."""
    import json

    from udfs.pipeline import dbt_vars

    spark.sql(f"create database if not exists `{config.schema}`")
    settings = json.dumps(dbt_vars(config)["cdc"], sort_keys=True)
    # written to a path of its own and registered as an external table: a run killed
    # half way through this write leaves nothing that the next run cannot overwrite
    location = config.warehouse / "settings" / config.schema
    spark.createDataFrame([(settings,)], "settings string").write.mode("overwrite").parquet(str(location))
    table = f"`{config.schema}`.cdc_settings"
    literal = "'" + str(location).replace("\\", "\\\\").replace("'", "\\'") + "'"
    spark.sql(f"create table if not exists {table} (settings string) using parquet location {literal}")
    spark.catalog.refreshTable(table)


def _wait_for_port(host: str, port: int, seconds: float = 120.0) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            with socket.create_connection((host, port), timeout=1.0):
                return
        except OSError:
            time.sleep(0.3)
    raise RuntimeError(f"the Thrift server did not open {host}:{port} within {seconds:.0f} s")


def serve(config: Config, host: str = "127.0.0.1", port: int = 10000, master: str | None = None) -> int:
    """Start the session and the Thrift server; block until SIGINT, SIGTERM or SIGHUP."""
    from udfs.pipeline import release_run_lock, report_orphan_table_dirs_removed
    from udfs.session import build_session, handle_interrupt_signals

    check_bind(config, host)
    with hold(config.warehouse, "serve", host=host, port=port):
        check_port(host, port)  # after the lock: a second `cdc serve` of this warehouse is named as its holder
        spark = build_session(
            config,
            master=master,
            extra_conf={
                "spark.sql.hive.thriftServer.singleSession": "true",
                "spark.hadoop.hive.server2.thrift.bind.host": host,
                "spark.hadoop.hive.server2.thrift.port": str(port),
            },
        )
        # as `cdc run` does before dbt: runs through this server (plain dbt, `cdc run`)
        # would find a table's folder left by a killed run in the way of its creation
        report_orphan_table_dirs_removed(spark, config, "cdc serve", sys.stdout)
        # no run goes through a server not yet started: a run lock found now is a killed run's
        release_run_lock(lambda sql: [tuple(r) for r in spark.sql(sql).collect()], config, "cdc serve", sys.stdout)
        publish_settings(spark, config)
        stop = threading.Event()
        handle_interrupt_signals(lambda *_: stop.set())
        thrift = spark._jvm.org.apache.spark.sql.hive.thriftserver.HiveThriftServer2  # noqa: SLF001
        try:
            server = thrift.startWithSparkSession(spark._jsparkSession, False)  # noqa: SLF001
        except Exception as exc:
            spark.stop()
            # taken since check_port looked (the session's start takes a while)
            if bind_error := _java_cause(exc, "java.net.BindException"):
                raise ServeRefusedError(_port_taken(host, port, bind_error)) from None
            raise
        try:
            _wait_for_port("127.0.0.1" if host in ("0.0.0.0", "::") else host, port)
            url = f"jdbc:hive2://{host}:{port}/{config.schema}"
            print(f"cdc serve: Spark Thrift server on {host}:{port} (warehouse {config.warehouse})", flush=True)
            print(f"  JDBC URL: {url}", flush=True)
            print(f'  beeline:  beeline -u {url} -e "show tables in {config.marts_schema}"', flush=True)
            print(f"  dbt:      CDC_THRIFT_PORT={port} dbt run --target thrift --profiles-dir profiles", flush=True)
            print("  stop with Ctrl-C or SIGTERM", flush=True)
            stop.wait()
        finally:
            print("cdc serve: stopping", flush=True)
            server.stop()
            spark.stop()
    return 0


def server_address(holder: dict[str, Any]) -> tuple[str, int]:
    """Where to reach the ``cdc serve`` of a lock holder record (a wildcard bind: loopback)."""
    host, port = str(holder.get("host")), int(holder.get("port", 10000))
    if host in ("0.0.0.0", "::"):
        host = "127.0.0.1"
    return host, port


def thrift_connect(host: str, port: int, wait_seconds: float = 0.0) -> Any:
    """A PyHive connection to a running Thrift server (``CDC_THRIFT_USER``,
    ``CDC_THRIFT_PASSWORD``, ``CDC_THRIFT_AUTH``); with ``wait_seconds``, first wait that
    long for the port to open (a ``cdc serve`` that holds the warehouse but is starting)."""
    import os

    from pyhive import hive

    if wait_seconds:
        _wait_for_port(host, port, wait_seconds)
    return hive.connect(
        host=host,
        port=port,
        username=os.environ.get("CDC_THRIFT_USER", "cdc"),
        password=os.environ.get("CDC_THRIFT_PASSWORD") or None,
        auth=os.environ.get("CDC_THRIFT_AUTH", "NONE"),
    )


def cursor_fetch(cursor: Any, sql: str) -> list[tuple[Any, ...]]:
    """Rows of one statement through a DB-API cursor (PyHive's); none for a statement
    without a result, such as ``create``."""
    cursor.execute(sql)
    return list(cursor.fetchall()) if cursor.description else []


def thrift_fetch(host: str, port: int, sql: str) -> list[tuple[Any, ...]]:
    """Rows of one query through a running Thrift server (PyHive), in a session of its own."""
    conn = thrift_connect(host, port)
    try:
        return cursor_fetch(conn.cursor(), sql)
    finally:
        conn.close()
