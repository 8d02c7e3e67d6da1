"""Debezium JSON lines, a warehouse of one feed, and its mart view ``items``, for tests
that land a few changes of one table by hand."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from udfs.config import Config, load_config


def row_event(lsn: int, op: str, row: dict, table: str = "items") -> str:
    """One Debezium event without a schema: ``row`` is the after image, or the before
    image of a delete (``op`` ``d``); ``lsn`` orders it."""
    image = (None, row) if op != "d" else (row, None)
    source = {"connector": "postgresql", "db": "d", "schema": "s", "table": table, "lsn": lsn}
    return json.dumps({"before": image[0], "after": image[1], "source": source, "op": op})


def land(folder: Path, name: str, lines: list[str]) -> None:
    """A landing file ``name`` in ``folder`` holding ``lines``."""
    (folder / name).write_text("\n".join(lines) + "\n", encoding="utf-8")


def one_feed_of_items(make_config, tmp_path: Path) -> tuple[Config, str, str, Path]:
    """A warehouse of one Debezium feed ``f`` of the table ``items`` (key ``id``): its
    loaded config, its schema, its marts' schema and the feed's landing folder."""
    path = make_config([{"name": "f", "format": "debezium_json", "path": "landing/f"}], {"items": {"key": ["id"]}})
    written = yaml.safe_load(path.read_text())
    return load_config(path), written["schema"], written["marts_schema"], tmp_path / "landing" / "f"


def items_view_columns(spark, marts: str) -> set[str]:
    """The columns of the mart view ``items``, the pipeline's own ``_cdc_`` ones left out."""
    return {f.name for f in spark.table(f"{marts}.items").schema if not f.name.startswith("_cdc_")}


def items_view_rows(spark, marts: str) -> dict[int, dict]:
    """The rows of the mart view ``items`` by ``id``, over those columns."""
    columns = sorted(items_view_columns(spark, marts))
    return {int(r["id"]): r.asDict() for r in spark.table(f"{marts}.items").select(*columns).collect()}
