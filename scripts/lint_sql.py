"""Lint the project's SQL with sqlfluff (``scripts/test.sh`` runs it).

Models and tests go through the dbt templater, which compiles them as ``dbt compile``
does and so needs a live connection: this starts the embedded Spark session
(``profiles/``, target ``session``) on an empty warehouse in a temporary folder and runs
sqlfluff in the same process, where dbt-spark's ``session`` method finds it. Macro
files are not dbt nodes: they go through the jinja templater with dbt's builtins, whose
stand-ins for ``run_query`` and relations cannot template every branch (templating
gaps there are not failures).

    python scripts/lint_sql.py            # lint everything; exit status 1 on a violation
    python scripts/lint_sql.py fix        # let sqlfluff fix what it can, same files
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DBT_PATHS = ["models", "tests/dbt"]
JINJA_PATHS = ["macros"]


def _sqlfluff(args: list[str]) -> int:
    from sqlfluff.cli.commands import cli

    try:
        result = cli.main(args=args, standalone_mode=False)
    except SystemExit as done:  # sqlfluff ends its commands with sys.exit
        return int(done.code or 0)
    return int(result or 0)


def main(argv: list[str]) -> int:
    command = argv[0] if argv else "lint"
    if command not in ("lint", "fix"):
        raise SystemExit(f"usage: lint_sql.py [lint|fix], not {argv}")
    extra = ["-f"] if command == "fix" else []
    sys.path.insert(0, str(REPO))
    from udfs.session import DRIVER_JAVA_OPTIONS, SHORT_LIVED_JVM_OPTIONS, build_session

    failed = _sqlfluff([command, *extra, "--templater", "jinja", "--ignore", "templating", *JINJA_PATHS])
    with tempfile.TemporaryDirectory(prefix="cdc-lint-") as warehouse:
        # dbt's compiled files and logs go to the temporary folder, not the repository
        os.environ["DBT_TARGET_PATH"] = str(Path(warehouse) / "target")
        os.environ["DBT_LOG_PATH"] = str(Path(warehouse) / "logs")
        # a JVM of a minute or two that compiles every model once: C1 only, as the test
        # suite's (udfs.session.SHORT_LIVED_JVM_OPTIONS)
        spark = build_session(Path(warehouse), extra_conf={DRIVER_JAVA_OPTIONS: SHORT_LIVED_JVM_OPTIONS})
        try:
            failed |= _sqlfluff([command, *extra, *DBT_PATHS])
        finally:
            spark.stop()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
