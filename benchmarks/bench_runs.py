"""How fast runs and handoff records are: per-call latency on memory and SQLite.

    .venv/bin/python benchmarks/bench_runs.py            # full sizes
    .venv/bin/python benchmarks/bench_runs.py --quick    # small sizes, seconds

Each figure is the median (and 95th percentile) of single calls from one
process, in microseconds. ``start_run`` takes the agent over each time (the
agent's run log grows by one per call); ``write_handoff`` is timed on runs
that were each taken over, so every call lands a record; ``write_handoff
(retry)`` is the at-most-once path where the record is already there.
SQLite runs with ``synchronous=FULL`` (a landed record is on disk), so its
figures are dominated by fsync on this machine's disk.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from agent_mem_vault.atproto import record_cid, validate_record
from agent_mem_vault.runs import RunRegistry
from agent_mem_vault.store import Persistence, memory_persistence, sqlite_persistence

RECORD = {
    "$type": "garden.engram.agents.handoff",
    "fromRun": "3kznmn7xqxl22",
    "toRun": "3kznmn7xqxl23",
    "createdAt": "2026-11-30T12:00:00.000Z",
    "generator": {"name": "agent-mem-vault", "version": "0.1.0"},
}


def _summary(samples: list[float]) -> tuple[float, float]:
    samples.sort()
    return statistics.median(samples), samples[max(int(len(samples) * 0.95) - 1, 0)]


async def atimed(n: int, op: Callable[[int], Awaitable[Any]]) -> tuple[float, float]:
    samples = []
    for i in range(n):
        start = time.perf_counter()
        await op(i)
        samples.append((time.perf_counter() - start) * 1e6)
    return _summary(samples)


def timed(n: int, op: Callable[[], Any]) -> tuple[float, float]:
    samples = []
    for _ in range(n):
        start = time.perf_counter()
        op()
        samples.append((time.perf_counter() - start) * 1e6)
    return _summary(samples)


async def registry_figures(store: Persistence, n: int) -> dict[str, tuple[float, float]]:
    registry = RunRegistry(store, lease_seconds=3600)
    out: dict[str, tuple[float, float]] = {}
    runs = []

    async def start(i: int) -> None:
        runs.append(await registry.start_run("bench"))

    out["start_run"] = await atimed(n, start)
    current = await registry.start_run("bench")
    out["ensure_current"] = await atimed(n, lambda i: current.ensure_current())
    out["heartbeat"] = await atimed(n, lambda i: current.heartbeat())
    out["write_handoff"] = await atimed(n, lambda i: runs[i].write_handoff())
    out["write_handoff (retry)"] = await atimed(n, lambda i: runs[i].write_handoff())
    await store.close()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, a few seconds")
    args = parser.parse_args()
    n = 50 if args.quick else 500
    rows: list[tuple[str, str, tuple[float, float]]] = []
    with tempfile.TemporaryDirectory() as tmp:
        for kind in ("memory", "sqlite"):
            store = (
                memory_persistence()
                if kind == "memory"
                else sqlite_persistence(Path(tmp) / "runs.db")
            )
            figures = asyncio.run(registry_figures(store, n))
            rows += [(kind, name, value) for name, value in figures.items()]
    m = n * 20
    rows.append(("-", "record_cid", timed(m, lambda: record_cid(RECORD))))
    rows.append(
        ("-", "validate_record", timed(m, lambda: validate_record(RECORD, "3kznmn7xqxl23")))
    )
    print(f"runs benchmark, {n} calls per registry figure, {m} per record figure")
    print(f"| {'backend':<8} | {'operation':<22} | {'median µs':>10} | {'p95 µs':>10} |")
    print(f"|{'-' * 10}|{'-' * 24}|{'-' * 12}|{'-' * 12}|")
    for kind, name, (median, p95) in rows:
        print(f"| {kind:<8} | {name:<22} | {median:>10.1f} | {p95:>10.1f} |")


if __name__ == "__main__":
    main()
