"""The archive of Spark's classes (``udfs/class_archive.py``): made by the set-up, mapped
by every session ``build_session`` starts, and left unused, without a word, where the
JVM cannot map it, it was made with another JDK, or it is turned off. No test skips: on
a JDK without a class-data sharing archive of its own (which the dynamic one sits on)
the set-up cannot make one, says so, and these tests fail; Debian's and Adoptium's JDK
17 have it."""

from __future__ import annotations

import json
import shlex
import subprocess
import zipfile
from pathlib import Path

import pytest
from own_session import run_script_and_output

import udfs.class_archive
from udfs.class_archive import (
    ARCHIVE_ENV,
    archive_path,
    archive_usable,
    class_archive_java_options,
    facts_path,
    jdk_identity,
    launched_class_path,
    launched_java_home,
    main,
)

# A session of its own, its JVM logging where each class came from; prints how many
# came from the class archive ("shared objects file (top)": the archive on top of the
# JDK's own) and one query's answer.
SESSION_CLASS_SOURCES = """
import json, sys
from pathlib import Path
from udfs.session import build_session
log = Path(sys.argv[1])
spark = build_session(
    Path(sys.argv[2]),
    master="local[1]",
    extra_conf={"spark.driver.extraJavaOptions": f"-Xlog:class+load=info:file={log}"},
)
answer = spark.sql("select 40 + 2").collect()[0][0]
spark.stop()
lines = log.read_text().splitlines()
print("RESULT " + json.dumps({
    "answer": answer,
    "classes": len(lines),
    "from_archive": sum("source: shared objects file (top)" in line for line in lines),
}))
"""


def _session_class_sources(tmp_path: Path, archive: str | None) -> tuple[dict, str]:
    """The script's result, and what it printed besides (the JVM's warnings go to stdout)."""
    env = {} if archive is None else {ARCHIVE_ENV: archive}
    result, stdout, stderr = run_script_and_output(
        SESSION_CLASS_SOURCES, str(tmp_path / "classes.log"), str(tmp_path / "warehouse"), cwd=tmp_path, env=env
    )
    return result, stdout + stderr


def test_the_set_up_made_an_archive_the_jvm_maps(capsys):
    """``scripts/setup.sh`` ran ``python -m udfs.class_archive``: the archive is there and
    its JVM maps it for the driver's class path; the set-up's next run leaves it."""
    archive = archive_path()
    assert archive is not None and archive.is_file(), f"no class archive at {archive}: run scripts/setup.sh"
    assert archive_usable(archive)
    assert main() == 0
    assert capsys.readouterr().out == f"class archive: {archive} is up to date\n"


def test_a_session_maps_sparks_classes_from_the_archive(tmp_path):
    got, printed = _session_class_sources(tmp_path, None)
    assert got["answer"] == 42
    # the classes of a session's start (Spark, Hive's client, Derby): most from the archive
    assert got["from_archive"] > 5000 and got["from_archive"] > got["classes"] / 2, got
    assert "cds" not in printed.lower() and "shared archive" not in printed.lower(), printed[-2000:]


@pytest.mark.parametrize("change", ["Spark's conf folder named", "another conf folder", "a driver class path"])
def test_the_set_ups_check_uses_the_class_path_a_command_starts_with_now(tmp_path, monkeypatch, capsys, change):
    """The set-up's check runs the JVM with the class path Spark's launcher gives now, not
    the one the archive was made with: after ``SPARK_CONF_DIR`` names another folder (the
    class path's first entry), or ``PYSPARK_SUBMIT_ARGS`` puts a jar before Spark's, it
    finds the archive not usable and makes one again (as a session then maps none of
    it); naming the folder Spark uses anyway changes nothing."""
    archive = archive_path()
    made_with = json.loads(facts_path(archive).read_text())["class_path"].split(":")
    if change == "Spark's conf folder named":
        monkeypatch.setenv("SPARK_CONF_DIR", made_with[0])
    elif change == "another conf folder":
        (tmp_path / "conf").mkdir()
        monkeypatch.setenv("SPARK_CONF_DIR", str(tmp_path / "conf"))
    else:  # a jar that is there (the JVM leaves out an entry that is not)
        with zipfile.ZipFile(tmp_path / "extra.jar", "w") as jar:
            jar.writestr("extra.txt", "not a class")
        monkeypatch.setenv("PYSPARK_SUBMIT_ARGS", f"--driver-class-path {tmp_path / 'extra.jar'} pyspark-shell")
    usable = change == "Spark's conf folder named"
    first = launched_class_path().split(":")[0]
    assert (first == made_with[0]) == usable, first
    assert archive_usable(archive) == usable
    made = []
    monkeypatch.setattr(udfs.class_archive, "make_class_archive", made.append)
    monkeypatch.setenv(ARCHIVE_ENV, str(archive))  # undone after the test: main() empties it to make one
    assert main() == 0
    assert made == ([] if usable else [archive])
    assert capsys.readouterr().out.endswith("is up to date\n" if usable else f"made {archive}\n")
    monkeypatch.setenv(ARCHIVE_ENV, str(archive))
    got, printed = _session_class_sources(tmp_path, None)
    assert got["answer"] == 42
    assert (got["from_archive"] > 5000) == usable, got
    assert "cds" not in printed.lower() and "shared archive" not in printed.lower(), printed[-2000:]


def _write_facts(archive: Path, jdk: list | None) -> None:
    facts_path(archive).write_text(json.dumps({"jdk": jdk}), encoding="utf-8")


@pytest.mark.parametrize("archive", ["off", "not an archive", "another class path's", "another JDK's"])
def test_no_archive_or_one_the_jvm_cannot_map_leaves_the_session_as_without_it(tmp_path, monkeypatch, archive):
    """Turned off (``CDC_CLASS_ARCHIVE`` empty), a file that is no archive, or an archive
    the JVM made for another class path (as one left from other jars), both named to the
    JVM: the session starts and answers, its classes come from the jars, and nothing is
    said about it (the JVM warns of the last unless told not to). The set-up's archive,
    which this JVM maps, with facts of another JDK: not named, the same session."""
    path = tmp_path / "classes.jsa"
    if archive == "not an archive":
        path.write_bytes(b"not a class archive\n" * 100)
    elif archive == "another JDK's":
        path.symlink_to(archive_path())
        _write_facts(path, [str(tmp_path / "jdk-25"), 1, 2])
    elif archive == "another class path's":
        # Spark's launcher alone, its main class run (it fails without arguments, after
        # loading its classes, which the archive then holds with that class path)
        facts = json.loads(facts_path(archive_path()).read_text())
        (launcher,) = [jar for jar in facts["class_path"].split(":") if "/spark-launcher_" in jar]
        java = Path(facts["java_home"]) / "bin" / "java"
        dump = [str(java), f"-XX:ArchiveClassesAtExit={path}", "-cp", launcher, "org.apache.spark.launcher.Main"]
        subprocess.run(dump, capture_output=True, timeout=120)
    if archive in ("not an archive", "another class path's"):
        _write_facts(path, jdk_identity(launched_java_home()))  # named to the JVM
    if archive != "off":
        assert path.is_file() and not archive_usable(path)
        monkeypatch.setenv(ARCHIVE_ENV, str(path))
        assert bool(class_archive_java_options()) == (archive != "another JDK's")
    got, printed = _session_class_sources(tmp_path, "" if archive == "off" else str(path))
    assert got["answer"] == 42 and got["classes"] > 5000
    assert got["from_archive"] == 0, got
    assert "cds" not in printed.lower() and "shared archive" not in printed.lower(), printed[-2000:]


def test_the_archive_options_name_an_archive_that_is_there(tmp_path, monkeypatch):
    monkeypatch.setenv(ARCHIVE_ENV, "")
    assert archive_path() is None and class_archive_java_options() == ""
    missing = tmp_path / "none.jsa"
    monkeypatch.setenv(ARCHIVE_ENV, str(missing))
    assert class_archive_java_options() == ""
    # a blank in the path is quoted for Spark's launcher, which splits the options as a shell does
    spaced = tmp_path / "my classes" / "spark.jsa"
    spaced.parent.mkdir()
    spaced.write_bytes(b"x")
    _write_facts(spaced, jdk_identity(launched_java_home()))
    monkeypatch.setenv(ARCHIVE_ENV, str(spaced))
    options = shlex.split(class_archive_java_options())
    assert options[0] == f"-XX:SharedArchiveFile={spaced}" and "-Xlog:cds=off" in options
    # the JVM reads ':' there as the separator of two archives: such a path is not named
    colon = tmp_path / "a:b.jsa"
    colon.write_bytes(b"x")
    _write_facts(colon, jdk_identity(launched_java_home()))
    monkeypatch.setenv(ARCHIVE_ENV, str(colon))
    assert class_archive_java_options() == ""


def test_the_archive_is_named_only_to_the_jdk_it_was_made_with(tmp_path, monkeypatch):
    """Found as pyspark finds its ``java`` (``JAVA_HOME``, else ``PATH``'s, links resolved):
    the set-up's JDK gets the archive; another JDK, a ``JAVA_HOME`` that is none, no
    ``java`` at all, or the same JDK upgraded in place (its runtime image changed) do
    not, and the set-up's check then finds it not usable (so it makes one again)."""
    archive = archive_path()
    home = launched_java_home()
    assert json.loads(facts_path(archive).read_text())["jdk"] == jdk_identity(home)
    named = f"-XX:SharedArchiveFile={archive}"
    link = tmp_path / "jdk-link"
    link.symlink_to(home.resolve())
    monkeypatch.setenv("JAVA_HOME", str(link))
    assert class_archive_java_options().startswith(named)

    other = tmp_path / "other-jdk"
    (other / "lib").mkdir(parents=True)
    (other / "lib" / "modules").write_bytes(b"another runtime image")
    for java_home in (other, tmp_path / "no-jdk-here"):
        monkeypatch.setenv("JAVA_HOME", str(java_home))
        assert class_archive_java_options() == "" and not archive_usable(archive)

    monkeypatch.delenv("JAVA_HOME")
    monkeypatch.setenv("PATH", str(link / "bin"))
    assert class_archive_java_options().startswith(named)
    monkeypatch.setenv("PATH", str(tmp_path))  # no java
    assert class_archive_java_options() == "" and not archive_usable(archive)

    monkeypatch.setenv("JAVA_HOME", str(home))
    upgraded = tmp_path / "upgraded.jsa"
    upgraded.symlink_to(archive)
    name, size, mtime_ns = jdk_identity(home)
    monkeypatch.setenv(ARCHIVE_ENV, str(upgraded))
    _write_facts(upgraded, [name, size, mtime_ns + 1])
    assert class_archive_java_options() == ""
    _write_facts(upgraded, [name, size, mtime_ns])
    assert class_archive_java_options() == shlex.join(
        [f"-XX:SharedArchiveFile={upgraded}", "-Xlog:cds=off", "-Xlog:cds+dynamic=off"]
    )
