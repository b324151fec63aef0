"""The harness design's cast, built fresh for each test: support desk, billing, triage."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel

from agent_mem_vault.harness import (
    Access,
    Agent,
    AgentContext,
    Harness,
    Routing,
    Tool,
    ToolContext,
    User,
    define_agent,
    define_harness,
    members_only,
    tool,
)
from agent_mem_vault.harness.testing import ScriptedModel, gate, text

ADA = User(id="ada", tenant_id="acme")
OLGA = User(id="olga", tenant_id="acme")
PERSON = {"to": {"human": True}, "note": "The user asks for a person."}
"""The arguments of a ``handoff`` tool call that hands the user to a person."""
MEMBERS_ONLY = Access(get_user=lambda request: None, rules=members_only())
"""Access where only a thread's members reach it (the users are passed in directly)."""

SUPPORT_PROMPT = "You are the support desk. Hand billing questions to billing."
BILLING_PROMPT = "You handle refunds, invoices, and payments."


def chat_agent(
    name: str,
    model: ScriptedModel,
    prompt: str,
    tools: Sequence[Tool] = (),
    description: str = "",
) -> Agent:
    """An agent whose run is ``ctx.chat(model=, system_prompts=[prompt], tools=)``."""

    async def run(ctx: AgentContext) -> str:
        return await ctx.chat(model=model, system_prompts=[prompt], tools=tools)

    return define_agent(name=name, description=description or f"The {name} agent", run=run)


def billing_agent(model: ScriptedModel, tools: Sequence[Tool] = ()) -> Agent:
    return chat_agent(
        "billing", model, BILLING_PROMPT, tools, "Handles refunds, invoices, and payments"
    )


def support_harness(
    model: ScriptedModel,
    agents: Sequence[Agent],
    *,
    routing: Routing | None = None,
    tools: Sequence[Tool] = (),
    subagents: Sequence[Agent] = (),
    name: str = "acme/support",
) -> Harness:
    return define_harness(
        name=name,
        model=model,
        system_prompts=[SUPPORT_PROMPT],
        tools=tools,
        agents=agents,
        subagents=subagents,
        routing=routing if routing is not None else Routing(router=lambda ctx: None),
    )


def gated_harness(release: asyncio.Event, answer: str) -> Harness:
    """The support desk whose one answer waits for ``release``.

    A turn on it stays in its model call for as long as a test needs to move
    other hosts (a lease lapsing, a takeover, a read) before it finishes.
    """
    return support_harness(
        ScriptedModel([[gate(release), text(answer)]]), [billing_agent(ScriptedModel([]))]
    )


class OrderInput(BaseModel):
    orderId: str


def escalate_tool(to: Any = "billing") -> Tool:
    """The design's ``escalate`` tool: hands off from code, in a tool of the main model."""

    async def run(args: OrderInput, ctx: ToolContext) -> str:
        await ctx.run.handoff(to=to, note=f"Refund for order {args.orderId}")
        return "Billing answers next."

    return tool(name="escalate", description="Send the user to billing", input=OrderInput, run=run)


def harness_meta(message: Any) -> dict[str, Any]:
    return dict(message.metadata.get("harness") or {})
