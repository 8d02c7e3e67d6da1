"""Checks every columnar decoder's tests share: the decoder against ``decode_records``
record by record, JSON spellings of the cases, the format's unit tests replayed, the
fallback on an internal error, and ``cdc_decode`` in Spark SQL with ``columnar`` on and off.
"""

from __future__ import annotations

import importlib
import json
import random
from collections.abc import Callable
from types import ModuleType
from typing import Any

import pyarrow as pa
import pytest

from udfs.decode import decode_records
from udfs.formats import columnar


def compare(
    module: ModuleType,
    decode: Callable[..., pa.Array],
    opts: str,
    texts: list[str | None],
    keys: list[str | None] | None = None,
) -> tuple[int, int]:
    """Assert ``decode`` (a columnar decoder of ``module``) and ``decode_records`` agree on
    every record; returns (records, fallbacks)."""
    ref = pa.array(decode_records(opts, texts, keys), type=columnar.DECODE_TYPE)
    got = decode(opts, pa.array(texts, pa.string()), None if keys is None else pa.array(keys, pa.string()))
    assert "columnar_error" not in module.LAST_STATS, module.LAST_STATS["columnar_error"]
    bad = [i for i in range(len(texts)) if not ref[i].equals(got[i])]
    detail = [(texts[i], ref[i].as_py(), got[i].as_py()) for i in bad[:3]]
    assert not bad, f"{len(bad)} of {len(texts)} differ, first: {detail}"
    return len(texts), module.LAST_STATS.get("fallback", 0)


def json_spellings(cases: list[Any], rng: random.Random) -> list[str | None]:
    """Tombstones and blank texts, then each case: a text as it is, an object dumped
    ASCII-escaped or not, compact, spaced or indented."""
    out: list[str | None] = [None, "null", " null ", "   "]
    for case in cases:
        if isinstance(case, str):
            out.append(case)
            continue
        out.append(
            json.dumps(
                case,
                ensure_ascii=rng.random() < 0.4,
                indent=rng.choice([None, None, 2]),
                separators=rng.choice([(",", ":"), (", ", ": ")]),
            )
        )
    return out


def replay_unit_tests(
    monkeypatch: pytest.MonkeyPatch, test_module: str, formats: tuple[str, ...], check: Callable[..., Any]
) -> list[int]:
    """Run the plain and single-parametrized tests of ``test_module`` with its
    ``decode_records`` wrapped: every batch of ``formats`` it decodes also goes to
    ``check(options_json, texts, kafka_keys)``. Returns the batch sizes checked."""
    mod = importlib.import_module(test_module)
    seen: list[int] = []

    def checking(options_json: str, texts: Any, kafka_keys: Any = None, *rest: Any) -> Any:
        out = decode_records(options_json, texts, kafka_keys, *rest)
        if json.loads(options_json).get("format") in formats and not rest:
            check(options_json, list(texts), None if kafka_keys is None else list(kafka_keys))
            seen.append(len(texts))
        return out

    monkeypatch.setattr(mod, "decode_records", checking)
    ran = 0
    for name in dir(mod):
        fn = getattr(mod, name)
        if not name.startswith("test_") or not callable(fn):
            continue
        params = [m for m in getattr(fn, "pytestmark", []) if m.name == "parametrize"]
        if not params:
            if fn.__code__.co_argcount == 0:
                fn()
                ran += 1
            continue
        if len(params) != 1:
            continue
        argnames, values = params[0].args[0], params[0].args[1]
        names = [a.strip() for a in argnames.split(",")] if isinstance(argnames, str) else list(argnames)
        for v in values:
            v = v.values if hasattr(v, "values") else v
            try:
                fn(*(v if len(names) > 1 else (v,)))
            except TypeError:
                break
            ran += 1
    assert ran > 10, ran
    return seen


def check_internal_error_falls_back(
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    module: ModuleType,
    decode: Callable[..., pa.Array],
    opts: str,
    texts: list[str | None],
    fmt: str,
) -> None:
    """A bug in the columnar path costs speed, not rows: with ``module._fast`` raising,
    the batch is decoded record by record, identical to ``decode_records``, and the
    worker warns once."""

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise IndexError("boom")

    monkeypatch.setattr(module, "_fast", broken)
    monkeypatch.setattr(columnar, "_WARNED", set())
    ref = pa.array(decode_records(opts, texts), type=columnar.DECODE_TYPE)
    with caplog.at_level("WARNING", logger=columnar.__name__):
        got = decode(opts, pa.array(texts, pa.string()))
        decode(opts, pa.array(texts, pa.string()))
    assert got.equals(ref)
    assert module.LAST_STATS["columnar_error"] == "IndexError: boom"
    assert module.LAST_STATS["fallback"] == len(texts)
    warnings = [r for r in caplog.records if f"columnar {fmt} decoder failed" in r.getMessage()]
    assert len(warnings) == 1


def spark_on_and_off(spark: Any, texts: list[str | None], on: str, off: str, view: str) -> dict[int, str]:
    """The registered ``cdc_decode`` in Spark SQL over the same records with options
    ``on`` and ``off`` (several Arrow batches and partitions): asserts the same result
    per record and returns the ``on`` results as JSON text."""
    rows = [(i, o, t) for i, t in enumerate(texts) for o in (on, off)]
    spark.createDataFrame(rows, "i int, options string, text string").createOrReplaceTempView(view)
    result = spark.sql(
        "select i, options, to_json(cdc_decode(options, text, cast(null as string), 'f', cast(null as array<string>)))"
        f" as r from (select * from {view} distribute by options, i % 3)"
    ).collect()
    by_opts: dict[str, dict[int, str]] = {on: {}, off: {}}
    for row in result:
        by_opts[row["options"]][row["i"]] = row["r"]
    assert len(by_opts[on]) == len(by_opts[off]) == len(texts)
    differ = [i for i in range(len(texts)) if by_opts[on][i] != by_opts[off][i]]
    assert not differ, [(texts[i], by_opts[on][i], by_opts[off][i]) for i in differ[:2]]
    return by_opts[on]
