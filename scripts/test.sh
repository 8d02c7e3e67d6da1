#!/usr/bin/env bash
# Set up, lint (ruff, sqlfluff), then run the whole test suite (pytest: unit tests of
# the decoders, and pipeline tests with a real Spark session, dbt and Hive metastore).
# Arguments are passed to pytest (e.g. -k differential, -x).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export PYSPARK_PYTHON="$PWD/.venv/bin/python"
.venv/bin/ruff check .
.venv/bin/ruff format --check .
.venv/bin/python scripts/lint_sql.py
# Two pytest workers (one file per worker at a time, in the collected order: the
# longest files first, tests/python/conftest.py): pipeline tests spend much of
# their time waiting (JVM, dbt), so two share the 2 cores well. CDC_TEST_WORKERS=0
# runs them in this process. The 30 slowest tests are listed at the end (the suite's
# time is watched: CI stops at 90 minutes).
workers="${CDC_TEST_WORKERS:-2}"
if [ "$workers" = 0 ]; then
    .venv/bin/python -m pytest tests/python --durations=30 "$@"
else
    .venv/bin/python -m pytest tests/python -n "$workers" --dist loadfile --no-loadscope-reorder --durations=30 "$@"
fi
