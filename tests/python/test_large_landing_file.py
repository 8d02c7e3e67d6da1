"""A landing file of hundreds of MB goes through ``cdc run`` in a small driver.

Until 2026-11-26 the records model called ``cdc_decode_files``, whose result is one
row per file: a file's decoded records reached the JVM as one value, and one Debezium
file of 100k events (about 220 MB) ran the default 1 GB driver out of heap
(``java.lang.OutOfMemoryError: Java heap space`` in ``stg_landing__records``; tried by
hand with the model of 5a8e362). The model now calls the table function
``cdc_decode_records``, which hands Spark one row per record, 2,000 records at a time.
This run gives the driver half that heap (512 MB, the least Spark accepts is 450 MB)
and expects every record and change accounted for.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import yaml

from bench.data import FORMAT_CASES, tables_config, write_dataset

EVENTS = 100_000


def test_one_large_file_in_a_512_mb_driver(tmp_path: Path) -> None:
    case = FORMAT_CASES["debezium_json"]
    landing = tmp_path / "landing"
    data = write_dataset(case, landing, EVENTS, seed=5, per_file=EVENTS)
    (file,) = data.files
    assert file.stat().st_size > 200 * 2**20
    config = {
        "warehouse": str(tmp_path / "warehouse"),
        "schema": "large_file",
        "feeds": [{"name": "dbz", "format": "debezium_json", "path": str(landing), "framing": "lines"}],
        "tables": tables_config([case]),
        "spark": {"spark.driver.memory": "512m"},
    }
    (tmp_path / "cdc.yml").write_text(yaml.safe_dump(config, sort_keys=False))
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable}
    run = subprocess.run(
        [sys.executable, "-m", "udfs.cli", "run", "--config", str(tmp_path / "cdc.yml")],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=1200,
    )
    assert "OutOfMemoryError" not in run.stderr, run.stderr[-3000:]
    assert run.returncode == 0, run.stderr[-3000:]
    assert f"files 1, records {EVENTS}, changes {data.events}, quarantined 0, skipped 0" in run.stdout, run.stdout
