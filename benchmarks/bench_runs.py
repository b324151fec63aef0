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
import tempfile
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from agent_mem_vault.atproto import record_cid, validate_record
from agent_mem_vault.runs import RunRegistry
from agent_mem_vault.store import Persistence, memory_persistence, sqlite_persistence
from measure import US, acall_times, call_times, median_p95

RECORD = {
    "$type": "garden.engram.agents.handoff",
    "fromRun": "3kznmn7xqxl22",
    "toRun": "3kznmn7xqxl23",
    "createdAt": "2026-11-30T12:00:00.000Z",
    "generator": {"name": "agent-mem-vault", "version": "0.1.0"},
}


async def atimed(n: int, op: Callable[[int], Awaitable[Any]]) -> tuple[float, float]:
    """Median and 95th percentile of ``n`` calls, in microseconds."""
    return median_p95(await acall_times(op, n, unit=US))


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
    cid = call_times(lambda _: record_cid(RECORD), m, unit=US)
    valid = call_times(lambda _: validate_record(RECORD, "3kznmn7xqxl23"), m, unit=US)
    rows += [("-", "record_cid", median_p95(cid)), ("-", "validate_record", median_p95(valid))]
    print(f"runs benchmark, {n} calls per registry figure, {m} per record figure")
    print(f"| {'backend':<8} | {'operation':<22} | {'median µs':>10} | {'p95 µs':>10} |")
    print(f"|{'-' * 10}|{'-' * 24}|{'-' * 12}|{'-' * 12}|")
    for kind, name, (median, p95) in rows:
        print(f"| {kind:<8} | {name:<22} | {median:>10.1f} | {p95:>10.1f} |")


if __name__ == "__main__":
    main()
