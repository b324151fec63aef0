"""One call of a model, drained: what a turn, a child agent and a transfer's summary share.

Each of them asks a model with the user's provider keys, waits for the whole
streamed reply and writes its usage to the thread's log; the request, the
draining and the usage record are built here once, so the three cannot drift.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..core.errors import AgentMemVaultError, RemoteError
from . import spans
from .access import User
from .messages import Message, Part, TextPart, ToolCallPart
from .model import Model, ModelRequest, TextDelta, ToolCallRequest, ToolSpec, Usage, UsageReport

__all__ = ["ModelReply", "ask", "call_model", "usage_record"]


@dataclass(frozen=True, slots=True)
class ModelReply:
    text: str
    tool_calls: tuple[ToolCallRequest, ...]
    usage: Usage

    def parts(self) -> tuple[Part, ...]:
        """The reply as the parts of an assistant message: its text, then its tool calls."""
        parts: list[Part] = [TextPart(self.text)] if self.text else []
        parts.extend(ToolCallPart(c.id, c.name, c.arguments) for c in self.tool_calls)
        return tuple(parts)


async def call_model(model: Model, request: ModelRequest) -> ModelReply:
    """Drain one streamed reply into its text, tool calls and usage."""
    chunks: list[str] = []
    calls: list[ToolCallRequest] = []
    usage = Usage()
    with spans.model_span(model, request) as span:
        try:
            async for event in model.stream(request):
                if isinstance(event, TextDelta):
                    chunks.append(event.text)
                elif isinstance(event, ToolCallRequest):
                    calls.append(event)
                elif isinstance(event, UsageReport):
                    usage = usage + event.usage
        except AgentMemVaultError:
            raise
        except Exception as exc:
            raise RemoteError(
                f"model {getattr(model, 'name', model)!r} failed: {exc}; check the model "
                "and its endpoint, then send again",
                code="model_error",
            ) from exc
        spans.set_usage(span, usage.input_tokens, usage.output_tokens)
    return ModelReply("".join(chunks), tuple(calls), usage)


async def ask(
    model: Model,
    *,
    system_prompts: Sequence[str],
    messages: Sequence[Message],
    tools: Sequence[ToolSpec] = (),
    model_name: str | None,
    user: User | None,
) -> ModelReply:
    """Ask ``model`` with the transcript and the keys of the user the call is for."""
    request = ModelRequest(
        system_prompts=tuple(system_prompts),
        messages=tuple(messages),
        tools=tuple(tools),
        model=model_name,
        keys=dict(user.keys) if user is not None else {},
    )
    return await call_model(model, request)


def usage_record(head: dict[str, Any], model: Model, usage: Usage) -> dict[str, Any]:
    """The ``harness.usage`` record: ``head`` (whose run, which source), the model, the tokens."""
    return {
        **head,
        "model": getattr(model, "name", None),
        "inputTokens": usage.input_tokens,
        "outputTokens": usage.output_tokens,
    }
