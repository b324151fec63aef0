"""The harness design's support desk, assembled: what ``agent-mem-vault demo support`` serves.

A main model ("support desk") that hands billing questions to the ``billing``
agent and asks for a person when the user wants one, a billing team harness
that cases move to, three demo logins, and the HTTP app with the operator
console. With no model configured every model is a :class:`RuleBasedModel`
(offline, deterministic); with ``AGENT_MEM_VAULT_MODEL`` set, an
OpenAI-compatible endpoint answers (``OPENAI_BASE_URL``, ``OPENAI_API_KEY``), or
Anthropic's Messages API for a ``claude-…`` name (``ANTHROPIC_API_KEY``,
``ANTHROPIC_BASE_URL``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from starlette.applications import Starlette

from ..harness.access import Access, User, members_only
from ..harness.context import AgentContext
from ..harness.definitions import Harness, Routing, define_agent, define_harness
from ..harness.host import HarnessHost
from ..harness.model import Model
from ..store import Persistence, sqlite_persistence
from .app import create_harness_app
from .auth import bearer_token

__all__ = [
    "DEMO_USERS",
    "MODEL_ENV",
    "SupportDemo",
    "build_support_demo",
    "demo_models",
    "user_from_request",
]

log = logging.getLogger(__name__)

MODEL_ENV = "AGENT_MEM_VAULT_MODEL"
"""Set to a model name (e.g. ``gpt-4o-mini``, ``llama3.1``) to use an OpenAI-compatible
endpoint; ``OPENAI_BASE_URL`` and ``OPENAI_API_KEY`` say where and with which key. A name
that starts with ``claude`` uses Anthropic's API (``ANTHROPIC_API_KEY``, ``ANTHROPIC_BASE_URL``)."""

DEMO_USERS: Mapping[str, User] = {
    "token-ada": User(id="ada", tenant_id="acme"),
    "token-olga": User(id="olga", tenant_id="acme"),
    "token-bob": User(id="bob", tenant_id="globex"),
}
"""Demo logins: bearer token → user. Ada is a customer, Olga the operator, Bob another tenant."""

OPERATOR = "olga"

DESK_PROMPT = (
    "You are the support desk. Hand billing questions to billing. "
    "If the user asks for a person, tell them that a person from the team will answer here, "
    "then hand off to { human: true }."
)
BILLING_PROMPT = "You handle refunds, invoices, and payments."
BILLING_TEAM_PROMPT = "You are the billing team. Cases reach you with a note; settle them."


def user_from_request(request: Any) -> User | None:
    """The demo's login check (harness design §4): ``Authorization: Bearer token-…`` to a user.

    A header in another scheme (``Basic …``, a bare token) is a 401 naming the
    Bearer scheme; an unknown token finds no user (a 401 too, see the app).
    """
    token = bearer_token(request)
    return DEMO_USERS.get(token) if token else None


def demo_models() -> tuple[Model, Model, Model, str]:
    """(desk, billing agent, billing team) models and a line that says which they are."""
    name = os.environ.get(MODEL_ENV, "").strip()
    if name.startswith("claude"):
        from ..harness.anthropic_model import AnthropicModel

        base_url = os.environ.get("ANTHROPIC_BASE_URL") or None
        claude = AnthropicModel(name, base_url=base_url)
        return claude, claude, claude, f"{name} at {base_url or 'the Anthropic API'}"
    if name:
        from ..harness.openai_model import OpenAIChatModel

        base_url = os.environ.get("OPENAI_BASE_URL") or None
        model = OpenAIChatModel(model=name, base_url=base_url)
        return model, model, model, f"{name} at {base_url or 'the OpenAI API'}"
    from ..harness.rules_model import billing_model, support_desk_model

    return (
        support_desk_model(),
        billing_model(),
        billing_model(),
        f"the offline rule-based model (set {MODEL_ENV} for a real one)",
    )


@dataclass
class SupportDemo:
    """The assembled demo: host, harnesses, and the ASGI app that serves them."""

    host: HarnessHost
    desk: Harness
    billing_desk: Harness
    app: Starlette
    model_description: str


def build_support_demo(
    persistence: Persistence | Path | str,
    *,
    models: tuple[Model, Model, Model] | None = None,
) -> SupportDemo:
    """Build the support desk on ``persistence`` (a store, or a SQLite file path).

    >>> demo = build_support_demo("support.db")  # doctest: +SKIP
    >>> # uvicorn.run(demo.app)
    """
    if isinstance(persistence, str | Path):
        persistence = sqlite_persistence(Path(persistence))
    if models is None:
        desk_model, billing_agent_model, team_model, description = demo_models()
    else:
        desk_model, billing_agent_model, team_model = models
        description = "the given models"

    async def billing_run(ctx: AgentContext) -> str:
        return await ctx.chat(model=billing_agent_model, system_prompts=[BILLING_PROMPT])

    billing = define_agent(
        name="billing", description="Handles refunds, invoices, and payments", run=billing_run
    )
    desk = define_harness(
        name="acme/desk",
        model=desk_model,
        system_prompts=[DESK_PROMPT],
        agents=[billing],
        routing=Routing(router=lambda ctx: None, allow_handoff_to_human=True),
    )
    billing_desk = define_harness(
        name="acme/billing", model=team_model, system_prompts=[BILLING_TEAM_PROMPT]
    )
    host = HarnessHost(
        persistence=persistence,
        # The operator moves cases to the billing team from the console, so the
        # operator role also holds ``transfer`` here (members_only() gives it to owners only).
        access=Access(
            get_user=user_from_request,
            rules=members_only(transfer={"roles": ["owner", "operator"]}),
        ),
    )
    app = create_harness_app(host, {"desk": desk, "billing": billing_desk})
    app.router.lifespan_context = _lifespan(host)
    return SupportDemo(host, desk, billing_desk, app, description)


def _lifespan(host: HarnessHost) -> Any:
    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        task = asyncio.create_task(_copy_members_on_transfer(host), name="copy-members")
        try:
            yield
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
            await host.close()
            await host.persistence.close()

    return lifespan


async def _copy_members_on_transfer(host: HarnessHost) -> None:
    """Give a transfer's target the source's members (the design's §5: "copy your own access rows").

    A new target has the transferring user as its only member; the demo adds
    the source thread's people so the customer can follow the case.
    """
    from ..harness.events import HOST_STREAM
    from ..harness.index import get_entry

    after = await host.persistence.last_seq(HOST_STREAM)
    async for event in host.events(after=after):
        if event.name != "transferred":
            continue
        try:
            value = event.value
            tenant = value["tenant"]
            source = await get_entry(host.persistence, tenant, value["from"]["threadId"])
            target = await get_entry(host.persistence, tenant, value["to"]["threadId"])
            if source is None or target is None or target.owner is None:
                continue
            owner = User(id=target.owner, tenant_id=tenant)
            for member, role in source.members.items():
                if member not in target.members:
                    await host.sessions.share(
                        thread_id=target.thread_id,
                        user_id=member,
                        role="member" if role == "owner" else role,
                        user=owner,
                    )
        except Exception:  # a demo helper must not stop the server
            log.exception("could not copy members for transfer event %s", event.id)
