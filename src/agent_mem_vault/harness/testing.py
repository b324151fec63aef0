"""A scripted model for tests: replies replayed in order, requests recorded.

>>> model = ScriptedModel([
...     tool_call("handoff", {"to": "billing", "note": "Refund for order 42"}),
...     text("Your refund for order 42 is on its way."),
... ])

Each call to the model takes the next reply: ``text("…")``, ``tool_call(name,
arguments, id=None)``, or a list of such parts (``usage(…)``, ``pause(…)``,
``gate(…)`` and ``fail(…)`` shape the reply further). ``model.calls`` holds one
:class:`ScriptedCall` per request (its messages and tool names), and
``model.check_consumed()`` fails a test that left replies unused.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

from .messages import Message
from .model import ModelEvent, ModelRequest, TextDelta, ToolCallRequest, Usage, UsageReport

__all__ = [
    "ScriptedCall",
    "ScriptedModel",
    "ScriptedPart",
    "fail",
    "gate",
    "pause",
    "text",
    "tool_call",
    "usage",
]


@dataclass(frozen=True, slots=True)
class _Text:
    text: str


@dataclass(frozen=True, slots=True)
class _ToolCall:
    name: str
    arguments: Mapping[str, Any]
    id: str | None


@dataclass(frozen=True, slots=True)
class _Usage:
    usage: Usage


@dataclass(frozen=True, slots=True)
class _Pause:
    seconds: float


@dataclass(frozen=True, slots=True)
class _Gate:
    event: asyncio.Event


@dataclass(frozen=True, slots=True)
class _Fail:
    message: str


ScriptedPart = _Text | _ToolCall | _Usage | _Pause | _Gate | _Fail


def text(value: str) -> ScriptedPart:
    """A reply (or part of one) that is this text, streamed in small deltas."""
    return _Text(value)


def tool_call(
    name: str, arguments: Mapping[str, Any] | None = None, id: str | None = None
) -> ScriptedPart:
    """A tool call; without ``id`` one is made up (``call_1``, ``call_2``, …)."""
    return _ToolCall(name, dict(arguments or {}), id)


def usage(input_tokens: int, output_tokens: int) -> ScriptedPart:
    """Report this usage instead of the made-up default."""
    return _Usage(Usage(input_tokens, output_tokens))


def pause(seconds: float) -> ScriptedPart:
    """Wait this long before going on (to test timeouts)."""
    return _Pause(seconds)


def gate(event: asyncio.Event) -> ScriptedPart:
    """Wait until ``event`` is set before going on: the model call stays in flight
    for as long as the test needs, whatever the machine's load.

    >>> release = asyncio.Event()
    >>> model = ScriptedModel([[gate(release), text("slow answer")]])
    """
    return _Gate(event)


def fail(message: str) -> ScriptedPart:
    """Raise from the model, as a broken endpoint would."""
    return _Fail(message)


@dataclass(frozen=True, slots=True)
class ScriptedCall:
    """One request the model got."""

    request: ModelRequest

    @property
    def messages(self) -> tuple[Message, ...]:
        return self.request.messages

    @property
    def tool_names(self) -> tuple[str, ...]:
        return tuple(t.name for t in self.request.tools)

    @property
    def system_prompts(self) -> tuple[str, ...]:
        return self.request.system_prompts

    @property
    def keys(self) -> Mapping[str, str]:
        return self.request.keys

    def tool(self, name: str) -> Mapping[str, Any]:
        """The JSON Schema of the tool ``name`` as the model saw it."""
        for spec in self.request.tools:
            if spec.name == name:
                return spec.parameters
        raise KeyError(f"the model was not given a tool {name!r}; it had {self.tool_names}")


@dataclass
class ScriptedModel:
    """A ``Model`` that replays ``replies`` in order and records each request."""

    replies: Sequence[str | ScriptedPart | Sequence[ScriptedPart]]
    name: str = "scripted"
    calls: list[ScriptedCall] = field(default_factory=list)
    _next: int = 0
    _ids: Any = field(default_factory=lambda: itertools.count(1))

    @property
    def remaining(self) -> int:
        return len(self.replies) - self._next

    def check_consumed(self) -> None:
        """Fail if replies are left: the test expected more model calls than happened."""
        if self.remaining:
            raise AssertionError(
                f"ScriptedModel {self.name!r} has {self.remaining} unused replies of "
                f"{len(self.replies)} after {len(self.calls)} calls"
            )

    assert_consumed = check_consumed

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        self.calls.append(ScriptedCall(request))
        if self._next >= len(self.replies):
            raise AssertionError(
                f"ScriptedModel {self.name!r} ran out of replies: call {len(self.calls)} "
                f"but only {len(self.replies)} scripted"
            )
        reply = self.replies[self._next]
        self._next += 1
        parts: Sequence[ScriptedPart]
        if isinstance(reply, str):
            parts = [_Text(reply)]  # a bare string is a text reply
        elif isinstance(reply, Sequence):
            parts = cast("Sequence[ScriptedPart]", reply)
        else:
            parts = [reply]
        reported: Usage | None = None
        words = 0
        for part in parts:
            if isinstance(part, _Text):
                words += len(part.text.split())
                for start in range(0, len(part.text), 16):
                    yield TextDelta(part.text[start : start + 16])
            elif isinstance(part, _ToolCall):
                words += 1
                call_id = part.id or f"call_{next(self._ids)}"
                yield ToolCallRequest(call_id, part.name, dict(part.arguments))
            elif isinstance(part, _Usage):
                reported = part.usage
            elif isinstance(part, _Pause):
                await asyncio.sleep(part.seconds)
            elif isinstance(part, _Gate):
                await part.event.wait()
            elif isinstance(part, _Fail):
                raise RuntimeError(part.message)
            else:
                raise TypeError(
                    f"ScriptedModel reply part {part!r} is not text(), tool_call(), usage(), "
                    "pause(), gate() or fail()"
                )
        yield UsageReport(
            reported or Usage(len(request.messages) + len(request.system_prompts), words)
        )
