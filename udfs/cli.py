"""The ``cdc`` command: ``run``, ``export``, ``sql``."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="cdc", description="CDC envelopes to exact state tables on Spark + dbt.")
    sub = p.add_subparsers(dest="command", required=True)

    def with_config(sp: argparse.ArgumentParser) -> argparse.ArgumentParser:
        sp.add_argument("--config", default="cdc.yml", help="configuration file (default: cdc.yml)")
        return sp

    run = with_config(sub.add_parser("run", help="process new landing files: decode, changelog, state, history, marts"))
    run.add_argument("--master", default=None, help="Spark master URL (default local[*])")
    run.add_argument("--print-tables", action="store_true", help="print every mart's rows after the run")
    exp = with_config(sub.add_parser("export", help="print the current rows of TABLE as JSON lines"))
    exp.add_argument("table")
    exp.add_argument("--with-metadata", action="store_true", help="include the _cdc_* metadata columns")
    sql = with_config(sub.add_parser("sql", help="run Spark SQL statements and print rows as JSON lines"))
    sql.add_argument("query", nargs="+", help="one or more statements; with several, each result starts with '-- N'")
    return p


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    from udfs.config import ConfigError, load_config

    try:
        config = load_config(Path(args.config))
    except ConfigError as exc:
        print(f"cdc: configuration error: {exc}", file=sys.stderr)
        return 2

    from udfs.session import build_session

    if args.command == "run":
        from udfs.pipeline import PipelineError, run_pipeline

        spark = build_session(config, master=args.master)
        try:
            summary = run_pipeline(config, spark=spark)
        except PipelineError as exc:
            print(f"cdc run failed: {exc}", file=sys.stderr)
            return 1
        print(f"cdc run {summary.run_id}: {summary}")
        if args.print_tables:
            from udfs.export import export_lines

            for table in sorted(config.tables):
                print(f"-- {config.marts_schema}.{table.replace('.', '__')}")
                for line in export_lines(spark, config, table):
                    print(line)
        return 0

    spark = build_session(config)
    if args.command == "export":
        from udfs.export import export_lines

        try:
            for line in export_lines(spark, config, args.table, args.with_metadata):
                print(line)
        except Exception as exc:  # noqa: BLE001 - AnalysisException etc.: one clear line
            print(f"cdc export: cannot read table {args.table!r}: {str(exc).splitlines()[0]}", file=sys.stderr)
            return 1
        return 0
    if args.command == "sql":
        from udfs.export import rows_as_json

        try:
            for n, query in enumerate(args.query, start=1):
                if len(args.query) > 1:
                    print(f"-- {n}")
                for line in rows_as_json(spark, spark.sql(query)):
                    print(line)
        except Exception as exc:  # noqa: BLE001
            print(f"cdc sql: {str(exc).splitlines()[0]}", file=sys.stderr)
            return 1
        return 0
    return 2


if __name__ == "__main__":
    raise SystemExit(main())
