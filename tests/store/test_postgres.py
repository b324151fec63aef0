"""What only PostgreSQL has: migrations, the ``db`` command, and many OS processes at once.

The persistence contract itself runs on PostgreSQL in ``test_contract.py``;
here are the matters that exist only with a shared server.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import psycopg
import pytest

from agent_mem_vault.core.clock import ManualClock
from agent_mem_vault.core.errors import DataError, InvalidInputError, UnavailableError
from agent_mem_vault.store import LogRecord, Persistence
from agent_mem_vault.store.migrations import POSTGRES_MIGRATIONS
from agent_mem_vault.store.postgres import (
    postgres_persistence,
    postgres_schema_status,
    upgrade_postgres_schema,
)
from tests.postgres_support import postgres_dsn, scoped_dsn
from tests.store.watching import watch_until

pytestmark = [
    pytest.mark.postgres,
    pytest.mark.skipif(
        postgres_dsn() is None,
        reason="AMV_TEST_POSTGRES_DSN is not set: scripts/test-env.sh found no PostgreSQL "
        "on 127.0.0.1:5432 (start it, or export a DSN)",
    ),
]

ROOT = Path(__file__).resolve().parents[2]
CLI = [sys.executable, "-m", "agent_mem_vault.cli.main"]
NEWEST = POSTGRES_MIGRATIONS[-1].version


@pytest.fixture
def dsn() -> str:
    """A DSN on an empty schema of its own."""
    return scoped_dsn()


def run_cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*CLI, *args],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
        env={**os.environ, **(env or {})},
    )


def migration_rows(dsn: str) -> list[tuple[int, str]]:
    with psycopg.connect(dsn) as conn:
        rows = conn.execute("SELECT version, name FROM schema_migrations ORDER BY version")
        return [(int(v), str(n)) for v, n in rows.fetchall()]


# -- migrations -----------------------------------------------------------------


async def test_migrations_are_idempotent(dsn: str) -> None:
    first = await upgrade_postgres_schema(dsn)
    assert first.applied == tuple(m.name for m in POSTGRES_MIGRATIONS)
    assert first.current == NEWEST
    second = await upgrade_postgres_schema(dsn)
    assert second.applied == ()
    assert second.current == NEWEST
    assert migration_rows(dsn) == [(m.version, m.name) for m in POSTGRES_MIGRATIONS]


async def test_persistence_migrates_on_first_use(dsn: str) -> None:
    before = await postgres_schema_status(dsn)
    assert before.current == 0 and before.pending
    store = postgres_persistence(dsn)
    await store.append("s", [("a", {})])
    await store.close()
    after = await postgres_schema_status(dsn)
    assert after.current == NEWEST and after.pending == ()


async def test_hosts_starting_together_migrate_once(dsn: str) -> None:
    stores = [postgres_persistence(dsn) for _ in range(4)]
    await asyncio.gather(*(s.append("boot", [("up", {"host": i})]) for i, s in enumerate(stores)))
    assert [r.seq for r in await stores[0].read("boot")] == [1, 2, 3, 4]
    assert migration_rows(dsn) == [(m.version, m.name) for m in POSTGRES_MIGRATIONS]
    for s in stores:
        await s.close()


@pytest.mark.slow
def test_two_processes_upgrading_at_once_apply_each_migration_once(dsn: str) -> None:
    procs = [
        subprocess.Popen(
            [*CLI, "db", "upgrade", "--json", "--dsn", dsn],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=ROOT,
        )
        for _ in range(2)
    ]
    outputs = [p.communicate(timeout=60) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outputs
    reports = [json.loads(out) for out, _ in outputs]
    assert sorted(len(r["applied"]) for r in reports) == [0, len(POSTGRES_MIGRATIONS)]
    assert all(r["current"] == NEWEST for r in reports)
    assert migration_rows(dsn) == [(m.version, m.name) for m in POSTGRES_MIGRATIONS]


def _pretend_newer_schema(dsn: str) -> None:
    with psycopg.connect(dsn) as conn:
        conn.execute(
            "INSERT INTO schema_migrations (version, name) VALUES (%s, 'from_the_future')",
            (NEWEST + 1,),
        )


async def test_newer_schema_is_refused(dsn: str) -> None:
    await upgrade_postgres_schema(dsn)
    _pretend_newer_schema(dsn)
    store = postgres_persistence(dsn)
    with pytest.raises(DataError) as info:
        await store.append("s", [("a", {})])
    assert info.value.code == "schema_too_new"
    assert "upgrade agent-mem-vault" in info.value.message
    await store.close()
    with pytest.raises(DataError):
        await upgrade_postgres_schema(dsn)
    status = await postgres_schema_status(dsn)
    assert status.current == NEWEST + 1


def test_db_upgrade_refuses_a_newer_schema_with_exit_7(dsn: str) -> None:
    assert run_cli("db", "upgrade", "--dsn", dsn).returncode == 0
    _pretend_newer_schema(dsn)
    done = run_cli("db", "upgrade", "--dsn", dsn)
    assert done.returncode == 7
    assert "schema_too_new" in done.stderr
    status = run_cli("db", "status", "--dsn", dsn)
    assert status.returncode == 0
    assert "newer than this agent-mem-vault" in status.stdout


def test_db_upgrade_as_a_real_subprocess(dsn: str) -> None:
    before = run_cli("db", "status", "--json", env={"AGENT_MEM_VAULT_DSN": dsn})
    assert before.returncode == 0, before.stderr
    assert json.loads(before.stdout) == {
        "current": 0,
        "newest": NEWEST,
        "applied": [],
        "pending": [m.name for m in POSTGRES_MIGRATIONS],
    }
    done = run_cli("db", "upgrade", "--dsn", dsn)
    assert done.returncode == 0, done.stderr
    assert f"schema is at version {NEWEST}" in done.stdout
    again = run_cli("db", "upgrade", "--json", "--dsn", dsn)
    assert json.loads(again.stdout)["applied"] == []
    after = run_cli("db", "status", "--dsn", dsn)
    assert "up to date" in after.stdout


def test_db_upgrade_without_a_dsn_is_a_usage_error() -> None:
    env = {k: v for k, v in os.environ.items() if k != "AGENT_MEM_VAULT_DSN"}
    done = subprocess.run(
        [*CLI, "db", "upgrade"], capture_output=True, text=True, timeout=60, cwd=ROOT, env=env
    )
    assert done.returncode == 2
    assert "AGENT_MEM_VAULT_DSN" in done.stderr


def test_db_status_on_an_unreachable_server_exits_6() -> None:
    done = run_cli("db", "status", "--json", "--dsn", "postgresql://nobody@127.0.0.1:1/none")
    assert done.returncode == 6
    error = json.loads(done.stderr)["error"]
    assert error["code"] == "database_unavailable"


async def test_unreachable_server_raises_unavailable() -> None:
    store = postgres_persistence("postgresql://nobody@127.0.0.1:1/none", connect_timeout=1)
    with pytest.raises(UnavailableError) as info:
        await store.last_seq("s")
    assert info.value.code == "database_unavailable"
    assert "127.0.0.1:1" in info.value.message
    await store.close()


def test_constructor_needs_no_running_loop(dsn: str) -> None:
    store = postgres_persistence(dsn)  # no loop here, and no connection yet
    assert isinstance(store, Persistence)

    async def use() -> int:
        await store.append("s", [("a", {})])
        seq = await store.last_seq("s")
        await store.close()
        return seq

    assert asyncio.run(use()) == 1


async def test_closed_persistence_refuses_calls_and_ends_watches(dsn: str) -> None:
    store = postgres_persistence(dsn)
    await store.append("s", [("a", {})])

    async def consume() -> list[int]:
        return [r.seq async for r in store.watch("s")]

    task = asyncio.create_task(consume())
    await asyncio.sleep(0.2)
    await store.close()
    with pytest.raises(UnavailableError) as info:
        await asyncio.wait_for(task, 5)
    assert info.value.code == "store_closed"
    with pytest.raises(UnavailableError):
        await store.append("s", [("b", {})])


# -- time -------------------------------------------------------------------------


async def test_leases_follow_the_database_clock(dsn: str) -> None:
    store = postgres_persistence(dsn)
    lease = await store.acquire_lease("l", "host-a", ttl=60)
    with psycopg.connect(dsn) as conn:
        row = conn.execute("SELECT now()").fetchone()
    assert row is not None
    db_now: datetime = row[0]
    assert abs((lease.expires_at - db_now) - timedelta(seconds=60)) < timedelta(seconds=5)
    await store.close()


async def test_an_injected_clock_drives_lease_and_record_times(dsn: str) -> None:
    clock = ManualClock(datetime(2001, 2, 3, tzinfo=UTC))
    store = postgres_persistence(dsn, clock=clock)
    [record] = await store.append("s", [("a", {})])
    assert record.at == datetime(2001, 2, 3, tzinfo=UTC)
    assert (await store.read("s"))[0].at == record.at
    lease = await store.acquire_lease("l", "host-a", ttl=30)
    assert lease.expires_at == datetime(2001, 2, 3, 0, 0, 30, tzinfo=UTC)
    clock.advance(31)
    assert await store.get_lease("l") is None
    taken = await store.acquire_lease("l", "host-b", ttl=30)
    assert taken.owner == "host-b" and taken.token == lease.token + 1
    await store.close()


# -- many connections, many processes --------------------------------------------


async def test_appends_from_many_connections_are_gapless(dsn: str) -> None:
    stores = [postgres_persistence(dsn, max_size=2) for _ in range(6)]
    await asyncio.gather(
        *(
            s.append("busy", [("rec", {"by": n, "i": i})])
            for i in range(15)
            for n, s in enumerate(stores)
        )
    )
    records = await stores[0].read("busy")
    assert [r.seq for r in records] == list(range(1, 91))
    assert sorted((r.data["by"], r.data["i"]) for r in records) == [
        (n, i) for n in range(6) for i in range(15)
    ]
    for s in stores:
        await s.close()


@pytest.fixture
def workers() -> Iterator[list[subprocess.Popen[str]]]:
    started: list[subprocess.Popen[str]] = []
    yield started
    for proc in started:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=10)
        for stream in (proc.stdin, proc.stdout):
            if stream is not None:
                stream.close()


def start_worker(
    workers: list[subprocess.Popen[str]], mode: str, dsn: str, stream: str, count: int, name: str
) -> subprocess.Popen[str]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.store.pg_worker", mode, dsn, stream, str(count), name],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )
    workers.append(proc)
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "ready"
    return proc


def go(*procs: subprocess.Popen[str]) -> None:
    for proc in procs:
        assert proc.stdin is not None
        proc.stdin.write("go\n")
        proc.stdin.flush()


def finish(proc: subprocess.Popen[str]) -> list[str]:
    out, _ = proc.communicate(timeout=90)
    assert proc.returncode == 0
    return out.splitlines()


async def four_workers_append(
    workers: list[subprocess.Popen[str]], mode: str, dsn: str, stream: str, each: int
) -> list[LogRecord]:
    """Four worker processes (w0 … w3) each append ``each`` records, started together;
    returns the stream's log once they are done, numbered without a gap."""
    await upgrade_postgres_schema(dsn)
    procs = [start_worker(workers, mode, dsn, stream, each, f"w{n}") for n in range(4)]
    go(*procs)
    for proc in procs:
        finish(proc)
    store = postgres_persistence(dsn)
    records = await store.read(stream)
    await store.close()
    assert [r.seq for r in records] == list(range(1, 4 * each + 1))
    return records


@pytest.mark.slow
async def test_append_races_across_four_processes_leave_no_gap_or_duplicate(
    dsn: str, workers: list[subprocess.Popen[str]]
) -> None:
    records = await four_workers_append(workers, "append", dsn, "race", 60)
    for n in range(4):
        mine = [r.data["i"] for r in records if r.data["by"] == f"w{n}"]
        assert mine == list(range(60)), f"w{n} lost, repeated or reordered records"


@pytest.mark.slow
async def test_optimistic_appends_across_four_processes_each_land_once(
    dsn: str, workers: list[subprocess.Popen[str]]
) -> None:
    records = await four_workers_append(workers, "optimistic", dsn, "opt", 25)
    assert sorted((r.data["by"], r.data["i"]) for r in records) == sorted(
        (f"w{n}", i) for n in range(4) for i in range(25)
    )


@pytest.mark.slow
async def test_watch_sees_appends_from_another_process_by_notification(
    dsn: str, workers: list[subprocess.Popen[str]]
) -> None:
    # The watcher's safety poll is an hour, so only LISTEN/NOTIFY can wake it.
    await upgrade_postgres_schema(dsn)
    writer = postgres_persistence(dsn)
    await writer.append("live", [("before", {})])
    watcher = start_worker(workers, "watch", dsn, "live", 30, "watcher")
    go(watcher)
    for i in range(29):
        await writer.append("live", [("during", {"i": i})])
        if i % 7 == 0:
            await asyncio.sleep(0.05)  # let the watcher go idle and be woken
    lines = await asyncio.to_thread(finish, watcher)
    assert lines[-1] == "done 0"
    seen = [line.split() for line in lines[:-1]]
    assert [int(seq) for seq, _ in seen] == list(range(1, 31))
    assert [t for _, t in seen] == ["before"] + ["during"] * 29
    await writer.close()


async def test_watch_across_handles_wakes_without_polling(dsn: str) -> None:
    reader = postgres_persistence(dsn, safety_poll=3600)
    writer = postgres_persistence(dsn)
    watching = watch_until(reader, "w", 3)
    for _ in range(3):
        await asyncio.sleep(0.05)
        await writer.append("w", [("x", {})])
    await watching.done(10)
    assert watching.seqs == [1, 2, 3]
    await reader.close()
    await writer.close()


async def test_watch_survives_a_dropped_listen_connection(dsn: str) -> None:
    reader = postgres_persistence(dsn, safety_poll=3600)
    writer = postgres_persistence(dsn)
    watching = watch_until(reader, "w", 2)
    await writer.append("w", [("x", {})])
    await asyncio.wait_for(watching.first.wait(), 10)
    with psycopg.connect(dsn, autocommit=True) as conn:
        killed = conn.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            "WHERE application_name = 'agent-mem-vault listen' AND datname = current_database()"
        ).fetchall()
    assert killed
    # Appended while nobody listens: the reconnect's catch-up read finds it.
    await writer.append("w", [("y", {})])
    await watching.done(10)
    assert watching.seqs == [1, 2]
    await reader.close()
    await writer.close()


async def test_notifications_for_other_schemas_do_not_leak_records(dsn: str) -> None:
    other = postgres_persistence(scoped_dsn())
    mine = postgres_persistence(dsn)
    await other.append("same-name", [("theirs", {})])
    await mine.append("same-name", [("mine", {})])
    assert [r.type for r in await mine.read("same-name")] == ["mine"]
    assert [r.type for r in await other.read("same-name")] == ["theirs"]
    await other.close()
    await mine.close()


async def test_values_the_server_cannot_hold_are_invalid_input(dsn: str) -> None:
    store = postgres_persistence(dsn)
    with pytest.raises(InvalidInputError):
        await store.read("s", limit=-1)
    # A key too large for the primary key index: refused, nothing written.
    huge = "".join(chr(0x4E00 + (i * 7919) % 20000) for i in range(1024))
    with pytest.raises(InvalidInputError):
        await store.put(huge, huge, {})
    assert await store.scan(huge) == []
    await store.close()
