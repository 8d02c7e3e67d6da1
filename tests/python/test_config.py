"""``cdc.yml`` validation (pure, no Spark): every problem is named before any work."""

from __future__ import annotations

import os

import pytest
import yaml

from udfs.config import ConfigError, load_config
from udfs.formats import FORMATS


def _write(tmp_path, feeds, tables=None, **extra):
    (tmp_path / "landing").mkdir(exist_ok=True)
    path = tmp_path / "cdc.yml"
    path.write_text(yaml.safe_dump({"feeds": feeds, "tables": tables or {}, **extra}))
    return path


def feed(fmt, **kw):
    return {"name": "f", "format": fmt, "path": "landing", **kw}


@pytest.mark.parametrize("fmt", sorted(FORMATS))
def test_every_format_loads_with_its_default_framing(tmp_path, fmt):
    config = load_config(_write(tmp_path, [feed(fmt)], {"t": {"key": ["id"]}}))
    assert config.feeds[0].framing == FORMATS[fmt].default_framing


@pytest.mark.parametrize(
    ("bad_feed", "tables", "message"),
    [
        (feed("nope"), {}, "unknown format 'nope'"),
        (feed("debezium_json", framing="csv"), {}, "does not come in framing 'csv'"),
        (feed("debezium_json", path="missing"), {}, "does not exist"),
        (feed("debezium_json"), {"t": {}}, "table 't' has no key"),
        (feed("lindorm_json", options={"table_kind": "hbase2"}), {}, "bad options for format lindorm_json"),
        (feed("dts_canal_json", options={"table_include": "(unclosed"}), {}, "bad options for format dts_canal_json"),
        (feed("debezium_json", options={"nope": 1}), {}, "unknown setting(s) nope"),
        (feed("debezium_json"), {"t": {"key": ["id"], "columns": {"id": "integr"}}}, "not a Spark SQL type"),
    ],
)
def test_wrong_config_names_the_problem(tmp_path, bad_feed, tables, message):
    with pytest.raises(ConfigError) as err:
        load_config(_write(tmp_path, [bad_feed], tables))
    assert message in str(err.value)


def test_feeds_that_would_read_the_same_files_are_refused(tmp_path):
    """A file listed by two feeds was decoded and counted twice, and the run failed on
    ``unique_stg_landing__files_source_file``: now refused before any work."""
    (tmp_path / "landing" / "pg" / "_parked").mkdir(parents=True)
    inner = feed("debezium_json", path="landing/pg")
    for outer, where in (("landing", "is inside the folder of"), ("landing/pg", "is the folder of")):
        feeds = [dict(inner, name="pg"), feed("debezium_json", path=outer) | {"name": "all"}]
        with pytest.raises(ConfigError) as err:
            load_config(_write(tmp_path, feeds))
        inner_path, outer_name, outer_path = tmp_path / "landing" / "pg", "all", tmp_path / outer
        if outer == "landing/pg":  # the same folder: named as the first feed's
            outer_name, outer_path = "pg", inner_path
        assert f"feeds 'pg' and 'all' would read the same files: {inner_path} {where} feed '{outer_name}' " in str(
            err.value
        )
        assert f"({outer_path}); give each feed a folder of its own" in str(err.value)
    # a folder named with a leading _ (or .) is not listed: a feed of its own may read it
    parked = [dict(inner, name="pg"), feed("debezium_json", path="landing/pg/_parked") | {"name": "parked"}]
    assert [f.name for f in load_config(_write(tmp_path, parked)).feeds] == ["pg", "parked"]


def test_a_warehouse_its_feeds_would_read_is_refused(tmp_path):
    with pytest.raises(ConfigError) as err:
        load_config(_write(tmp_path, [feed("debezium_json")], warehouse="landing/warehouse"))
    assert (
        f"the warehouse {tmp_path / 'landing' / 'warehouse'} is inside the folder of feed 'f' ({tmp_path / 'landing'})"
        in str(err.value)
    )
    for hidden in ("landing/.cdc", "landing/_cdc"):
        assert load_config(_write(tmp_path, [feed("debezium_json")], warehouse=hidden)).warehouse == tmp_path / hidden


def test_a_feed_on_the_config_files_folder_is_refused(tmp_path):
    """``path: .`` would read ``cdc.yml`` (and whatever else the project's folder holds)
    as landing files, and quarantine them every run."""
    with pytest.raises(ConfigError) as err:
        load_config(_write(tmp_path, [feed("debezium_json", path=".")]))
    assert (
        f"feed 'f' would read the configuration file {tmp_path / 'cdc.yml'} as a landing file (it is inside the "
        f"feed's folder {tmp_path})" in str(err.value)
    )
    (tmp_path / "project").mkdir()
    with pytest.raises(ConfigError, match="would read the configuration file"):  # a folder above the file's too
        load_config(_write(tmp_path, [feed("debezium_json", path="..")]).rename(tmp_path / "project" / "cdc.yml"))
    # a name with a leading _ (or .) is not listed, and a feed beside the file reads none of it
    hidden = _write(tmp_path, [feed("debezium_json", path=".")]).rename(tmp_path / "_cdc.yml")
    assert load_config(hidden).feeds[0].path == tmp_path
    assert load_config(_write(tmp_path, [feed("debezium_json")])).feeds[0].path == tmp_path / "landing"


def test_paths_and_spark_values_take_environment_variables_and_the_home_folder(tmp_path, monkeypatch):
    """One cdc.yml for a laptop, CI and production: ``${NAME}`` is the environment's,
    ``~`` at a path's start the home folder. ``$${NAME}`` is the text ``${NAME}``, and
    Spark's and Hive's own ``${env:X}`` / ``${hiveconf:x}`` are left to them."""
    (tmp_path / "home" / "feeds" / "pg").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("CDC_TEST_ROOT", str(tmp_path / "srv"))
    monkeypatch.setenv("CDC_TEST_FEED", "pg")
    monkeypatch.setenv("CDC_TEST_MEMORY", "3g")
    spark = {
        "spark.driver.memory": "${CDC_TEST_MEMORY}",
        "x.literal": "$${CDC_TEST_MEMORY}",
        "x.spark_syntax": "${env:CDC_TEST_MEMORY} ${hiveconf:x}",
        "x.flag": True,
    }
    path = _write(tmp_path, [feed("debezium_json", path="~/feeds/${CDC_TEST_FEED}")], spark=spark)
    path.write_text(path.read_text() + "warehouse: ${CDC_TEST_ROOT}/wh\n")
    config = load_config(path)
    assert config.feeds[0].path == tmp_path / "home" / "feeds" / "pg"
    assert config.warehouse == tmp_path / "srv" / "wh"
    assert config.spark_conf == {
        "spark.driver.memory": "3g",
        "x.literal": "${CDC_TEST_MEMORY}",
        "x.spark_syntax": "${env:CDC_TEST_MEMORY} ${hiveconf:x}",
        "x.flag": "true",
    }
    # a ~ inside a path is a folder's name, as in a shell
    (tmp_path / "landing" / "~").mkdir()
    assert load_config(_write(tmp_path, [feed("debezium_json", path="landing/~")])).feeds[0].path == (
        tmp_path / "landing" / "~"
    )


@pytest.mark.parametrize("state", ["not set", "set but empty"])
def test_an_environment_variable_not_set_or_empty_is_named(tmp_path, monkeypatch, state):
    """An empty value would silently move a path (``${ROOT}/landing`` to ``/landing``)."""
    if state == "not set":
        monkeypatch.delenv("CDC_TEST_UNSET", raising=False)
    else:
        monkeypatch.setenv("CDC_TEST_UNSET", "")
    for config, setting in (
        ({"feeds": [feed("debezium_json", path="${CDC_TEST_UNSET}/landing")]}, "feed 'f': path"),
        ({"feeds": [feed("debezium_json")], "warehouse": "${CDC_TEST_UNSET}"}, "warehouse"),
        ({"feeds": [feed("debezium_json")], "spark": {"a.b": "x${CDC_TEST_UNSET}"}}, "spark: a.b"),
    ):
        with pytest.raises(ConfigError) as err:
            load_config(_write(tmp_path, **config))
        assert str(err.value) == (
            f"{tmp_path / 'cdc.yml'}: {setting} uses the environment variable CDC_TEST_UNSET, which is {state}"
        )


@pytest.mark.parametrize("folder", ["a:b", "a[1]", "{a,b}", "a*", "a?", "a\\b"])
def test_a_warehouse_whose_path_spark_cannot_take_is_refused(tmp_path, folder):
    with pytest.raises(ConfigError) as err:
        load_config(_write(tmp_path, [feed("debezium_json")], warehouse=f"wh/{folder}/.cdc"))
    assert f"the warehouse {tmp_path / 'wh' / folder / '.cdc'} holds" in str(err.value)
    assert "set warehouse: to a folder" in str(err.value)


@pytest.mark.parametrize(
    ("value", "folder"),
    [("tables/a[1]", "tables/a[1]"), ("/srv/a*", "/srv/a*"), ("file:///srv/a%7Bb%7D", "/srv/a{b}")],
)
def test_a_spark_warehouse_dir_whose_path_spark_cannot_take_is_refused(tmp_path, value, folder):
    """The tables' folder set in ``spark:`` is checked for the glob's special characters
    (a URL's scheme is no part of its path; an escaped character is the character). A
    ``:`` is taken there: the example ran twice with ``/tmp/.../a:b/tables``; it is the
    metastore's Derby URL, which ``warehouse:`` sets, that breaks on one."""
    spark = {"spark.sql.warehouse.dir": value}
    with pytest.raises(ConfigError) as err:
        load_config(_write(tmp_path, [feed("debezium_json")], spark=spark))
    assert f"the spark.sql.warehouse.dir {folder} holds" in str(err.value)
    assert "set spark.sql.warehouse.dir: to a folder" in str(err.value)
    for taken in ("tables/My Tables", "/srv/a:b", "file:///srv/a%20b", "hdfs://namenode:8020/warehouse"):
        config = load_config(_write(tmp_path, [feed("debezium_json")], spark={"spark.sql.warehouse.dir": taken}))
        assert config.spark_conf["spark.sql.warehouse.dir"] == taken


def test_a_warehouse_path_with_blanks_quotes_and_percent_signs_is_taken(tmp_path):
    # each of these ran the example (`cdc run`) from such a folder
    for folder in ("My Projects", "it's", "a%20b", "c#d", "ü 日本"):
        config = load_config(_write(tmp_path, [feed("debezium_json")], warehouse=f"wh/{folder}/.cdc"))
        assert config.warehouse == tmp_path / "wh" / folder / ".cdc"


def test_a_config_file_that_cannot_be_read_as_utf8_text_is_named(tmp_path):
    path = _write(tmp_path, [feed("debezium_json")])
    path.write_bytes(path.read_bytes() + b"# caf\xe9 (latin-1)\n")
    with pytest.raises(ConfigError, match=r"cdc.yml: not UTF-8 text \(byte \d+: invalid continuation byte\)"):
        load_config(path)
    with pytest.raises(ConfigError, match=f"config file {tmp_path} cannot be read: Is a directory"):
        load_config(tmp_path)
    with pytest.raises(ConfigError, match="does not exist"):
        load_config(tmp_path / "missing.yml")


def test_tables_whose_events_carry_their_key_need_no_key(tmp_path):
    for fmt, options in (("cdl_json", {}), ("dts_canal_json", {}), ("lindorm_json", {"table_kind": "hbase"})):
        load_config(_write(tmp_path, [feed(fmt, options=options)], {"t": {"columns": {"row": "string"}}}))
    with pytest.raises(ConfigError, match="has no key"):
        load_config(_write(tmp_path, [feed("lindorm_json")], {"t": {}}))


def test_spark_settings_are_text(tmp_path):
    config = load_config(
        _write(tmp_path, [feed("debezium_json")], spark={"hive.server2.authentication": "LDAP", "x.flag": True})
    )
    assert config.spark_conf == {"hive.server2.authentication": "LDAP", "x.flag": "true"}


def test_decode_task_bytes_is_a_positive_byte_count(tmp_path):
    assert load_config(_write(tmp_path, [feed("debezium_json")])).decode_task_bytes == 64 * 1024 * 1024
    assert load_config(_write(tmp_path, [feed("debezium_json")], decode_task_bytes=1000)).decode_task_bytes == 1000
    for bad in (0, -5, "64MB", True, 1.5):
        with pytest.raises(ConfigError, match="decode_task_bytes must be a positive integer"):
            load_config(_write(tmp_path, [feed("debezium_json")], decode_task_bytes=bad))


def test_long_history_versions_is_a_count_of_versions(tmp_path):
    assert load_config(_write(tmp_path, [feed("debezium_json")])).long_history_versions == 64
    assert load_config(_write(tmp_path, [feed("debezium_json")], long_history_versions=0)).long_history_versions == 0
    for bad in (-1, "64", True, 2.5):
        with pytest.raises(ConfigError, match="long_history_versions must be an integer >= 0"):
            load_config(_write(tmp_path, [feed("debezium_json")], long_history_versions=bad))


def test_compaction_settings_are_a_segment_count_and_a_fraction(tmp_path):
    config = load_config(_write(tmp_path, [feed("debezium_json")]))
    assert (config.compact_after_segments, config.compact_after_fraction) == (8, 0.5)
    config = load_config(_write(tmp_path, [feed("debezium_json")], compact_after_segments=0, compact_after_fraction=2))
    assert (config.compact_after_segments, config.compact_after_fraction) == (0, 2.0)
    assert isinstance(config.compact_after_fraction, float)
    for bad in (-1, "8", True, 2.5):
        with pytest.raises(ConfigError, match="compact_after_segments must be an integer >= 0"):
            load_config(_write(tmp_path, [feed("debezium_json")], compact_after_segments=bad))
    for bad in (-0.1, "0.5", False, None):
        with pytest.raises(ConfigError, match="compact_after_fraction must be a number >= 0"):
            load_config(_write(tmp_path, [feed("debezium_json")], compact_after_fraction=bad))


def test_dbt_threads_default_to_four_and_reach_the_dbt_command_that_runs_nodes(tmp_path, monkeypatch):
    import dbt.cli.main

    from udfs import pipeline

    calls: list[list[str]] = []

    class Runner:
        def __init__(self, callbacks=None):
            pass

        def invoke(self, args):
            calls.append(list(args))
            schemas.append(os.environ.get("CDC_SCHEMA"))
            servers.append((os.environ.get("CDC_THRIFT_HOST"), os.environ.get("CDC_THRIFT_PORT")))
            return type("Result", (), {"success": True})()

    schemas: list[str | None] = []
    servers: list[tuple[str | None, str | None]] = []
    monkeypatch.setattr(dbt.cli.main, "dbtRunner", Runner)
    monkeypatch.delenv("CDC_SCHEMA", raising=False)
    config = load_config(_write(tmp_path, [feed("debezium_json")]))
    assert config.dbt_threads == 4
    config = load_config(_write(tmp_path, [feed("debezium_json")], dbt_threads=1))
    assert config.dbt_threads == 1
    pipeline.run_dbt(config, "build")
    pipeline.run_dbt(config, "run-operation", extra=["some_macro"])
    assert pipeline.dbt_threads(load_config(_write(tmp_path, [feed("debezium_json")], dbt_threads=3)), "session") == 3
    config = load_config(_write(tmp_path, [feed("debezium_json")], dbt_threads=3))
    pipeline.run_dbt(config, "build", target="thrift")
    build, operation, thrift = calls
    # dbt's profiles read the schema from the environment, set for the call only
    assert schemas == [config.schema] * 3 and "CDC_SCHEMA" not in os.environ
    monkeypatch.setenv("CDC_SCHEMA", "the_callers")
    pipeline.run_dbt(config, "build")
    assert schemas[-1] == config.schema and os.environ["CDC_SCHEMA"] == "the_callers"
    assert build[build.index("--threads") + 1] == "1"
    assert "--threads" not in operation  # run-operation takes no --threads
    # a server named: its thrift target, its address for the profile, for the call only
    monkeypatch.delenv("CDC_THRIFT_HOST", raising=False)
    monkeypatch.setenv("CDC_THRIFT_PORT", "10000")
    pipeline.run_dbt(config, "docs generate", server=("10.0.0.9", 10123))
    docs = calls[-1]
    assert docs[:2] == ["docs", "generate"] and docs[docs.index("--target") + 1] == "thrift"
    assert servers[-1] == ("10.0.0.9", "10123")
    assert "CDC_THRIFT_HOST" not in os.environ and os.environ["CDC_THRIFT_PORT"] == "10000"
    # through a Thrift server one at a time (its shared session's temporary views)
    assert thrift[thrift.index("--threads") + 1] == "1"
    for bad in (0, -1, 65, "4", True, 2.5, None):
        with pytest.raises(ConfigError, match="dbt_threads must be an integer between 1 and 64"):
            load_config(_write(tmp_path, [feed("debezium_json")], dbt_threads=bad))


def test_keep_previous_bases_is_a_count_passed_to_dbt(tmp_path):
    from udfs.pipeline import dbt_vars

    config = load_config(_write(tmp_path, [feed("debezium_json")]))
    assert config.keep_previous_bases == 1 and dbt_vars(config)["cdc"]["keep_previous_bases"] == 1
    config = load_config(_write(tmp_path, [feed("debezium_json")], keep_previous_bases=0))
    assert config.keep_previous_bases == 0 and dbt_vars(config)["cdc"]["keep_previous_bases"] == 0
    for bad in (-1, "1", True, 1.5, None):
        with pytest.raises(ConfigError, match="keep_previous_bases must be an integer >= 0"):
            load_config(_write(tmp_path, [feed("debezium_json")], keep_previous_bases=bad))


def test_compact_changelog_after_files_is_a_count_passed_to_dbt(tmp_path):
    from udfs.pipeline import dbt_vars

    config = load_config(_write(tmp_path, [feed("debezium_json")]))
    assert config.compact_changelog_after_files == 32
    assert dbt_vars(config)["cdc"]["compact_changelog_after_files"] == 32
    config = load_config(_write(tmp_path, [feed("debezium_json")], compact_changelog_after_files=0))
    assert dbt_vars(config)["cdc"]["compact_changelog_after_files"] == 0
    for bad in (-1, "1", True, 1.5, None):
        with pytest.raises(ConfigError, match="compact_changelog_after_files must be an integer >= 0"):
            load_config(_write(tmp_path, [feed("debezium_json")], compact_changelog_after_files=bad))


def test_test_scope_is_run_or_all_and_reaches_dbt(tmp_path):
    from udfs.pipeline import dbt_vars

    config = load_config(_write(tmp_path, [feed("debezium_json")]))
    assert config.test_scope == "run" and dbt_vars(config)["cdc"]["test_scope"] == "run"
    config = load_config(_write(tmp_path, [feed("debezium_json")], test_scope="all"))
    assert config.test_scope == "all" and dbt_vars(config)["cdc"]["test_scope"] == "all"
    for bad in ("everything", True, None):
        with pytest.raises(ConfigError, match="test_scope must be one of run, all"):
            load_config(_write(tmp_path, [feed("debezium_json")], test_scope=bad))
