"""The archive of Spark's classes (``udfs/class_archive.py``): made by the set-up, mapped
by every session ``build_session`` starts, and left unused, without a word, where the
JVM cannot map it or it is turned off. No test skips: on a JDK without a class-data
sharing archive of its own (which the dynamic one sits on) the set-up cannot make one,
says so, and these tests fail; Debian's and Adoptium's JDK 17 have it."""

from __future__ import annotations

import json
import shlex
import subprocess
from pathlib import Path

import pytest
from own_session import run_script_and_output

from udfs.class_archive import (
    ARCHIVE_ENV,
    archive_path,
    archive_usable,
    class_archive_java_options,
    facts_path,
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


@pytest.mark.parametrize("archive", ["off", "not an archive", "another class path's"])
def test_no_archive_or_one_the_jvm_cannot_map_leaves_the_session_as_without_it(tmp_path, archive):
    """Turned off (``CDC_CLASS_ARCHIVE`` empty), a file that is no archive, or an archive
    the JVM made for another class path (as one left from other jars): the session
    starts and answers, its classes come from the jars, and nothing is said about it
    (the JVM warns of the last unless told not to)."""
    path = tmp_path / "classes.jsa"
    if archive == "not an archive":
        path.write_bytes(b"not a class archive\n" * 100)
    elif archive == "another class path's":
        # Spark's launcher alone, its main class run (it fails without arguments, after
        # loading its classes, which the archive then holds with that class path)
        facts = json.loads(facts_path(archive_path()).read_text())
        (launcher,) = [jar for jar in facts["class_path"].split(":") if "/spark-launcher_" in jar]
        java = Path(facts["java_home"]) / "bin" / "java"
        dump = [str(java), f"-XX:ArchiveClassesAtExit={path}", "-cp", launcher, "org.apache.spark.launcher.Main"]
        subprocess.run(dump, capture_output=True, timeout=120)
    if archive != "off":
        assert path.is_file() and not archive_usable(path)
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
    monkeypatch.setenv(ARCHIVE_ENV, str(spaced))
    options = shlex.split(class_archive_java_options())
    assert options[0] == f"-XX:SharedArchiveFile={spaced}" and "-Xlog:cds=off" in options
    # the JVM reads ':' there as the separator of two archives: such a path is not named
    colon = tmp_path / "a:b.jsa"
    colon.write_bytes(b"x")
    monkeypatch.setenv(ARCHIVE_ENV, str(colon))
    assert class_archive_java_options() == ""
