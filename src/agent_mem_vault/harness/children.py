"""Children: agents that an agent starts with ``ctx.spawn``.

A child answers its parent, never the thread: its transcript is private, it
gets no ``handoff`` tool, and ``ctx.harness`` is None for it; a tool it calls
that tries ``ctx.run.handoff`` rejects with ``child_cannot_hand_off``. Its
model usage still counts in the thread's log.
"""

from __future__ import annotations

import inspect
from typing import TYPE_CHECKING, Any

from .context import AgentContext, Chat
from .definitions import Agent, check_reply
from .log import USAGE
from .messages import Message, TextPart, ToolResultPart
from .model_call import ask
from .run_context import _Part

if TYPE_CHECKING:
    from .turn import Turn

__all__ = ["ChildTurn"]


class ChildTurn:
    """A child agent an agent started: a private transcript, no handoffs, no log messages."""

    def __init__(self, parent: Turn, agent: Agent) -> None:
        self.parent = parent
        self.agent = agent
        self.thread_id = parent.thread_id
        self.run_id = parent.run_id
        self.user = parent.user
        self._messages: list[Message] = []

    @property
    def messages(self) -> tuple[Message, ...]:
        return tuple(self._messages)

    def request_handoff(self, source: str | None, to: Any, note: str | None, by: str) -> None:
        _Part(source, child=True).check()

    async def run(self, text: str) -> str:
        self._messages.append(
            Message(self.parent.next_id(), "user", (TextPart(text),), {}, self.parent._now())
        )
        part = _Part(self.agent.name, child=True)
        ctx = AgentContext(self, self.agent, part)
        result = self.agent.run(ctx)
        if inspect.isawaitable(result):
            result = await result
        reply = check_reply(self.agent, result)
        return reply if reply is not None else "\n\n".join(r for r in ctx.replies if r)

    async def run_child(self, agent: Agent | str, text: str) -> str:
        return await self.parent.run_child(agent, text)

    async def chat(self, chat: Chat) -> str:
        model = chat.model or self.parent.harness.model
        tools, part = chat.tools, chat.part
        by_name = {t.name: t for t in tools}
        texts: list[str] = []
        while True:
            reply = await ask(
                model,
                system_prompts=chat.system_prompts,
                messages=self.messages,
                tools=[t.spec() for t in tools],
                model_name=self.parent.harness.model_name,
                user=self.user,
            )
            await self.parent._write(
                [(USAGE, self.parent._usage(model, reply.usage, "child", self.agent.name))]
            )
            self._messages.append(
                Message(self.parent.next_id(), "assistant", reply.parts(), {}, None)
            )
            if reply.text:
                texts.append(reply.text)
            if not reply.tool_calls:
                return "\n\n".join(texts)
            for call in reply.tool_calls:
                output, failed = await self.parent._run_tool(by_name.get(call.name), call, part)
                self._messages.append(
                    Message(
                        self.parent.next_id(),
                        "tool",
                        (ToolResultPart(call.id, call.name, output, failed),),
                        {},
                        None,
                    )
                )
