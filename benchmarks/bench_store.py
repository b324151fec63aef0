"""How fast the store backends are: per-operation latency and append throughput.

    .venv/bin/python benchmarks/bench_store.py            # full sizes
    .venv/bin/python benchmarks/bench_store.py --quick    # small sizes, seconds

PostgreSQL is measured when a DSN is given (``--dsn``, else
``$AGENT_MEM_VAULT_DSN``, else ``$AMV_TEST_POSTGRES_DSN``); the benchmark works
in a schema of its own and drops it afterwards. Latency is the median (and
95th percentile) of single calls from one process; throughput is appended
records per second summed over 1, 2 and 4 OS processes, each appending one
record at a time to its own stream (one thread per host, as the harness does)
and, separately, all to one shared stream (the worst case: one row lock).
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing as mp
import os
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from agent_mem_vault.core.errors import UnavailableError
from agent_mem_vault.store import Persistence, memory_persistence, sqlite_persistence
from measure import US, acall_times, median_p95


def open_store(kind: str, where: str) -> Persistence:
    if kind == "memory":
        return memory_persistence()
    if kind == "sqlite":
        return sqlite_persistence(where)
    from agent_mem_vault.store.postgres import postgres_persistence

    return postgres_persistence(where, min_size=1, max_size=2)


async def timed(n: int, op: Callable[[int], Awaitable[Any]]) -> tuple[float, float]:
    """Median and 95th percentile of ``n`` calls, in microseconds."""
    return median_p95(await acall_times(op, n, unit=US))


async def latencies(kind: str, where: str, n: int) -> dict[str, tuple[float, float]]:
    store = open_store(kind, where)
    await store.last_seq("warm-up")  # connect and migrate outside the timing
    payload = {"text": "a message of about a hundred bytes, as a chat turn would carry", "n": 1}
    out: dict[str, tuple[float, float]] = {}
    out["append"] = await timed(n, lambda i: store.append("lat", [("msg", payload)]))
    out["append (expected_seq)"] = await timed(
        n, lambda i: store.append("lat-x", [("msg", payload)], expected_seq=i)
    )
    out["read 10"] = await timed(n, lambda i: store.read("lat", after=max(0, i - 10), limit=10))
    out["insert"] = await timed(n, lambda i: store.insert("docs", f"k{i:08d}", payload))
    out["get"] = await timed(n, lambda i: store.get("docs", f"k{i:08d}"))
    out["put (CAS)"] = await timed(
        n, lambda i: store.put("docs", "cas", payload, expected_version=i)
    )
    out["lease renew"] = await timed(n, lambda i: store.acquire_lease("l", "me", ttl=30))
    await store.close()
    return out


def _worker(kind: str, where: str, stream: str, count: int, barrier: Any, results: Any) -> None:
    async def run() -> None:
        store = open_store(kind, where)
        await store.last_seq(stream)
        barrier.wait()
        start = time.perf_counter()
        timeouts = 0
        for i in range(count):
            while True:
                try:
                    await store.append(stream, [("msg", {"i": i})])
                    break
                except UnavailableError:
                    # SQLite's lock did not come within busy_timeout: the
                    # caller is told to retry, and so we do, and count it.
                    timeouts += 1
        results.put((start, time.perf_counter(), count, timeouts))
        await store.close()

    try:
        asyncio.run(run())
    except BaseException as exc:
        results.put(exc)
        raise


def throughput(kind: str, where: str, procs: int, count: int, shared: bool) -> tuple[float, int]:
    """Appended records per second over ``procs`` processes, and lock timeouts retried."""
    ctx = mp.get_context("spawn")
    barrier = ctx.Barrier(procs)
    results = ctx.Queue()
    run_id = uuid.uuid4().hex[:8]
    workers = [
        ctx.Process(
            target=_worker,
            args=(
                kind,
                where,
                f"tp-{run_id}" if shared else f"tp-{run_id}-{n}",
                count,
                barrier,
                results,
            ),
        )
        for n in range(procs)
    ]
    for w in workers:
        w.start()
    spans = []
    for _ in workers:
        got = results.get(timeout=600)
        if isinstance(got, BaseException):
            for w in workers:
                w.kill()
            raise got
        spans.append(got)
    for w in workers:
        w.join()
    first = min(s for s, _, _, _ in spans)
    last = max(e for _, e, _, _ in spans)
    return sum(c for _, _, c, _ in spans) / (last - first), sum(t for *_, t in spans)


def postgres_schema(dsn: str) -> tuple[str, Callable[[], None]]:
    """A DSN on a schema made for this benchmark, and how to drop it."""
    import psycopg
    from psycopg import sql
    from psycopg.conninfo import make_conninfo

    schema = f"bench_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(schema)))

    def drop() -> None:
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP SCHEMA {} CASCADE").format(sql.Identifier(schema)))

    return make_conninfo(dsn, options=f"-csearch_path={schema}"), drop


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sizes (a few seconds)")
    parser.add_argument(
        "--dsn",
        default=os.environ.get("AGENT_MEM_VAULT_DSN") or os.environ.get("AMV_TEST_POSTGRES_DSN"),
        help="PostgreSQL DSN (default: $AGENT_MEM_VAULT_DSN or $AMV_TEST_POSTGRES_DSN)",
    )
    args = parser.parse_args()
    n = 200 if args.quick else 2000
    count = 200 if args.quick else 2000

    with tempfile.TemporaryDirectory() as tmp:
        targets: dict[str, str] = {"memory": "", "sqlite": str(Path(tmp) / "bench.db")}
        cleanups: list[Callable[[], None]] = []
        if args.dsn:
            where, drop = postgres_schema(args.dsn)
            targets["postgres"] = where
            cleanups.append(drop)
        else:
            print("PostgreSQL: no DSN (--dsn or $AGENT_MEM_VAULT_DSN); measuring memory and SQLite")
        try:
            print(f"\nLatency, one process, {n} calls each: median µs (p95 µs)")
            table = {
                kind: asyncio.run(latencies(kind, where, n)) for kind, where in targets.items()
            }
            ops = list(next(iter(table.values())))
            print(f"{'operation':<24}" + "".join(f"{k:>20}" for k in table))
            for op in ops:
                cells = "".join(
                    f"{f'{table[k][op][0]:,.0f} ({table[k][op][1]:,.0f})':>20}" for k in table
                )
                print(f"{op:<24}{cells}")

            print(f"\nAppend throughput, records/s, {count} single-record appends per process")
            print(
                f"{'backend':<10}{'streams':<9}" + "".join(f"{f'{p} proc':>16}" for p in (1, 2, 4))
            )
            for kind, where in targets.items():
                if kind == "memory":
                    continue  # one process only, by design
                for shared in (False, True):
                    runs = [throughput(kind, where, p, count, shared) for p in (1, 2, 4)]
                    label = "one" if shared else "own"
                    cells = "".join(
                        f"{f'{rate:,.0f}' + (f' ({t} busy)' if t else ''):>16}" for rate, t in runs
                    )
                    print(f"{kind:<10}{label:<9}{cells}")
            print("(n busy): appends that hit SQLite's busy_timeout and were retried")
        finally:
            for cleanup in cleanups:
                cleanup()


if __name__ == "__main__":
    main()
