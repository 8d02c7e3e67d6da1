"""``cdc export`` and ``cdc sql``: rows as JSON objects with full fidelity.

Decimals are JSON strings with every digit; integers are exact JSON numbers (Python
ints, whatever their size); floats keep Spark's shortest text (float32 ``3.14`` stays
``3.14``); timestamps are ISO-8601 UTC ending in ``Z`` with microseconds; dates are
``YYYY-MM-DD``; binary is base64; strings are exact (unicode, quotes, newlines).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from decimal import Context, Decimal
from pathlib import Path
from typing import Any

from udfs.config import Config, load_config

#: decimal arithmetic wide enough for 38 digits (the default context has 28)
_EXACT = Context(prec=100)
TS_FORMAT = "yyyy-MM-dd'T'HH:mm:ss.SSSSSS'Z'"


def _json_ready_columns(df: Any) -> list[str]:
    """SQL expressions that render each column of ``df`` as a JSON-safe value."""
    from pyspark.sql import types as T  # noqa: N812 - the PySpark convention

    exprs = []
    for f in df.schema.fields:
        q = "`" + f.name.replace("`", "``") + "`"
        t = f.dataType
        if isinstance(t, T.DecimalType):
            # rendered in Python (see rows_as_json): Spark's cast to string writes
            # scientific notation ("0E-10") when ANSI mode is off, as dbt-spark sets it
            e = q
        elif isinstance(t, (T.TimestampType, T.TimestampNTZType)):
            e = f'date_format({q}, "{TS_FORMAT}")'
        elif isinstance(t, T.DateType):
            e = f"cast({q} as string)"
        elif isinstance(t, T.BinaryType):
            e = f"base64({q})"
        elif isinstance(t, (T.FloatType, T.DoubleType)):
            # Spark's own shortest text; parsed back as a JSON number below.
            e = f"cast({q} as string)"
        elif isinstance(t, (T.MapType, T.ArrayType, T.StructType)):
            e = f"to_json({q})"
        else:
            e = q
        exprs.append(f"{e} as {q}")
    return exprs


def rows_as_json(spark: Any, df: Any) -> Iterator[str]:
    """Yield each row of ``df`` as one JSON line (see the module docstring)."""
    from pyspark.sql import types as T  # noqa: N812 - the PySpark convention

    floats = {f.name for f in df.schema.fields if isinstance(f.dataType, (T.FloatType, T.DoubleType))}
    # name -> the quantum of its scale: Spark hands some decimals over in exponent form
    # (-1.00E-10 for -0.0000000001 in decimal(38,10)); quantized, they print every digit
    decimals = {
        f.name: Decimal(1).scaleb(-f.dataType.scale) for f in df.schema.fields if isinstance(f.dataType, T.DecimalType)
    }
    view = "_cdc_export_rows"
    df.createOrReplaceTempView(view)
    rendered = spark.sql(f"select {', '.join(_json_ready_columns(df))} from {view}")
    for row in rendered.toLocalIterator():
        obj = row.asDict()
        parts = []
        for name, value in obj.items():
            if name in floats and value is not None:
                if value in ("NaN", "Infinity", "-Infinity"):
                    text = json.dumps(value)
                else:
                    text = value
            elif name in decimals and value is not None:
                # decimal.Decimal, plain notation with every digit of its scale
                text = json.dumps(format(_EXACT.quantize(value, decimals[name]), "f"))
            else:
                text = json.dumps(value, ensure_ascii=False)
            parts.append(f"{json.dumps(name, ensure_ascii=False)}: {text}")
        yield "{" + ", ".join(parts) + "}"


def mart_view_name(table_id: str) -> str:
    """The mart view of a table id (the rule of the ``cdc_mart_view_name`` macro)."""
    return re.sub(r"[^A-Za-z0-9_]", "_", table_id.replace(".", "__"))


#: metadata columns of every mart view (exported with ``--with-metadata``)
METADATA_COLUMNS = ("_cdc_op", "_cdc_seq", "_cdc_commit_ts", "_cdc_event_id", "_cdc_key")


def mart_query(config: Config, table: str, with_metadata: bool = False, spark: Any = None) -> str:
    """SQL of a table's mart rows: its own columns (and, with ``with_metadata``, the
    ``_cdc_*`` columns and the ``<column>__text`` views of binary columns), by key."""
    # a configured table, or one the events named without configuration
    view = mart_view_name(table.lower())
    q = f"`{config.marts_schema}`.`{view.replace('`', '``')}`"
    if with_metadata:
        return f"select * from {q} order by _cdc_key"
    derived = list(METADATA_COLUMNS)
    if spark is not None:
        from pyspark.sql import types as T  # noqa: N812 - the PySpark convention

        fields = {f.name: f.dataType for f in spark.table(q).schema.fields}
        derived += [
            f"{name}__text" for name, t in fields.items() if isinstance(t, T.BinaryType) and f"{name}__text" in fields
        ]
    excluded = ", ".join("`" + c.replace("`", "``") + "`" for c in derived)
    return f"select * except ({excluded}) from {q} order by _cdc_key"


def export_lines(
    spark: Any, config_path: str | Path | Config, table: str, with_metadata: bool = False
) -> Iterator[str]:
    """``cdc export``: the current rows of ``table`` as JSON lines (module docstring)."""
    config = config_path if isinstance(config_path, Config) else load_config(config_path)
    return rows_as_json(spark, spark.sql(mart_query(config, table, with_metadata, spark)))


def export_rows(spark: Any, config_path: str | Path | Config, table: str, with_metadata: bool = False) -> list[dict]:
    """The current rows of ``table`` as dicts, parsed from the exported JSON lines."""
    return [json.loads(line) for line in export_lines(spark, config_path, table, with_metadata)]
