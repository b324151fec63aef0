"""A harness host in its own OS process, driven over stdin/stdout by the multi-host tests.

``python host_worker.py DSN HOST_ID LEASE_TTL SPEC`` opens a ``HarnessHost``
(``host_id``, ``lease_ttl``) on ``postgres_persistence(DSN)`` with the
harness that SPEC (JSON) describes, prints ``{"ready": ...}``, then reads one
JSON command per line and answers each with one JSON line carrying the
command's ``id``. Commands run concurrently, so a test can start a slow turn
and kill the process while it is in flight.

SPEC: ``{"main": [reply, ...], "billing": [reply, ...]}`` where a reply is a
list of parts ``["text", "..."]``, ``["pause", seconds]``,
``["tool", name, {arguments}]``. The harness is the design's support desk:
the main model, a ``billing`` root agent, an app tool ``charge`` that
sleeps for ``charge_seconds`` (default 60) and routing with no router.

Commands: ``{"id": .., "op": "send", "thread": .., "text": .., "input_id": ..}``
-> ``{"id": .., "ok": true, "result": TurnResult JSON}`` or ``{"id": ..,
"ok": false, "code": .., "details": ..}``; ``{"op": "close"}`` releases the
host's leases and ends the process.
"""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any

from pydantic import BaseModel

from agent_mem_vault.core.errors import AgentMemVaultError
from agent_mem_vault.harness import (
    AgentContext,
    HarnessHost,
    Routing,
    define_agent,
    define_harness,
    tool,
)
from agent_mem_vault.harness.testing import ScriptedModel, ScriptedPart, pause, text, tool_call
from agent_mem_vault.store.postgres import postgres_persistence


def _reply(parts: list[list[Any]]) -> list[ScriptedPart]:
    out: list[ScriptedPart] = []
    for part in parts:
        kind = part[0]
        if kind == "text":
            out.append(text(part[1]))
        elif kind == "pause":
            out.append(pause(float(part[1])))
        elif kind == "tool":
            out.append(tool_call(part[1], part[2] if len(part) > 2 else {}))
        else:
            raise SystemExit(f"unknown reply part {part!r}")
    return out


class Order(BaseModel):
    orderId: str


def build_harness(spec: dict[str, Any]) -> Any:
    main = ScriptedModel([_reply(r) for r in spec.get("main", [])], name="main")
    billing_model = ScriptedModel([_reply(r) for r in spec.get("billing", [])], name="billing")
    sleep = float(spec.get("charge_seconds", 60))

    async def charge(args: Order, ctx: Any) -> str:
        await asyncio.sleep(sleep)
        return f"charged {args.orderId}"

    async def billing_run(ctx: AgentContext) -> str:
        return await ctx.chat(model=billing_model, system_prompts=["You handle refunds."])

    billing = define_agent(name="billing", description="Handles refunds", run=billing_run)
    return define_harness(
        name="acme/support",
        model=main,
        system_prompts=["You are the support desk."],
        tools=[tool(name="charge", description="Charge an order", input=Order, run=charge)],
        agents=[billing],
        routing=Routing(router=lambda ctx: None),
    )


def _emit(body: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(body) + "\n")
    sys.stdout.flush()


async def _handle(host: HarnessHost, harness: Any, command: dict[str, Any]) -> None:
    ident = command.get("id")
    try:
        if command["op"] == "send":
            session = await host.open(harness, thread_id=command["thread"])
            result = await session.send(command["text"], input_id=command.get("input_id"))
            _emit({"id": ident, "ok": True, "result": result.to_json()})
        else:
            raise SystemExit(f"unknown op {command['op']!r}")
    except AgentMemVaultError as exc:
        _emit({"id": ident, "ok": False, "code": exc.code, "details": exc.to_dict()})


async def main() -> None:
    dsn, host_id, ttl, spec = sys.argv[1], sys.argv[2], float(sys.argv[3]), sys.argv[4]
    store = postgres_persistence(dsn, min_size=1, max_size=4)
    host = HarnessHost(persistence=store, host_id=host_id, lease_ttl=ttl)
    harness = build_harness(json.loads(spec))
    await store.last_seq("warm-up")  # connect and migrate before saying ready
    _emit({"ready": True, "host_id": host_id})
    loop = asyncio.get_running_loop()
    tasks: set[asyncio.Task[None]] = set()
    while True:
        line = await loop.run_in_executor(None, sys.stdin.readline)
        if not line:
            break
        command = json.loads(line)
        if command["op"] == "close":
            break
        task = asyncio.create_task(_handle(host, harness, command))
        tasks.add(task)
        task.add_done_callback(tasks.discard)
    for task in list(tasks):
        await task
    await host.close()
    await store.close()
    _emit({"closed": True})


if __name__ == "__main__":
    asyncio.run(main())
