"""A harness host in its own OS process that dies mid-turn (the restart tests kill it).

``python restart_worker.py sqlite PATH`` (or ``postgres DSN``)
opens a ``HarnessHost`` with its default ``host_id`` and ``lease_ttl`` (30 s)
and sends "charge order 42" to thread ``case-42``; the model calls the app
tool ``charge``, which prints ``charging`` and then never returns. The test
kills the process with SIGKILL once it reads that line.
"""

from __future__ import annotations

import asyncio
import sys

from agent_mem_vault.harness import Harness, HarnessHost, define_harness, tool
from agent_mem_vault.harness.testing import ScriptedModel, text, tool_call
from agent_mem_vault.store import Persistence, sqlite_persistence


async def charge(order_id: str) -> str:
    """Charge an order."""
    print("charging", flush=True)
    await asyncio.Event().wait()  # the process dies here
    return "charged"


def desk(*replies: str) -> Harness:
    """The desk; with no replies its model calls ``charge``, else it answers them in turn."""
    model = ScriptedModel(list(map(text, replies)) or [tool_call("charge", {"order_id": "42"})])
    return define_harness(name="acme/desk", model=model, tools=[tool(charge)])


def open_store(kind: str, where: str) -> Persistence:
    if kind == "postgres":
        from agent_mem_vault.store.postgres import postgres_persistence

        return postgres_persistence(where)
    return sqlite_persistence(where)


async def main(kind: str, where: str) -> None:
    host = HarnessHost(persistence=open_store(kind, where))
    session = await host.open(desk(), thread_id="case-42")
    await session.send("charge order 42")


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2]))
