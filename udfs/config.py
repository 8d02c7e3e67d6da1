"""``cdc.yml``: load, validate and resolve (see the README, "Configuration").

Everything that is wrong with a configuration is reported before any work starts, in
one message that names the problem.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

import yaml

from udfs.framing import FRAMINGS

TOP_LEVEL_KEYS = {
    "warehouse",
    "schema",
    "marts_schema",
    "feeds",
    "tables",
    "buckets",
    "decode_task_bytes",
    "long_history_versions",
    "compact_after_segments",
    "compact_after_fraction",
    "keep_previous_bases",
    "compact_changelog_after_files",
    "dbt_threads",
    "test_scope",
    "small_run_max_bytes",
    "small_query_max_bytes",
    "min_file_age_seconds",
    "spark",
}
FEED_KEYS = {"name", "format", "path", "framing", "options", "min_file_age_seconds"}
TABLE_KEYS = {"key", "columns"}
_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
# A Spark SQL type as written in a config: simple names, decimal(p,s), varchar(n)...
_TYPE = re.compile(
    r"^(string|boolean|tinyint|smallint|int|integer|bigint|float|double|date|timestamp|timestamp_ntz|binary"
    r"|decimal\(\s*\d+\s*,\s*\d+\s*\)|decimal|varchar\(\d+\)|char\(\d+\))$",
    re.IGNORECASE,
)


#: characters a warehouse's path cannot hold: the metastore's Derby connection URL
#: breaks on ``:``, and Spark reads a table's location as a glob pattern, where the rest
#: are special (a location holding them was not found, or could match other folders too);
#: ``spark.sql.warehouse.dir`` (the tables alone) may hold a ``:``: a run took one
_GLOB_SPECIAL = "[]{}*?\\"
WAREHOUSE_PATH_UNSAFE = ":" + _GLOB_SPECIAL


class ConfigError(ValueError):
    """A configuration problem; the message names it."""


#: ``${NAME}`` (NAME a plain identifier) in a folder's path or a ``spark:`` value: the
#: environment variable NAME, as one cdc.yml serves a laptop, CI and production; ``$${NAME}``
#: writes ``${NAME}`` itself. Other ``${...}`` (Spark's ``${env:X}``, Hive's
#: ``${hiveconf:x}``) are not names here and are left to Spark
_ENV_REFERENCE = re.compile(r"\$(\$?)\{([A-Za-z_][A-Za-z0-9_]*)\}")


def _with_environment(path: Path, setting: str, value: str) -> str:
    """``value`` with each ``${NAME}`` replaced by the environment variable NAME; one
    that is not set, or set empty (a path would silently move), is a ``ConfigError``."""

    def one(reference: re.Match[str]) -> str:
        if reference.group(1):
            return reference.group(0)[1:]
        name = reference.group(2)
        if not (found := os.environ.get(name)):
            state = "set but empty" if found == "" else "not set"
            raise ConfigError(f"{path}: {setting} uses the environment variable {name}, which is {state}")
        return found

    return _ENV_REFERENCE.sub(one, value)


def _folder(path: Path, setting: str, value: Any) -> Path:
    """The folder a path setting of cdc.yml names: ``~`` or ``~user`` at its start is that
    home folder (as a shell's), then ``${NAME}`` is the environment's; a relative path
    is the config file's folder's."""
    text = str(value)
    if text.startswith("~"):
        try:
            text = str(Path(text).expanduser())
        except RuntimeError as exc:  # no HOME, an unknown user
            raise ConfigError(f"{path}: {setting} {text}: {exc}") from None
    return (path.parent / _with_environment(path, setting, text)).resolve()


def _check_warehouse_path(path: Path, setting: str, folder: str, unsafe_characters: str) -> None:
    """Refuse a folder of tables whose path holds one of ``unsafe_characters``, naming
    the setting that chose it."""
    if unsafe := sorted({c for c in folder if c in unsafe_characters}):
        why = "Spark reads a table's location as a glob pattern, where " + " ".join(_GLOB_SPECIAL) + " are special"
        if ":" in unsafe_characters:
            why = "the metastore's Derby connection URL breaks on ':', and " + why
        raise ConfigError(
            f"{path}: the {setting} {folder} holds {' '.join(unsafe)} in its path, which Spark cannot take in a "
            f"table's location ({why}): set {setting}: to a folder whose path holds none of them"
        )


def _listed_under(folder: Path, root: Path) -> bool:
    """Whether listing the landing folder ``root`` reaches ``folder``: the listing goes
    down every subfolder but those named with a leading ``.`` or ``_`` (as Spark's)."""
    if not folder.is_relative_to(root):
        return False
    return not any(part.startswith((".", "_")) for part in folder.relative_to(root).parts)


def _check_feed_folders(feeds: list[Feed], warehouse: Path, config_path: Path) -> None:
    """Refuse feeds that would read the same landing files (one's folder is, or holds,
    another's: a file would be decoded and counted twice, and the run then failed on a
    unique test), and a warehouse or the configuration file its feeds would read as
    landing files (a feed on the project's folder, ``path: .``)."""
    for i, a in enumerate(feeds):
        for b in feeds[i + 1 :]:
            outer, inner = (a, b) if _listed_under(b.path, a.path) else (b, a)
            if _listed_under(inner.path, outer.path):
                where = "is the folder of" if inner.path == outer.path else "is inside the folder of"
                raise ConfigError(
                    f"feeds {a.name!r} and {b.name!r} would read the same files: {inner.path} {where} feed "
                    f"{outer.name!r} ({outer.path}); give each feed a folder of its own (a folder named with a "
                    "leading . or _ is not read)"
                )
        if _listed_under(warehouse, a.path):
            raise ConfigError(
                f"the warehouse {warehouse} is inside the folder of feed {a.name!r} ({a.path}), which would read "
                "the warehouse's files as landing files: move it out, or name it with a leading . (as the default "
                ".cdc)"
            )
        if _listed_under(config_path.parent, a.path) and not config_path.name.startswith((".", "_")):
            raise ConfigError(
                f"feed {a.name!r} would read the configuration file {config_path} as a landing file (it is inside "
                f"the feed's folder {a.path}): give the feed a folder of its own, or the file a name with a "
                "leading . or _"
            )


@dataclass
class Feed:
    name: str
    format: str
    path: Path
    framing: str
    options: dict[str, Any] = field(default_factory=dict)
    #: the feed's own ``min_file_age_seconds``, else the configuration's (``Config.min_file_age_seconds``)
    min_file_age_seconds: int = 0


@dataclass
class TableConfig:
    name: str  #: as written in cdc.yml
    table_id: str  #: lower case
    key: list[str]  #: lower-case column names, maybe empty
    columns: dict[str, str]  #: lower-case column name -> Spark type, in config order

    @property
    def parts(self) -> list[str]:
        return self.table_id.split(".")


#: 64 MiB of landing files per decoding task (see macros/sql/cdc_decode_tasks.sql)
DEFAULT_DECODE_TASK_BYTES = 64 * 1024 * 1024
#: dbt threads of a run (see ``Config.dbt_threads``; measured by ``python -m bench.run_overhead``)
DEFAULT_DBT_THREADS = 4
MAX_DBT_THREADS = 64
#: files appended to a changelog partition before a run's end compacts the changelog (see
#: ``Config.compact_changelog_after_files``)
DEFAULT_COMPACT_CHANGELOG_AFTER_FILES = 32
#: the longest wait for a landing file to settle (``Config.min_file_age_seconds``): about
#: 31 years, whose microseconds still fit the SQL's bigint arithmetic
MAX_MIN_FILE_AGE_SECONDS = 10**9
#: values of ``test_scope`` (see ``Config.test_scope``)
TEST_SCOPES = ("run", "all")
#: new landing bytes up to which ``cdc run`` starts its JVM with the short-lived options
#: (see ``Config.small_run_max_bytes``): a run of 100k Debezium events (about 220 MB)
#: took 0.82x the wall time with them, a first load of 1M (2.2 GB) 1.28x
DEFAULT_SMALL_RUN_MAX_BYTES = 256 * 1024 * 1024
#: warehouse bytes up to which the query commands (``cdc export``, ``sql``,
#: ``quarantine``) start their JVM with the short-lived options (see
#: ``Config.small_query_max_bytes``): over a warehouse of 1M changes (1.3 GB) they took
#: 0.77-0.79x the wall time with them (bench.query_overhead); not measured above
DEFAULT_SMALL_QUERY_MAX_BYTES = 2 * 1024 * 1024 * 1024


@dataclass
class Config:
    path: Path
    warehouse: Path
    schema: str
    marts_schema: str
    feeds: list[Feed]
    tables: dict[str, TableConfig]  #: by table_id
    buckets: int = 16
    #: extra Spark / Hive settings of the session (``spark:`` in cdc.yml), e.g. the
    #: Thrift server's ``hive.server2.authentication`` settings
    spark_conf: dict[str, str] = field(default_factory=dict)
    #: landing bytes read and decoded per Spark task (see macros/sql/cdc_decode_tasks.sql)
    decode_task_bytes: int = DEFAULT_DECODE_TASK_BYTES
    #: keys with more versions than this are refolded by the linear long-history path
    #: (see models/intermediate/int_row_versions_refolded.sql)
    long_history_versions: int = 64
    #: merge-on-read: a merge compacts the state and the history into a new base when
    #: the segments since the last base reach this count (0: every merge compacts) ...
    compact_after_segments: int = 8
    #: ... or hold more versions than this fraction of the base's (see
    #: macros/sql/cdc_merge_plan.sql)
    compact_after_fraction: float = 0.5
    #: bases kept after a compaction, with the segments merged onto them, so that a
    #: query that started before it (through ``cdc serve``) still finds its files; they
    #: are dropped by a later compaction (0: at once; see macros/sql/cdc_drop_old_segments.sql)
    keep_previous_bases: int = 1
    #: when a changelog partition has had more files than this appended since the last
    #: compaction (about one per run that touched it), a run's end rewrites every
    #: partition holding several files as one file (0: never; see
    #: macros/sql/cdc_compact_changelog.sql)
    compact_changelog_after_files: int = DEFAULT_COMPACT_CHANGELOG_AFTER_FILES
    #: dbt nodes (models, tests) run at once (``--threads``): independent models and the
    #: dbt tests overlap, so a run's fixed cost (metastore calls, query planning, small
    #: jobs) is paid side by side instead of in a line
    dbt_threads: int = DEFAULT_DBT_THREADS
    #: the rows the unique tests of the changelog, state and history read in a run:
    #: ``run``, those the run wrote (their cost follows the run, not the tables' size;
    #: see macros/sql/cdc_run_rows.sql), or ``all``, every row
    test_scope: str = "run"
    #: ``cdc run`` starts its JVM with ``udfs.session.SHORT_LIVED_JVM_OPTIONS`` when the
    #: landing files no run has processed hold at most this many bytes, counted before
    #: the JVM starts (0: never; see udfs/run_size.py)
    small_run_max_bytes: int = DEFAULT_SMALL_RUN_MAX_BYTES
    #: the query commands start their JVM with the short-lived options when the
    #: warehouse folder's files hold at most this many bytes (0: never): a query's JVM
    #: plans a few statements and reads a part of the tables, so its limit is higher
    small_query_max_bytes: int = DEFAULT_SMALL_QUERY_MAX_BYTES
    #: a landing file modified less than this many seconds before a run starts is left
    #: for a later run (reported in ``audit_unsettled_files``): for a writer that
    #: writes a file in place, where a run could read it half written (0: every
    #: listed file is read; see models/staging/landing/stg_landing__files.sql). The
    #: feeds that do not set their own (``Feed.min_file_age_seconds``)
    min_file_age_seconds: int = 0

    def table(self, name: str) -> TableConfig:
        t = self.tables.get(name.lower())
        if t is None:
            raise ConfigError(f"table {name!r} is not in {self.path} (known: {', '.join(self.tables) or 'none'})")
        return t

    def decoder_options(self, feed: Feed) -> dict[str, Any]:
        """What the decode UDF needs to know about a feed, as one JSON-able dict.

        ``column_order`` repeats the names of ``columns`` as a list: the options travel as
        JSON with sorted keys (``udfs.pipeline.dbt_vars``), which reorders the ``columns``
        mapping, and a CSV feed without a header row needs the configured order.
        """
        return {
            "format": feed.format,
            "framing": feed.framing,
            "options": feed.options,
            "tables": {
                t.table_id: {"key": t.key, "columns": t.columns, "column_order": list(t.columns), "name": t.name}
                for t in self.tables.values()
            },
        }


def load_config(path: str | Path) -> Config:
    """Read and validate ``cdc.yml``; raise :class:`ConfigError` naming the problem."""
    from udfs.formats import FORMATS

    path = Path(path).resolve()
    if not path.exists():
        raise ConfigError(f"config file {path} does not exist")
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: not valid YAML: {exc}") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not UTF-8 text (byte {exc.start}: {exc.reason}); save it as UTF-8") from None
    except OSError as exc:  # a folder, a file this user cannot read
        raise ConfigError(f"config file {path} cannot be read: {exc.strerror or exc}") from None
    if not isinstance(raw, dict):
        raise ConfigError(f"{path}: the top level must be a mapping")
    _unknown(raw, TOP_LEVEL_KEYS, f"{path}")
    warehouse = _folder(path, "warehouse", raw.get("warehouse", ".cdc"))
    _check_warehouse_path(path, "warehouse", str(warehouse), WAREHOUSE_PATH_UNSAFE)
    schema = str(raw.get("schema", "cdc"))
    marts_schema = str(raw.get("marts_schema", "marts"))
    for label, value in (("schema", schema), ("marts_schema", marts_schema)):
        if not _IDENT.match(value):
            raise ConfigError(f"{label} {value!r} must be a plain identifier (letters, digits, _)")
    buckets = _integer(raw, "buckets", 16, 1, 4096)
    task_bytes = _integer(
        raw, "decode_task_bytes", DEFAULT_DECODE_TASK_BYTES, 1, requirement="a positive integer (bytes)"
    )
    long_history = _integer(raw, "long_history_versions", 64)
    compact_segments = _integer(raw, "compact_after_segments", 8)
    compact_fraction = raw.get("compact_after_fraction", 0.5)
    if not isinstance(compact_fraction, int | float) or isinstance(compact_fraction, bool) or compact_fraction < 0:
        raise ConfigError(f"compact_after_fraction must be a number >= 0, got {compact_fraction!r}")
    keep_bases = _integer(raw, "keep_previous_bases", 1)
    compact_changelog = _integer(raw, "compact_changelog_after_files", DEFAULT_COMPACT_CHANGELOG_AFTER_FILES)
    threads = _integer(raw, "dbt_threads", DEFAULT_DBT_THREADS, 1, MAX_DBT_THREADS)
    test_scope = raw.get("test_scope", "run")
    if test_scope not in TEST_SCOPES:
        raise ConfigError(f"test_scope must be one of {', '.join(TEST_SCOPES)}, got {test_scope!r}")
    in_bytes = "an integer >= 0 (bytes; 0: never)"
    small_run = _integer(raw, "small_run_max_bytes", DEFAULT_SMALL_RUN_MAX_BYTES, requirement=in_bytes)
    small_query = _integer(raw, "small_query_max_bytes", DEFAULT_SMALL_QUERY_MAX_BYTES, requirement=in_bytes)
    in_seconds = "an integer from 0 to 1000000000 (seconds; 0: no wait)"
    min_file_age = _integer(raw, "min_file_age_seconds", 0, 0, MAX_MIN_FILE_AGE_SECONDS, in_seconds)

    feeds_raw = raw.get("feeds")
    if not isinstance(feeds_raw, list) or not feeds_raw:
        raise ConfigError(f"{path}: `feeds` must be a non-empty list")
    feeds: list[Feed] = []
    for i, f in enumerate(feeds_raw):
        where = f"feeds[{i}]"
        if not isinstance(f, dict):
            raise ConfigError(f"{where} must be a mapping")
        _unknown(f, FEED_KEYS, where)
        name = f.get("name")
        if not isinstance(name, str) or not _IDENT.match(name):
            raise ConfigError(f"{where}: name {name!r} must be a plain identifier (letters, digits, _)")
        where = f"feed {name!r}"
        if any(x.name == name for x in feeds):
            raise ConfigError(f"{where} is defined twice")
        fmt = f.get("format")
        if fmt not in FORMATS:
            raise ConfigError(f"{where}: unknown format {fmt!r}; known formats: {', '.join(sorted(FORMATS))}")
        decoder = FORMATS[fmt]
        framing = f.get("framing", decoder.default_framing)
        if framing not in FRAMINGS:
            raise ConfigError(f"{where}: unknown framing {framing!r}; known: {', '.join(FRAMINGS)}")
        if framing not in decoder.framings:
            raise ConfigError(f"{where}: format {fmt} does not come in framing {framing!r} (it has {decoder.framings})")
        if not f.get("path"):
            raise ConfigError(f"{where}: `path` is missing")
        feed_path = _folder(path, f"{where}: path", f["path"])
        if not feed_path.is_dir():
            raise ConfigError(f"{where}: path {feed_path} does not exist or is not a folder")
        options = f.get("options") or {}
        if not isinstance(options, dict):
            raise ConfigError(f"{where}: options must be a mapping")
        allowed = set(decoder.option_names) | {"header"}
        _unknown(options, allowed, f"{where} options")
        try:  # the decoder validates its own options (a bad regex, an unknown kind...)
            decoder({k: v for k, v in options.items() if k != "header"})
        except (ValueError, TypeError) as exc:
            raise ConfigError(f"{where}: bad options for format {fmt}: {exc}") from None
        try:
            feed_age = _integer(f, "min_file_age_seconds", min_file_age, 0, MAX_MIN_FILE_AGE_SECONDS, in_seconds)
        except ConfigError as exc:
            raise ConfigError(f"{where}: {exc}") from None
        feeds.append(Feed(name, fmt, feed_path, framing, options, feed_age))
    _check_feed_folders(feeds, warehouse, path)

    tables: dict[str, TableConfig] = {}
    for name, t in (raw.get("tables") or {}).items():
        where = f"table {name!r}"
        t = t or {}
        if not isinstance(t, dict):
            raise ConfigError(f"{where} must be a mapping")
        _unknown(t, TABLE_KEYS, where)
        table_id = str(name).lower()
        if table_id in tables:
            raise ConfigError(f"{where} is configured twice (names match case-insensitively)")
        if not 1 <= len(table_id.split(".")) <= 3 or any(not p for p in table_id.split(".")):
            raise ConfigError(f"{where}: use table, db.table or db.schema.table")
        key = t.get("key") or []
        if isinstance(key, str):
            key = [key]
        if not isinstance(key, list) or not all(isinstance(k, str) and k for k in key):
            raise ConfigError(f"{where}: key must be a list of column names")
        columns = t.get("columns") or {}
        if not isinstance(columns, dict):
            raise ConfigError(f"{where}: columns must be a mapping of column name to type")
        for col, typ in columns.items():
            if not isinstance(typ, str) or not _TYPE.match(typ.strip()):
                raise ConfigError(f"{where}: column {col!r} has type {typ!r}, which is not a Spark SQL type")
        tables[table_id] = TableConfig(
            str(name), table_id, [k.lower() for k in key], {str(c).lower(): v.strip() for c, v in columns.items()}
        )
        if not key and not any(FORMATS[fd.format].carries_key(fd.framing, fd.options) for fd in feeds):
            raise ConfigError(f"{where} has no key: the events of its feeds do not carry one, so set tables.{name}.key")
    spark_conf = raw.get("spark") or {}
    if not isinstance(spark_conf, dict) or not all(isinstance(k, str) for k in spark_conf):
        raise ConfigError("spark must be a mapping of Spark or Hive setting names to values")
    spark_conf = {
        k: str(v).lower() if isinstance(v, bool) else _with_environment(path, f"spark: {k}", str(v))
        for k, v in spark_conf.items()
    }
    if (tables_dir := spark_conf.get("spark.sql.warehouse.dir")) is not None:
        # a URL's scheme (file:, hdfs:) is no part of the folders' names
        folder = unquote(urlparse(tables_dir).path) or tables_dir
        _check_warehouse_path(path, "spark.sql.warehouse.dir", folder, _GLOB_SPECIAL)
    return Config(
        path,
        warehouse,
        schema,
        marts_schema,
        feeds,
        tables,
        buckets,
        spark_conf,
        task_bytes,
        long_history,
        compact_segments,
        float(compact_fraction),
        keep_bases,
        compact_changelog,
        threads,
        test_scope,
        small_run,
        small_query,
        min_file_age,
    )


def _integer(
    raw: dict[str, Any], key: str, default: int, low: int = 0, high: int | None = None, requirement: str = ""
) -> int:
    """``raw[key]`` (``default`` when absent), an integer from ``low`` to ``high``
    (booleans are not integers here, though Python's are), else a ``ConfigError``
    saying what it must be."""
    value = raw.get(key, default)
    if not isinstance(value, int) or isinstance(value, bool) or value < low or (high is not None and value > high):
        requirement = requirement or (
            f"an integer between {low} and {high}" if high is not None else f"an integer >= {low}"
        )
        raise ConfigError(f"{key} must be {requirement}, got {value!r}")
    return value


def _unknown(mapping: dict[str, Any], allowed: set[str], where: str) -> None:
    extra = sorted(set(map(str, mapping)) - allowed)
    if extra:
        raise ConfigError(f"{where}: unknown setting(s) {', '.join(extra)}; allowed: {', '.join(sorted(allowed))}")


def match_table(config_tables: dict[str, dict[str, Any]], db: str | None, schema: str | None, table: str) -> str | None:
    """The configured table id an event's table matches, most specific first.

    ``db.schema.table`` matches exactly; ``x.table`` matches when ``x`` is the event's
    database or schema; ``table`` matches the table name alone. Case-insensitive.
    """
    t = table.lower()
    d = db.lower() if db else None
    s = schema.lower() if schema else None
    candidates = []
    if d and s:
        candidates.append(f"{d}.{s}.{t}")
    if d:
        candidates.append(f"{d}.{t}")
    if s:
        candidates.append(f"{s}.{t}")
    candidates.append(t)
    for c in candidates:
        if c in config_tables:
            return c
    return None
