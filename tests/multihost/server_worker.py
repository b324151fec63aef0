"""The harness HTTP app as its own OS process on PostgreSQL, for the two-server SSE test.

``python server_worker.py DSN HOST_ID PORT SPEC``: a ``HarnessHost`` on
``postgres_persistence(DSN)`` with the harness of ``host_worker.build_harness(SPEC)``
under the key ``support``, served by uvicorn on 127.0.0.1:PORT; prints
``"ready"`` (a JSON line, as the other workers) once it listens. Runs until killed.
Needs the project root on ``PYTHONPATH`` (the test sets it).
"""

from __future__ import annotations

import asyncio
import json
import sys

import uvicorn

from agent_mem_vault.harness import HarnessHost
from agent_mem_vault.server import create_harness_app
from agent_mem_vault.store.postgres import postgres_persistence
from tests.multihost.host_worker import build_harness


async def main() -> None:
    dsn, host_id, port, spec = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
    store = postgres_persistence(dsn, min_size=1, max_size=4)
    await store.last_seq("warm-up")
    host = HarnessHost(persistence=store, host_id=host_id)
    app = create_harness_app(host, {"support": build_harness(json.loads(spec))}, console=False)
    server = uvicorn.Server(
        uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="off")
    )
    task = asyncio.create_task(server.serve())
    while not server.started:
        if task.done():
            task.result()
        await asyncio.sleep(0.01)
    print(json.dumps("ready"), flush=True)
    await task


if __name__ == "__main__":
    asyncio.run(main())
