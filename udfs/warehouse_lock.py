"""One process at a time owns a warehouse.

The Hive metastore of a warehouse is an embedded Derby database, which one JVM can
open at a time; a second process would fail deep inside Derby with a stack trace.
So every ``cdc`` command that starts Spark on a warehouse first takes an exclusive
lock on ``<warehouse>/.cdc.lock`` (``flock``: the kernel releases it when the process
ends, even on SIGKILL) and writes who holds it. A second command reads that and
either says clearly who holds the warehouse or, when it is ``cdc serve``, works
through the server instead (``cdc run``).
"""

from __future__ import annotations

import fcntl
import json
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

LOCK_NAME = ".cdc.lock"


class WarehouseBusyError(RuntimeError):
    """The warehouse is held by another process; ``holder`` says which."""

    def __init__(self, warehouse: Path, holder: dict[str, Any]) -> None:
        self.warehouse = warehouse
        self.holder = holder
        what = f"`cdc {holder.get('role', '?')}` (pid {holder.get('pid', '?')}"
        if holder.get("role") == "serve":
            what += f", Thrift server on {holder.get('host')}:{holder.get('port')}"
        what += f", since {holder.get('started', '?')})"
        super().__init__(f"the warehouse {warehouse} is in use by {what}")


def _read(path: Path) -> dict[str, Any]:
    try:
        return json.loads(path.read_text(encoding="utf-8") or "{}")
    except (OSError, ValueError):
        return {}


class WarehouseUnusableError(RuntimeError):
    """The warehouse folder cannot be created, or its lock file opened (the message says
    which and why): a configuration to change, found before any work."""


def _open_lock_file(warehouse: Path) -> int:
    try:
        warehouse.mkdir(parents=True, exist_ok=True)
        return os.open(warehouse / LOCK_NAME, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as exc:
        raise WarehouseUnusableError(
            f"the warehouse {warehouse} cannot be used: {exc.strerror or exc}: {exc.filename}; "
            "set warehouse: to a folder this user can create and write"
        ) from exc


@contextmanager
def hold(warehouse: Path, role: str, **info: Any) -> Iterator[None]:
    """Hold the warehouse for this process; raise :class:`WarehouseBusyError` if another
    does, :class:`WarehouseUnusableError` if its folder cannot be made or written."""
    path = warehouse / LOCK_NAME
    fd = _open_lock_file(warehouse)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise WarehouseBusyError(warehouse, _read(path)) from None
    try:
        record = {"role": role, "pid": os.getpid(), "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
        record.update(info)
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps(record).encode(), 0)
        yield
    finally:
        os.ftruncate(fd, 0)
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)
