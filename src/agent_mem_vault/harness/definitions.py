"""What an app declares: agents, routing and harnesses.

Definitions are plain frozen values; a host runs them. A harness has a main
model and root agents that may take the conversation over (handoff targets),
and subagents that an agent may only start as children.

>>> from agent_mem_vault.harness.testing import ScriptedModel, text
>>> billing = define_agent(name="billing", description="Refunds", run=lambda ctx: "Done.")
>>> support = define_harness(name="acme/support", model=ScriptedModel([text("Hi")]),
...                          agents=[billing], routing=Routing())
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..core.errors import InvalidInputError
from .model import Model
from .tools import Tool

if TYPE_CHECKING:
    from .context import AgentContext, RouterContext

__all__ = [
    "MAIN",
    "Agent",
    "Harness",
    "RouterDecision",
    "Routing",
    "check_reply",
    "define_agent",
    "define_harness",
]

MAIN = "main"
"""The name a root agent uses to hand back to the main model."""

_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.\-/]{0,127}$")

AgentRun = Callable[["AgentContext"], Awaitable[str | None] | str | None]
RouterDecision = Mapping[str, Any] | None
RouterFn = Callable[["RouterContext"], Awaitable[RouterDecision] | RouterDecision]


@dataclass(frozen=True, slots=True)
class Agent:
    """An agent: ``run(ctx)`` returns its reply text or calls ``ctx.chat``."""

    name: str
    description: str
    run: AgentRun


@dataclass(frozen=True, slots=True)
class Routing:
    """How a turn finds the agent that answers it.

    ``router(ctx)`` runs at the start of each turn: None keeps the active
    agent, ``{"handoff": "billing", "note": "..."}`` hands off first.
    """

    router: RouterFn | None = None
    give_models_handoff_tool: bool = True
    allow_handoff_to_human: bool = False


@dataclass(frozen=True, slots=True)
class Harness:
    """A harness definition; ``name`` ties threads to it (``acme/support``)."""

    name: str
    model: Model
    system_prompts: tuple[str, ...] = ()
    tools: tuple[Tool, ...] = ()
    agents: tuple[Agent, ...] = ()
    subagents: tuple[Agent, ...] = ()
    routing: Routing | None = None
    model_name: str | None = None

    def root_agent(self, name: str) -> Agent | None:
        """The root agent called ``name`` (a handoff target), or None."""
        for agent in self.agents:
            if agent.name == name:
                return agent
        return None

    def any_agent(self, name: str) -> Agent | None:
        """A root agent or a subagent by name (what an agent may start as a child)."""
        return self.root_agent(name) or next((a for a in self.subagents if a.name == name), None)

    @property
    def root_names(self) -> tuple[str, ...]:
        return tuple(a.name for a in self.agents)


def check_reply(agent: Agent, result: object) -> str | None:
    """What an agent's ``run`` returned, if it is a reply: text, or None for none."""
    if result is not None and not isinstance(result, str):
        raise InvalidInputError(
            f"agent {agent.name!r} returned {type(result).__name__}; its run must "
            "return text (its reply) or None"
        )
    return result


def define_agent(*, name: str, description: str = "", run: AgentRun) -> Agent:
    """Define an agent.

    >>> triage = define_agent(name="triage", description="Sorts requests", run=lambda c: "ok")
    """
    _check_name("agent", name)
    if name == MAIN:
        raise InvalidInputError(
            f"an agent cannot be called {MAIN!r}: that name means the main model; rename it"
        )
    if not callable(run):
        raise InvalidInputError(
            f"agent {name!r}: run must be callable, got {type(run).__name__}; pass a "
            "function that takes the AgentContext"
        )
    return Agent(name=name, description=description, run=run)


def define_harness(
    *,
    name: str,
    model: Model,
    system_prompts: Sequence[str] = (),
    tools: Sequence[Tool] = (),
    agents: Sequence[Agent] = (),
    subagents: Sequence[Agent] = (),
    routing: Routing | None = None,
    model_name: str | None = None,
) -> Harness:
    """Define a harness: the main model, its prompts and tools, root agents, subagents."""
    _check_name("harness", name)
    seen: set[str] = set()
    for agent in (*agents, *subagents):
        if agent.name in seen:
            raise InvalidInputError(
                f"harness {name!r}: two agents are called {agent.name!r}; names must be unique"
            )
        seen.add(agent.name)
    tool_names = [t.name for t in tools]
    for tool_name in tool_names:
        if tool_names.count(tool_name) > 1:
            raise InvalidInputError(
                f"harness {name!r}: two tools are called {tool_name!r}; the model calls "
                "tools by name, so rename one"
            )
    if isinstance(system_prompts, str):
        system_prompts = (system_prompts,)
    return Harness(
        name=name,
        model=model,
        system_prompts=tuple(system_prompts),
        tools=tuple(tools),
        agents=tuple(agents),
        subagents=tuple(subagents),
        routing=routing,
        model_name=model_name,
    )


def _check_name(kind: str, name: str) -> None:
    if not isinstance(name, str) or not _NAME.match(name):
        raise InvalidInputError(
            f"{kind} name {name!r} is not valid: use 1 to 128 letters, digits, '_', '-', '.', '/'"
        )
