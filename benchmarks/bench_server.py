"""The harness over HTTP: send throughput, and handoff → SSE event latency.

Both run against a real uvicorn in its own process on loopback, as a
deployment would; the load comes from this process with httpx.

* send: requests per second for ``POST …/messages`` on a harness whose main
  model is scripted (no model time), so what is measured is HTTP, the host,
  the log and the persistence. Clients send one after another on their own
  threads (a fresh thread every 20 turns); at 1, 10 and 100 concurrent
  clients; memory and SQLite. Each client opens its connection and sends
  once before the clock starts. On two or more cores the load generator is
  pinned to the first and the servers to the others (``--no-pin``: not), and
  the CPU time per send of the server and of the load generator is shown.
* the floor, in the same run: a bare Starlette app on the same uvicorn that
  does the same durable work per request and nothing else — it appends the
  message to a log table in a SQLite file (WAL, ``synchronous=FULL``, one
  ``BEGIN IMMEDIATE`` transaction on a writer thread, as the store does) and
  returns JSON. The harness's sends per second are shown as a share of it.
* handoff → SSE: K clients stream one thread's events (K = 1 and 100); a
  router hands the thread to the other of two agents on every turn; the time
  from the ``harness.handoff`` record's timestamp (taken when the log appended
  it) to the moment each client has parsed the event (p50 and p99).
  Timestamps have millisecond resolution, so figures are ±1 ms.

    .venv/bin/python benchmarks/bench_server.py            # full sizes
    .venv/bin/python benchmarks/bench_server.py --quick    # small sizes

Prints medians (and the 99th percentile for latency).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx

from measure import cpu_seconds, load, quantile

HERE = Path(__file__).resolve()
KEEP_ALIVE = 120
"""Seconds uvicorn keeps an idle connection (default 5): a busy machine can leave one of
100 clients idle longer than that, and a request racing the close fails with ReadError."""


# -- the server process ---------------------------------------------------------
def floor_app(db: str) -> Any:
    """The same durable work as a send, and nothing else: one row in a SQLite log, JSON back."""
    import sqlite3
    import threading

    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import JSONResponse
    from starlette.routing import Route

    conn = sqlite3.connect(db, isolation_level=None, check_same_thread=False)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=FULL")
    conn.execute(
        "CREATE TABLE IF NOT EXISTS log (stream TEXT NOT NULL, seq INTEGER NOT NULL, "
        "data TEXT NOT NULL, PRIMARY KEY (stream, seq))"
    )
    lock = threading.Lock()

    def append(stream: str, data: str) -> int:
        with lock:
            conn.execute("BEGIN IMMEDIATE")
            try:
                (seq,) = conn.execute(
                    "SELECT coalesce(max(seq), 0) + 1 FROM log WHERE stream = ?", (stream,)
                ).fetchone()
                conn.execute("INSERT INTO log VALUES (?, ?, ?)", (stream, seq, data))
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")
            return int(seq)

    async def send(request: Request) -> JSONResponse:
        body = await request.json()
        data = json.dumps({"role": "user", "text": body["text"]})
        seq = await asyncio.to_thread(append, request.path_params["thread_id"], data)
        return JSONResponse({"seq": seq, "text": "Done, thank you."})

    async def ready(request: Request) -> JSONResponse:
        return JSONResponse([])

    return Starlette(
        routes=[
            Route("/api/harnesses", ready, methods=["GET"]),
            Route("/api/{harness}/threads/{thread_id}/messages", send, methods=["POST"]),
        ]
    )


class Answer:
    """A scripted model that gives the same answer forever and records nothing.

    (``ScriptedModel`` keeps every request for a test to read back: over a
    benchmark that list would grow with every send.)
    """

    name = "scripted"

    async def stream(self, request: Any) -> Any:
        from agent_mem_vault.harness.model import TextDelta, Usage, UsageReport

        yield TextDelta("Done, thank you.")
        yield UsageReport(Usage(10, 5))


def serve(scenario: str, backend: str, port: int, db: str) -> None:
    import uvicorn

    if scenario == "floor":
        uvicorn.run(
            floor_app(db),
            host="127.0.0.1",
            port=port,
            log_level="warning",
            access_log=False,
            timeout_keep_alive=KEEP_ALIVE,
        )
        return

    from agent_mem_vault.harness import HarnessHost, Routing, define_agent, define_harness
    from agent_mem_vault.harness.testing import ScriptedModel
    from agent_mem_vault.server import create_harness_app
    from agent_mem_vault.store import memory_persistence, sqlite_persistence

    persistence = memory_persistence() if backend == "memory" else sqlite_persistence(Path(db))
    if scenario == "send":
        harness = define_harness(name="bench/plain", model=Answer())
    else:

        def replies(name: str) -> Callable[[Any], str]:
            return lambda ctx: f"{name} here."

        agents = [
            define_agent(name=name, description=name, run=replies(name)) for name in ("a", "b")
        ]

        def router(ctx: Any) -> dict[str, str]:
            return {"handoff": "b" if ctx.active_agent == "a" else "a", "note": "ping"}

        harness = define_harness(
            name="bench/pingpong",
            model=ScriptedModel([]),
            agents=agents,
            routing=Routing(router=router, give_models_handoff_tool=False),
        )
    app = create_harness_app(HarnessHost(persistence=persistence), {"h": harness})
    uvicorn.run(
        app,
        host="127.0.0.1",
        port=port,
        log_level="warning",
        access_log=False,
        timeout_keep_alive=KEEP_ALIVE,
    )


def _cpus() -> tuple[set[int], set[int]] | None:
    """The load generator's core and the servers' core(s), or None on a single core.

    The client and the servers share the machine; pinned apart, the client
    cannot take the server's core (or the other way round) in the middle of
    a round, and what each costs can be read off its own CPU time.
    """
    if not hasattr(os, "sched_getaffinity"):
        return None
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) < 2:
        return None
    return {cpus[0]}, set(cpus[1:])


@dataclass
class Server:
    url: str
    pid: int


@contextmanager
def server(scenario: str, backend: str, cpus: set[int] | None = None) -> Iterator[Server]:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with tempfile.TemporaryDirectory() as tmp:
        proc = subprocess.Popen(
            [
                sys.executable,
                str(HERE),
                "--serve",
                scenario,
                "--backend",
                backend,
                "--port",
                str(port),
                "--db",
                os.path.join(tmp, "bench.db"),
            ],
        )
        if cpus is not None:
            os.sched_setaffinity(proc.pid, cpus)
        url = f"http://127.0.0.1:{port}/api/h"
        try:
            deadline = time.monotonic() + 30
            while True:
                try:
                    httpx.get(f"http://127.0.0.1:{port}/api/harnesses", timeout=1)
                    break
                except httpx.HTTPError:
                    if time.monotonic() > deadline or proc.poll() is not None:
                        raise RuntimeError("the benchmark server did not start") from None
                    time.sleep(0.1)
            yield Server(url, proc.pid)
        finally:
            proc.terminate()
            proc.wait(10)


# -- send throughput ------------------------------------------------------------
@dataclass
class Round:
    rps: float
    server_ms: float
    """Server CPU milliseconds per send (all its threads)."""
    client_ms: float
    """Load generator CPU milliseconds per send."""


async def send_rps(target: Server, workers: int, per_worker: int, round_no: int) -> Round:
    """Sends per second of ``workers`` clients, each ``per_worker`` sends one after another.

    Every client opens its connection and sends once before the clock starts,
    so what is timed is sends on open keep-alive connections, at full
    concurrency from the first to the last.
    """
    url = target.url
    # A client (and connection pool) per worker: one shared pool of 100
    # connections costs the load generator ten times the CPU per request of
    # one of 10, and the figure at 100 clients would be httpx's.
    limits = httpx.Limits(max_connections=1, max_keepalive_connections=1)
    clients = [httpx.AsyncClient(limits=limits, timeout=60) for _ in range(workers)]

    async def worker(w: int, sends: int, first: int = 0) -> None:
        client = clients[w % workers]
        for i in range(first, first + sends):
            thread = f"r{round_no}-w{w}-t{i // 20}"
            r = await client.post(f"{url}/threads/{thread}/messages", json={"text": "Hello"})
            r.raise_for_status()

    try:
        # One untimed send per client (a thread of its own) warms each connection.
        await asyncio.gather(*(worker(-1 - w, 1) for w in range(workers)))
        server_cpu, client_cpu = (cpu_seconds(target.pid) or 0.0), time.process_time()
        start = time.perf_counter()
        await asyncio.gather(*(worker(w, per_worker) for w in range(workers)))
        elapsed = time.perf_counter() - start
        server_cpu = (cpu_seconds(target.pid) or 0.0) - server_cpu
        client_cpu = time.process_time() - client_cpu
    finally:
        for client in clients:
            await client.aclose()
    total = workers * per_worker
    return Round(total / elapsed, server_cpu * 1000 / total, client_cpu * 1000 / total)


# -- handoff → SSE latency ----------------------------------------------------------
def _parse_at(at: str) -> float:
    return datetime.fromisoformat(at.replace("Z", "+00:00")).timestamp()


async def handoff_latency(url: str, streams: int, turns: int) -> list[float]:
    thread = f"{url}/threads/pingpong-{streams}"
    limits = httpx.Limits(max_connections=streams + 8, max_keepalive_connections=streams + 8)
    timeout = httpx.Timeout(30, read=None)
    latencies: list[float] = []
    async with httpx.AsyncClient(limits=limits, timeout=timeout) as client:
        (await client.post(f"{thread}/messages", json={"text": "start"})).raise_for_status()
        seen: dict[str, int] = {}
        ready = asyncio.Event()
        got = asyncio.Condition()
        opened = 0

        async def listen() -> None:
            nonlocal opened
            last = str((await client.get(thread)).json()["lastEventId"])
            async with client.stream(
                "GET", f"{thread}/events", headers={"last-event-id": last}
            ) as response:
                opened += 1
                if opened == streams:
                    ready.set()
                data: list[str] = []
                async for line in response.aiter_lines():
                    if line.startswith("data:"):
                        data.append(line[5:].strip())
                    elif line == "" and data:
                        event = json.loads("\n".join(data))
                        data = []
                        if event["name"] == "harness.handoff":
                            latencies.append(time.time() - _parse_at(event["at"]))
                            async with got:
                                run = event["value"]["runId"]
                                seen[run] = seen.get(run, 0) + 1
                                got.notify_all()

        tasks = [asyncio.create_task(listen()) for _ in range(streams)]
        await asyncio.wait_for(ready.wait(), 60)
        await asyncio.sleep(0.2)
        for _ in range(turns):
            r = await client.post(f"{thread}/messages", json={"text": "next"})
            run: str = r.json()["runId"]

            def all_saw(run: str = run) -> bool:
                return seen.get(run) == streams

            async with got:
                await asyncio.wait_for(got.wait_for(all_saw), 30)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    return latencies


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes")
    parser.add_argument(
        "--clients", default="1,10,100", help="concurrent clients to measure, comma-separated"
    )
    parser.add_argument("--rounds", type=int, default=0, help="rounds (default 5, quick 3)")
    parser.add_argument("--no-sse", action="store_true", help="skip the handoff → SSE latency")
    parser.add_argument(
        "--no-pin", action="store_true", help="let client and servers share every core"
    )
    parser.add_argument("--serve", choices=["send", "handoff", "floor"], help=argparse.SUPPRESS)
    parser.add_argument("--backend", default="memory", help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--db", default="", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve(args.serve, args.backend, args.port, args.db)
        return
    rounds, sends, least, turns = (3, 100, 2, 10) if args.quick else (5, 400, 10, 40)
    rounds = args.rounds or rounds
    clients = tuple(int(n) for n in args.clients.split(","))
    pinned = None if args.no_pin else _cpus()
    if pinned is not None:
        os.sched_setaffinity(0, pinned[0])
        print(f"load generator on CPU {sorted(pinned[0])}, servers on CPU {sorted(pinned[1])}")
    server_cpus = pinned[1] if pinned is not None else None

    print("send over HTTP (scripted model, real uvicorn on loopback), requests/second")
    print(
        f"{'server':<16} {'clients':>7} {'median rps':>11} {'vs floor':>9}  "
        f"{'server ms':>9} {'client ms':>9}  rounds"
    )
    # The floor and the harness take turns, round by round, so a slow phase of
    # a shared machine hits both alike.
    with (
        server("floor", "sqlite", server_cpus) as floor,
        server("send", "sqlite", server_cpus) as sq,
        server("send", "memory", server_cpus) as mem,
    ):
        targets = {"floor (SQLite)": floor, "harness SQLite": sq, "harness memory": mem}
        results: dict[tuple[str, int], list[Round]] = {}
        for r in range(rounds):
            for n in clients:
                for name, target in targets.items():
                    got = asyncio.run(send_rps(target, n, max(sends // n, least), r * 1000 + n))
                    results.setdefault((name, n), []).append(got)
        for n in clients:
            floor_rps = statistics.median(x.rps for x in results[("floor (SQLite)", n)])
            for name in targets:
                runs = results[(name, n)]
                rps = statistics.median(x.rps for x in runs)
                server_ms = statistics.median(x.server_ms for x in runs)
                client_ms = statistics.median(x.client_ms for x in runs)
                print(
                    f"{name:<16} {n:>7} {rps:>11.0f} {rps / floor_rps:>8.0%}  "
                    f"{server_ms:>9.2f} {client_ms:>9.2f}  {rounds}"
                )
    print("(server ms, client ms: median CPU milliseconds per send of the server process")
    print(" and of the load generator)")

    if not args.no_sse:
        print("\nhandoff → SSE client latency, milliseconds (±1 ms)")
        print(f"{'backend':<8} {'streams':>7} {'p50':>8} {'p99':>8}  events")
        for backend in ("memory", "sqlite"):
            with server("handoff", backend, server_cpus) as target:
                for streams in (1, 100):
                    lat = asyncio.run(handoff_latency(target.url, streams, turns))
                    ms = [x * 1000 for x in lat]
                    p99 = quantile(ms, 0.99)
                    print(
                        f"{backend:<8} {streams:>7} {statistics.median(ms):>8.1f} {p99:>8.1f}  "
                        f"{len(ms)}"
                    )
    print(f"\nload average at the end: {load(3)}")


if __name__ == "__main__":
    main()
