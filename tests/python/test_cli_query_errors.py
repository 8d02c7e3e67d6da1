"""A query command that fails says so in one line of its own (``cdc sql: [ERROR_CLASS]
message``), in its embedded session as through a server (test_thrift_server.py): pyspark
logged every SQL error it raised once more, a JSON line of about 7 KB with the JVM's
stack trace, before it (``udfs.session.quiet_pyspark_error_logs``).
``CDC_SPARK_LOG_LEVEL=INFO`` keeps pyspark's line, for a user who wants the trace.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

CDC = [sys.executable, "-m", "udfs.cli"]
MISSING = (
    "cdc sql: [TABLE_OR_VIEW_NOT_FOUND] The table or view `default`.`no_such_table` cannot be found. "
    "Verify the spelling and correctness of the schema and catalog."
)


def _cdc_sql(tmp_path: Path, *queries: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    (tmp_path / "landing").mkdir(exist_ok=True)
    feeds = [{"name": "dbz", "format": "debezium_json", "path": "landing"}]
    (tmp_path / "cdc.yml").write_text(yaml.safe_dump({"feeds": feeds, "tables": {"t": {"key": ["id"]}}}))
    return subprocess.run(
        [*CDC, "sql", "--config", "cdc.yml", *queries],
        cwd=tmp_path,
        env={**os.environ, "PYSPARK_PYTHON": sys.executable, **(env or {})},
        capture_output=True,
        text=True,
        timeout=600,
    )


@pytest.mark.parametrize("log_level", [None, "INFO"])
def test_a_failing_query_is_one_line_unless_the_log_level_asks_for_more(tmp_path, log_level):
    env = {"CDC_SPARK_LOG_LEVEL": log_level} if log_level else {}
    p = _cdc_sql(tmp_path, "select 1 as one", "select * from default.no_such_table", env=env)
    assert p.returncode == 1, p.stderr[-3000:]
    assert p.stdout == '-- 1\n{"one": 1}\n-- 2\n', "the statements before the failing one printed their rows"
    assert [line for line in p.stderr.splitlines() if line.startswith("cdc sql: [")] == [MISSING], p.stderr[-3000:]
    logged = "SQLQueryContextLogger" in p.stderr and "org.apache.spark.sql.AnalysisException" in p.stderr
    assert logged == (log_level == "INFO"), p.stderr[-3000:]
    if log_level is None:
        assert p.stderr.splitlines()[-1] == MISSING
        assert "org.apache" not in p.stderr and "Traceback" not in p.stderr, p.stderr[-3000:]
