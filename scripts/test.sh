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
.venv/bin/sqlfluff lint models macros tests/dbt
.venv/bin/python -m pytest tests/python "$@"
