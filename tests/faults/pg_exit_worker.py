"""A process that ends without closing its PostgreSQL store, whatever its connections went through.

``python -m tests.faults.pg_exit_worker DSN`` opens a host on
``postgres_persistence(DSN)``, completes one send and prints ``sent``; then
waits for one line on stdin (the test kills its connections or stops the
server meanwhile), tries one more send (which may fail: the error code is
printed), and returns from ``main`` with the store still open. The test
checks that the process then ends by itself.
"""

from __future__ import annotations

import asyncio
import sys

from agent_mem_vault.core.errors import AgentMemVaultError
from agent_mem_vault.harness import HarnessHost
from agent_mem_vault.store.postgres import postgres_persistence
from tests.faults.soak import desk


async def main(dsn: str) -> None:
    store = postgres_persistence(dsn, max_size=4, connect_timeout=2)
    host = HarnessHost(persistence=store)
    harness = desk(2)
    await host.send(harness, "hello", thread_id="t", input_id="t-1")
    print("sent", flush=True)
    await asyncio.to_thread(sys.stdin.readline)
    try:
        turn = await host.send(harness, "again", thread_id="t", input_id="t-2")
        print(turn.status, flush=True)
    except AgentMemVaultError as exc:
        print(exc.code, flush=True)
    # No host.close(), no store.close(): the process must end anyway.


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))
