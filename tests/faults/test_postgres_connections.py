"""PostgreSQL connections killed, and the server stopped: sends go on, none runs twice.

A server of the suite's own (``private_postgres.py``) is stopped and has its
backends terminated with ``pg_terminate_backend``, as a failover, a proxy's
idle timeout or an operator would. What must hold: a dead pooled connection is
never handed to a call; with every connection killed every half second under
20 conversations, at least 99.9 % of the sends complete and no input or turn
is in a log twice; a send that waits for a restarted server completes once it
is back; a process ends by itself whatever state its connections are in. How
long the first send after a restart takes is measured by
``benchmarks/bench_faults.py``, not asserted here.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

import pytest

from agent_mem_vault.core.errors import UnavailableError
from agent_mem_vault.harness import HarnessHost
from agent_mem_vault.harness.log import stream_name
from agent_mem_vault.store.postgres import postgres_persistence

from .private_postgres import PrivatePostgres
from .soak import LogCheck, check_log, desk, soak

ROOT = Path(__file__).resolve().parents[2]
EXIT_WAIT = 60.0
"""Only to end a test whose process hangs; no assertion is about time."""


async def test_idle_connections_killed_are_never_handed_to_a_call(
    private_postgres: PrivatePostgres,
) -> None:
    dsn = private_postgres.database()
    store = postgres_persistence(dsn, max_size=4)
    try:
        # Four connections open and idle in the pool.
        await asyncio.gather(*(store.append(f"s{i}", [("a", {"i": i})]) for i in range(4)))
        assert private_postgres.terminate(dsn) >= 1
        for i in range(10):
            [record] = await store.append("s0", [("b", {"i": i})], expected_seq=1 + i)
            assert record.seq == 2 + i
        assert [r.data["i"] for r in await store.read("s0")] == [0, *range(10)]
    finally:
        await store.close()


@pytest.mark.slow
async def test_sends_complete_while_every_connection_is_killed_every_half_second(
    private_postgres: PrivatePostgres,
) -> None:
    dsn = private_postgres.database()
    result = await soak(private_postgres, dsn, conversations=20, sends=20, think=0.1)
    assert result.rounds >= 2 and result.killed >= 2, "the connections were not killed"
    assert result.completed >= 0.999 * result.sent, (result.failed, result.sent)
    assert result.log.inputs == result.sent
    assert (result.log.inputs_twice, result.log.turns_twice, result.log.left_running) == (0, 0, 0)


async def test_a_send_waiting_for_a_restarted_server_completes_once_it_is_back(
    private_postgres: PrivatePostgres,
) -> None:
    dsn = private_postgres.database()
    store = postgres_persistence(dsn, connect_timeout=30)
    host = HarnessHost(persistence=store)
    harness = desk(3)
    try:
        assert (await host.send(harness, "one", thread_id="t", input_id="t-1")).status == (
            "completed"
        )
        await asyncio.to_thread(private_postgres.stop)
        try:
            waiting = asyncio.create_task(host.send(harness, "two", thread_id="t", input_id="t-2"))
            await asyncio.sleep(1.0)  # the send meets the server stopped, and keeps trying
            assert not waiting.done()
        finally:
            await asyncio.to_thread(private_postgres.start)
        assert (await waiting).status == "completed"
        after = await host.send(harness, "three", thread_id="t", input_id="t-3")
        assert after.status == "completed"
        check = LogCheck()
        check_log(await store.read(stream_name("default", "t")), check)
        assert (check.inputs, check.inputs_twice, check.turns_twice) == (3, 0, 0)
    finally:
        await host.close()
        await store.close()


async def test_a_call_while_the_server_is_down_fails_unavailable_and_the_next_connects(
    private_postgres: PrivatePostgres,
) -> None:
    dsn = private_postgres.database()
    store = postgres_persistence(dsn, connect_timeout=1)
    try:
        await store.append("s", [("a", {})])
        await asyncio.to_thread(private_postgres.stop)
        try:
            with pytest.raises(UnavailableError) as info:
                await store.append("s", [("b", {})], expected_seq=1)
            assert info.value.code == "database_unavailable"
        finally:
            await asyncio.to_thread(private_postgres.start)
        [record] = await store.append("s", [("b", {})], expected_seq=1)
        assert record.seq == 2
    finally:
        await store.close()


@pytest.mark.parametrize("fault", ["connections killed", "server stopped"])
def test_a_process_ends_by_itself_whatever_its_connections_went_through(
    private_postgres: PrivatePostgres, fault: str
) -> None:
    dsn = private_postgres.database()
    with subprocess.Popen(
        [sys.executable, "-m", "tests.faults.pg_exit_worker", dsn],
        cwd=ROOT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    ) as proc:
        assert proc.stdin and proc.stdout
        try:
            assert proc.stdout.readline().strip() == "sent"
            if fault == "server stopped":
                private_postgres.stop()
            else:
                assert private_postgres.terminate(dsn) >= 1
            proc.stdin.write("go\n")
            proc.stdin.flush()
            last = proc.stdout.readline().strip()
            returncode = proc.wait(timeout=EXIT_WAIT)
        finally:
            if proc.poll() is None:
                proc.kill()
            if fault == "server stopped":
                private_postgres.start()
    assert returncode == 0
    assert last == ("database_unavailable" if fault == "server stopped" else "completed")
