"""Read the expected changelogs of ``corpora/flink/EXPECTED.md`` in place, and render
our changelog the way Flink's tests print rows (``+I(101,scooter,...,3.14)``)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
from conftest import corpus


def expected_changelog(section: int) -> list[str]:
    """The first fenced block after 'Expected changelog' in section ``section``."""
    text = corpus("flink", "EXPECTED.md").read_text(encoding="utf-8")
    m = re.search(rf"^## {section}\. .*?$(.*?)(?=^## |\Z)", text, re.S | re.M)
    assert m, f"section {section} not found in EXPECTED.md"
    block = re.search(r"Expected changelog.*?```\n(.*?)```", m.group(1), re.S)
    assert block, f"no expected changelog in section {section}"
    return [line for line in block.group(1).splitlines() if line.strip()]


def final_rows(name: str) -> list[dict]:
    path = corpus("flink", name)
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def float32_text(value: str | None) -> str:
    """What Java's Float.toString prints for the float32 nearest ``value``."""
    if value is None:
        return "null"
    return str(np.float32(float(value)))


def flink_fields(image: dict | None) -> str:
    image = image or {}
    return ",".join(
        [
            image.get("id") or "null",
            image.get("name") if image.get("name") is not None else "null",
            image.get("description") if image.get("description") is not None else "null",
            float32_text(image.get("weight")),
        ]
    )


def as_flink_rows(changes: list[dict]) -> list[str]:
    """Render changelog rows (ordered) as Flink RowData strings."""
    out = []
    for c in changes:
        op = c["op"]
        if op in ("insert", "snapshot"):
            out.append(f"+I({flink_fields(c['after'])})")
        elif op == "update":
            out.append(f"-U({flink_fields(c['before'])})")
            out.append(f"+U({flink_fields(c['after'])})")
        elif op == "delete":
            out.append(f"-D({flink_fields(c['before'])})")
        else:
            raise AssertionError(f"unexpected op {op}")
    return out


def same_rows_float32(actual: list[dict], expected: list[dict], float_cols: tuple[str, ...] = ("weight",)) -> None:
    """Assert equal row sets, comparing ``float_cols`` as float32 (the source declares FLOAT)."""

    def norm(row: dict) -> tuple:
        return tuple(
            sorted((k, float(np.float32(v)) if k in float_cols and v is not None else v) for k, v in row.items())
        )

    assert sorted(map(norm, actual)) == sorted(map(norm, expected))


__all__ = ["Path", "as_flink_rows", "expected_changelog", "final_rows", "same_rows_float32"]
