"""A user's driver JVM options (``spark.driver.extraJavaOptions`` in ``cdc.yml``'s
``spark:``) are added to the session's own, not set instead of them
(``udfs.session.driver_java_options``).

The session sets Derby's home (its ``derby.log`` in the warehouse) and the ``cdc``
commands' logging through that one setting; a user's value set as is dropped both. The
JVM takes the last of two same options, so the user's come after the session's and win.
The options are read when the JVM starts: the session here is one of its own, in a
process of its own (the shared one has started already).
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pyspark
import pytest
from own_session import REPO, run_script

from udfs.session import (
    LOG4J2,
    driver_java_options,
    spark_defaults_file,
    spark_properties,
    submitted_driver_java_options,
    submitted_properties,
    utf8_locale,
)

#: a session built as ``cdc run`` builds it, with the user's driver options; the JVM's
#: system properties those options set, and where Derby wrote its log once the metastore
#: started
SCRIPT = r"""
import json, sys
from pathlib import Path
from udfs.session import DRIVER_JAVA_OPTIONS, build_session

warehouse, user_options = Path(sys.argv[1]), sys.argv[2]
spark = build_session(warehouse, master="local[1]", extra_conf={DRIVER_JAVA_OPTIONS: user_options})
spark.sql("create database if not exists d")  # starts the metastore, and so Derby
system = spark._jvm.java.lang.System
print("RESULT " + json.dumps({
    name: system.getProperty(name)
    for name in (
        "derby.system.home", "log4j2.configurationFile", "cdc.test.user_option", "cdc.test.submitted",
        "cdc.test.from_file", "cdc.test.from_defaults",
    )
}))
"""


def test_the_sessions_options_come_first_and_the_users_after():
    assert driver_java_options(Path("/wh")) == f"-Dderby.system.home=/wh -Dlog4j2.configurationFile={LOG4J2}"
    assert driver_java_options(Path("/wh"), "") == driver_java_options(Path("/wh"))
    assert driver_java_options(Path("/wh"), None) == driver_java_options(Path("/wh"))
    assert driver_java_options(Path("/wh"), "  -Xss4m -Da=b ") == (
        f"-Dderby.system.home=/wh -Dlog4j2.configurationFile={LOG4J2} -Xss4m -Da=b"
    )


def test_the_sessions_options_are_quoted_as_the_launcher_splits_them():
    # Spark's launcher splits the value at blanks outside quotes, as a shell does
    # (shlex.split here); a path with none of a shell's specials is written as it is
    awkward = Path('/My Projects/it\'s "ü" wh')
    options = shlex.split(driver_java_options(awkward, "-Da=b", "-Xss4m"))
    assert options == [f"-Dderby.system.home={awkward}", f"-Dlog4j2.configurationFile={LOG4J2}", "-Xss4m", "-Da=b"]
    assert driver_java_options(Path("/wh/x_1.cdc")).startswith("-Dderby.system.home=/wh/x_1.cdc ")


def test_a_warehouse_whose_path_holds_blanks_and_quotes_starts_the_session(tmp_path):
    """A project in ``My Projects/``: the JVM started (before, the path's second word
    was taken for its main class) and Derby's home is the whole path."""
    warehouse = tmp_path / "My Projects" / "it's ü" / ".cdc"
    properties = run_script(SCRIPT, str(warehouse), "", cwd=tmp_path)
    assert properties["derby.system.home"] == str(warehouse)
    assert properties["log4j2.configurationFile"] == LOG4J2
    assert (warehouse / "derby.log").exists() and (warehouse / "metastore_db").is_dir()


#: a session started in the environment given; the JVM's charsets, and a table
#: partitioned by non-ASCII names written and read back
LOCALE_SCRIPT = r"""
import json, os, sys
from pathlib import Path
from udfs.session import build_session

warehouse = Path(sys.argv[1])
spark = build_session(warehouse, master="local[1]")
system = spark._jvm.java.lang.System
target = warehouse / "by_name"
names = spark.createDataFrame([("tü", 1), ("tö", 2), ("t日本", 3)], "t string, n int")
names.write.partitionBy("t").parquet(str(target))
print("RESULT " + json.dumps({
    "names": system.getProperty("sun.jnu.encoding"),
    "text": system.getProperty("file.encoding"),
    "rows": sorted([r.t, r.n] for r in spark.read.parquet(str(target)).collect()),
    "folders": sorted(p.name for p in target.iterdir() if p.name.startswith("t=")),
    "caller": os.environ.get("LC_ALL"),
}))
"""


@pytest.mark.parametrize(
    ("environ", "changes"),
    [
        ({"LANG": "C.UTF-8"}, {}),
        ({"LANG": "en_US.utf8", "LC_CTYPE": ""}, {}),
        ({"LC_ALL": "de_DE.UTF-8", "LANG": "C"}, {}),
        ({}, {"LC_CTYPE": "C.UTF-8"}),
        ({"LANG": "C"}, {"LC_CTYPE": "C.UTF-8"}),
        ({"LANG": "C.UTF-8", "LC_CTYPE": "POSIX"}, {"LC_CTYPE": "C.UTF-8"}),
        ({"LC_ALL": "C", "LANG": "C.UTF-8"}, {"LC_ALL": "C.UTF-8"}),
        ({"LC_ALL": "", "LANG": "de_DE.ISO-8859-1"}, {"LC_CTYPE": "C.UTF-8"}),
    ],
)
def test_the_jvm_is_started_in_a_utf8_locale_changing_only_the_charset(environ, changes):
    assert utf8_locale(environ) == changes


def test_a_session_started_in_the_c_locale_takes_non_ascii_names(tmp_path):
    """Started with ``LC_ALL=C`` (a CI script, a container that sets it), the JVM took
    file names as ASCII: a non-ASCII warehouse folder failed its start, a non-ASCII
    partition value (a table's name in the changelog) its write."""
    warehouse = tmp_path / "ü" / ".cdc"
    result = run_script(LOCALE_SCRIPT, str(warehouse), cwd=tmp_path, env={"LC_ALL": "C", "LANG": "C"})
    assert (result["names"], result["text"]) == ("UTF-8", "UTF-8")
    assert result["rows"] == [["tö", 2], ["tü", 1], ["t日本", 3]]
    assert result["folders"] == ["t=tö", "t=tü", "t=t日本"]
    assert result["caller"] == "C", "the process's own environment is as it was"


def test_a_users_driver_options_are_added_to_the_sessions_own(tmp_path):
    warehouse = tmp_path / "warehouse"
    derby_home = tmp_path / "user-derby-home"
    derby_home.mkdir()
    # one option of the user's own, and one the session sets too (Derby's home)
    user_options = f"-Dcdc.test.user_option=kept -Dderby.system.home={derby_home}"
    properties = run_script(SCRIPT, str(warehouse), user_options, cwd=tmp_path)
    # the user's option is there, and the session's logging, which the user did not set
    assert properties["cdc.test.user_option"] == "kept"
    assert properties["log4j2.configurationFile"] == LOG4J2
    # of the two Derby homes, the user's, given last, wins; Derby writes its log there
    assert properties["derby.system.home"] == str(derby_home)
    assert (derby_home / "derby.log").exists()
    assert not (tmp_path / "derby.log").exists()
    assert not (warehouse / "derby.log").exists()


def test_the_driver_options_spark_submit_is_given_are_taken_out_of_its_arguments():
    """Each way spark-submit takes the driver's extra options; the last one given is the
    one it keeps. Other arguments, and other settings' values, stay as they were."""
    extra = "spark.driver.extraJavaOptions"
    for args, value in (
        ("--driver-java-options '-Da=b -Dc=d' pyspark-shell", "-Da=b -Dc=d"),
        ("--driver-java-options=-Da=b pyspark-shell", "-Da=b"),
        (f"--conf {extra}=-Da=b pyspark-shell", "-Da=b"),
        (f"-c '{extra}=-Da=b -Dx=y=z' pyspark-shell", "-Da=b -Dx=y=z"),
        (f"--conf={extra}=-Da=b pyspark-shell", "-Da=b"),
    ):
        assert submitted_driver_java_options(args) == ("pyspark-shell", value), args
    both = f"--master local[1] --conf {extra}=-Dfirst=1 --jars 'a b.jar' --driver-java-options -Dlast=1 pyspark-shell"
    assert submitted_driver_java_options(both) == ("--master 'local[1]' --jars 'a b.jar' pyspark-shell", "-Dlast=1")
    for unchanged in (
        "--conf spark.driver.defaultJavaOptions=-Da=b pyspark-shell",  # spark-submit puts these first itself
        "--conf 'spark.app.name=--driver-java-options' pyspark-shell",
        "--driver-java-options",  # no value: spark-submit's own error
        "--driver-java-options '-Da=b",  # cannot be split: pyspark's own error
        "",
    ):
        assert submitted_driver_java_options(unchanged) == (unchanged, None), unchanged


def test_the_driver_options_of_pyspark_submit_args_are_added_to_the_sessions_own(tmp_path):
    """spark-submit keeps one value of the driver's extra options, the last, and pyspark
    passes ``PYSPARK_SUBMIT_ARGS`` after the session's settings: a value there replaced
    the session's own options (Derby's log in the current folder, Spark's start-up INFO
    lines) and cdc.yml's. Now it comes after both, and its options win."""
    warehouse = tmp_path / "warehouse"
    derby_home = tmp_path / "submitted-derby-home"
    derby_home.mkdir()
    submitted = f"-Dcdc.test.submitted=yes -Dderby.system.home={derby_home}"
    env = {"PYSPARK_SUBMIT_ARGS": f"--driver-java-options '{submitted}' pyspark-shell"}
    properties = run_script(SCRIPT, str(warehouse), "-Dcdc.test.user_option=kept", cwd=tmp_path, env=env)
    assert properties["cdc.test.submitted"] == "yes"
    assert properties["cdc.test.user_option"] == "kept"  # cdc.yml's are kept too
    assert properties["log4j2.configurationFile"] == LOG4J2
    assert properties["derby.system.home"] == str(derby_home)
    assert (derby_home / "derby.log").exists()
    assert not (tmp_path / "derby.log").exists()


def test_the_properties_files_spark_submit_reads_are_those_of_its_arguments(tmp_path):
    """Without ``--properties-file``, ``spark-defaults.conf`` of ``SPARK_CONF_DIR``; with
    one (the last given), that file alone; with ``--load-spark-defaults`` too, that file
    over ``spark-defaults.conf``."""
    (tmp_path / "spark-defaults.conf").write_text("# defaults\nspark.a 1\nspark.b: 2\n")
    (tmp_path / "mine.conf").write_text("spark.b=3\n! a comment\nspark.c   4 and more\n")
    (tmp_path / "other.conf").write_text("spark.d 5\n")
    environ = {"SPARK_CONF_DIR": str(tmp_path)}
    assert submitted_properties(["pyspark-shell"], environ) == {"spark.a": "1", "spark.b": "2"}
    mine = ["--properties-file", str(tmp_path / "mine.conf")]
    assert submitted_properties([*mine, "pyspark-shell"], environ) == {"spark.b": "3", "spark.c": "4 and more"}
    assert submitted_properties([f"--properties-file={tmp_path / 'mine.conf'}"], environ)["spark.b"] == "3"
    assert submitted_properties([*mine, "--load-spark-defaults"], environ) == {
        "spark.a": "1",
        "spark.b": "3",
        "spark.c": "4 and more",
    }
    assert submitted_properties([*mine, "--properties-file", str(tmp_path / "other.conf")], environ) == {"spark.d": "5"}
    assert submitted_properties([], {"SPARK_CONF_DIR": str(tmp_path / "none")}) == {}
    # without SPARK_CONF_DIR, $SPARK_HOME/conf's; pip's pyspark: its own folder is SPARK_HOME
    assert spark_defaults_file({"SPARK_HOME": str(tmp_path)}) == tmp_path / "conf" / "spark-defaults.conf"
    assert spark_defaults_file({}) == Path(pyspark.__file__).parent / "conf" / "spark-defaults.conf"


def test_the_driver_options_of_a_properties_file_are_added_to_the_sessions_own(tmp_path):
    """The session's own options, given as a setting, replaced those a properties file
    sets (spark-submit takes a setting over a file's): a user's options in
    ``spark-defaults.conf`` or a ``--properties-file`` never reached the JVM. Now they come
    after the session's and before cdc.yml's (whose same option wins); a file
    spark-submit does not read (the defaults beside a ``--properties-file``) adds
    nothing."""
    conf_dir = tmp_path / "conf"
    conf_dir.mkdir()
    extra = "spark.driver.extraJavaOptions"
    # over two lines; its second option is cdc.yml's too, whose value comes later and wins
    (conf_dir / "spark-defaults.conf").write_text(
        f"{extra} -Dcdc.test.from_defaults=yes \\\n    -Dcdc.test.user_option=from-the-file\n"
    )
    derby_home = tmp_path / "file-derby-home"
    derby_home.mkdir()
    (tmp_path / "mine.conf").write_text(f"{extra}=-Dcdc.test.from_file=yes -Dderby.system.home={derby_home}\n")
    warehouse = tmp_path / "warehouse"
    env = {"SPARK_CONF_DIR": str(conf_dir)}
    properties = run_script(SCRIPT, str(warehouse), "-Dcdc.test.user_option=kept", cwd=tmp_path, env=env)
    assert properties["cdc.test.from_defaults"] == "yes"
    assert properties["cdc.test.user_option"] == "kept"
    assert properties["log4j2.configurationFile"] == LOG4J2
    assert properties["derby.system.home"] == str(warehouse)  # the session's own, the file not naming one
    env["PYSPARK_SUBMIT_ARGS"] = f"--properties-file {tmp_path / 'mine.conf'} pyspark-shell"
    properties = run_script(SCRIPT, str(warehouse), "-Dcdc.test.user_option=kept", cwd=tmp_path, env=env)
    assert properties["cdc.test.from_file"] == "yes"
    assert properties["cdc.test.from_defaults"] is None
    assert properties["cdc.test.user_option"] == "kept"
    assert properties["log4j2.configurationFile"] == LOG4J2
    assert properties["derby.system.home"] == str(derby_home)
    assert (derby_home / "derby.log").exists()


#: java.util.Properties.load over a UTF-8 file, as spark-submit's launcher reads one: each
#: key and value printed as the hex of its chars, so blanks and escapes survive
PROPERTIES_LOADER = """
import java.io.*; import java.nio.charset.StandardCharsets; import java.util.*;
public class LoadProperties {
    static String hex(String s) {
        StringJoiner j = new StringJoiner(",");
        s.chars().forEach(c -> j.add(Integer.toHexString(c)));
        return j.toString();
    }
    public static void main(String[] args) throws Exception {
        Properties p = new Properties();
        try (Reader r = new InputStreamReader(new FileInputStream(args[0]), StandardCharsets.UTF_8)) { p.load(r); }
        for (String k : p.stringPropertyNames()) System.out.println(hex(k) + " " + hex(p.getProperty(k)));
    }
}
"""


def test_a_properties_file_is_read_as_java_reads_it(tmp_path):
    """Continued lines (a long option list over several), escapes, comments, blanks and
    line ends as ``java.util.Properties`` takes them: the file's options now reach the
    JVM through the session's own setting, so a cut or garbled value would break it."""
    text = (
        "# comment\n"
        "   ! another comment\n"
        "spark.driver.extraJavaOptions -Da=b \\\n"
        "    -Dc=d \\\n"
        "# continued, so not a comment\n"
        "key\\ with\\:colon = v\\tx\\=y\n"
        "unicode \\u00e9t\\u00e9 Zoë\n"
        "colon:value\n"
        "\tequals =  value\r\n"
        "blanks     value with  trailing  \n"
        "only.key\n"
        "\n"
        "even.backslashes = a\\\\\n"
        "next = after\r"
        "ends.continued \\"
    )
    path = tmp_path / "spark-defaults.conf"
    path.write_text(text, encoding="utf-8", newline="")
    (tmp_path / "LoadProperties.java").write_text(PROPERTIES_LOADER)
    java = subprocess.run(
        ["java", str(tmp_path / "LoadProperties.java"), str(path)], capture_output=True, text=True, check=True
    )

    def chars(codes: str) -> str:
        return "".join(chr(int(code, 16)) for code in codes.split(",") if code)

    loaded = dict(tuple(map(chars, line.split(" "))) for line in java.stdout.splitlines())
    assert loaded["spark.driver.extraJavaOptions"] == "-Da=b -Dc=d # continued, so not a comment"  # Java's reading
    assert spark_properties(path) == loaded
    assert len(loaded) == 10


def test_a_properties_file_java_refuses_is_refused_naming_it(tmp_path):
    """A ``\\u`` escape without four hex digits: Java's loader refuses the file, and so
    spark-submit ("Malformed \\uxxxx encoding.", without the file's name). The reading
    here refuses it too, naming the file, and a session does not start on it."""
    (tmp_path / "LoadProperties.java").write_text(PROPERTIES_LOADER)
    conf_dir = tmp_path / "conf"
    conf_dir.mkdir()
    path = conf_dir / "spark-defaults.conf"
    for value in ("-Da=\\u12G4 -Db=c", "-Da=\\u12"):
        path.write_text(f"spark.app.name cdc\nspark.driver.extraJavaOptions {value}\n")
        java = subprocess.run(
            ["java", str(tmp_path / "LoadProperties.java"), str(path)], capture_output=True, text=True
        )
        assert java.returncode != 0
        assert "Malformed \\uxxxx encoding." in java.stderr
        with pytest.raises(ValueError, match=f"^{re.escape(str(path))}: a malformed \\\\uxxxx escape in "):
            spark_properties(path)
    env = {key: value for key, value in os.environ.items() if key != "PYSPARK_SUBMIT_ARGS"}
    session = subprocess.run(
        [sys.executable, "-c", f"from udfs.session import build_session; build_session({str(tmp_path / 'wh')!r})"],
        env={**env, "SPARK_CONF_DIR": str(conf_dir), "PYTHONPATH": str(REPO), "PYSPARK_PYTHON": sys.executable},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert session.returncode != 0
    assert session.stderr.rstrip().splitlines()[-1] == (
        f"ValueError: {path}: a malformed \\uxxxx escape in '-Da=\\\\u12', which Java (so spark-submit) refuses"
    )
