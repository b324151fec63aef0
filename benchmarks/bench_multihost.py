"""Many harness hosts on one PostgreSQL: turns per second, and failover time.

    .venv/bin/python benchmarks/bench_multihost.py --dsn postgresql://postgres@127.0.0.1/postgres
    .venv/bin/python benchmarks/bench_multihost.py --quick     # small sizes, under a minute

The DSN comes from ``--dsn``, else ``AMV_BENCH_POSTGRES_DSN``, else
``AMV_TEST_POSTGRES_DSN`` (``source scripts/test-env.sh`` sets it). Each run
works in a fresh schema of that database and drops it at the end.

**Throughput.** 1, 2 and 4 host processes (``HarnessHost`` on its own
``postgres_persistence``), each serving its own threads concurrently, each
thread running turns one after another with ``ScriptedModel`` (no model
time): what is measured is the harness and the database. Figure: turns per
second over all hosts, from the moment all start together to the last one
done; median of the repetitions.

**Failover.** Host A starts a turn whose model call hangs; host A is killed
(SIGKILL) mid-turn; host B sends to the thread again and again
(``log_owned_elsewhere`` until A's lease lapses), then takes the thread
over, closes the interrupted turn and answers. Figure: seconds from the kill
to B's answer; median of the repetitions, next to the bound the design
promises: lease TTL + one renewal period (TTL / 3).

**On the wire** (``--wire``). This machine has two cores, so more hosts
cannot show more turns per second here; what bounds a cluster is the
database. One host on a pool of one connection, traced with libpq's own
trace (every protocol message with its length): round trips (a ``Sync`` or
a simple ``Query``), statements (``Execute`` or ``Query``) and bytes both
ways per operation — a plain turn, a desk turn (app tool call, handoff,
billing's reply, on a new thread), the first turn of a new thread, a
transfer — and the
server's CPU per operation, read from that connection's backend process
(``/proc/<pid>/stat``, when the server runs on this machine). Then the
lease traffic of idle threads: the same connection watched while threads
the host served sit idle.

    .venv/bin/python benchmarks/bench_multihost.py --wire
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import statistics
import sys
import time
import uuid
from pathlib import Path
from typing import Any

from measure import cpu_seconds

SELF = str(Path(__file__).resolve())
RETRY_SECONDS = 0.02
"""How often host B retries a send that was refused while A's lease runs out."""


HERE = Path(__file__).resolve().parent


# -- the host processes -----------------------------------------------------------
async def _host(dsn: str, host_id: str, ttl: float, replies: list[Any]) -> tuple[Any, Any, Any]:
    from agent_mem_vault.harness import HarnessHost, define_harness
    from agent_mem_vault.harness.testing import ScriptedModel
    from agent_mem_vault.store.postgres import postgres_persistence

    store = postgres_persistence(dsn, min_size=1, max_size=8)
    await store.last_seq("warm-up")  # connect and migrate before "ready"
    host = HarnessHost(persistence=store, host_id=host_id, lease_ttl=ttl)
    harness = define_harness(name="bench/desk", model=ScriptedModel(replies), system_prompts=["Hi"])
    return store, host, harness


def _say(body: object) -> None:
    sys.stdout.write(json.dumps(body) + "\n")
    sys.stdout.flush()


async def _worker_throughput(dsn: str, host_id: str, threads: int, turns: int) -> None:
    from agent_mem_vault.harness.testing import text

    store, host, harness = await _host(dsn, host_id, 30.0, [text("ok")] * (threads * turns))
    _say("ready")
    await asyncio.to_thread(sys.stdin.readline)

    async def one_thread(i: int) -> None:
        session = await host.open(harness, thread_id=f"{host_id}-{i}")
        for n in range(turns):
            result = await session.send(f"message {n}")
            assert result.status == "completed", result

    start = time.perf_counter()
    await asyncio.gather(*(one_thread(i) for i in range(threads)))
    _say({"turns": threads * turns, "seconds": time.perf_counter() - start})
    await host.close()
    await store.close()


async def _worker_stalls(dsn: str, host_id: str, ttl: float) -> None:
    """Host A: starts a turn whose model call never ends, on the thread it is told."""
    from agent_mem_vault.harness.testing import pause, text

    _store, host, harness = await _host(dsn, host_id, ttl, [[pause(3600), text("never")]])
    _say("ready")
    thread = (await asyncio.to_thread(sys.stdin.readline)).strip()
    session = await host.open(harness, thread_id=thread)
    await session.send("this turn will be interrupted")


async def _worker_takes_over(dsn: str, host_id: str, ttl: float) -> None:
    """Host B: for each thread it is told, sends until it owns the thread; says when done."""
    from agent_mem_vault.core.errors import AgentMemVaultError
    from agent_mem_vault.harness.testing import text

    store, host, harness = await _host(dsn, host_id, ttl, [text("taken over")] * 1000)
    _say("ready")
    while thread := (await asyncio.to_thread(sys.stdin.readline)).strip():
        session = await host.open(harness, thread_id=thread)
        refusals = 0
        while True:
            try:
                result = await session.send("are you there?")
                break
            except AgentMemVaultError as exc:
                if exc.code != "log_owned_elsewhere":
                    raise
                refusals += 1
                await asyncio.sleep(RETRY_SECONDS)
        _say({"status": result.status, "refusals": refusals})
    await host.close()
    await store.close()


# -- the parent -------------------------------------------------------------------
class Proc:
    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc

    @classmethod
    async def start(cls, *args: str) -> Proc:
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            SELF,
            "--worker",
            *args,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
        )
        self = cls(proc)
        assert await self.read() == "ready"
        return self

    def write(self, line: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write((line + "\n").encode())

    async def read(self) -> Any:
        assert self.proc.stdout is not None
        line = await asyncio.wait_for(self.proc.stdout.readline(), 120)
        if not line:
            raise RuntimeError("a host process ended early; run it alone to see why")
        return json.loads(line)

    async def stop(self) -> None:
        if self.proc.returncode is None:
            self.proc.send_signal(signal.SIGKILL)
        await self.proc.wait()


async def throughput(dsn: str, hosts: int, threads: int, turns: int) -> float:
    procs = [
        await Proc.start(
            "throughput", dsn, f"h{hosts}-{i}-{uuid.uuid4().hex[:6]}", str(threads), str(turns)
        )
        for i in range(hosts)
    ]
    start = time.perf_counter()
    for proc in procs:
        proc.write("go")
    outs = [await proc.read() for proc in procs]
    elapsed = time.perf_counter() - start
    for proc in procs:
        await proc.proc.wait()
    return float(sum(o["turns"] for o in outs)) / elapsed


async def failover(dsn: str, ttl: float, repeats: int) -> list[float]:
    from agent_mem_vault.harness.log import stream_name
    from agent_mem_vault.store.postgres import postgres_persistence

    store = postgres_persistence(dsn, min_size=1, max_size=2)
    taker = await Proc.start("takes-over", dsn, "host-b", str(ttl))
    times = []
    try:
        for i in range(repeats):
            thread = f"failover-{i}"
            owner = await Proc.start("stalls", dsn, f"host-a-{i}", str(ttl))
            owner.write(thread)
            stream = stream_name("default", thread)
            # Another process writes the log: poll it.
            while not any(r.type == "run.started" for r in await store.read(stream)):  # noqa: ASYNC110
                await asyncio.sleep(0.005)
            # Somewhere within a renewal period, as a real crash would fall.
            await asyncio.sleep((i + 0.5) / repeats * ttl / 3)
            killed = time.perf_counter()
            owner.proc.send_signal(signal.SIGKILL)
            taker.write(thread)
            out = await taker.read()
            times.append(time.perf_counter() - killed)
            assert out["status"] == "completed", out
            await owner.stop()
    finally:
        await taker.stop()
        await store.close()
    return times


def _scoped(dsn: str) -> tuple[str, str]:
    import psycopg
    from psycopg import sql
    from psycopg.conninfo import make_conninfo

    schema = f"bench_{uuid.uuid4().hex[:16]}"
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(schema)))
    return make_conninfo(dsn, options=f"-csearch_path={schema}"), schema


def _drop(dsn: str, schema: str) -> None:
    import psycopg
    from psycopg import sql

    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP SCHEMA {} CASCADE").format(sql.Identifier(schema)))


async def run(args: argparse.Namespace, dsn: str) -> None:
    threads, turns, repeats = (4, 10, 1) if args.quick else (16, 25, 5)
    ttl = args.lease_ttl or (1.0 if args.quick else 3.0)
    fail_repeats = 3 if args.quick else 7
    print(f"PostgreSQL; {os.cpu_count()} CPUs; ScriptedModel (no model time)")
    print(f"throughput: {threads} threads per host x {turns} turns each, median of {repeats}")
    print(f"{'hosts':>5}  {'turns/s':>9}  {'vs 1 host':>9}")
    figures: dict[int, list[float]] = {1: [], 2: [], 4: []}
    # Interleaved, so that a slow spell of the machine hits every size alike.
    for _ in range(repeats):
        for hosts in figures:
            figures[hosts].append(await throughput(dsn, hosts, threads, turns))
    base = statistics.median(figures[1])
    for hosts, rates in figures.items():
        rate = statistics.median(rates)
        print(f"{hosts:>5}  {rate:>9.0f}  {rate / base:>8.2f}x")
    times = await failover(dsn, ttl, fail_repeats)
    bound = ttl + ttl / 3
    print(
        f"failover after SIGKILL (lease TTL {ttl:g} s, renewal every {ttl / 3:.2f} s), "
        f"{fail_repeats} kills:"
    )
    print(
        f"  median {statistics.median(times):.2f} s, max {max(times):.2f} s; "
        f"bound TTL + one renewal = {bound:.2f} s -> "
        f"{'within' if max(times) <= bound else 'OVER'}"
    )


# -- on the wire -------------------------------------------------------------------
class Wire:
    """libpq's trace of one connection, read back as counts since the last ``take()``."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._offset = 0

    def take(self) -> dict[str, int]:
        """Round trips, statements and bytes sent/received since the last call."""
        counts = {"trips": 0, "statements": 0, "sent": 0, "received": 0}
        with self.path.open("rb") as f:
            f.seek(self._offset)
            text = f.read()
            self._offset += len(text)
        for line in text.decode(errors="replace").splitlines():
            parts = line.split("\t")
            if len(parts) < 3 or parts[0] not in ("F", "B") or not parts[1].isdigit():
                continue
            size, kind = int(parts[1]) + 1, parts[2].split()[0]  # + the type byte
            if parts[0] == "F":
                counts["sent"] += size
                counts["trips"] += kind in ("Sync", "Query")
                counts["statements"] += kind in ("Execute", "Query")
            else:
                counts["received"] += size
        return counts


async def wire(dsn: str, quick: bool) -> None:
    import tempfile

    import psycopg.pq

    sys.path[:0] = [str(HERE)]
    from agent_mem_vault.harness import Endpoint, Envelope, HarnessHost
    from agent_mem_vault.store.postgres import postgres_persistence
    from bench_harness import desk_harness, plain_harness

    n = 20 if quick else 200
    idle_seconds = 5.0 if quick else 60.0
    store = postgres_persistence(dsn, min_size=1, max_size=1)
    await store.last_seq("warm-up")  # connect and migrate first
    host = HarnessHost(persistence=store)  # the default lease settings
    plain, desk, team = plain_harness(), desk_harness(), plain_harness("bench/team")
    with tempfile.TemporaryDirectory() as tmp:
        trace = Path(tmp) / "libpq.trace"
        out = trace.open("wb")
        async with store._pool.connection() as conn:  # type: ignore[union-attr]
            conn.pgconn.trace(out.fileno())
            conn.pgconn.set_trace_flags(psycopg.pq.Trace.SUPPRESS_TIMESTAMPS)
            pid = conn.info.backend_pid
        wire = Wire(trace)

        async def measure(label: str, op: Any) -> None:
            for i in range(5):  # psycopg prepares a statement on its fifth use
                await op(-1 - i)
            out.flush()
            wire.take()
            cpu = cpu_seconds(pid)
            start = time.perf_counter()
            for i in range(n):
                await op(i)
            elapsed = time.perf_counter() - start
            out.flush()
            c = wire.take()
            after = cpu_seconds(pid)
            server = (
                f"{(after - cpu) / n * 1e3:>10.3f}" if cpu is not None and after else "         -"
            )
            print(
                f"{label:<24} {c['trips'] / n:>6.1f} {c['statements'] / n:>6.1f} "
                f"{c['sent'] / n:>8,.0f} {c['received'] / n:>8,.0f} {server} "
                f"{elapsed / n * 1e3:>8.2f}"
            )
            figures[label] = {k: v / n for k, v in c.items()}
            if cpu is not None and after is not None:
                figures[label]["server_cpu"] = (after - cpu) / n

        figures: dict[str, dict[str, float]] = {}
        sessions: dict[str, Any] = {}

        async def plain_turn(i: int) -> None:
            session = sessions.get("plain") or await host.open(plain, thread_id="plain")
            sessions["plain"] = session
            await session.send("Hello")

        async def first_turn(i: int) -> None:
            await (await host.open(plain, thread_id=f"new{i}")).send("Hello")

        async def desk_turn(i: int) -> None:
            await (await host.open(desk, thread_id=f"desk{i}")).send("Refund order 42")

        async def transfer(i: int) -> None:
            await host.transfer(
                from_=Endpoint(plain, f"new{i}"), to=Endpoint(team), envelope=Envelope(note="Hi")
            )

        print(f"PostgreSQL on the wire, per operation (mean of {n}; default lease settings)")
        print(
            f"{'operation':<24} {'trips':>6} {'stmts':>6} {'sent B':>8} {'recv B':>8} "
            f"{'server ms':>10} {'wall ms':>8}"
        )
        await measure("plain turn", plain_turn)
        await measure("first turn, new thread", first_turn)
        await measure("desk turn, new thread", desk_turn)
        await measure("transfer (note)", transfer)

        # Idle: threads this host served, now quiet, for a while.
        out.flush()
        wire.take()
        await asyncio.sleep(idle_seconds)
        out.flush()
        idle = wire.take()
        threads = len(figures) * (n + 5)
        per_minute = 60 / idle_seconds / threads
        print(
            f"\nidle: {threads} threads this host served, {idle_seconds:g} s: "
            f"{idle['trips'] * per_minute:.3f} round trips and "
            f"{(idle['sent'] + idle['received']) * per_minute:.1f} bytes per idle thread per minute"
        )
        await host.close()
        await store.close()
        out.close()
    _project(figures)


def _project(figures: dict[str, dict[str, float]]) -> None:
    """Turns per second one PostgreSQL core could serve, from the measured server CPU."""
    print("\nprojection: turns/s per PostgreSQL core = 1 / (server CPU seconds per turn)")
    for label in ("plain turn", "desk turn, new thread"):
        cpu = figures.get(label, {}).get("server_cpu")
        if not cpu:
            print(f"  {label}: no server CPU figure (the server is not on this machine)")
            continue
        trips = figures[label]["trips"]
        print(
            f"  {label}: 1 / {cpu * 1e3:.3f} ms = {1 / cpu:,.0f} turns/s per core "
            f"({trips:.1f} round trips each: {1 / cpu * trips:,.0f} round trips/s per core)"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, under a minute")
    parser.add_argument("--dsn", help="PostgreSQL DSN (a fresh schema is made in it)")
    parser.add_argument("--lease-ttl", type=float, help="lease TTL of the failover hosts")
    parser.add_argument(
        "--wire",
        action="store_true",
        help="instead: round trips, statements, bytes and server CPU per turn, "
        "handoff and transfer, and the lease traffic of idle threads",
    )
    parser.add_argument("--worker", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        mode, dsn, host_id, *rest = args.worker
        if mode == "throughput":
            asyncio.run(_worker_throughput(dsn, host_id, int(rest[0]), int(rest[1])))
        elif mode == "stalls":
            asyncio.run(_worker_stalls(dsn, host_id, float(rest[0])))
        else:
            asyncio.run(_worker_takes_over(dsn, host_id, float(rest[0])))
        return
    dsn = (
        args.dsn
        or os.environ.get("AMV_BENCH_POSTGRES_DSN")
        or os.environ.get("AMV_TEST_POSTGRES_DSN")
    )
    if not dsn:
        raise SystemExit(
            "no PostgreSQL: pass --dsn, or set AMV_BENCH_POSTGRES_DSN "
            "(or source scripts/test-env.sh for AMV_TEST_POSTGRES_DSN)"
        )
    scoped, schema = _scoped(dsn)
    try:
        asyncio.run(wire(scoped, args.quick) if args.wire else run(args, scoped))
    finally:
        _drop(dsn, schema)


if __name__ == "__main__":
    main()
