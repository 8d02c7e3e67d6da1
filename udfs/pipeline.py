"""One pipeline run: ``dbt build`` in this process on the Spark session (dbt-spark
``method: session``), then a summary read from the audit tables."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from udfs.config import Config, load_config
from udfs.identifiers import quote_identifier

PROJECT_DIR = Path(__file__).resolve().parents[1]
#: the dbt commands that run nodes and take ``--threads`` (``run-operation`` does not)
THREADED_COMMANDS = frozenset({"build", "run", "test", "seed", "compile", "snapshot"})

# The run lock a `dbt run` or `dbt build` holds (macros/utils/cdc_run_lock_name.sql).
RUN_LOCK_TABLE = "cdc_run_lock"


class PipelineError(RuntimeError):
    """dbt reported a failure; the message says which node and why."""


class RunInterruptedError(PipelineError):
    """dbt stopped at an interrupt (SIGINT: Ctrl-C; SIGTERM), which the session's handler
    turns into a ``KeyboardInterrupt`` after it cancels Spark's jobs, and dbt into its result."""


@dataclass
class RunSummary:
    files: int
    records: int
    changes: int
    quarantined: int
    skipped: int
    tables: list[str]
    run_id: str
    #: processed landing files found changed (not read again; see audit_changed_files)
    changed_files: int = 0
    #: quarantined records decoded again (``--retry-quarantine``) and how many now decode
    retried: int = 0
    resolved: int = 0
    #: new landing files left for a later run: modified within ``min_file_age_seconds``
    #: of the run's start (see audit_unsettled_files)
    unsettled_files: int = 0
    #: values of the rows this run wrote that their mart column's type cannot hold: NULL
    #: in the mart, text in the state (see audit_mart_cast_failures)
    cast_failures: int = 0

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)

    def __str__(self) -> str:
        tables = ", ".join(self.tables) or "none"
        text = (
            f"files {self.files}, records {self.records}, changes {self.changes}, "
            f"quarantined {self.quarantined}, skipped {self.skipped}; tables touched: {tables}"
        )
        if self.retried:
            text += f"; retried {self.retried} quarantined record(s), {self.resolved} resolved"
        if self.unsettled_files:
            text += (
                f"; {self.unsettled_files} new landing file(s) modified within min_file_age_seconds left for a "
                "later run (see audit_unsettled_files)"
            )
        if self.changed_files:
            text += f"; WARNING: {self.changed_files} processed landing file(s) changed (see audit_changed_files)"
        if self.cast_failures:
            text += (
                f"; WARNING: {self.cast_failures} value(s) do not fit their mart column's type and read as NULL "
                "in the mart (see audit_mart_cast_failures)"
            )
        return text


def dbt_vars(config: Config, golden: bool = False, retry_quarantine: bool = False) -> dict[str, Any]:
    """The ``cdc`` dbt variable rendered from the configuration."""
    return {
        "cdc": {
            "schema": config.schema,
            "marts_schema": config.marts_schema,
            "buckets": config.buckets,
            "decode_task_bytes": config.decode_task_bytes,
            "long_history_versions": config.long_history_versions,
            "compact_after_segments": config.compact_after_segments,
            "compact_after_fraction": config.compact_after_fraction,
            "keep_previous_bases": config.keep_previous_bases,
            "compact_changelog_after_files": config.compact_changelog_after_files,
            "min_file_age_seconds": config.min_file_age_seconds,
            "golden": golden,
            "retry_quarantine": retry_quarantine,
            "test_scope": config.test_scope,
            "feeds": [
                {
                    "name": f.name,
                    "format": f.format,
                    "framing": f.framing,
                    "path": str(f.path),
                    "decoder_options": json.dumps(config.decoder_options(f), sort_keys=True),
                    "min_file_age_seconds": f.min_file_age_seconds,
                }
                for f in config.feeds
            ],
            "tables": {
                t.table_id: {"name": t.name, "key": t.key, "columns": [[c, ty] for c, ty in t.columns.items()]}
                for t in config.tables.values()
            },
        }
    }


def dbt_threads(config: Config, target: str) -> int:
    """dbt's ``--threads`` for a run: ``dbt_threads`` embedded; one through a Thrift
    server, whose single shared session (``spark.sql.hive.thriftServer.singleSession``)
    holds every connection's temporary views: closing one dbt thread's connection drops
    views that another thread's model is still using (seen as TABLE_OR_VIEW_NOT_FOUND)."""
    return 1 if target == "thrift" else config.dbt_threads


def run_dbt(
    config: Config,
    command: str = "build",
    extra: list[str] | None = None,
    golden: bool = False,
    target: str = "session",
    retry_quarantine: bool = False,
    callbacks: list[Any] | None = None,
    target_path: Path | None = None,
    server: tuple[str, int] | None = None,
) -> Any:
    """Invoke dbt in this process; raise :class:`PipelineError` on failure. ``command``
    is dbt's, of one word or two (``docs generate``); ``target_path`` is dbt's (default:
    ``<warehouse>/dbt/target``, where the runs' artifacts go); ``server`` (host, port):
    through that Thrift server (dbt's ``thrift`` target). The environment dbt's profiles
    read (``CDC_SCHEMA``; ``CDC_THRIFT_HOST`` and ``CDC_THRIFT_PORT`` for a server) is
    set for the call only: the caller's process gets its environment back. ``callbacks`` receive each of dbt's
    events (``dbtRunner``'s callbacks), whatever their log level."""
    from dbt.cli.main import dbtRunner

    from udfs.session import start_resource_tracker_deaf_to_sighup

    start_resource_tracker_deaf_to_sighup()
    env = {
        "CDC_SCHEMA": config.schema,
        "DBT_SEND_ANONYMOUS_USAGE_STATS": os.environ.get("DBT_SEND_ANONYMOUS_USAGE_STATS", "false"),
    }
    if server is not None:
        target = "thrift"
        env.update(CDC_THRIFT_HOST=server[0], CDC_THRIFT_PORT=str(server[1]))
    dbt_dir = config.warehouse / "dbt"
    args = [
        *command.split(),
        "--project-dir",
        str(PROJECT_DIR),
        "--profiles-dir",
        str(PROJECT_DIR / "profiles"),
        "--target",
        target,
        "--target-path",
        str(target_path or dbt_dir / "target"),
        "--log-path",
        str(dbt_dir / "logs"),
        "--vars",
        json.dumps(dbt_vars(config, golden=golden, retry_quarantine=retry_quarantine)),
        "--no-use-colors",
        "--quiet" if os.environ.get("CDC_DBT_QUIET", "1") == "1" else "--no-quiet",
        *(["--threads", str(dbt_threads(config, target))] if command in THREADED_COMMANDS else []),
        *(extra or []),
    ]
    errors: list[str] = []  # dbt's error-level log lines: an operation's error is only logged

    def keep_errors(event: Any) -> None:
        if event.info.level == "error":
            errors.append(event.info.msg)

    with _environ(env):
        result = dbtRunner(callbacks=[keep_errors, *_fault_injection_callbacks(), *(callbacks or [])]).invoke(args)
    if not result.success:
        if isinstance(result.exception, KeyboardInterrupt):
            from udfs.session import interrupt_outcome

            # each model commits alone, and the next run takes up what this one left
            how, _ = interrupt_outcome()
            then = "; the next run takes up its work" if command in ("build", "run") else ""
            raise RunInterruptedError(f"{how} while dbt {command} ran{then}")
        raise PipelineError(_failure_message(result, command, errors))
    return result


@contextmanager
def _environ(values: dict[str, str]) -> Iterator[None]:
    """``values`` in ``os.environ`` inside the block; each name as it was after it."""
    before = {name: os.environ.get(name) for name in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for name, value in before.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def _fault_injection_callbacks() -> list[Any]:
    """Crash tests set ``CDC_KILL_AFTER_NODE`` (e.g. ``model.cdc.changelog``): the process
    then kills itself with SIGKILL right after that dbt node finishes, which is a crash
    between two models at a chosen place; with ``CDC_KILL_SIGNAL=INT``, ``TERM`` or
    ``HUP``, it interrupts itself there instead (SIGINT, a user's Ctrl-C; SIGTERM, a
    scheduler's stop; SIGHUP, a closed terminal). With ``CDC_KILL_GROUP=1`` the signal
    goes to the process's whole group, the JVM with it, as a scheduler's stop does (the
    process must lead its group: the test's own group is not signalled)."""
    import signal

    node = os.environ.get("CDC_KILL_AFTER_NODE")
    if not node:
        return []
    kill = {"INT": signal.SIGINT, "TERM": signal.SIGTERM, "HUP": signal.SIGHUP}.get(
        os.environ.get("CDC_KILL_SIGNAL", ""), signal.SIGKILL
    )
    group = os.environ.get("CDC_KILL_GROUP") == "1"
    if group and os.getpgid(0) != os.getpid():
        raise RuntimeError("CDC_KILL_GROUP=1: this process must lead its process group (start_new_session)")

    def kill_after(event: Any) -> None:
        if event.info.name == "NodeFinished" and event.data.node_info.unique_id == node:
            if group:
                os.killpg(0, kill)
            else:
                os.kill(os.getpid(), kill)

    return [kill_after]


def _failure_message(result: Any, command: str, errors: list[str]) -> str:
    """The failed nodes, each with its message; an operation (``run-operation``), whose
    result has no node and no message, with the error dbt logged (``errors``)."""
    if result.exception is not None:
        return f"dbt failed: {result.exception}"
    lines = []
    for r in getattr(result.result, "results", None) or []:
        status = str(getattr(r, "status", ""))
        if status.lower() in ("error", "fail"):
            unique_id = r.node.unique_id if hasattr(r, "node") else getattr(r, "unique_id", "")
            message = (r.message or "").strip() or "\n".join(errors).strip()
            lines.append(f"{unique_id}: {status}: {message[:2000]}")
    return f"dbt {command} failed:\n" + ("\n".join(lines) or "see the dbt log")


def run_pipeline(
    config_path: str | Path | Config,
    spark: Any = None,
    golden: bool = False,
    master: str | None = None,
    retry_quarantine: bool = False,
) -> RunSummary:
    """Run the pipeline once over the configuration's landing folders (embedded Spark).

    With ``retry_quarantine`` the run also decodes again, with the current
    configuration, every quarantined record not yet resolved (see the README,
    "Re-processing quarantined records").
    """
    from udfs.serve import publish_settings
    from udfs.session import build_session

    config = config_path if isinstance(config_path, Config) else load_config(config_path)
    if spark is None:
        spark = build_session(config, master=master)
    else:
        from udfs.spark_udfs import register

        register(spark)
    report_orphan_table_dirs_removed(spark, config, "cdc run", sys.stderr)

    def fetch(sql: str) -> list[tuple[Any, ...]]:
        return [tuple(r) for r in spark.sql(sql).collect()]

    # this process holds the warehouse: a run lock found now is a killed run's
    release_run_lock(fetch, config, "cdc run", sys.stderr)
    publish_settings(spark, config)
    result = _run_dbt_releasing_lock(fetch, config, retry_quarantine=retry_quarantine, golden=golden)
    run_id = _invocation_id(result)
    return summarize(fetch, config, run_id)


def release_run_lock(
    fetch: Any, config: Config, command: str = "", out: TextIO | None = None, invocation_id: str | None = None
) -> dict[str, str] | None:
    """Drop the run lock (``macros/sql/cdc_acquire_run_lock.sql``) when a run holds it;
    with ``invocation_id``, only when that invocation does. ``fetch(sql)`` runs SQL and
    returns rows. With ``out``, the release is named there (a killed run's lock).

    Returns: the released lock's properties, or None.
    """
    holder = run_lock_holder(fetch, config.schema)
    if holder is None or (invocation_id is not None and holder.get("cdc.invocation_id") != invocation_id):
        return None
    # dropped since it was read (its holder ending, or another client's release): none released
    if _fetch_unless_lock_gone(fetch, f"drop table {quote_identifier(config.schema)}.{RUN_LOCK_TABLE}") is None:
        return None
    if out is not None:
        print(
            f"{command}: released the run lock of dbt {holder.get('cdc.command', '?')} "
            f"(invocation {holder.get('cdc.invocation_id', '?')}, started {holder.get('cdc.started_at', '?')} UTC), "
            "a run that did not finish",
            file=out,
            flush=True,
        )
    return holder


def run_lock_holder(fetch: Any, schema: str) -> dict[str, str] | None:
    """The properties of the run lock in ``schema`` (``cdc.invocation_id``,
    ``cdc.command``, ``cdc.started_at``, ``cdc.target``: who holds it), or None when no
    run holds it. ``fetch(sql)`` runs SQL and returns rows."""
    in_schema = [str(r[0]).lower() for r in fetch("show schemas")]
    if schema.lower() not in in_schema:
        return None
    # (namespace, tableName, isTemporary): a temporary view of that name, which `show
    # tables` lists in every schema (an analyst's, in the server's one session), is no lock
    found = fetch(f"show tables in {quote_identifier(schema)} like '{RUN_LOCK_TABLE}'")
    if not any(not row[2] for row in found):
        return None
    # the run that held it gave it back between the two statements: none holds it
    properties = _fetch_unless_lock_gone(fetch, f"show tblproperties {quote_identifier(schema)}.{RUN_LOCK_TABLE}")
    if properties is None:
        return None
    return {str(k): str(v) for k, v in properties}


def _fetch_unless_lock_gone(fetch: Any, sql: str) -> Any:
    """``fetch(sql)`` of a statement on the run lock, or None when it failed because the
    lock is not there (given back since it was listed): Spark's error class, which a
    Thrift client gets in the error's text. Any other error is raised."""
    try:
        return fetch(sql)
    except Exception as error:
        if "[TABLE_OR_VIEW_NOT_FOUND]" not in str(error):
            raise
        return None


def _run_dbt_releasing_lock(fetch: Any, config: Config, **kwargs: Any) -> Any:
    """``run_dbt(config, "build", ...)``; when it fails, the run lock it took is released:
    dbt skips the ``on-run-end`` that gives it back when a hook fails."""
    try:
        return run_dbt(config, "build", **kwargs)
    except PipelineError:
        # dbt's error is the one to report, not a failed release (a server that went away)
        with suppress(Exception):
            release_run_lock(fetch, config, invocation_id=_invocation_id(None))
        raise


def remove_orphan_table_dirs(spark: Any, config: Config) -> list[Path]:
    """Remove table directories of the warehouse that no metastore table owns.

    A run killed while it created a table (dbt's ``create table ... as select``) leaves
    the directory behind without a metastore entry, and Spark then refuses to create
    that table again (``LOCATION_ALREADY_EXISTS``). Such a directory holds nothing that
    was committed: every table the pipeline keeps is registered before a run finishes.
    A run killed while it created the schema itself can leave the schema's directory
    without the schema in the metastore: then no table under it is registered, and
    every table directory there is an orphan.
    """
    import shutil

    removed = []
    root = Path(spark.conf.get("spark.sql.warehouse.dir").removeprefix("file:"))
    for schema in (config.schema, config.marts_schema):
        db_dir = root / f"{schema.lower()}.db"
        if not db_dir.is_dir():
            continue
        tables = set()
        if spark.catalog.databaseExists(schema):
            tables = {
                r.tableName.lower() for r in spark.sql(f"show tables in `{schema}`").collect() if not r.isTemporary
            }
        for child in db_dir.iterdir():
            if child.is_dir() and not child.name.startswith((".", "_")) and child.name.lower() not in tables:
                shutil.rmtree(child)
                removed.append(child)
    return removed


def report_orphan_table_dirs_removed(spark: Any, config: Config, command: str, out: TextIO) -> None:
    """:func:`remove_orphan_table_dirs`, naming each folder removed on ``out``: no folder
    of the user's warehouse is deleted without a word."""
    for folder in remove_orphan_table_dirs(spark, config):
        print(f"{command}: removed {folder}, a table folder no table owns (left by a killed run)", file=out, flush=True)


def run_pipeline_thrift(config: Config, host: str, port: int, retry_quarantine: bool = False) -> RunSummary:
    """Run the pipeline through a running ``cdc serve`` (dbt's ``thrift`` target)."""
    from udfs.serve import thrift_fetch

    def fetch(sql: str) -> list[tuple[Any, ...]]:
        return thrift_fetch(host, port, sql)

    result = _run_dbt_releasing_lock(fetch, config, server=(host, port), retry_quarantine=retry_quarantine)
    run_id = _invocation_id(result)
    return summarize(fetch, config, run_id)


def _invocation_id(result: Any) -> str:
    # dbt keeps the id of the invocation that just ran; models stamp it as run_id.
    from dbt_common.invocation import get_invocation_id

    return get_invocation_id()


def summarize(fetch: Any, config: Config, run_id: str) -> RunSummary:
    """The run's totals and its warnings' counts from the audit tables; ``fetch(sql)``
    returns rows as tuples."""
    s = config.schema
    f, r, c, q, k = fetch(
        f"select count(*), coalesce(sum(records_read), 0), coalesce(sum(changes_emitted), 0), "
        f"coalesce(sum(quarantined), 0), coalesce(sum(skipped), 0) from `{s}`.audit_files where run_id = '{run_id}'"
    )[0]
    tables = fetch(f"select tables_touched from `{s}`.merge_log where run_id = '{run_id}'")
    touched = tables[0][0] if tables and tables[0][0] else []
    if isinstance(touched, str):  # PyHive returns arrays as JSON text
        import json as _json

        touched = _json.loads(touched)
    changed = fetch(f"select count(*) from `{s}`.audit_changed_files where run_id = '{run_id}'")[0][0]
    retried, resolved = fetch(
        f"select count(*), coalesce(sum(case when status != 'quarantined' then 1 else 0 end), 0) "
        f"from `{s}`.quarantine_retries where run_id = '{run_id}'"
    )[0]
    unsettled = fetch(f"select count(*) from `{s}`.audit_unsettled_files where run_id = '{run_id}'")[0][0]
    cast_failures = fetch(f"select count(*) from `{s}`.audit_run_cast_failures where run_id = '{run_id}'")[0][0]
    return RunSummary(
        int(f),
        int(r),
        int(c),
        int(q),
        int(k),
        sorted(touched),
        run_id,
        int(changed),
        int(retried),
        int(resolved),
        int(unsettled),
        int(cast_failures),
    )
