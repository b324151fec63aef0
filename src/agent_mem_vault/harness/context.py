"""What agent code and routers are handed while a turn runs.

An agent's context is bound to one part of one turn, as a tool's is (see
:mod:`.run_context`): ``ctx.harness`` hands off only while that part runs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from .definitions import Agent
from .messages import Message
from .model import Model
from .run_context import HarnessAgentContext, OnTurn, _HandsOff, _Part
from .tools import Tool

if TYPE_CHECKING:
    from .access import User

__all__ = ["AgentContext", "Chat", "RouterContext"]


@dataclass(frozen=True, slots=True)
class Chat:
    """One ``ctx.chat`` an agent asked for: whose part asks, which model, with what."""

    source: str | None
    """The agent that asks (its replies are its own in the transcript)."""
    model: Model | None
    """None: the harness's model."""
    system_prompts: tuple[str, ...]
    tools: tuple[Tool, ...]
    part: _Part


class _Turn(_HandsOff, Protocol):
    """The part of a running turn that an agent's context reaches (implemented in turn.py)."""

    user: User | None

    @property
    def messages(self) -> tuple[Message, ...]: ...

    async def chat(self, chat: Chat) -> str: ...

    async def run_child(self, agent: Agent | str, text: str) -> str: ...


@dataclass(frozen=True, slots=True)
class RouterContext:
    """What ``Routing.router`` sees at the start of a turn."""

    thread_id: str
    run_id: str
    text: str | None
    """The user's message of this turn (None for ``continue_without_message``)."""
    active_agent: str | None
    messages: tuple[Message, ...]
    user: User | None


class AgentContext(OnTurn):
    """What an agent's ``run(ctx)`` gets.

    ``await ctx.chat(model=, system_prompts=, tools=)`` asks a model with the
    saved transcript and writes its reply; ``ctx.harness`` hands off (None
    when the agent runs as a child); ``await ctx.spawn(agent, text)`` starts a
    child agent and returns its text.
    """

    _turn: _Turn

    def __init__(self, turn: _Turn, agent: Agent, part: _Part) -> None:
        super().__init__(turn, part)
        self.agent = agent
        self.harness: HarnessAgentContext | None = (
            None if part.child else HarnessAgentContext(turn, part)
        )
        self.replies: list[str] = []
        """The text of each ``chat`` reply, in order (the agent's part of the turn text)."""

    @property
    def user(self) -> User | None:
        return self._turn.user

    @property
    def messages(self) -> tuple[Message, ...]:
        """The saved transcript, the same messages the members see."""
        return self._turn.messages

    @property
    def keys(self) -> Mapping[str, str]:
        """The provider keys of the user who sent the turn."""
        user = self._turn.user
        return dict(user.keys) if user is not None else {}

    async def chat(
        self,
        *,
        model: Model | None = None,
        system_prompts: Sequence[str] = (),
        tools: Sequence[Tool] = (),
    ) -> str:
        """Ask ``model`` (default: the harness's) and return the reply text."""
        if isinstance(system_prompts, str):
            system_prompts = (system_prompts,)
        reply = await self._turn.chat(
            Chat(self.agent.name, model, tuple(system_prompts), tuple(tools), self._part)
        )
        self.replies.append(reply)
        return reply

    @property
    def last_reply(self) -> str | None:
        """The text of the latest ``chat`` reply (None before the first)."""
        return self.replies[-1] if self.replies else None

    async def spawn(self, agent: Agent | str, text: str) -> str:
        """Start a child agent on ``text``; it answers its parent, never the thread."""
        return await self._turn.run_child(agent, text)
