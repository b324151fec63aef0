"""The run registry across hosts on PostgreSQL: OS processes racing, and a run killed.

Takeovers are ordered by the agent's run log (appends with expected_seq) and
handoff records land at most once (put-if-absent): database guarantees, not
in-process locks, so they hold between processes on different machines.
"""

from __future__ import annotations

import asyncio
import itertools
import json
from collections.abc import AsyncIterator
from typing import Any

import pytest

from agent_mem_vault.runs import RunRegistry
from agent_mem_vault.store.postgres import postgres_persistence

from .conftest import start_worker

pytestmark = [pytest.mark.slow, pytest.mark.postgres]


async def spawn(*args: str) -> asyncio.subprocess.Process:
    """A ``runs_worker.py`` process, ready: connected, and waiting for its "go"."""
    return await start_worker("runs_worker.py", *args, ready="ready")


@pytest.fixture
async def registry(dsn: str) -> AsyncIterator[RunRegistry]:
    """The run registry on this process's own PostgreSQL handle, beside the workers'."""
    store = postgres_persistence(dsn, min_size=1, max_size=2)
    yield RunRegistry(store, lease_seconds=60)
    await store.close()


async def race(procs: list[asyncio.subprocess.Process]) -> list[dict[str, Any]]:
    """Let every (ready) worker go at once; their answers."""
    for proc in procs:
        assert proc.stdin is not None
        proc.stdin.write(b"go\n")
    outs = []
    for proc in procs:
        stdout, _ = await asyncio.wait_for(proc.communicate(), 60)
        assert proc.returncode == 0
        outs.append(json.loads(stdout))
    return outs


async def test_runs_started_by_processes_racing_on_postgres_form_one_chain_with_one_current(
    dsn: str, registry: RunRegistry
) -> None:
    first = await registry.start_run("bot")
    workers = 4
    procs = [await spawn("takeover", dsn, "bot", str(workers)) for _ in range(workers)]
    outs = await race(procs)

    assert len([o for o in outs if o["current"]]) == 1
    order = [s.info.run for s in await registry.list_runs("bot")]
    assert order[0] == first.tid
    assert sorted(order[1:]) == sorted(o["run"] for o in outs)
    for out in outs:
        if not out["current"]:
            successor = order[order.index(out["run"]) + 1]
            assert out["by"] == successor and out["record"]["toRun"] == successor
    await first.write_handoff()
    records = [e.record for e in await registry.handoffs("bot")]
    assert sorted((r["fromRun"], r["toRun"]) for r in records) == sorted(itertools.pairwise(order))


async def test_processes_racing_to_write_one_handoff_on_postgres_land_exactly_one_record(
    dsn: str, registry: RunRegistry
) -> None:
    old = await registry.start_run("bot")
    new = await registry.start_run("bot")
    procs = [await spawn("handoff", dsn, "bot", old.tid) for _ in range(5)]
    outs = await race(procs)

    entries = await registry.handoffs("bot")
    assert len(entries) == 1 and entries[0].rkey == new.tid
    assert all(o["record"] == entries[0].record for o in outs)


async def test_a_killed_run_is_taken_over_once_its_lease_lapses_and_its_handoff_lands_once(
    dsn: str, registry: RunRegistry
) -> None:
    live = await spawn("live", dsn, "bot", "0.6")
    assert live.stdin is not None and live.stdout is not None
    live.stdin.write(b"go\n")
    killed = json.loads(await asyncio.wait_for(live.stdout.readline(), 30))["run"]
    await asyncio.sleep(0.5)  # it heartbeats: alive
    assert (await registry.status("bot")).current.alive  # type: ignore[union-attr]
    live.kill()  # SIGKILL: it never writes its handoff
    await live.wait()
    await asyncio.sleep(0.8)  # its lease lapses

    # Three processes take over at the same moment from the dead run.
    outs = await race([await spawn("start", dsn, "bot") for _ in range(3)])

    order = [s.info.run for s in await registry.list_runs("bot")]
    assert order[0] == killed and sorted(order[1:]) == sorted(o["run"] for o in outs)
    entries = await registry.handoffs("bot")
    from_killed = [e for e in entries if e.record["fromRun"] == killed]
    assert len(from_killed) == 1
    assert from_killed[0].record["toRun"] == order[1]
    assert from_killed[0].written_by == "registry"
