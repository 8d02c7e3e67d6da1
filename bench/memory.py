"""Peak memory of the Spark driver JVM and the Python workers, sampled in the background.

A thread reads ``/proc`` every ``interval`` seconds and finds the processes below this
one: the driver JVM (``java``, started by pyspark's ``spark-submit``) and the Python
workers (``pyspark.daemon`` and the workers it forks; their command line is the
daemon's). For each *section* (set with :meth:`MemorySampler.section`) it keeps the
largest resident set seen: of the JVM, of the sum over the Python workers alive at one
moment, and of one worker. The kernel's own high-water marks (``VmHWM``: the peak
resident set since the process started, which a sampler cannot miss) are kept per
process for the whole run. Each section also gets the CPU seconds (user + system) the
benchmark's process, the JVM and the workers used inside it: on a shared machine
the CPU a step needs is steadier than its wall time. The resident sets at the start of each section are kept
too: Python workers are reused between tasks and keep the memory they grew to, and a
JVM rarely shrinks, so a section's peak is what it used *or* what was still held.

Notes
-----
Resident sets of forked workers count the pages they share with the daemon once per
process, so the worker sum is an upper bound of what they take together. Linux only
(``/proc``); elsewhere every figure is ``None``.
"""

from __future__ import annotations

import os
import threading
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any

_PROC = Path("/proc")
_KB = 1024


def _status(pid: int) -> dict[str, int]:
    """``VmRSS`` and ``VmHWM`` of a process in bytes (empty when it is gone)."""
    out: dict[str, int] = {}
    try:
        text = (_PROC / str(pid) / "status").read_text()
    except OSError:
        return out
    for line in text.splitlines():
        name, _, value = line.partition(":")
        if name in ("VmRSS", "VmHWM"):
            out[name] = int(value.split()[0]) * _KB
    return out


_TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def _read_stat(path: Path) -> tuple[str, list[str]] | None:
    """A process's or thread's ``stat`` file: its name, and the fields after the name
    (``fields[0]`` is field 3, the state; ``fields[1]`` the parent's pid); None when it
    is gone. ``pid (comm) state ppid ...``: the name may hold spaces and parentheses."""
    try:
        stat = path.read_text()
    except OSError:
        return None
    return stat[stat.index("(") + 1 : stat.rindex(")")], stat[stat.rindex(")") + 2 :].split()


def _stat_cpu_seconds(fields: list[str]) -> float:
    return (int(fields[11]) + int(fields[12])) / _TICK  # utime + stime


def _cpu_seconds(pid: int) -> tuple[tuple[int, int], float] | None:
    """((pid, start time), user + system CPU seconds) of a process; None when it is gone.
    The start time tells a process from a later one that got the same pid."""
    read = _read_stat(_PROC / str(pid) / "stat")
    if read is None:
        return None
    fields = read[1]
    return (pid, int(fields[19])), _stat_cpu_seconds(fields)  # starttime


def _children_map() -> dict[int, list[int]]:
    children: dict[int, list[int]] = {}
    for entry in _PROC.iterdir():
        if not entry.name.isdigit() or (read := _read_stat(entry / "stat")) is None:
            continue
        children.setdefault(int(read[1][1]), []).append(int(entry.name))
    return children


def _descendants(root: int) -> list[int]:
    children = _children_map()
    out, todo = [], [root]
    while todo:
        pid = todo.pop()
        for child in children.get(pid, []):
            out.append(child)
            todo.append(child)
    return out


def _kind(pid: int) -> str | None:
    """``jvm``, ``python_worker`` or None (a shell or anything else)."""
    try:
        cmdline = (_PROC / str(pid) / "cmdline").read_bytes().replace(b"\0", b" ")
        comm = (_PROC / str(pid) / "comm").read_text().strip()
    except OSError:
        return None
    if comm == "java":
        return "jvm"
    if b"pyspark.daemon" in cmdline or b"pyspark.worker" in cmdline:
        return "python_worker"
    return None


def _jvm_children(parent: int) -> list[int]:
    return [pid for pid in _children_map().get(parent, []) if _kind(pid) == "jvm"]


def jvm_command_lines(parent: int) -> list[list[str]]:
    """The command lines (arguments) of the JVMs among ``parent``'s children."""
    lines = []
    for pid in _jvm_children(parent):
        try:
            lines.append((_PROC / str(pid) / "cmdline").read_bytes().decode().split("\0")[:-1])
        except OSError:  # gone since it was listed
            continue
    return lines


def jvm_cpu_seconds(parent: int) -> tuple[float, dict[str, tuple[str, float]]]:
    """CPU seconds of the JVMs among ``parent``'s children: in all, and by thread
    (``"pid/tid"`` -> (the thread's name, its seconds); Linux keeps 15 characters of a
    name). Zero and nothing once they are gone."""
    total, threads = 0.0, {}
    for pid in _jvm_children(parent):
        if (cpu := _cpu_seconds(pid)) is None:  # gone since it was listed
            continue
        total += cpu[1]
        for task in (_PROC / str(pid) / "task").glob("*/stat"):
            if (read := _read_stat(task)) is not None:  # else: the thread ended since it was listed
                threads[f"{pid}/{task.parent.name}"] = (read[0], _stat_cpu_seconds(read[1]))
    return total, threads


def sample_jvm_cpu(proc: Any, interval: float = 0.2) -> tuple[threading.Thread, dict[str, Any]]:
    """Read the CPU of ``proc``'s JVM (:func:`jvm_cpu_seconds`) every ``interval``
    seconds while ``proc`` runs, in a thread started here. The dict it returns holds the
    last reading's total (``"total"``) and every thread seen (``"threads"``): the JVM is
    not waited for by the process that starts it, so its last reading before it exits
    is all there is. Join the thread once ``proc`` has ended."""
    last: dict[str, Any] = {"total": 0.0, "threads": {}}

    def sample() -> None:
        while proc.poll() is None:
            total, threads = jvm_cpu_seconds(proc.pid)
            if total:
                last["total"] = total
            last["threads"].update(threads)
            time.sleep(interval)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    return sampler, last


class MemorySampler:
    """Background sampler of the JVM and Python worker memory (see the module doc)."""

    def __init__(self, interval: float = 0.2) -> None:
        self.interval = interval
        self.available = _PROC.is_dir()
        self._label = "setup"
        self._lock = threading.Lock()
        self._sections: dict[str, dict[str, int]] = {}
        self._hwm: dict[int, tuple[str, int]] = {}  # pid -> (kind, VmHWM)
        self._starts: dict[str, tuple[int, int]] = {}  # label -> (JVM, workers) RSS at its start
        self._cpu: dict[tuple[int, int], float] = {}  # (pid, start time) -> CPU seconds, JVM and workers
        self._section_cpu: dict[str, float] = {}  # label -> CPU seconds used inside it
        self._section_wall: dict[str, float] = {}  # label -> wall seconds spent inside it
        self._kinds: dict[int, str] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="bench-memory", daemon=True)

    def start(self) -> MemorySampler:
        if self.available:
            self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=5)
        self.sample()

    @contextmanager
    def section(self, label: str):
        """Attribute the samples taken inside the ``with`` block to ``label``; yields a
        dict that gets the block's ``cpu_s`` and ``wall_s`` when it ends."""
        self.sample()
        with self._lock:
            previous, self._label = self._label, label
        jvm, workers = self.sample()
        cpu_start, wall_start = self.cpu_total(), time.perf_counter()
        with self._lock:  # what was resident already when the section began
            self._starts.setdefault(label, (jvm, workers))
        spent: dict[str, float] = {}
        try:
            yield spent
        finally:
            self.sample()
            spent["cpu_s"] = self.cpu_total() - cpu_start
            spent["wall_s"] = time.perf_counter() - wall_start
            with self._lock:
                self._label = previous
                self._section_cpu[label] = self._section_cpu.get(label, 0.0) + spent["cpu_s"]
                self._section_wall[label] = self._section_wall.get(label, 0.0) + spent["wall_s"]

    def cpu_total(self) -> float:
        """CPU seconds used so far by this process, the JVM and the Python workers (a
        worker that ended counts with its last sample)."""
        own = os.times()
        with self._lock:
            return own.user + own.system + sum(self._cpu.values())

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self.sample()

    def sample(self) -> tuple[int, int]:
        """Take one sample; returns (JVM RSS, sum of the Python workers' RSS) in bytes."""
        if not self.available:
            return 0, 0
        jvm = workers = biggest = n_workers = 0
        for pid in _descendants(os.getpid()):
            kind = self._kinds.get(pid)
            if kind is None:
                # not cached when unknown: spark-submit's shell becomes the JVM by exec
                kind = _kind(pid)
                if kind is None:
                    continue
                self._kinds[pid] = kind
            status = _status(pid)
            if not status:  # gone: its pid may be reused by another process
                self._kinds.pop(pid, None)
                continue
            rss, hwm = status.get("VmRSS", 0), status.get("VmHWM", 0)
            cpu = _cpu_seconds(pid)
            with self._lock:
                if cpu is not None:
                    self._cpu[cpu[0]] = cpu[1]
                self._hwm[pid] = (kind, max(hwm, self._hwm.get(pid, (kind, 0))[1]))
            if kind == "jvm":
                jvm = max(jvm, rss)
            else:
                workers += rss
                biggest = max(biggest, rss)
                n_workers += 1
        with self._lock:
            peak = self._sections.setdefault(
                self._label, {"jvm_rss": 0, "workers_rss_sum": 0, "worker_rss_max": 0, "workers_alive_max": 0}
            )
            peak["jvm_rss"] = max(peak["jvm_rss"], jvm)
            peak["workers_rss_sum"] = max(peak["workers_rss_sum"], workers)
            peak["worker_rss_max"] = max(peak["worker_rss_max"], biggest)
            peak["workers_alive_max"] = max(peak["workers_alive_max"], n_workers)
        return jvm, workers

    def result(self) -> dict[str, Any]:
        """Peaks per section (MiB) and the kernel high-water marks of the whole run."""
        mib = 1 / (1 << 20)
        with self._lock:
            sections = {
                label: {
                    "jvm_peak_rss_mib": round(p["jvm_rss"] * mib, 1),
                    "python_workers_peak_rss_sum_mib": round(p["workers_rss_sum"] * mib, 1),
                    "python_worker_peak_rss_max_mib": round(p["worker_rss_max"] * mib, 1),
                    "python_workers_alive_max": p["workers_alive_max"],
                    "jvm_rss_at_start_mib": round(self._starts.get(label, (0, 0))[0] * mib, 1),
                    "python_workers_rss_sum_at_start_mib": round(self._starts.get(label, (0, 0))[1] * mib, 1),
                    "cpu_s": round(self._section_cpu.get(label, 0.0), 1),
                    "wall_s": round(self._section_wall.get(label, 0.0), 1),
                }
                for label, p in self._sections.items()
                if label != "setup"
            }
            jvm_hwm = [h for k, h in self._hwm.values() if k == "jvm"]
            worker_hwm = [h for k, h in self._hwm.values() if k == "python_worker"]
        driver = _status(os.getpid()).get("VmHWM")
        return {
            "sampler_interval_s": self.interval,
            "available": self.available,
            "jvm_vmhwm_mib": round(max(jvm_hwm) * mib, 1) if jvm_hwm else None,
            "python_worker_vmhwm_max_mib": round(max(worker_hwm) * mib, 1) if worker_hwm else None,
            "python_worker_processes_seen": len(worker_hwm),
            "bench_driver_python_vmhwm_mib": round(driver * mib, 1) if driver else None,
            "sections": sections,
        }
