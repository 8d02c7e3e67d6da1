"""A script run in a Python process of its own, whose Spark session is its own: for what
is read only when a session's JVM or metastore starts (JVM options, metastore
settings), which the shared session of a test worker has read already.

The script prints one line ``RESULT <json>``; :func:`run_script` returns that JSON.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]


def run_script(script: str, *args: str, cwd: Path, env: dict[str, str] | None = None) -> Any:
    """Run ``script`` with ``args`` in ``cwd`` (the project importable, the workers on
    this interpreter, ``env`` added to the environment); fail with its stderr's end
    unless it succeeds."""
    return run_script_and_stderr(script, *args, cwd=cwd, env=env)[0]


def run_script_and_stderr(
    script: str, *args: str, cwd: Path, env: dict[str, str] | None = None, own_process_group: bool = False
) -> tuple[Any, str]:
    """:func:`run_script`'s JSON, and the script's stderr (for what it printed there);
    ``own_process_group``: the script leads a process group of its own (one it signals
    whole, its JVM with it, leaves the test's alone)."""
    result, _, stderr = run_script_and_output(script, *args, cwd=cwd, env=env, own_process_group=own_process_group)
    return result, stderr


def run_script_and_output(
    script: str, *args: str, cwd: Path, env: dict[str, str] | None = None, own_process_group: bool = False
) -> tuple[Any, str, str]:
    """:func:`run_script_and_stderr`'s, with the script's stdout besides (where the JVM
    writes its own warnings)."""
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "PYTHONPATH": str(REPO), **(env or {})}
    p = subprocess.run(
        [sys.executable, "-c", script, *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        start_new_session=own_process_group,
    )
    assert p.returncode == 0, p.stderr[-3000:]
    (line,) = [x for x in p.stdout.splitlines() if x.startswith("RESULT ")]
    return json.loads(line.removeprefix("RESULT ")), p.stdout, p.stderr
