"""A process whose files may not grow past a limit: SQLite meets a real disk I/O error.

Run as ``python -m tests.store.small_disk_worker PATH LIMIT``. With
``RLIMIT_FSIZE`` at LIMIT bytes (and SIGXFSZ ignored, so the write fails
instead of killing the process), a value larger than the limit makes SQLite
spill pages into the WAL mid-transaction, fail with ``SQLITE_IOERR_WRITE``
and roll back the whole transaction. The worker queues small writes around
one such value in a single batch (a second connection holds the write lock
until all are queued), then writes the big value alone and one small value
after it, and prints one JSON line per write: its key and ``ok`` or the
error's code and message.
"""

from __future__ import annotations

import asyncio
import json
import resource
import signal
import sqlite3
import sys
from typing import Any

from agent_mem_vault.core.errors import AgentMemVaultError
from agent_mem_vault.store import sqlite_persistence


def outcome(key: str, result: Any) -> dict[str, Any]:
    if isinstance(result, AgentMemVaultError):
        return {"key": key, "code": result.code, "message": result.message}
    if isinstance(result, BaseException):
        return {"key": key, "code": type(result).__name__, "message": str(result)}
    return {"key": key, "code": "ok"}


async def run(path: str, limit: int) -> None:
    store = sqlite_persistence(path)
    big = {"text": "x" * (limit * 3)}
    keys = ["a0", "a1", "a2", "big", "a3", "a4"]
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")

    async def release() -> None:
        # Started after every put below has queued: they wait as one batch.
        holder.execute("COMMIT")

    together = await asyncio.gather(
        *(store.put("docs", k, big if k == "big" else {"k": k}) for k in keys),
        release(),
        return_exceptions=True,
    )
    lines = [outcome(k, r) for k, r in zip(keys, together, strict=False)]
    for key, value in (("big-alone", big), ("after", {"k": "after"})):
        try:
            await store.put("docs", key, value)
            lines.append(outcome(key, None))
        except Exception as exc:
            lines.append(outcome(key, exc))
    await store.close()
    holder.close()
    for line in lines:
        print(json.dumps(line), flush=True)


if __name__ == "__main__":
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    path, limit = sys.argv[1], int(sys.argv[2])
    _, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, hard))
    asyncio.run(run(path, limit))
