"""The harness over HTTP: send throughput, and handoff → SSE event latency.

Both run against a real uvicorn in its own process on loopback, as a
deployment would; the load comes from this process with httpx.

* send: requests per second for ``POST …/messages`` on a harness whose main
  model is scripted (no model time), so what is measured is HTTP, the host,
  the log and the persistence. Clients send one after another on their own
  threads (a fresh thread every 20 turns); at 1, 10 and 100 concurrent
  clients; memory and SQLite.
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
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx

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


@contextmanager
def server(scenario: str, backend: str) -> Iterator[str]:
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
            yield url
        finally:
            proc.terminate()
            proc.wait(10)


# -- send throughput ------------------------------------------------------------
async def send_rps(url: str, workers: int, per_worker: int, round_no: int) -> float:
    limits = httpx.Limits(max_connections=workers + 4, max_keepalive_connections=workers + 4)
    async with httpx.AsyncClient(limits=limits, timeout=60) as client:

        async def worker(w: int) -> None:
            for i in range(per_worker):
                thread = f"r{round_no}-w{w}-t{i // 20}"
                r = await client.post(f"{url}/threads/{thread}/messages", json={"text": "Hello"})
                r.raise_for_status()

        await worker(-1 - round_no)  # warm the connection and the host
        start = time.perf_counter()
        await asyncio.gather(*(worker(w) for w in range(workers)))
        elapsed = time.perf_counter() - start
    return workers * per_worker / elapsed


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
    parser.add_argument("--serve", choices=["send", "handoff", "floor"], help=argparse.SUPPRESS)
    parser.add_argument("--backend", default="memory", help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--db", default="", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve(args.serve, args.backend, args.port, args.db)
        return
    rounds, sends, turns = (3, 100, 10) if args.quick else (5, 400, 40)

    print("send over HTTP (scripted model, real uvicorn on loopback), requests/second")
    print(f"{'server':<16} {'clients':>7} {'median rps':>11} {'vs floor':>9}  rounds")
    clients = (1, 10, 100)
    rps: dict[tuple[str, int], float] = {}
    # The floor and the harness take turns, round by round, so a slow phase of
    # a shared machine hits both alike.
    with (
        server("floor", "sqlite") as floor,
        server("send", "sqlite") as sq,
        server("send", "memory") as mem,
    ):
        urls = {"floor (SQLite)": floor, "harness SQLite": sq, "harness memory": mem}
        results: dict[tuple[str, int], list[float]] = {}
        for r in range(rounds):
            for n in clients:
                for name, url in urls.items():
                    got = asyncio.run(send_rps(url, n, max(sends // n, 2), r * 1000 + n))
                    results.setdefault((name, n), []).append(got)
        for n in clients:
            for name in urls:
                rps[(name, n)] = statistics.median(results[(name, n)])
                share = rps[(name, n)] / rps[("floor (SQLite)", n)]
                print(f"{name:<16} {n:>7} {rps[(name, n)]:>11.0f} {share:>8.0%}  {rounds}")

    print("\nhandoff → SSE client latency, milliseconds (±1 ms)")
    print(f"{'backend':<8} {'streams':>7} {'p50':>8} {'p99':>8}  events")
    for backend in ("memory", "sqlite"):
        with server("handoff", backend) as url:
            for streams in (1, 100):
                lat = asyncio.run(handoff_latency(url, streams, turns))
                ms = sorted(x * 1000 for x in lat)
                p99 = ms[min(len(ms) - 1, int(len(ms) * 0.99))]
                print(
                    f"{backend:<8} {streams:>7} {statistics.median(ms):>8.1f} {p99:>8.1f}  "
                    f"{len(ms)}"
                )
    load = Path("/proc/loadavg")
    if load.exists():
        print(f"\nload average at the end: {' '.join(load.read_text().split()[:3])}")


if __name__ == "__main__":
    main()
