"""A host restarted after a crash serves its threads at once (one machine), while
on many hosts (PostgreSQL) the dead host's lease still protects the thread.

A real host process is killed with SIGKILL in the middle of a turn (an app
tool is running), and a new host on the same store sends at once.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

import pytest

from agent_mem_vault.harness import HarnessHost, LogOwnedElsewhereError
from agent_mem_vault.harness.log import stream_name
from agent_mem_vault.harness.takeover import UNKNOWN_TOOL_OUTCOME
from agent_mem_vault.store import Persistence, sqlite_persistence

from .restart_worker import desk

WORKER = Path(__file__).with_name("restart_worker.py")


def killed_mid_turn(kind: str, where: str) -> None:
    """Start a host process, wait until its turn runs the app tool, SIGKILL it."""
    proc = subprocess.Popen(
        [sys.executable, str(WORKER), kind, where],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    proc.kill()  # SIGKILL
    _, err = proc.communicate(timeout=10)
    assert line.strip() == "charging", err


async def closed_as_the_log_says(store: Persistence) -> list[str]:
    records = await store.read(stream_name("default", "case-42"))
    [first_run] = [r.data for r in records if r.type == "run.finished"][:1]
    assert (first_run["status"], first_run["code"]) == ("failed", "turn_abandoned")
    tool_results = [
        r.data["message"]["parts"][0]
        for r in records
        if r.type == "message" and r.data["message"]["role"] == "tool"
    ]
    assert tool_results[0]["output"] == UNKNOWN_TOOL_OUTCOME
    return [r.type for r in records]


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "support.db"


async def test_a_host_restarted_after_sigkill_mid_turn_serves_its_thread_at_once(
    db: Path,
) -> None:
    killed_mid_turn("sqlite", str(db))

    store = sqlite_persistence(db)
    async with HarnessHost(persistence=store) as host:  # default lease_ttl: 30 s
        session = await host.open(desk("Charged, sorry for the wait."), thread_id="case-42")
        # The dead host held a lease of 30 s: a host that waited for it to lapse would
        # not answer within 20 s, however loaded the machine; one that knows its own
        # dead process answers at once.
        result = await asyncio.wait_for(session.send("did it work?"), 20)

    assert (result.status, result.text) == ("completed", "Charged, sorry for the wait.")
    kinds = await closed_as_the_log_says(store)
    assert kinds.count("run.finished") == 2  # the interrupted turn closed once, then ours
    await store.close()


async def test_a_live_host_on_the_same_file_still_keeps_its_thread(db: Path) -> None:
    """Only a dead process's lease is taken: a live owner is never written over."""
    first_store, second_store = sqlite_persistence(db), sqlite_persistence(db)
    async with HarnessHost(persistence=first_store) as first:
        await (await first.open(desk("Hello."), thread_id="t1")).send("hi")
        async with HarnessHost(persistence=second_store) as second:
            session = await second.open(desk("Me too."), thread_id="t1")
            with pytest.raises(LogOwnedElsewhereError):
                await session.send("me too")
    await first_store.close()
    await second_store.close()


async def test_a_closed_host_leaves_no_lock_file_and_a_dead_ones_file_marks_it_dead(
    db: Path,
) -> None:
    store = sqlite_persistence(db)
    host = HarnessHost(persistence=store, host_id="web-1")
    lock = db.parent / "support.db.hosts" / "web-1.lock"
    assert lock.exists()
    await host.close()
    assert not lock.exists()
    await store.close()


@pytest.mark.skipif(
    "postgres" not in __import__("tests.conftest", fromlist=["BACKENDS"]).BACKENDS,
    reason="needs PostgreSQL: AMV_TEST_POSTGRES_DSN is unset (source scripts/test-env.sh)",
)
async def test_on_postgresql_a_dead_hosts_lease_still_protects_its_thread(
    tmp_path: Path,
) -> None:
    """Hosts on many machines cannot see each other's processes: the lease decides."""
    from tests.postgres_support import postgres_factory

    factory = postgres_factory(tmp_path)
    killed_mid_turn("postgres", factory.dsn)
    store = factory()
    try:
        async with HarnessHost(persistence=store) as host:
            session = await host.open(desk("Too soon."), thread_id="case-42")
            with pytest.raises(LogOwnedElsewhereError):
                await session.send("did it work?")
        kinds = [r.type for r in await store.read(stream_name("default", "case-42"))]
        assert "run.finished" not in kinds  # nothing written while the lease lives
    finally:
        await factory.aclose()
