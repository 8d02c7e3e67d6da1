#!/usr/bin/env bash
# Set up, then run the main job on the shipped example landing folder
# (examples/shop: Debezium JSON from a PostgreSQL and a MySQL connector) and print
# the resulting tables.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export PYSPARK_PYTHON="$PWD/.venv/bin/python"
.venv/bin/cdc run --config examples/shop/cdc.yml --print-tables
