"""A ``cdc run`` whose new landing files are small starts its JVM with the short-lived
options (``small_run_max_bytes``; udfs/run_size.py, BENCHMARKS.md "JVM options").

The new bytes are counted before the JVM starts: the feeds' folders as
``cdc_list_files`` lists them, less the files ``audit_files`` records, read from the
table's parquet files. The pure part is tested on folders and a table written here; the
whole path through a real ``cdc run`` of the README's example, whose JVM's command line
is read while it runs, and whose table is read back after it.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml

from bench.memory import jvm_command_lines
from bench.run_overhead import start_cdc
from udfs.config import DEFAULT_SMALL_QUERY_MAX_BYTES, DEFAULT_SMALL_RUN_MAX_BYTES, ConfigError, load_config
from udfs.run_size import (
    audit_files_dir,
    new_landing_bytes,
    processed_files,
    query_java_options,
    run_java_options,
    short_lived_options_for,
    user_java_options,
    warehouse_bytes,
    warehouse_dir,
)
from udfs.session import SHORT_LIVED_JVM_OPTIONS, driver_java_options

REPO = Path(__file__).resolve().parents[2]
NO_USER_OPTIONS: dict[str, str] = {}


def _config(tmp_path: Path, **extra):
    landing = tmp_path / "landing"
    landing.mkdir(exist_ok=True)
    path = tmp_path / "cdc.yml"
    feeds = [{"name": "dbz", "format": "debezium_json", "path": "landing"}]
    path.write_text(yaml.safe_dump({"schema": "Run_Size", "feeds": feeds, "tables": {"t": {"key": ["id"]}}, **extra}))
    return load_config(path)


def _land(folder: Path, name: str, size: int) -> Path:
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"x" * size)
    return path


def _record_processed(config, *paths: Path) -> None:
    """``audit_files`` as a run leaves it: parquet parts beside Spark's hidden files."""
    folder = audit_files_dir(config)
    folder.mkdir(parents=True, exist_ok=True)
    for n, path in enumerate(paths):
        table = pa.table({"source_file": [str(path)], "file_size": [path.stat().st_size]})
        pq.write_table(table, folder / f"part-{n:05d}-c000.snappy.parquet")
    (folder / "_SUCCESS").write_bytes(b"")
    (folder / ".part-00000-c000.snappy.parquet.crc").write_bytes(b"not parquet")


def test_the_new_bytes_are_the_listed_files_no_run_has_processed(tmp_path):
    config = _config(tmp_path)
    landing = tmp_path / "landing"
    first = _land(landing, "a/1.jsonl", 1_000)
    second = _land(landing, "a/2.jsonl", 20_000)
    _land(landing, "_tmp/3.jsonl", 300_000)  # skipped by the listing, as Spark's sources skip it
    _land(landing, ".4.jsonl", 4_000_000)
    # before a first run: no table, every listed file is new
    assert new_landing_bytes(config) == 21_000
    # the table's folder is the schema's in lower case, as Spark names it (checked
    # against a real run below)
    assert audit_files_dir(config).parent.name == "run_size.db"
    _record_processed(config, first)
    assert new_landing_bytes(config) == 20_000
    _record_processed(config, first, second)
    assert new_landing_bytes(config) == 0
    _land(landing, "b/5.jsonl", 7)
    assert new_landing_bytes(config) == 7


def test_a_small_run_gets_the_short_lived_options_and_a_large_one_the_defaults(tmp_path):
    config = _config(tmp_path, small_run_max_bytes=1_000)
    _land(tmp_path / "landing", "1.jsonl", 1_000)
    options, why = run_java_options(config, NO_USER_OPTIONS)
    assert options == SHORT_LIVED_JVM_OPTIONS
    assert why == (
        "1,000 bytes of new landing files, at most small_run_max_bytes (1,000): "
        f"the JVM starts with {SHORT_LIVED_JVM_OPTIONS}"
    )
    _land(tmp_path / "landing", "2.jsonl", 1)
    options, why = run_java_options(config, NO_USER_OPTIONS)
    assert options == ""
    assert why == "1,001 bytes of new landing files, more than small_run_max_bytes (1,000): the JVM's default options"


def test_small_run_max_bytes_zero_never_counts(tmp_path, monkeypatch):
    config = _config(tmp_path, small_run_max_bytes=0)

    def fail(_config):
        raise AssertionError("counted")

    monkeypatch.setattr("udfs.run_size.new_landing_bytes", fail)
    assert run_java_options(config, NO_USER_OPTIONS) == ("", "small_run_max_bytes is 0: the JVM's default options")


def test_an_unreadable_table_keeps_the_defaults_and_says_why(tmp_path):
    config = _config(tmp_path)
    folder = audit_files_dir(config)
    folder.mkdir(parents=True)
    (folder / "part-00000-c000.snappy.parquet").write_bytes(b"PAR1 not really")
    options, why = run_java_options(config, NO_USER_OPTIONS)
    assert options == ""
    assert why.startswith("the bytes of new landing files could not be counted (")
    assert why.endswith("): the JVM's default options")


def test_the_settings_are_validated_and_default_to_256_mib_and_2_gib(tmp_path):
    assert _config(tmp_path).small_run_max_bytes == DEFAULT_SMALL_RUN_MAX_BYTES == 256 * 2**20
    assert _config(tmp_path).small_query_max_bytes == DEFAULT_SMALL_QUERY_MAX_BYTES == 2 * 2**30
    for setting in ("small_run_max_bytes", "small_query_max_bytes"):
        assert getattr(_config(tmp_path, **{setting: 0}), setting) == 0
        for bad in (-1, "1GB", 1.5, True):
            message = f"{setting} must be an integer >= 0 \\(bytes; 0: never\\), got {bad!r}"
            with pytest.raises(ConfigError, match=message):
                _config(tmp_path, **{setting: bad})
    # the wait for files a writer may still be writing (models/staging/landing/stg_landing__files.sql)
    assert _config(tmp_path).min_file_age_seconds == 0
    assert _config(tmp_path, min_file_age_seconds=60).min_file_age_seconds == 60
    assert _config(tmp_path, min_file_age_seconds=10**9).min_file_age_seconds == 10**9
    for bad in (-1, "60s", 1.5, True, 10**9 + 1):
        message = f"min_file_age_seconds must be an integer from 0 to 1000000000 \\(seconds; 0: no wait\\), got {bad!r}"
        with pytest.raises(ConfigError, match=message):
            _config(tmp_path, min_file_age_seconds=bad)
    # a feed's own wait wins over the top-level one, which the others take; validated the same way
    (tmp_path / "own").mkdir()
    feeds = [
        {"name": "kept", "format": "debezium_json", "path": "landing"},
        {"name": "own", "format": "debezium_json", "path": "own", "min_file_age_seconds": 0},
    ]
    config = _config(tmp_path, min_file_age_seconds=60, feeds=feeds)
    assert [(feed.name, feed.min_file_age_seconds) for feed in config.feeds] == [("kept", 60), ("own", 0)]
    assert [feed.min_file_age_seconds for feed in _config(tmp_path, feeds=feeds[:1]).feeds] == [0]
    for bad in (-1, "60s", 1.5, True, 10**9 + 1):
        message = f"feed 'own': min_file_age_seconds must be an integer from 0 to 1000000000 .*, got {bad!r}"
        with pytest.raises(ConfigError, match=message):
            _config(tmp_path, feeds=[{**feeds[1], "min_file_age_seconds": bad}])


def test_a_collector_the_user_chose_is_kept(tmp_path):
    """Two collectors stop the JVM at start; the user's choice stays, C1 and the code
    cache are still added."""
    assert short_lived_options_for("-Xss4m") == SHORT_LIVED_JVM_OPTIONS
    assert short_lived_options_for("-XX:+UseG1GC") == "-XX:TieredStopAtLevel=1 -XX:ReservedCodeCacheSize=256m"
    config = _config(tmp_path, spark={"spark.driver.extraJavaOptions": "-XX:+UseParallelGC"})
    assert run_java_options(config, NO_USER_OPTIONS)[0] == "-XX:TieredStopAtLevel=1 -XX:ReservedCodeCacheSize=256m"
    assert run_java_options(_config(tmp_path), {"JAVA_TOOL_OPTIONS": "-XX:+UseZGC"})[0] == (
        "-XX:TieredStopAtLevel=1 -XX:ReservedCodeCacheSize=256m"
    )
    # the JVM starts with what the session would give it (the suite's own options,
    # which select a collector, taken out of the environment)
    env = {k: v for k, v in os.environ.items() if k != "JDK_JAVA_OPTIONS"}
    for user in ("-XX:+UseG1GC", ""):
        options = shlex.split(driver_java_options(tmp_path, user, short_lived_options_for(user)))
        java = subprocess.run(["java", *options, "-version"], env=env, capture_output=True, text=True, check=False)
        assert java.returncode == 0, java.stderr
    # and would not with both collectors: the case the rule is for
    both = ["java", "-XX:+UseSerialGC", "-XX:+UseG1GC", "-version"]
    assert subprocess.run(both, env=env, capture_output=True, check=False).returncode != 0


C1_AND_CODE_CACHE = "-XX:TieredStopAtLevel=1 -XX:ReservedCodeCacheSize=256m"


def test_java_options_are_read_from_a_properties_file_as_spark_reads_it(tmp_path):
    (tmp_path / "spark-defaults.conf").write_text(
        "# spark.driver.defaultJavaOptions -XX:+UseZGC\n"
        "! spark.driver.extraJavaOptions -XX:+UseZGC\n"
        "spark.driver.defaultJavaOptions   -XX:+UseG1GC -Da=b\n"
        "spark.driver.extraJavaOptions=-Xss4m\n"
        "  spark.driver.extraJavaOptions : -Dz=1\n"
        "spark.executor.extraJavaOptions -XX:+UseParallelGC\n"
        "\n"
    )
    # of a key set twice, the last: java.util.Properties keeps it
    assert user_java_options(_config(tmp_path), {"SPARK_CONF_DIR": str(tmp_path)}) == "-XX:+UseG1GC -Da=b -Dz=1"
    assert user_java_options(_config(tmp_path), {"SPARK_CONF_DIR": str(tmp_path / "none")}) == ""


def test_the_collector_check_reads_the_properties_files_spark_submit_reads(tmp_path):
    """A ``--properties-file`` (the last one given) replaces ``spark-defaults.conf``
    unless ``--load-spark-defaults`` is given too (udfs.session.submitted_properties,
    shown with real sessions in test_driver_java_options): a collector in a file
    spark-submit passes over does not reach the JVM, so the serial one is still added.
    Reading every file, as before, left it out there."""
    conf_dir = tmp_path / "conf"
    conf_dir.mkdir()
    (conf_dir / "spark-defaults.conf").write_text("spark.driver.defaultJavaOptions -XX:+UseG1GC\n")
    (tmp_path / "plain.conf").write_text("spark.driver.extraJavaOptions -Da=b\n")
    (tmp_path / "gc.conf").write_text("spark.driver.extraJavaOptions -XX:+UseParallelGC\n")
    config = _config(tmp_path)
    cases = {
        "": C1_AND_CODE_CACHE,  # spark-defaults.conf alone
        f"--properties-file {tmp_path / 'plain.conf'}": SHORT_LIVED_JVM_OPTIONS,
        f"--properties-file={tmp_path / 'plain.conf'} --load-spark-defaults": C1_AND_CODE_CACHE,
        f"--properties-file {tmp_path / 'gc.conf'} --properties-file {tmp_path / 'plain.conf'}": (
            SHORT_LIVED_JVM_OPTIONS
        ),
        f"--properties-file {tmp_path / 'plain.conf'} --properties-file {tmp_path / 'gc.conf'}": C1_AND_CODE_CACHE,
    }
    for submit, expected in cases.items():
        environ = {"SPARK_CONF_DIR": str(conf_dir), "PYSPARK_SUBMIT_ARGS": f"{submit} pyspark-shell"}
        assert run_java_options(config, environ)[0] == expected, submit


@pytest.mark.parametrize(
    "source",
    ["cdc.yml defaultJavaOptions", "spark-defaults.conf", "--properties-file", "PYSPARK_SUBMIT_ARGS"],
)
def test_a_collector_chosen_anywhere_the_jvm_reads_options_is_kept(tmp_path, source):
    """spark-submit puts ``spark.driver.defaultJavaOptions`` before the extra ones, from
    cdc.yml or from a properties file; ``--driver-java-options`` reaches the JVM too."""
    conf_dir = tmp_path / "conf"
    conf_dir.mkdir()
    environ = {"SPARK_CONF_DIR": str(conf_dir)}
    spark = {}
    if source == "cdc.yml defaultJavaOptions":
        spark = {"spark.driver.defaultJavaOptions": "-XX:+UseG1GC"}
    elif source == "spark-defaults.conf":
        (conf_dir / "spark-defaults.conf").write_text("spark.driver.defaultJavaOptions -XX:+UseG1GC\n")
    elif source == "--properties-file":
        (tmp_path / "mine.conf").write_text("spark.driver.defaultJavaOptions=-XX:+UseG1GC\n")
        environ["PYSPARK_SUBMIT_ARGS"] = f"--properties-file {tmp_path / 'mine.conf'} pyspark-shell"
    else:
        environ["PYSPARK_SUBMIT_ARGS"] = '--driver-java-options "-XX:+UseG1GC" pyspark-shell'
    config = _config(tmp_path, spark=spark)
    assert run_java_options(config, environ)[0] == C1_AND_CODE_CACHE
    # without it, the serial collector is added
    assert run_java_options(_config(tmp_path), {"SPARK_CONF_DIR": str(tmp_path / "empty")})[0] == (
        SHORT_LIVED_JVM_OPTIONS
    )


def _option_files(folder: Path) -> dict[str, str]:
    """Each way of naming a file the JVM reads options from, the file written with a
    collector in it: the user's option as it names it."""
    (folder / "gc.args").write_text("# chosen by ops\n-Xss4m\n-XX:+UseParallelGC\n")
    (folder / "vm.options").write_text("-XX:+UseParallelGC -Da=b\n")
    (folder / "hotspot.flags").write_text("+UseParallelGC\n-UseCompressedOops\n")
    (folder / "outer.args").write_text(f"# ops' choice\n-XX:VMOptionsFile={folder / 'vm.options'}\n")
    (folder / "with space").mkdir()
    (folder / "with space" / "gc.args").write_text("-XX:+UseParallelGC\n")
    return {
        "argfile": f"-Dmail=ops@example.com @{folder / 'gc.args'}",
        "relative argfile": "@gc.args",
        "quoted argfile, a space in its path": f'-Da=b "@{folder}/with space/gc.args"',
        "VMOptionsFile": f"-XX:VMOptionsFile={folder / 'vm.options'}",
        "Flags": f"-XX:Flags={folder / 'hotspot.flags'}",
        "an argfile naming a VMOptionsFile": f"@{folder / 'outer.args'}",
    }


def test_a_collector_in_a_file_the_options_name_is_kept(tmp_path, monkeypatch):
    """The JVM reads more options from an ``@argfile``, ``-XX:VMOptionsFile=`` and
    ``-XX:Flags=``; a collector there and the serial one stop it at start as surely."""
    monkeypatch.chdir(tmp_path)  # a relative file is the folder the JVM starts in
    env = {k: v for k, v in os.environ.items() if k != "JDK_JAVA_OPTIONS"}  # the suite's own collector
    for form, user in _option_files(tmp_path).items():
        config = _config(tmp_path, spark={"spark.driver.extraJavaOptions": user})
        assert run_java_options(config, NO_USER_OPTIONS)[0] == C1_AND_CODE_CACHE, form
        # the JVM starts with the options the session gives it, and not with the serial collector too
        run_options = short_lived_options_for(user_java_options(config, {}))
        options = shlex.split(driver_java_options(tmp_path, user, run_options))  # as spark-submit splits them
        java = subprocess.run(["java", *options, "-version"], env=env, capture_output=True, text=True, check=False)
        assert java.returncode == 0, (form, java.stderr)
        both = ["java", "-XX:+UseSerialGC", *shlex.split(user), "-version"]
        refused = subprocess.run(both, env=env, capture_output=True, text=True, check=False)
        assert "Multiple garbage collectors selected" in refused.stdout + refused.stderr, form
    # from the JVM's variables too; the launcher's one reads an @argfile
    assert run_java_options(_config(tmp_path), {"JDK_JAVA_OPTIONS": "@gc.args"})[0] == C1_AND_CODE_CACHE
    vm_options = f"-XX:VMOptionsFile={tmp_path / 'vm.options'}"
    assert run_java_options(_config(tmp_path), {"JAVA_TOOL_OPTIONS": vm_options})[0] == C1_AND_CODE_CACHE
    # and from spark-submit's arguments: a value holding several options, a --conf's value
    # (spark-submit takes each of these forms; with --conf's defaultJavaOptions the JVM refused to start)
    for submit in (
        '--driver-java-options "-Da=b @gc.args"',
        "--driver-java-options=@gc.args",
        "--conf spark.driver.defaultJavaOptions=@gc.args",
        "-c spark.driver.defaultJavaOptions=@gc.args",
        "--conf=spark.driver.defaultJavaOptions=@gc.args",
        "--conf 'spark.driver.extraJavaOptions=-Da=b @gc.args'",
    ):
        submit_args = {"PYSPARK_SUBMIT_ARGS": f"{submit} pyspark-shell"}
        assert run_java_options(_config(tmp_path), submit_args)[0] == C1_AND_CODE_CACHE, submit
    # an @ inside an option, or in another setting's value, names no file; a named file
    # without a collector keeps the serial one
    (tmp_path / "plain.args").write_text("-Xss4m\n")
    for user in ("-Dmail=ops@example.com", "@plain.args"):
        config = _config(tmp_path, spark={"spark.driver.extraJavaOptions": user})
        assert run_java_options(config, NO_USER_OPTIONS)[0] == SHORT_LIVED_JVM_OPTIONS, user
    for submit in ("--conf spark.app.name=@gc.args", "--conf spark.driver.defaultJavaOptions=-Dmail=ops@gc.args"):
        submit_args = {"PYSPARK_SUBMIT_ARGS": f"{submit} pyspark-shell"}
        assert run_java_options(_config(tmp_path), submit_args)[0] == SHORT_LIVED_JVM_OPTIONS, submit
    # a named file that cannot be read: the JVM would not start with it either
    _land(tmp_path / "landing", "1.jsonl", 10)
    config = _config(tmp_path, spark={"spark.driver.extraJavaOptions": "@missing.args"})
    assert run_java_options(config, NO_USER_OPTIONS) == (
        "",
        "10 bytes of new landing files, but the user's JVM options could not be read ([Errno 2] No such file or "
        "directory: 'missing.args'): the JVM's default options",
    )


def test_an_unreadable_properties_file_keeps_the_defaults_and_says_why(tmp_path):
    config = _config(tmp_path)
    _land(tmp_path / "landing", "1.jsonl", 10)
    conf_dir = tmp_path / "conf"
    (conf_dir / "spark-defaults.conf").mkdir(parents=True)  # not a file: nothing to read
    assert run_java_options(config, {"SPARK_CONF_DIR": str(conf_dir)})[0] == SHORT_LIVED_JVM_OPTIONS
    # a file whose read fails, even for root: /proc's memory file at offset 0 (EIO)
    environ = {"SPARK_CONF_DIR": str(conf_dir), "PYSPARK_SUBMIT_ARGS": "--properties-file /proc/self/mem"}
    options, why = run_java_options(config, environ)
    assert options == ""
    assert why.startswith("10 bytes of new landing files, but the user's JVM options could not be read (")
    assert why.endswith("): the JVM's default options")
    # arguments pyspark itself cannot split (it fails with its own error once the session starts)
    environ = {"SPARK_CONF_DIR": str(conf_dir), "PYSPARK_SUBMIT_ARGS": "--driver-java-options '-Da=b pyspark-shell"}
    assert run_java_options(config, environ) == (
        "",
        "10 bytes of new landing files, but the user's JVM options could not be read (No closing quotation): "
        "the JVM's default options",
    )


def test_the_warehouse_folder_cdc_yml_sets_is_the_one_counted(tmp_path, monkeypatch):
    """``spark.sql.warehouse.dir`` in cdc.yml's ``spark:`` wins over the session's; a
    relative one is the current folder's, as Spark qualifies it."""
    assert warehouse_dir(_config(tmp_path)) == tmp_path / ".cdc" / "spark-warehouse"
    monkeypatch.chdir(tmp_path / "landing")
    for value, expected in (
        (str(tmp_path / "wh"), tmp_path / "wh"),
        ("wh", tmp_path / "landing" / "wh"),
        (f"file://{tmp_path}/w%20h", tmp_path / "w h"),
        (f"file:{tmp_path}/wh", tmp_path / "wh"),
    ):
        config = _config(tmp_path, spark={"spark.sql.warehouse.dir": value})
        assert warehouse_dir(config) == expected, value
        assert audit_files_dir(config) == expected / "run_size.db" / "audit_files"
    config = _config(tmp_path, spark={"spark.sql.warehouse.dir": "hdfs://nn/wh"})
    _land(tmp_path / "landing", "1.jsonl", 10)
    options, why = run_java_options(config, NO_USER_OPTIONS)
    assert options == ""
    assert why == (
        "the bytes of new landing files could not be counted (spark.sql.warehouse.dir 'hdfs://nn/wh' is not a local "
        "folder): the JVM's default options"
    )


SESSION_PROBE = """
import json, sys
from udfs.config import load_config
from udfs.run_size import run_java_options
from udfs.session import build_session
config = load_config(sys.argv[1])
options, why = run_java_options(config)
spark = build_session(config, master="local[1]", run_java_options=options)
spark.sql("create schema if not exists Run_Size")
spark.sql("create table Run_Size.audit_files (source_file string) using parquet")
spark.sql("insert into Run_Size.audit_files values ('/landing/seen.jsonl')")
jvm_args = spark._jvm.java.lang.management.ManagementFactory.getRuntimeMXBean().getInputArguments()
print(json.dumps({"why": why, "jvm": list(jvm_args)}))
"""


@pytest.mark.parametrize(
    "source",
    ["cdc.yml", "spark-defaults.conf", "cdc.yml @argfile", "PYSPARK_SUBMIT_ARGS @argfile", "--driver-java-options"],
)
def test_a_session_starts_with_the_users_collector_and_finds_its_table(tmp_path, monkeypatch, source):
    """A real Spark session started as ``cdc run`` starts it, the user's collector in
    ``spark.driver.defaultJavaOptions`` (the JVM failed to start with it and the serial
    one before they were read) or in an ``@argfile`` that ``spark.driver.extraJavaOptions``
    or a ``--conf spark.driver.defaultJavaOptions=`` of ``PYSPARK_SUBMIT_ARGS`` names
    (spark-submit hands it to the launcher as it is), or in ``PYSPARK_SUBMIT_ARGS``'
    ``--driver-java-options`` (added to the session's own), the warehouse folder set in
    cdc.yml (absolute, or relative to the folder the run starts in): the JVM runs the
    user's collector and C1, and the table it writes is where the count reads it."""
    conf_dir = tmp_path / "conf"
    conf_dir.mkdir()
    submit_args = {}
    if source == "cdc.yml":
        spark = {"spark.sql.warehouse.dir": str(tmp_path / "elsewhere")}
        spark["spark.driver.defaultJavaOptions"] = "-XX:+UseParallelGC"
    elif source == "cdc.yml @argfile":
        (tmp_path / "gc.args").write_text("-XX:+UseParallelGC\n")
        spark = {"spark.sql.warehouse.dir": str(tmp_path / "elsewhere")}
        spark["spark.driver.extraJavaOptions"] = f"@{tmp_path / 'gc.args'}"
    elif source == "PYSPARK_SUBMIT_ARGS @argfile":
        (tmp_path / "gc.args").write_text("-XX:+UseParallelGC\n")
        spark = {"spark.sql.warehouse.dir": str(tmp_path / "elsewhere")}
        submit = f"--conf spark.driver.defaultJavaOptions=@{tmp_path / 'gc.args'} pyspark-shell"
        submit_args = {"PYSPARK_SUBMIT_ARGS": submit}
    elif source == "--driver-java-options":  # added to the session's own options (udfs.session)
        spark = {"spark.sql.warehouse.dir": str(tmp_path / "elsewhere")}
        submit_args = {"PYSPARK_SUBMIT_ARGS": "--driver-java-options -XX:+UseParallelGC pyspark-shell"}
    else:
        spark = {"spark.sql.warehouse.dir": "elsewhere"}
        (conf_dir / "spark-defaults.conf").write_text("spark.driver.defaultJavaOptions -XX:+UseParallelGC\n")
    config = _config(tmp_path, spark=spark)
    run_from = tmp_path / "run_from"  # not cdc.yml's folder: Spark's relative path is the process's
    run_from.mkdir()
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "SPARK_CONF_DIR": str(conf_dir), **submit_args}
    env.pop("JDK_JAVA_OPTIONS", None)  # the suite's own, which select the serial collector
    probe = subprocess.run(
        [sys.executable, "-c", SESSION_PROBE, str(tmp_path / "cdc.yml")],
        cwd=run_from,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert probe.returncode == 0, probe.stderr[-3000:]
    seen = json.loads(probe.stdout.strip().splitlines()[-1])
    assert seen["why"].endswith(f"the JVM starts with {C1_AND_CODE_CACHE}")
    assert "-XX:+UseParallelGC" in seen["jvm"]  # the launcher puts an argfile's options in its place
    assert "-XX:TieredStopAtLevel=1" in seen["jvm"]
    assert "-XX:+UseSerialGC" not in seen["jvm"]
    monkeypatch.chdir(run_from)
    where = run_from / "elsewhere" if source == "spark-defaults.conf" else tmp_path / "elsewhere"
    assert audit_files_dir(config) == where / "run_size.db" / "audit_files"
    assert processed_files(config) == {"/landing/seen.jsonl"}


def test_the_run_options_come_between_the_sessions_and_the_users():
    assert driver_java_options(Path("/wh"), "-Da=b", "-XX:TieredStopAtLevel=1").endswith(
        " -XX:TieredStopAtLevel=1 -Da=b"
    )
    assert driver_java_options(Path("/wh"), None, "") == driver_java_options(Path("/wh"))


def _jvm_command_lines_while_it_runs(proc: subprocess.Popen) -> list[list[str]]:
    """The command lines of ``proc``'s JVM children, read as soon as there is one."""
    command_lines: list[list[str]] = []
    while proc.poll() is None and not command_lines:
        command_lines = jvm_command_lines(proc.pid)
        time.sleep(0.1)
    return command_lines


def test_a_small_cdc_run_starts_its_jvm_with_the_short_lived_options(tmp_path):
    """The README's example (two files, 6 changes) through ``cdc run`` as a user runs it:
    no JVM options in the environment (the suite's are taken out). Its schema in mixed
    case: Spark names the table's folder in lower case, and the count must find it."""
    work = tmp_path / "shop"
    shutil.copytree(REPO / "examples" / "shop", work, ignore=shutil.ignore_patterns(".cdc"))
    with (work / "cdc.yml").open("a", encoding="utf-8") as f:
        f.write("\nschema: Shop_Run\n")
    config = load_config(work / "cdc.yml")
    landed = new_landing_bytes(config)
    assert landed == sum(p.stat().st_size for p in (work / "landing").rglob("*") if p.is_file()) > 0
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable}
    env.pop("JDK_JAVA_OPTIONS", None)
    proc = start_cdc(work, env, "run")
    command_lines = _jvm_command_lines_while_it_runs(proc)
    stdout, stderr = proc.communicate(timeout=900)
    assert proc.returncode == 0, stderr[-3000:]
    assert "files 2, records 6, changes 6, quarantined 0, skipped 0" in stdout
    assert f"cdc run: {landed:,} bytes of new landing files, at most small_run_max_bytes" in stderr
    (jvm,) = command_lines
    assert all(option in jvm for option in SHORT_LIVED_JVM_OPTIONS.split()), jvm
    # the run's own record of its files, read as the next run reads it: nothing new
    assert audit_files_dir(config).relative_to(work / ".cdc").parts[:2] == ("spark-warehouse", "shop_run.db")
    assert audit_files_dir(config).is_dir()
    assert new_landing_bytes(config) == 0


def test_a_query_commands_size_is_the_warehouses_bytes(tmp_path):
    """``cdc export``, ``sql`` and ``quarantine`` may read any table: their size is the
    warehouse folder's bytes (hidden and ``_`` files skipped, as for the landing files)."""
    config = _config(tmp_path, small_query_max_bytes=1_000)
    assert warehouse_bytes(config) == 0  # before a first run: no folder
    _land(tmp_path / "landing", "big.jsonl", 5_000)  # landing files are not the warehouse's
    tables = warehouse_dir(config)
    _land(tables / "run_size.db" / "changelog" / "bucket=1", "part-0.parquet", 600)
    _land(tables / "marts.db" / "t", "part-0.parquet", 400)
    _land(tables / "run_size.db" / "changelog" / "bucket=1", ".part-0.parquet.crc", 50)
    _land(tables / "run_size.db" / "changelog", "_SUCCESS", 50)
    assert warehouse_bytes(config) == 1_000
    options, why = query_java_options(config, NO_USER_OPTIONS)
    assert options == SHORT_LIVED_JVM_OPTIONS
    assert why == (
        "1,000 bytes of tables in the warehouse, at most small_query_max_bytes (1,000): "
        f"the JVM starts with {SHORT_LIVED_JVM_OPTIONS}"
    )
    _land(tables / "marts.db" / "t", "part-1.parquet", 1)
    assert query_java_options(config, NO_USER_OPTIONS) == (
        "",
        "1,001 bytes of tables in the warehouse, more than small_query_max_bytes (1,000): the JVM's default options",
    )
    assert query_java_options(_config(tmp_path, small_query_max_bytes=0), NO_USER_OPTIONS) == (
        "",
        "small_query_max_bytes is 0: the JVM's default options",
    )
    # the runs' limit is not the queries'
    both = _config(tmp_path, small_query_max_bytes=2_000, small_run_max_bytes=0)
    assert query_java_options(both, NO_USER_OPTIONS)[0] == SHORT_LIVED_JVM_OPTIONS
    assert run_java_options(both, NO_USER_OPTIONS)[0] == ""
    remote = _config(tmp_path, spark={"spark.sql.warehouse.dir": "s3a://bucket/wh"})
    assert query_java_options(remote, NO_USER_OPTIONS) == (
        "",
        "the bytes of tables in the warehouse could not be counted (spark.sql.warehouse.dir 's3a://bucket/wh' is "
        "not a local folder): the JVM's default options",
    )


def _cdc_query_jvm(work: Path, *args: str) -> tuple[subprocess.CompletedProcess, list[str]]:
    """A query command as a user runs it, and its JVM's command line, read while it runs."""
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable}
    env.pop("JDK_JAVA_OPTIONS", None)  # the suite's own
    proc = start_cdc(work, env, *args, "--config", str(work / "cdc.yml"))
    command_lines = _jvm_command_lines_while_it_runs(proc)
    stdout, stderr = proc.communicate(timeout=600)
    assert command_lines, "the command's JVM was never seen"
    return subprocess.CompletedProcess(proc.args, proc.returncode, stdout, stderr), command_lines[0]


def test_a_query_command_on_a_small_warehouse_starts_its_jvm_with_the_short_lived_options(tmp_path):
    """Real ``cdc sql`` runs: on an empty warehouse the short-lived options; once its
    tables hold more than ``small_query_max_bytes``, the JVM's defaults. The rows are the
    same either way."""
    config = _config(tmp_path, small_query_max_bytes=1_000)
    create = "create table default.numbers using parquet as select id, repeat('x', 100) as pad from range(5000)"
    created, jvm = _cdc_query_jvm(tmp_path, "sql", create)
    assert created.returncode == 0, created.stderr[-3000:]
    assert "cdc sql: 0 bytes of tables in the warehouse, at most small_query_max_bytes (1,000)" in created.stderr
    assert all(option in jvm for option in SHORT_LIVED_JVM_OPTIONS.split()), jvm
    assert warehouse_bytes(config) > 1_000
    counted, jvm = _cdc_query_jvm(tmp_path, "sql", "select count(*) as n, sum(id) as s from default.numbers")
    assert counted.returncode == 0, counted.stderr[-3000:]
    assert counted.stdout == '{"n": 5000, "s": 12497500}\n'
    assert f"cdc sql: {warehouse_bytes(config):,} bytes of tables in the warehouse, more than" in counted.stderr
    assert not any(option in jvm for option in SHORT_LIVED_JVM_OPTIONS.split()), jvm
