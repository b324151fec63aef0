"""A separate OS process for the race tests: ``python race_worker.py MODE DB AGENT GO [TID]``.

With its database open it prints ``ready``, waits for the file GO to appear
(so that all workers act at the same moment), acts, and prints one JSON line
with what it saw.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from pathlib import Path

from agent_mem_vault.runs import RunRegistry, RunTakenOver
from agent_mem_vault.store import sqlite_persistence


def _wait_for(go: Path) -> None:
    print("ready", flush=True)
    deadline = time.monotonic() + 30
    while not go.exists():
        if time.monotonic() > deadline:
            raise SystemExit("the go file never appeared")
        time.sleep(0.002)


async def takeover(db: str, agent: str, go: Path, workers: int) -> dict[str, object]:
    store = sqlite_persistence(db, busy_timeout=30)
    registry = RunRegistry(store, lease_seconds=60)
    _wait_for(go)
    run = await registry.start_run(agent)
    # Wait until every worker has started its run, then look.
    while await store.last_seq(f"runs/{agent}") < workers + 1:  # noqa: ASYNC110 (other processes)
        await asyncio.sleep(0.005)
    try:
        await run.ensure_current()
    except RunTakenOver as exc:
        record = await run.write_handoff()
        return {"run": run.tid, "current": False, "by": exc.by, "record": record}
    return {"run": run.tid, "current": True}


async def write_handoff(db: str, agent: str, go: Path, tid: str) -> dict[str, object]:
    store = sqlite_persistence(db, busy_timeout=30)
    registry = RunRegistry(store, lease_seconds=60)
    run = await registry.attach(agent, tid)
    _wait_for(go)
    record = await run.write_handoff()
    return {"run": run.tid, "record": record}


def main() -> None:
    mode, db, agent, go = sys.argv[1:5]
    if mode == "takeover":
        out = asyncio.run(takeover(db, agent, Path(go), int(sys.argv[5])))
    else:
        out = asyncio.run(write_handoff(db, agent, Path(go), sys.argv[5]))
    print(json.dumps(out))


if __name__ == "__main__":
    main()
