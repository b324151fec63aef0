"""A second OS process for the PostgreSQL tests: appends, or watches, on request.

Run as ``python -m tests.store.pg_worker MODE DSN STREAM COUNT NAME``. It opens
its own persistence (as another host would), prints ``ready``, waits for a
line on stdin so that all workers start together, then:

* ``append``: appends COUNT records one or three at a time, no expected_seq;
* ``optimistic``: appends COUNT records, each with the expected_seq it read,
  re-reading and retrying on LogConflictError;
* ``watch``: prints the seq and type of each record as it arrives, COUNT times.
"""

from __future__ import annotations

import asyncio
import sys

from agent_mem_vault.store import LogConflictError, LogRecord
from agent_mem_vault.store.postgres import postgres_persistence


async def run(mode: str, dsn: str, stream: str, count: int, name: str) -> None:
    store = postgres_persistence(dsn, min_size=1, max_size=2, safety_poll=3600)
    await store.last_seq(stream)  # connect and migrate before the start line
    print("ready", flush=True)
    await asyncio.to_thread(sys.stdin.readline)
    conflicts = 0
    if mode == "append":
        i = 0
        while i < count:
            batch = [("rec", {"by": name, "i": j}) for j in range(i, min(i + 1 + i % 3, count))]
            await store.append(stream, batch)
            i += len(batch)
    elif mode == "optimistic":
        for i in range(count):
            while True:
                last = await store.last_seq(stream)
                try:
                    await store.append(stream, [("rec", {"by": name, "i": i})], expected_seq=last)
                    break
                except LogConflictError:
                    conflicts += 1
    elif mode == "watch":
        seen: list[LogRecord] = []
        async for record in store.watch(stream):
            print(f"{record.seq} {record.type}", flush=True)
            seen.append(record)
            if len(seen) == count:
                break
    print(f"done {conflicts}", flush=True)
    await store.close()


if __name__ == "__main__":
    mode, dsn, stream, count, name = sys.argv[1:6]
    asyncio.run(run(mode, dsn, stream, int(count), name))
