#!/usr/bin/env bash
# Set up, lint (ruff, sqlfluff), then run the whole test suite (pytest: unit tests of
# the decoders, and pipeline tests with a real Spark session, dbt and Hive metastore).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export PYSPARK_PYTHON="$PWD/.venv/bin/python"
.venv/bin/ruff check udfs tests bench 2>/dev/null || .venv/bin/ruff check udfs tests
.venv/bin/ruff format --check udfs tests
.venv/bin/sqlfluff lint models macros tests/dbt
.venv/bin/python -m pytest tests/python "$@"
