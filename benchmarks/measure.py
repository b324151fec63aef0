"""How the benchmarks measure: the time of one call, the times of many, the figures a
row prints from them, the CPU time another process has used, and the machine's load.

Each script imports it by name (``from measure import call_times``), as it imports
``bench_vault``: a script run as ``python benchmarks/bench_x.py`` has its own
folder first on ``sys.path``. One definition of a percentile and one way to
time a call, so that two scripts' figures for the same thing agree.
"""

from __future__ import annotations

import os
import statistics
import sys
import time
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path

__all__ = [
    "EXE",
    "MS",
    "US",
    "acall_times",
    "call_times",
    "cpu_seconds",
    "elapsed",
    "load",
    "median_p95",
    "ms_p95",
    "quantile",
    "wall_and_cpu_ms",
]

EXE = Path(sys.executable).with_name("agent-mem-vault")
"""The command of this environment, as a user runs it (``pip install`` put it beside
the interpreter)."""

MS = 1_000.0
"""Seconds to milliseconds: the unit of most rows."""
US = 1_000_000.0
"""Seconds to microseconds: the unit of the storage layer's rows."""


def quantile(values: Sequence[float], q: float) -> float:
    """The value a fraction ``q`` of the way up the sorted ``values`` (the largest for a
    ``q`` the samples are too few to tell from 1): p95 is ``quantile(values, 0.95)``."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def median_p95(values: Sequence[float]) -> tuple[float, float]:
    """The median and the 95th percentile of ``values``."""
    return statistics.median(values), quantile(values, 0.95)


def ms_p95(values: Sequence[float], digits: int = 1) -> str:
    """``12.3 ms (p95 45.6)``: the median and 95th percentile of ``values`` (in ms)."""
    median, p95 = median_p95(values)
    return f"{median:.{digits}f} ms (p95 {p95:.{digits}f})"


def elapsed(call: Callable[[], object], unit: float = MS) -> float:
    """The wall time of one ``call()``, in ``unit`` (ms unless given)."""
    start = time.perf_counter()
    call()
    return (time.perf_counter() - start) * unit


def call_times(
    op: Callable[[int], object], n: int, *, warmup: int = 0, unit: float = MS
) -> list[float]:
    """The wall time of each of ``op(0)`` … ``op(n - 1)``, in ``unit``, after ``warmup``
    calls that are not timed (``op(-1)``, ``op(-2)``, …: an index a call can tell apart)."""
    for i in range(warmup):
        op(-1 - i)
    taken = []
    for i in range(n):
        start = time.perf_counter()
        op(i)
        taken.append((time.perf_counter() - start) * unit)
    return taken


async def acall_times(
    op: Callable[[int], Awaitable[object]], n: int, *, warmup: int = 0, unit: float = MS
) -> list[float]:
    """As :func:`call_times`, for a call that is awaited."""
    for i in range(warmup):
        await op(-1 - i)
    taken = []
    for i in range(n):
        start = time.perf_counter()
        await op(i)
        taken.append((time.perf_counter() - start) * unit)
    return taken


def wall_and_cpu_ms(
    runs: int, setup: Callable[[int], Callable[[], object]]
) -> tuple[float, float, float]:
    """(median wall, slowest wall, median CPU) in ms of ``runs`` calls, each made by
    ``setup(i)`` outside the timing. CPU time (all threads of this process) is what a
    loaded machine disturbs least."""
    wall, cpu = [], []
    for i in range(runs):
        op = setup(i)
        start, start_cpu = time.perf_counter(), time.process_time()
        op()
        wall.append((time.perf_counter() - start) * MS)
        cpu.append((time.process_time() - start_cpu) * MS)
    return statistics.median(wall), max(wall), statistics.median(cpu)


def cpu_seconds(pid: int) -> float | None:
    """User + system CPU seconds that process ``pid`` and its threads have used (Linux's
    /proc), or None where that cannot be read (another system, a process gone)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def load(count: int = 1) -> str:
    """The machine's load averages (1, 5 and 15 minutes: the first ``count``), for the
    line a report ends with; ``?`` where the system does not say."""
    loadavg = Path("/proc/loadavg")
    return " ".join(loadavg.read_text().split()[:count]) if loadavg.exists() else "?"
