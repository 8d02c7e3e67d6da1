"""dbt's ``session`` target outside ``cdc run``: a plain ``dbt run`` starts a Spark session
of its own, without the package's functions, and fails before any model or lock, saying
how to run instead (``macros/sql/cdc_require_functions.sql``). It built a dozen models
before ``stg_landing__records`` failed on ``cdc_decode_records``.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
MACRO = REPO / "macros" / "sql" / "cdc_require_functions.sql"


def _registered_functions() -> set[str]:
    source = (REPO / "udfs" / "spark_udfs.py").read_text(encoding="utf-8")
    return set(re.findall(r'spark\.(?:udf|udtf)\.register\("(\w+)"', source))


def test_the_functions_required_are_those_the_models_and_macros_call():
    registered = _registered_functions()
    assert {"cdc_decode_records", "cdc_list_files", "cdc_read_records", "arcion_cursor"} <= registered
    called = set()
    for sql in [*(REPO / "models").rglob("*.sql"), *(REPO / "macros").rglob("*.sql")]:
        if sql != MACRO:
            called |= {
                name for name in re.findall(r"\b(\w+)\s*\(", sql.read_text(encoding="utf-8")) if name in registered
            }
    (required,) = re.findall(r"{% set required = \[([^\]]*)\] %}", MACRO.read_text(encoding="utf-8"))
    assert set(re.findall(r"'(\w+)'", required)) == called


def test_a_plain_dbt_run_on_the_session_target_fails_before_any_model(tmp_path):
    env = {
        **os.environ,
        "PYSPARK_PYTHON": sys.executable,
        "DBT_SEND_ANONYMOUS_USAGE_STATS": "false",
        "CDC_SCHEMA": "plain_dbt",
    }
    dbt = Path(sys.executable).parent / "dbt"
    args = ["run", "--project-dir", str(REPO), "--profiles-dir", str(REPO / "profiles")]
    args += ["--target-path", str(tmp_path / "target"), "--log-path", str(tmp_path / "logs")]
    p = subprocess.run([str(dbt), *args], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert p.returncode == 2, p.stdout[-3000:]
    assert (
        "the functions of the cdc package (cdc_decode_records, cdc_list_files, cdc_widest_type) are not registered "
        "in this Spark session, so nothing was run" in p.stdout
    ), p.stdout[-3000:]
    schema_dir = tmp_path / "spark-warehouse" / "plain_dbt.db"
    assert not schema_dir.exists() or not any(schema_dir.iterdir()), "no model built a table"
    assert "cdc_run_lock" not in p.stdout
