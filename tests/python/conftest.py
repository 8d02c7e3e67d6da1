"""Shared fixtures: one Spark session for the whole test run (its Hive metastore in a
temporary warehouse); each pipeline test gets its own schemas in it."""

from __future__ import annotations

import itertools
import os
import sys
from pathlib import Path

import pytest
import yaml

# helper modules whose asserts should report like a test's (imported by the tests after this)
pytest.register_assert_rewrite("change_checks")

REPO = Path(__file__).resolve().parents[2]
SHARED = REPO.parent / "shared"
CORPORA = SHARED / "corpora"
SPECS = SHARED / "specs"

_schema_numbers = itertools.count(1)


def corpus(*parts: str) -> Path:
    """A corpus file read in place; a missing corpus fails the test (never skips)."""
    path = CORPORA.joinpath(*parts)
    assert path.exists(), f"corpus file {path} is missing: ../shared/corpora must be beside the repository"
    return path


@pytest.fixture(scope="session")
def spark(tmp_path_factory: pytest.TempPathFactory):
    os.environ["PYSPARK_PYTHON"] = sys.executable
    from udfs.session import build_session

    # one session serves every pipeline test of a worker (hundreds of dbt models, a
    # 10,000-column table): more heap than Spark's 1 GB default a user's run starts with
    session = build_session(
        tmp_path_factory.mktemp("warehouse"), master="local[2]", extra_conf={"spark.driver.memory": "2g"}
    )
    yield session
    session.stop()


@pytest.fixture()
def make_config(tmp_path: Path):
    """Write a cdc.yml with unique schemas into ``tmp_path``; returns its path."""

    def make(feeds: list[dict], tables: dict | None = None, **extra) -> Path:
        n = next(_schema_numbers)
        cfg = {
            "warehouse": ".cdc",
            "schema": f"t{n}_cdc",
            "marts_schema": f"t{n}_marts",
            "feeds": feeds,
            "tables": tables or {},
            **extra,
        }
        for feed in feeds:
            (tmp_path / feed["path"]).mkdir(parents=True, exist_ok=True)
        path = tmp_path / "cdc.yml"
        path.write_text(yaml.safe_dump(cfg, sort_keys=False))
        return path

    return make
