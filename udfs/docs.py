"""``cdc docs``: dbt's documentation site of the warehouse, its catalog read from the
warehouse's own metastore.

A plain ``dbt docs generate`` on the profile's default ``session`` target starts a Spark
session of its own, with a new, empty metastore in the current folder: its catalog holds
no table and says nothing about it. ``cdc docs`` runs ``dbt docs generate --static`` in
the warehouse's session (or through the ``cdc serve`` that holds the warehouse), with the
run's variables, so the catalog lists every model's table as the warehouse has it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from udfs.config import Config
from udfs.pipeline import run_dbt


@dataclass
class DocsSummary:
    #: the one-file site (``dbt docs generate --static``), opened without a server
    site: Path
    models: int
    #: models whose table the catalog found in the warehouse (with its columns)
    cataloged: int

    def __str__(self) -> str:
        text = f"{self.site}: {self.models} models, {self.cataloged} of them with their tables' columns"
        if self.cataloged == 0:
            text += "; the warehouse has no run yet: `cdc run` makes the tables"
        return text


def default_docs_dir(config: Config) -> Path:
    """Where the site goes unless ``--out`` names a folder: beside the runs' dbt target."""
    return config.warehouse / "dbt" / "docs"


def generate_docs(config: Config, out: Path, server: tuple[str, int] | None = None) -> DocsSummary:
    """``dbt docs generate --static`` into ``out`` (dbt's target path: ``catalog.json``,
    ``manifest.json``, ``index.html``, ``static_index.html``): in this process's Spark
    session (``udfs.session.build_session``), or through the running ``cdc serve`` at
    ``server`` (host, port; dbt's ``thrift`` target)."""
    run_dbt(config, command="docs generate", extra=["--static"], target_path=out, server=server)
    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    catalog = json.loads((out / "catalog.json").read_text(encoding="utf-8"))
    models = [uid for uid in manifest["nodes"] if uid.startswith("model.")]
    return DocsSummary(
        site=out / "static_index.html",
        models=len(models),
        cataloged=sum(uid in catalog["nodes"] for uid in models),
    )
