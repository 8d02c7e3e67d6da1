#!/usr/bin/env bash
# Set up everything the project needs on a fresh machine: checks Python 3.11 and
# Java 17 (installs Java from Debian's packages when missing and allowed), then a
# virtual environment in .venv with every dependency pinned (constraints.txt).
set -euo pipefail
cd "$(dirname "$0")/.."

# setuptools reads `$name` and braces in .venv's install paths as variables (its
# subst_vars: "invalid variable", or a set variable's value, $HOME, put into the path),
# and pip's launch scripts (.venv/bin/cdc, dbt) quote a path with a space in "..." for
# /bin/sh, where `$`, a backquote, `"` and `\` are syntax (a clone in `p$1 b` set up,
# and then its cdc and dbt ran `p b/.venv/bin/python`, not found). Say so before any work.
case "$PWD" in
    *[\$\`\"\\{}]* | *$'\n'*)
        echo "setup: the project's folder $PWD holds \$, a backquote, \", \\, a brace or a newline, which setuptools or pip's launch scripts read as syntax; clone the project into a folder without them" >&2
        exit 1
        ;;
esac

PYTHON="${PYTHON:-python3.11}"
command -v "$PYTHON" >/dev/null 2>&1 || PYTHON=python3
if ! "$PYTHON" -c 'import sys; sys.exit(0 if sys.version_info[:2] == (3, 11) else 1)'; then
    echo "setup: Python 3.11 is required (found: $("$PYTHON" --version 2>&1)). Set PYTHON=/path/to/python3.11." >&2
    exit 1
fi

# Spark starts its JVM from JAVA_HOME when it is set, else from the java on PATH (pyspark's
# spark-class): the check follows the same rule. A JAVA_HOME naming an older or no Java is
# refused, not repaired: Java 17 installed on PATH would not be the one Spark starts.
# (Java 8 and older say "1.8.0": their major is the second number)
java_major() { "$1" -version 2>&1 | sed -n 's/.*version "\(1\.\)\{0,1\}\([0-9]*\).*/\2/p' | head -1; }
if [ -n "${JAVA_HOME:-}" ]; then
    major=$(java_major "$JAVA_HOME/bin/java") || major=""
    if ! [ "${major:-0}" -ge 17 ] 2>/dev/null; then
        found="is Java $major"
        [ -n "$major" ] || found="is missing or prints no Java version"
        echo "setup: JAVA_HOME is $JAVA_HOME, whose bin/java $found; Spark starts its JVM from JAVA_HOME and needs Java 17 or newer: point JAVA_HOME at a JDK/JRE 17 or newer, or unset it." >&2
        exit 1
    fi
elif ! command -v java >/dev/null 2>&1 || [ "$(java_major java)" -lt 17 ] 2>/dev/null; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        echo "setup: Java 17 not found; installing openjdk-17-jre-headless from Debian's packages"
        apt-get update -qq && apt-get install -y -qq openjdk-17-jre-headless >/dev/null
    else
        echo "setup: Spark needs Java 17 (java not found or too old). Install a JDK/JRE 17 and put java on PATH." >&2
        exit 1
    fi
fi

if [ ! -x .venv/bin/python ]; then
    "$PYTHON" -m venv .venv
fi
# Install only when the pinned set changed since the last set-up (a stamp in .venv).
stamp=$(cat pyproject.toml constraints.txt | sha256sum | cut -d' ' -f1)
if [ "$(cat .venv/.cdc-setup 2>/dev/null)" != "$stamp" ]; then
    echo "setup: installing the pinned dependencies into .venv (log: .venv/pip-install.log)"
    if ! .venv/bin/python -m pip install --disable-pip-version-check -c constraints.txt -e ".[dev]" \
            > .venv/pip-install.log 2>&1; then
        tail -n 30 .venv/pip-install.log >&2
        echo "setup: pip install failed (full log: .venv/pip-install.log)" >&2
        exit 1
    fi
    echo "$stamp" > .venv/.cdc-setup
fi
# The decoders' compiled loops (numba): compiled once into udfs/formats/__pycache__,
# so no Spark task pays it (a second or so when the cache is already there).
if ! .venv/bin/python -c "from udfs.formats.compiled import warm_up; warm_up()"; then
    echo "setup: compiling the decoders' loops (numba) failed" >&2
    exit 1
fi
# Spark's classes as a class-data-sharing archive (udfs/class_archive.py): made by one run
# of the example (a minute or two), again only when the JDK or the jars changed; each
# cdc command's JVM then maps them instead of loading them, about half the CPU of its
# start. Not needed to run: without it a JVM starts as it would.
if ! PYSPARK_PYTHON="$PWD/.venv/bin/python" .venv/bin/python -m udfs.class_archive; then
    echo "setup: making the archive of Spark's classes failed (above); commands start without it, slower" >&2
fi
echo "setup: ready (.venv/bin/cdc)"
