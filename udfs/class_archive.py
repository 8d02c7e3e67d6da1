"""Spark's classes as a class-data-sharing archive (JDK 13+ "dynamic CDS"), so that a
driver JVM maps the ~18,000 classes a run loads from one file instead of reading,
parsing and verifying each from its jar: the JVM's start with its Hive metastore, a
table written and read, took 8-10 CPU-s instead of 17-19 here (BENCHMARKS.md, "Class
archive").

``scripts/setup.sh`` makes it (``python -m udfs.class_archive``): one ``cdc run`` of the
shipped example in a JVM started with ``-XX:ArchiveClassesAtExit``, the archive it
writes as it exits checked with ``-Xshare:on`` against the driver's class path and moved
into place; again only when the check fails (another JDK, other jars, another
``SPARK_HOME`` or ``SPARK_CONF_DIR``: the check uses the class path a command would start
with now, :func:`launched_class_path`). Every session
:func:`udfs.session.build_session` starts then names it (:func:`class_archive_java_options`),
before the run's and the user's options: a user's ``-Xshare:off`` still wins.

Where: ``<sys.prefix>/share/cdc/spark-classes.jsa`` (the virtual environment's), or
``CDC_CLASS_ARCHIVE`` (empty: none). An archive is named only to the JDK it was made
with (its facts beside it: the JDK's home, links resolved, and its runtime image's size
and time), found as pyspark finds the ``java`` it starts: a JVM given an archive it
cannot map drops the JDK's own archive too, silently. So after ``JAVA_HOME`` points at
another JDK, or the JDK is upgraded in place, commands run without it until the set-up
makes one again. Whether the JVM maps it is checked at set-up only (a JVM launch).
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

#: the archive's path, instead of the virtual environment's (empty: no archive)
ARCHIVE_ENV = "CDC_CLASS_ARCHIVE"
#: the JVM's messages about an archive (one it cannot map, the one it writes) turned off
QUIET_ARCHIVE_OPTIONS = ("-Xlog:cds=off", "-Xlog:cds+dynamic=off")
#: the example run that loads the classes a run needs
EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "shop"


def archive_path() -> Path | None:
    """The class archive's path (it may not exist yet), or ``None`` when turned off."""
    value = os.environ.get(ARCHIVE_ENV)
    if value is None:
        return Path(sys.prefix) / "share" / "cdc" / "spark-classes.jsa"
    return Path(value) if value else None


def facts_path(archive: Path) -> Path:
    """What the archive was made with: the JDK (its home, ``jdk_identity``) and the
    driver's class path."""
    return archive.with_suffix(".json")


def launched_java_home() -> Path | None:
    """The JDK a command's driver JVM starts from, as pyspark's ``spark-class`` and Spark's
    launcher find it: ``JAVA_HOME``, else the home of the ``java`` on ``PATH``."""
    home = os.environ.get("JAVA_HOME")
    if home:
        return Path(home)
    java = shutil.which("java")
    return Path(java).resolve().parent.parent if java else None


def jdk_identity(java_home: Path) -> list | None:
    """A JDK as the archive's facts record it: its home, links resolved, and its runtime
    image's size and time (an upgrade in place changes them); ``None`` when it has none."""
    home = java_home.resolve()
    try:
        image = (home / "lib" / "modules").stat()
    except OSError:
        return None
    return [str(home), image.st_size, image.st_mtime_ns]


def _facts(archive: Path) -> dict | None:
    try:
        facts = json.loads(facts_path(archive).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return facts if isinstance(facts, dict) else None


def made_for_launched_jdk(facts: dict | None) -> bool:
    """Whether an archive's facts name the JDK a command's JVM starts from now."""
    home = launched_java_home()
    identity = jdk_identity(home) if home is not None else None
    return facts is not None and identity is not None and facts.get("jdk") == identity


def class_archive_java_options() -> str:
    """The driver JVM's options that map the archive, or ``""`` when there is none or it
    was made with another JDK than the one the command starts (``made_for_launched_jdk``).

    The JVM reads a ``:`` in ``SharedArchiveFile`` as two archives' separator, so an
    archive path holding one is not named. Its messages about an archive it cannot use
    are turned off (``-Xlog``): the run goes on without it, as without the option.
    """
    path = archive_path()
    if path is None or ":" in str(path) or not path.is_file() or not made_for_launched_jdk(_facts(path)):
        return ""
    return shlex.join([f"-XX:SharedArchiveFile={path}", *QUIET_ARCHIVE_OPTIONS])


def launched_class_path() -> str | None:
    """The class path a command's driver JVM starts with now, or ``None`` when Spark's
    launcher fails: what ``bin/spark-class`` runs before the JVM (Spark's environment
    script, then the launcher), with the arguments pyspark passes (``PYSPARK_SUBMIT_ARGS``,
    else ``pyspark-shell``). So ``SPARK_HOME``, ``SPARK_CONF_DIR``, its ``spark-env.sh``
    and ``spark-defaults.conf`` count as they do for a command.

    No project's ``cdc.yml`` counts: a ``spark.driver.extraClassPath`` there comes before
    Spark's own entries, so that project's commands start without the archive.
    """
    from pyspark.find_spark_home import _find_spark_home

    home = launched_java_home()
    if home is None:
        return None
    env = {**os.environ, "SPARK_HOME": os.environ.get("SPARK_HOME") or _find_spark_home()}
    launcher = (
        'source "$SPARK_HOME/bin/load-spark-env.sh" && '
        'exec "$0" -Xmx128m $SPARK_LAUNCHER_OPTS -cp "$SPARK_HOME/jars/*" org.apache.spark.launcher.Main "$@"'
    )
    try:
        submit_args = shlex.split(os.environ.get("PYSPARK_SUBMIT_ARGS") or "pyspark-shell")
    except ValueError:  # arguments shlex cannot split: pyspark fails on them itself
        return None
    command = ["bash", "-c", launcher, str(home / "bin" / "java"), "org.apache.spark.deploy.SparkSubmit", *submit_args]
    launched = subprocess.run(command, capture_output=True, env=env, timeout=120)
    # the command it prints: its arguments, each ended by a NUL
    arguments = launched.stdout.decode(errors="surrogateescape").split("\0")
    if launched.returncode != 0 or "-cp" not in arguments[:-1]:
        return None
    return arguments[arguments.index("-cp") + 1]


def archive_usable(archive: Path) -> bool:
    """Whether the archive was made with the JDK a command starts now, and that JDK maps
    it for the class path a command starts with now (``launched_class_path``: not the one
    it was made with, which another ``SPARK_HOME`` or ``SPARK_CONF_DIR`` changes)."""
    facts = _facts(archive)
    if not made_for_launched_jdk(facts):
        return False
    class_path = launched_class_path()
    return class_path is not None and _jvm_maps(archive, facts.get("java_home", ""), class_path)


def _jvm_maps(archive: Path, java_home: str, class_path: str) -> bool:
    """Whether the JVM of ``java_home`` maps ``archive`` for ``class_path``
    (``-Xshare:on`` fails the JVM's start when it cannot)."""
    java = Path(java_home) / "bin" / "java"
    if not archive.is_file() or not java.is_file():
        return False
    check = [str(java), "-Xshare:on", f"-XX:SharedArchiveFile={archive}", "-cp", class_path, "-version"]
    return subprocess.run(check, capture_output=True, timeout=120).returncode == 0


def make_class_archive(archive: Path) -> None:
    """Run the example once in a JVM that writes its classes to ``archive`` as it exits.

    The run works on a copy of the example in a temporary folder; the archive is written
    beside ``archive`` and moved into place once the JVM has exited and the archive is
    usable, so a process that starts meanwhile never maps a half-written file.
    """
    from pyspark import SparkContext

    from udfs.config import load_config
    from udfs.pipeline import run_pipeline
    from udfs.session import build_session

    archive.parent.mkdir(parents=True, exist_ok=True)
    # one name: a set-up that failed leaves at most one (its JVM writes it as it exits)
    partial = archive.with_name(f".{archive.name}.partial")
    partial.unlink(missing_ok=True)
    with tempfile.TemporaryDirectory(prefix="cdc-class-archive-") as work:
        example = Path(work) / "example"
        shutil.copytree(EXAMPLE, example)
        config = load_config(example / "cdc.yml")
        dump = shlex.join([f"-XX:ArchiveClassesAtExit={partial}", *QUIET_ARCHIVE_OPTIONS])
        spark = build_session(config, run_java_options=dump)
        system = spark.sparkContext._jvm.System
        java_home = system.getProperty("java.home")
        facts = {
            "java_home": java_home,
            "jdk": jdk_identity(Path(java_home)),
            "class_path": system.getProperty("java.class.path"),
        }
        run_pipeline(config, spark=spark)
        # the JVM writes the archive as it exits, which it does when its stdin closes
        gateway = SparkContext._gateway
        process = gateway.proc
        spark.stop()
        gateway.shutdown()
        process.stdin.close()
        process.wait(timeout=300)
    if not _jvm_maps(partial, facts["java_home"], facts["class_path"]):
        partial.unlink(missing_ok=True)
        raise RuntimeError(f"the example's JVM wrote no archive it can map ({partial})")
    facts_path(archive).write_text(json.dumps(facts), encoding="utf-8")
    os.replace(partial, archive)


def main() -> int:
    """Make the archive unless the one there is usable; say which."""
    archive = archive_path()
    if archive is None:
        print(f"class archive: off ({ARCHIVE_ENV} is empty)")
        return 0
    if archive_usable(archive):
        print(f"class archive: {archive} is up to date")
        return 0
    os.environ[ARCHIVE_ENV] = ""  # the example's run must not map an archive it replaces
    make_class_archive(archive)
    print(f"class archive: made {archive}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
