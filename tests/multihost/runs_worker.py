"""A run registry in its own OS process, on PostgreSQL, for the multi-host run tests.

``python runs_worker.py MODE DSN AGENT [ARG]`` opens its own persistence,
prints ``ready``, waits for a line on stdin (so that all workers act at the
same moment), acts, and prints one JSON line with what it saw:

* ``takeover WORKERS``: start a run; once WORKERS runs started after the
  first, check whether it is still current, and if not write its handoff;
* ``handoff TID``: write the handoff record of run TID (already replaced);
* ``start``: start a run (taking over, and writing the handoff of a run whose
  lease lapsed);
* ``live LEASE``: start a run with that lease, heartbeat it, and print its
  TID; it runs until killed.
"""

from __future__ import annotations

import asyncio
import json
import sys

from agent_mem_vault.runs import RunRegistry, RunTakenOver
from agent_mem_vault.store.postgres import postgres_persistence


def _print(body: object) -> None:
    print(json.dumps(body), flush=True)


async def main() -> None:
    mode, dsn, agent = sys.argv[1:4]
    store = postgres_persistence(dsn, min_size=1, max_size=2)
    registry = RunRegistry(store, lease_seconds=60)
    await store.last_seq(f"runs/{agent}")  # connect and migrate before "ready"
    _print("ready")
    await asyncio.to_thread(sys.stdin.readline)
    if mode == "takeover":
        workers = int(sys.argv[4])
        run = await registry.start_run(agent)
        while await store.last_seq(f"runs/{agent}") < workers + 1:  # noqa: ASYNC110
            await asyncio.sleep(0.005)
        try:
            await run.ensure_current()
            _print({"run": run.tid, "current": True})
        except RunTakenOver as exc:
            record = await run.write_handoff()
            _print({"run": run.tid, "current": False, "by": exc.by, "record": record})
    elif mode == "handoff":
        run = await registry.attach(agent, sys.argv[4])
        _print({"run": run.tid, "record": await run.write_handoff()})
    elif mode == "start":
        run = await registry.start_run(agent)
        _print({"run": run.tid})
    elif mode == "live":
        lease = float(sys.argv[4])
        run = await registry.start_run(agent, lease_seconds=lease)
        _print({"run": run.tid})
        while True:
            await asyncio.sleep(lease / 3)
            await run.heartbeat()
    await store.close()


if __name__ == "__main__":
    asyncio.run(main())
