"""The ``cdc`` command: ``run``, ``serve``, ``export``, ``sql``, ``quarantine``, ``docs``.

Exit status: 0 success, 1 the work failed (dbt, a query), 2 a configuration or usage
error, 3 the warehouse is in use by another process, 130 interrupted (SIGINT), 143
stopped by SIGTERM.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="cdc", description="CDC envelopes to exact state tables on Spark + dbt.")
    sub = p.add_subparsers(dest="command", required=True)

    def with_config(sp: argparse.ArgumentParser) -> argparse.ArgumentParser:
        sp.add_argument("--config", default="cdc.yml", help="configuration file (default: cdc.yml)")
        return sp

    run = with_config(sub.add_parser("run", help="process new landing files: decode, changelog, state, history, marts"))
    run.add_argument("--master", default=None, help="Spark master URL (default local[*])")
    run.add_argument("--print-tables", action="store_true", help="print every mart's rows after the run")
    run.add_argument(
        "--retry-quarantine",
        action="store_true",
        help="also decode again, with the current configuration, the quarantined records not yet resolved",
    )
    srv = with_config(sub.add_parser("serve", help="Spark session + Thrift server (JDBC/ODBC) on the warehouse"))
    srv.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    srv.add_argument("--port", type=int, default=10000, help="port to listen on (default 10000)")
    srv.add_argument("--master", default=None, help="Spark master URL (default local[*])")
    exp = with_config(sub.add_parser("export", help="print the current rows of TABLE as JSON lines"))
    exp.add_argument("table")
    exp.add_argument("--with-metadata", action="store_true", help="include the _cdc_* metadata columns")
    sql = with_config(sub.add_parser("sql", help="run Spark SQL statements and print rows as JSON lines"))
    sql.add_argument("query", nargs="+", help="one or more statements; with several, each result starts with '-- N'")
    qua = with_config(sub.add_parser("quarantine", help="list quarantined records as JSON lines"))
    qua.add_argument("--since", default=None, metavar="RUN", help="only records of this run id and later runs")
    qua.add_argument("--all", action="store_true", help="also the records a retry has resolved")
    docs = with_config(sub.add_parser("docs", help="dbt's documentation site, its catalog read from the warehouse"))
    docs.add_argument("--out", default=None, metavar="DIR", help="the site's folder (default: <warehouse>/dbt/docs)")
    return p


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    from pyspark.errors import PySparkRuntimeError

    from udfs.pipeline import RunInterruptedError
    from udfs.session import interrupt_on_signals, interrupt_outcome

    interrupt_on_signals()
    try:
        return _main(args)
    except RunInterruptedError as exc:
        print(f"cdc {args.command}: {exc}", file=sys.stderr)
        return interrupt_outcome()[1]
    except KeyboardInterrupt:
        # outside dbt (the session's start, the decode): a run commits nothing there
        how, status = interrupt_outcome()
        then = "; the next run takes up its work" if args.command == "run" else ""
        print(f"cdc {args.command}: {how}{then}", file=sys.stderr)
        return status
    except PySparkRuntimeError as exc:
        if exc.getCondition() != "JAVA_GATEWAY_EXITED":
            raise
        # the JVM printed its own reason (a master URL Spark does not know, a bad
        # option) before it exited; pyspark's traceback would only bury it
        print(f"cdc {args.command}: Spark's JVM exited as it started; its reason is above", file=sys.stderr)
        return 1


def _main(args: argparse.Namespace) -> int:
    from udfs.config import ConfigError, load_config

    try:
        config = load_config(Path(args.config))
    except ConfigError as exc:
        print(f"cdc: configuration error: {exc}", file=sys.stderr)
        return 2

    from udfs.warehouse_lock import WarehouseBusyError, WarehouseUnusableError, hold

    if args.command == "serve":
        from udfs.serve import ServeRefusedError, serve

        try:
            return serve(config, host=args.host, port=args.port, master=args.master)
        except ServeRefusedError as exc:
            print(f"cdc serve: {exc}", file=sys.stderr)
            return 2
        except WarehouseBusyError as exc:
            print(f"cdc serve: {exc}; stop it first", file=sys.stderr)
            return 3
        except WarehouseUnusableError as exc:
            print(f"cdc serve: {exc}", file=sys.stderr)
            return 2

    try:
        with hold(config.warehouse, args.command):
            return _embedded(args, config)
    except WarehouseBusyError as busy:
        if args.command == "run" and busy.holder.get("role") == "serve":
            return _run_through_server(config, busy.holder, args.retry_quarantine)
        if args.command in ("sql", "export", "quarantine") and busy.holder.get("role") == "serve":
            return _query_through_server(args, config, busy.holder)
        if args.command == "docs" and busy.holder.get("role") == "serve":
            return _docs(args, config, busy.holder)
        hint = ""
        if busy.holder.get("role") == "serve":
            hint = f"; query it there: beeline -u jdbc:hive2://{busy.holder.get('host')}:{busy.holder.get('port')}"
        print(f"cdc {args.command}: {busy}{hint}", file=sys.stderr)
        return 3
    except WarehouseUnusableError as exc:
        print(f"cdc {args.command}: {exc}", file=sys.stderr)
        return 2


def _through_server(command: str, holder: dict[str, Any]) -> tuple[str, int]:
    """The address of the ``cdc serve`` that ``holder`` (the warehouse lock's record)
    names, said on stderr: the command runs through it."""
    from udfs.serve import server_address

    host, port = server_address(holder)
    print(
        f"cdc {command}: the warehouse is served by `cdc serve` on {host}:{port}; running through it",
        file=sys.stderr,
    )
    return host, port


def _dbt_work(command: str, work: Callable[[], str]) -> int:
    """Print the line ``work`` (a command's dbt part) returns; a dbt failure is one line
    on stderr and exit 1; an interrupt is left to :func:`main`'s line and status."""
    from udfs.pipeline import PipelineError, RunInterruptedError

    try:
        line = work()
    except RunInterruptedError:
        raise
    except PipelineError as exc:
        print(f"cdc {command} failed: {exc}", file=sys.stderr)
        return 1
    print(line)
    return 0


def _run_through_server(config: Any, holder: dict[str, Any], retry_quarantine: bool) -> int:
    from udfs.pipeline import run_pipeline_thrift

    host, port = _through_server("run", holder)

    def run() -> str:
        summary = run_pipeline_thrift(config, host, port, retry_quarantine=retry_quarantine)
        return f"cdc run {summary.run_id}: {summary}"

    return _dbt_work("run", run)


def _query_through_server(args: argparse.Namespace, config: Any, holder: dict[str, Any]) -> int:
    """``cdc sql`` / ``cdc export`` / ``cdc quarantine`` in the session of the running
    ``cdc serve``: the same lines as the embedded path (see ``udfs.export``)."""
    from udfs.export import (
        ThriftQueryError,
        missing_relation_message,
        thrift_error_message,
        thrift_export_lines,
        thrift_rows_as_json,
    )
    from udfs.serve import thrift_connect

    host, port = _through_server(args.command, holder)
    try:
        conn = thrift_connect(host, port, wait_seconds=120)
    except Exception as exc:  # noqa: BLE001 - refused, timed out, authentication: one clear line
        print(
            f"cdc {args.command}: cannot reach the Thrift server on {host}:{port}: {thrift_error_message(exc)}",
            file=sys.stderr,
        )
        return 1

    def rows(sql: str) -> list[tuple[Any, ...]]:
        try:
            cursor.execute(sql)
            return [tuple(r) for r in cursor.fetchall()]
        except Exception as exc:  # noqa: BLE001 - PyHive's and Thrift's errors: one clear line
            raise ThriftQueryError(thrift_error_message(exc)) from exc

    try:
        cursor = conn.cursor()
        if args.command == "export":
            for line in thrift_export_lines(cursor, config, args.table, args.with_metadata):
                print(line)
        elif args.command == "quarantine":
            if args.since and (unknown := _unknown_run_message(config.schema, args.since, rows)):
                print(f"cdc quarantine: {unknown}", file=sys.stderr)
                return 2
            query = _quarantine_query(config.schema, args.since, include_resolved=args.all)
            for line in thrift_rows_as_json(cursor, query):
                print(line)
        else:
            for n, query in enumerate(args.query, start=1):
                if len(args.query) > 1:
                    print(f"-- {n}")
                for line in thrift_rows_as_json(cursor, query):
                    print(line)
    except ThriftQueryError as exc:
        message = str(exc)
        if args.command in ("export", "quarantine") and "[TABLE_OR_VIEW_NOT_FOUND]" in message:
            message = missing_relation_message(args.command, config, getattr(args, "table", None), rows) or message
        print(f"cdc {args.command}: {message}", file=sys.stderr)
        return 1
    finally:
        try:
            conn.close()
        except Exception:  # noqa: BLE001, S110 - the server may be gone already
            pass
    return 0


def _docs(args: argparse.Namespace, config: Any, holder: dict[str, Any] | None = None) -> int:
    """``cdc docs``: in this process's session, or through the ``cdc serve`` that
    ``holder`` (the warehouse lock's record) names."""
    from udfs.docs import default_docs_dir, generate_docs

    out = Path(args.out).expanduser().resolve() if args.out else default_docs_dir(config)
    server = _through_server("docs", holder) if holder is not None else None

    def docs() -> str:
        summary = generate_docs(config, out, server)
        return f"cdc docs: {summary}"

    return _dbt_work("docs", docs)


def _embedded(args: argparse.Namespace, config: Any) -> int:
    from udfs.session import build_session

    if args.command == "run":
        from udfs.pipeline import run_pipeline
        from udfs.run_size import run_java_options

        java_options, why = run_java_options(config)
        print(f"cdc run: {why}", file=sys.stderr)
        spark = build_session(config, master=args.master, run_java_options=java_options)

        def run() -> str:
            summary = run_pipeline(config, spark=spark, retry_quarantine=args.retry_quarantine)
            return f"cdc run {summary.run_id}: {summary}"

        status = _dbt_work("run", run)
        if status == 0 and args.print_tables:
            from udfs.export import export_lines, mart_view_name

            for table in sorted(config.tables):
                print(f"-- {config.marts_schema}.{mart_view_name(table)}")
                for line in export_lines(spark, config, table):
                    print(line)
        return status

    from udfs.run_size import query_java_options

    java_options, why = query_java_options(config)
    print(f"cdc {args.command}: {why}", file=sys.stderr)
    spark = build_session(config, run_java_options=java_options)
    if args.command == "docs":
        return _docs(args, config)
    from udfs.export import export_lines, rows_as_json

    try:
        if args.command == "export":
            for line in export_lines(spark, config, args.table, args.with_metadata):
                print(line)
        elif args.command == "sql":
            for n, query in enumerate(args.query, start=1):
                if len(args.query) > 1:
                    print(f"-- {n}")
                for line in rows_as_json(spark, spark.sql(query)):
                    print(line)
        elif args.command == "quarantine":
            if args.since and (
                unknown := _unknown_run_message(
                    config.schema, args.since, lambda sql: [tuple(r) for r in spark.sql(sql).collect()]
                )
            ):
                print(f"cdc quarantine: {unknown}", file=sys.stderr)
                return 2
            query = _quarantine_query(config.schema, args.since, include_resolved=args.all)
            for line in rows_as_json(spark, spark.sql(query)):
                print(line)
    except Exception as exc:  # noqa: BLE001 - AnalysisException etc.: one clear line
        message = str(exc).splitlines()[0]
        if args.command in ("export", "quarantine") and "[TABLE_OR_VIEW_NOT_FOUND]" in message:
            from udfs.export import missing_relation_message

            def rows(sql: str) -> list[tuple[Any, ...]]:
                return [tuple(r) for r in spark.sql(sql).collect()]

            message = missing_relation_message(args.command, config, getattr(args, "table", None), rows) or message
        print(f"cdc {args.command}: {message}", file=sys.stderr)
        return 1
    return 0


def _quarantine_query(schema: str, since: str | None, include_resolved: bool = False) -> str:
    """Quarantined records (unresolved only, unless ``include_resolved``), oldest first.

    Each row has ``resolved_run_id``: the run whose ``--retry-quarantine`` decoded it,
    or null.
    """
    q = f"""select quarantine.*, resolved.resolved_run_id
        from `{schema}`.quarantine
        left join (
            select source_file, record_index, min_by(run_id, retried_at) as resolved_run_id
            from `{schema}`.quarantine_retries where status != 'quarantined'
            group by source_file, record_index
        ) as resolved
            on quarantine.source_file = resolved.source_file and quarantine.record_index = resolved.record_index"""
    conditions = [] if include_resolved else ["resolved.resolved_run_id is null"]
    if since:
        conditions.append(f"quarantined_at >= ({_run_started_query(schema, since)})")
    if conditions:
        q += " where " + " and ".join(conditions)
    return q + " order by quarantined_at, source_file, record_index"


def _run_started_query(schema: str, run_id: str) -> str:
    """SQL of the time run ``run_id`` started (null for a run this warehouse never saw).

    Every table a run writes stamps its rows with that time (``cdc_run_started_at``);
    ``merge_log`` has a row of every run that ended, also one that read no file."""
    literal = "'" + run_id.replace("\\", "\\\\").replace("'", "\\'") + "'"
    return (
        "select min(started) from ("
        f"select quarantined_at as started from `{schema}`.quarantine where run_id = {literal}"
        f" union all select processed_at from `{schema}`.audit_files where run_id = {literal}"
        f" union all select merged_through from `{schema}`.merge_log where run_id = {literal})"
    )


def _unknown_run_message(schema: str, run_id: str, rows: Any) -> str | None:
    """``--since RUN`` of a run id this warehouse has no trace of (a typo listed nothing
    before); ``rows(sql)`` returns a statement's rows."""
    if rows(_run_started_query(schema, run_id))[0][0] is not None:
        return None
    return f"no run {run_id} in this warehouse; its runs: cdc sql 'select run_id from {schema}.merge_log'"


if __name__ == "__main__":
    raise SystemExit(main())
