"""A run killed while it created a table, or the schema itself, leaves directories the
metastore does not know; the next run removes them before dbt creates the tables
(``udfs.pipeline.remove_orphan_table_dirs``)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

from udfs.pipeline import remove_orphan_table_dirs


def _table_dir(root: Path, schema: str, table: str) -> Path:
    path = root / f"{schema}.db" / table
    path.mkdir(parents=True)
    (path / "part-00000.parquet").write_bytes(b"not committed")
    return path


def test_a_schema_directory_without_its_schema_in_the_metastore(spark) -> None:
    # killed between the schema's directory and its metastore entry: no error, and the
    # table directories under it (registered nowhere) are removed
    root = Path(spark.conf.get("spark.sql.warehouse.dir").removeprefix("file:"))
    orphan = _table_dir(root, "killed_schema_cdc", "changelog")
    config = SimpleNamespace(schema="killed_schema_cdc", marts_schema="killed_schema_marts")
    assert remove_orphan_table_dirs(spark, config) == [orphan]
    assert not orphan.exists()
    assert (root / "killed_schema_cdc.db").is_dir()
    spark.sql("create schema if not exists killed_schema_cdc")  # what dbt does next
    spark.sql("create table killed_schema_cdc.changelog (id int) using parquet")
    assert spark.sql("select count(*) from killed_schema_cdc.changelog").collect()[0][0] == 0


def test_only_unregistered_table_directories_are_removed(spark) -> None:
    root = Path(spark.conf.get("spark.sql.warehouse.dir").removeprefix("file:"))
    spark.sql("create schema if not exists orphans_cdc")
    spark.sql("create table orphans_cdc.kept (id int) using parquet")
    spark.sql("insert into orphans_cdc.kept values (1)")
    orphan = _table_dir(root, "orphans_cdc", "half_created")
    config = SimpleNamespace(schema="orphans_cdc", marts_schema="orphans_marts")
    assert remove_orphan_table_dirs(spark, config) == [orphan]
    assert spark.sql("select id from orphans_cdc.kept").collect()[0][0] == 1
