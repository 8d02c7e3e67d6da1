"""scripts/setup.sh refuses, before any work, a project folder whose path .venv cannot live
in, and a ``JAVA_HOME`` that names no Java 17 or newer.

Two tools read characters of .venv's path as syntax. setuptools reads ``$name`` and
braces as variables: the editable install failed after 20 s with 40 lines ending in
``ValueError: invalid variable 'x'`` (clones in ``main $x`` and ``p{x}``). pip's launch
scripts (``.venv/bin/cdc``, ``dbt``) quote a path with a space in ``"..."`` for
``/bin/sh``: a clone in ``p$1 b`` set up, and then its ``dbt`` ran ``p b/.venv/bin/python``,
not found. Clones in ``main q'x`` (a space, a quote) and ``ünï cödé`` set up and ran the
demo. Each case runs a copy of the script with ``PYTHON=/bin/false``: a folder the script
takes gets as far as the Python check, so no case creates a virtual environment.

Spark starts its JVM from ``JAVA_HOME`` when it is set (pyspark's ``spark-class``), else
from the ``java`` on ``PATH``; the set-up checks that one. A ``JAVA_HOME`` of Java 11 with
Java 17 on ``PATH`` got through the check and failed later, in the class archive's run
and in every command (``UnsupportedClassVersionError``). Those cases run the script with
this interpreter (Python 3.11) and stop at the Java check; the one that passes it stops
at the install, a fake ``.venv/bin/python`` that fails.
"""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from udfs.class_archive import launched_java_home

SETUP_SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "setup.sh"


def _run_setup_in(folder: Path, **env: str) -> subprocess.CompletedProcess:
    (folder / "scripts").mkdir(parents=True)
    shutil.copy(SETUP_SCRIPT, folder / "scripts" / "setup.sh")
    return subprocess.run(
        ["bash", str(folder / "scripts" / "setup.sh")],
        env={"PATH": "/usr/bin:/bin", "PYTHON": "/bin/false", **env},
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.mark.parametrize(
    "name",
    ["main $x", "main ${x}", "main {x}", "main {", "main }", "p$1 b", "ends in $", "a`b", 'a"b', "a\\b", "a\nb"],
)
def test_a_folder_setuptools_or_pips_launch_scripts_read_as_syntax_is_refused(tmp_path, name):
    folder = tmp_path / name
    result = _run_setup_in(folder)
    assert result.returncode == 1
    assert result.stderr.startswith(f"setup: the project's folder {folder} holds "), result.stderr
    assert "clone the project into a folder without them" in result.stderr
    assert not (folder / ".venv").exists()


@pytest.mark.parametrize("name", ["main q'x", "ünï cödé"])
def test_spaces_quotes_and_non_ascii_letters_get_past_the_check(tmp_path, name):
    result = _run_setup_in(tmp_path / name)
    assert result.returncode == 1
    assert result.stderr.startswith("setup: Python 3.11 is required"), result.stderr


def _java_home(home: Path, version_line: str | None) -> Path:
    """A folder for ``JAVA_HOME`` whose ``bin/java -version`` prints ``version_line`` (none
    when ``None``)."""
    (home / "bin").mkdir(parents=True)
    if version_line is not None:
        java = home / "bin" / "java"
        java.write_text(f"#!/bin/sh\necho '{version_line}' >&2\n")
        java.chmod(0o755)
    return home


@pytest.mark.parametrize(
    ("version_line", "said"),
    [
        ('openjdk version "11.0.22" 2024-01-16', "is Java 11"),
        ('java version "1.8.0_402"', "is Java 8"),
        (None, "is missing or prints no Java version"),
    ],
)
def test_a_java_home_of_an_older_or_no_java_is_refused(tmp_path, version_line, said):
    """Java 17 is on ``PATH`` (``/usr/bin``) all along: ``JAVA_HOME`` decides, and the
    set-up installs nothing (a Java on ``PATH`` would not be the one Spark starts)."""
    java_home = _java_home(tmp_path / "jdk", version_line)
    folder = tmp_path / "project"
    result = _run_setup_in(folder, PYTHON=sys.executable, JAVA_HOME=str(java_home))
    assert result.returncode == 1
    assert result.stderr == (
        f"setup: JAVA_HOME is {java_home}, whose bin/java {said}; Spark starts its JVM from"
        " JAVA_HOME and needs Java 17 or newer: point JAVA_HOME at a JDK/JRE 17 or newer, or unset it.\n"
    )
    assert result.stdout == "" and not (folder / ".venv").exists()


def test_a_java_home_of_java_17_or_newer_gets_past_the_check(tmp_path):
    folder = tmp_path / "project"
    fake_python = folder / ".venv" / "bin" / "python"
    fake_python.parent.mkdir(parents=True)
    fake_python.write_text("#!/bin/sh\nexit 3\n")
    fake_python.chmod(0o755)
    for name in ("pyproject.toml", "constraints.txt"):
        (folder / name).write_text("")
    result = _run_setup_in(folder, PYTHON=sys.executable, JAVA_HOME=str(launched_java_home()))
    assert result.returncode == 1
    assert "setup: pip install failed" in result.stderr and "JAVA_HOME" not in result.stderr, result.stderr
