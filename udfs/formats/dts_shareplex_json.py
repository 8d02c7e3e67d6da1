"""Shareplex JSON as Alibaba Cloud DTS writes it to Kafka (``dts_shareplex_json``).

Spec: ``specs/alibaba-dts-kafka-formats.txt`` (section "Shareplex JSON"). A message::

    {"meta": {"time", "userid", "op", "scn", "rowid", "trans", "seq", "size",
              "table": "OWNER.TABLE", "idx": "seq/size", "posttime"},
     "data": {COL: text, ...},
     "key":  {COL: text, ...}}

Decisions
---------
* **Ops**, case-insensitive, in both spellings: ``ins``/``INSERT`` insert,
  ``upd``/``UPDATE`` update, ``del``/``DELETE`` delete, ``TRUNCATE`` truncate (the
  merge empties the table). ``DROP COLUMN`` is DDL: skipped as ``ddl`` and logged in
  ``ddl_log`` (its text is ``DROP COLUMN`` and the columns the message names).
* **UPDATE BEFORE / UPDATE AFTER** (an update split into two messages): ``UPDATE AFTER``
  is decoded exactly as ``upd``; ``UPDATE BEFORE`` is skipped as ``update_before``. The
  before half only repeats the old row, which the state already holds, and each
  Kafka message is decoded on its own (pairing the halves would need both in one
  batch and in order). An ``UPDATE AFTER`` that carries ``key`` (the old row) still
  moves a row whose key changed. ``UPDATE_BEFORE``/``UPDATE_AFTER`` are accepted too.
* **Images.** ``ins``: ``data`` is the row. ``upd``: ``data`` holds only the changed
  columns (new values) and ``key`` the old row; the before image is ``key``, the after
  image is ``key`` overlaid with ``data`` (a column of ``key`` that is not in ``data``
  did not change, so its old value is its new one). A column in neither is not
  provided and keeps its value in the merge. ``del``: ``data`` is the old row (else
  ``key``). A SQL NULL is JSON ``null``.
* **Key.** Shareplex JSON names no primary key: ``tables.<t>.key`` gives the key
  columns, read from the images (a key change becomes delete + insert).
* **Names.** ``meta.table`` ``OWNER.TABLE`` is split at the first dot into
  ``source_schema`` and ``source_table`` (case kept; matching is case-insensitive).
* **Order.** ``seq`` = ``seq_of(scn, trans1, trans2, trans3, seq)``: the SCN, then the
  transaction id ``usn.slot.sqn`` (three numbers; fewer are padded with 0), then the
  operation's sequence in the transaction (``meta.seq``, else the numerator of
  ``idx``). Without ``scn`` there is no position and the file order decides.
* **Times.** ``time`` (source commit, UTC) is ``commit_ts``; ``posttime`` (written to
  the target) is ``capture_ts``; both ``yyyy-MM-ddTHH:mm:ss`` with an optional ``Z``
  or offset and fraction.
* **Extras.** ``scn``, ``rowid``, ``trans``, ``seq``, ``size``, ``idx``, ``userid``,
  ``time``, ``posttime`` as text; ``trans`` is also ``tx_id``.

Feed option ``columnar`` (true by default): ``cdc_decode`` decodes a batch of this feed's
records column-wise with :mod:`udfs.formats.dts_shareplex_json_columnar`, which gives the
very result of this decoder (the records it cannot do exactly are decoded here);
``columnar: false`` decodes every record here.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from functools import lru_cache
from typing import Any, ClassVar

from udfs.contract import Change, Ddl, Decoder, QuarantineError, Record, SkipRecord, canonical_text, loads_exact, seq_of

#: meta.op (upper case, ``_`` as space) -> changelog op; ``None`` = skipped with a reason
OPS: dict[str, str | None] = {
    "INS": "insert",
    "INSERT": "insert",
    "UPD": "update",
    "UPDATE": "update",
    "UPDATE AFTER": "update",
    "DEL": "delete",
    "DELETE": "delete",
    "TRUNCATE": "truncate",
    "UPDATE BEFORE": None,
}
EXTRAS = ("scn", "rowid", "trans", "seq", "size", "idx", "userid", "time", "posttime")
_TIME = re.compile(r"^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(\.\d{1,6})?(Z|[+-]\d{2}:?\d{2})?$")
_IDX = re.compile(r"\s*(\d+)\s*/\s*(\d+)\s*")


def parse_time(value: Any, what: str) -> int | None:
    """``yyyy-MM-ddTHH:mm:ss[.ffffff][Z|+hh:mm]`` (UTC when no zone) as epoch microseconds."""
    if value is None:
        return None
    if value.__class__ is str:
        return parse_time_text(value, what)
    raise QuarantineError(f"bad Shareplex {what}: {value!r}")


# every message of a second repeats its ``time`` (and often its ``posttime``): each text is parsed once
@lru_cache(maxsize=4096)
def parse_time_text(value: str, what: str) -> int:
    if not _TIME.match(value.strip()):
        raise QuarantineError(f"bad Shareplex {what}: {value!r}")
    text = value.strip().replace(" ", "T", 1)
    if text.endswith("Z"):
        text = text[:-1] + "+00:00"
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise QuarantineError(f"bad Shareplex {what}: {value!r}") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    delta = moment - datetime(1970, 1, 1, tzinfo=UTC)
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def _number(value: Any, what: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, str) and value.strip().isdigit():
        return int(value.strip())
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise QuarantineError(f"bad Shareplex {what}: {value!r}")
    return value


def _trans_parts(value: Any) -> tuple[int, ...]:
    if value is None:
        return (0, 0, 0)
    if value.__class__ is str:
        return _trans_text_parts(value)
    return _split_trans(value)


def _split_trans(value: Any) -> tuple[int, ...]:
    parts = str(value).strip().split(".")
    if len(parts) > 3 or not all(p.isdigit() for p in parts):
        raise QuarantineError(f"bad Shareplex trans: {value!r} (usn.slot.sqn expected)")
    return (*(int(p) for p in parts), *(0,) * (3 - len(parts)))


#: a transaction's messages repeat its ``trans``: each text is split once
_trans_text_parts = lru_cache(maxsize=4096)(_split_trans)


def _image(value: Any, what: str) -> dict[str, str | None] | None:
    if value is None:
        return None
    if not isinstance(value, dict):
        raise QuarantineError(f"Shareplex {what} is not an object")
    return {str(k): canonical_text(v) for k, v in value.items()}


class DtsShareplexJsonDecoder(Decoder):
    """Decoder for DTS Shareplex JSON (see the module docstring)."""

    identifier: ClassVar[str] = "dts_shareplex_json"
    default_framing: ClassVar[str] = "lines"
    framings: ClassVar[tuple[str, ...]] = ("lines", "kcat", "kafka_parquet", "documents")
    option_names: ClassVar[tuple[str, ...]] = ("columnar",)
    columnar_decoder: ClassVar[str | None] = "udfs.formats.dts_shareplex_json_columnar:decode_shareplex_columnar"

    def decode(self, record: Record) -> list[Change]:
        if record.text is None or record.text.strip() in ("", "null"):
            raise SkipRecord("tombstone")
        msg = loads_exact(record.text)
        if not isinstance(msg, dict):
            raise QuarantineError(f"Shareplex message is a JSON {type(msg).__name__}, not an object")
        meta = msg.get("meta")
        if not isinstance(meta, dict):
            raise QuarantineError("Shareplex message without a meta object")
        raw_op = meta.get("op")
        if not isinstance(raw_op, str):
            raise QuarantineError("Shareplex message without meta.op")
        name = " ".join(raw_op.replace("_", " ").upper().split())
        data, key = _image(msg.get("data"), "data"), _image(msg.get("key"), "key")
        schema, table = self._table(meta.get("table"))
        commit_ts = parse_time(meta.get("time"), "time")
        if name == "DROP COLUMN":
            named = sorted({*(data or {}), *(key or {})})
            raise SkipRecord(
                "ddl",
                ddl=Ddl(
                    sql=" ".join(["DROP COLUMN", ", ".join(named)]).strip(),
                    source_schema=schema,
                    source_table=table,
                    commit_ts_us=commit_ts,
                ),
            )
        if name not in OPS:
            raise QuarantineError(f"unknown Shareplex op {raw_op!r}")
        op = OPS[name]
        if op is None:
            raise SkipRecord("update_before")
        if not table:
            raise QuarantineError("Shareplex message without meta.table")
        common: dict[str, Any] = {
            "source_schema": schema,
            "source_table": table,
            "seq": self._seq(meta),
            "commit_ts_us": commit_ts,
            "capture_ts_us": parse_time(meta.get("posttime"), "posttime"),
            "tx_id": None if meta.get("trans") is None else str(meta.get("trans")),
            "extras": {k: canonical_text(meta[k]) for k in EXTRAS if k in meta},
        }
        if op == "truncate":
            return [Change(op="truncate", **common)]
        if op == "insert":
            if data is None:
                raise QuarantineError(f"Shareplex {raw_op} without data")
            return [Change(op="insert", after=data, **common)]
        if op == "delete":
            before = data if data is not None else key
            if before is None:
                raise QuarantineError(f"Shareplex {raw_op} without data or key")
            return [Change(op="delete", before=before, **common)]
        if data is None:
            raise QuarantineError(f"Shareplex {raw_op} without data")
        after = {**(key or {}), **data}
        return [Change(op="update", before=key, after=after, **common)]

    @staticmethod
    def _table(value: Any) -> tuple[str | None, str | None]:
        if value is None:
            return None, None
        if not isinstance(value, str):
            raise QuarantineError(f"Shareplex meta.table is not a string: {value!r}")
        owner, dot, table = value.partition(".")
        if not dot:
            return None, value or None
        if not owner or not table:
            raise QuarantineError(f"bad Shareplex meta.table {value!r} (OWNER.TABLE expected)")
        return owner, table

    @staticmethod
    def _seq(meta: dict[str, Any]) -> str | None:
        scn = _number(meta.get("scn"), "scn")
        op_seq = _number(meta.get("seq"), "seq")
        idx = meta.get("idx")
        if idx is not None:
            m = _IDX.fullmatch(str(idx))
            if not m:
                raise QuarantineError(f"bad Shareplex idx: {idx!r} (seq/size expected)")
            if op_seq is None:
                op_seq = int(m.group(1))
        _number(meta.get("size"), "size")
        trans = _trans_parts(meta.get("trans"))
        if scn is None:
            return None
        return seq_of(scn, *trans, op_seq or 0)
