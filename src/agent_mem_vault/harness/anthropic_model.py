"""A ``Model`` for Anthropic's Messages API, on the official ``anthropic`` SDK.

It streams: text deltas go out as they arrive; a ``tool_use`` block, whose
input arrives as ``input_json_delta`` fragments, is yielded whole when its
block stops, because the harness can only run a tool with its complete input.
Usage comes from ``message_start`` (input, including cached input) and
``message_delta`` (output). A reply that ends without ``message_stop`` was cut
and fails with ``model_stream_cut`` (see :mod:`.model_errors`).

Requests are prompt-cache friendly: the transcript is sent in order, so a
handoff target's first request extends the messages of the request before it,
and ``cache_control`` marks the end of the system prompt and of the last
message, so the provider caches the longest stable prefix.

The ``anthropic`` package is optional (``pip install agent-mem-vault[anthropic]``)
and is imported when an adapter is constructed, not with this module.

    >>> model = AnthropicModel("claude-sonnet-4-5")
    >>> # async for event in model.stream(request): ...
"""

from __future__ import annotations

import base64
import json
import os
from collections.abc import AsyncIterator, Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..core.errors import InvalidInputError, RemoteError
from .messages import FilePart, Message, TextPart, ToolCallPart, ToolResultPart
from .model import (
    ModelEvent,
    ModelRequest,
    TextDelta,
    ToolCallRequest,
    ToolSpec,
    Usage,
    UsageReport,
)
from .model_errors import MODEL_ERROR, sdk_errors, status_code, stream_cut
from .sdk_model import SdkModel, sdk_client, tool_arguments

if TYPE_CHECKING:
    from anthropic import AsyncAnthropic

__all__ = ["AnthropicModel", "to_anthropic_messages", "to_anthropic_tools"]

KEY_NAME = "anthropic"
"""The name under which a user's provider key for this adapter is looked up."""


_CACHE = {"type": "ephemeral"}


class AnthropicModel(SdkModel):
    """A Claude model, streamed through the Messages API.

    ``api_key`` defaults to ``ANTHROPIC_API_KEY``; a request that carries the
    sender's own key (``ModelRequest.keys["anthropic"]``) uses that one, so
    usage is billed to the user who sent the turn. ``base_url`` defaults to
    ``ANTHROPIC_BASE_URL``, then the Anthropic API. ``max_retries`` (429, 529
    overloaded, 5xx and connection errors, with backoff that follows
    ``retry-after``) and ``timeout`` (seconds) go to the SDK; ``max_tokens``
    caps each reply. Pass ``client`` to share an ``anthropic.AsyncAnthropic``.

    >>> AnthropicModel("claude-sonnet-4-5").name
    'claude-sonnet-4-5'
    """

    name: str
    system = "anthropic"
    """``gen_ai.system`` of this adapter's spans."""

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        client: AsyncAnthropic | None = None,
        name: str | None = None,
        max_tokens: int = 4096,
        max_retries: int = 2,
        timeout: float = 120.0,
    ) -> None:
        if not model:
            raise InvalidInputError("AnthropicModel needs a model name, e.g. 'claude-sonnet-4-5'")
        if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1:
            raise InvalidInputError(
                f"AnthropicModel max_tokens must be a positive integer, not {max_tokens!r}"
            )
        self.model = model
        self.name = name or model
        self.max_tokens = max_tokens
        self._client = client or sdk_client(
            "anthropic",
            "AsyncAnthropic",
            "the 'anthropic' package is not installed; install it with "
            "pip install 'agent-mem-vault[anthropic]' to use AnthropicModel",
            api_key=api_key,
            key_env="ANTHROPIC_API_KEY",
            base_url=base_url or os.environ.get("ANTHROPIC_BASE_URL") or None,
            max_retries=max_retries,
            timeout=timeout,
        )

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        """Send one request and stream its reply as ``TextDelta``, ``ToolCallRequest``, usage."""
        import anthropic

        user_key = request.keys.get(KEY_NAME)
        if not user_key and not self.has_key:
            raise RemoteError(
                f"no Anthropic key for {self._describe()}: set ANTHROPIC_API_KEY or give "
                "the user who sends the turn an 'anthropic' key",
                code=MODEL_ERROR,
            )
        body: dict[str, Any] = {
            "model": request.model or self.model,
            "max_tokens": self.max_tokens,
            "messages": to_anthropic_messages(request.messages),
            "stream": True,
        }
        system: list[dict[str, Any]] = [
            {"type": "text", "text": p} for p in request.system_prompts if p
        ]
        if system:
            system[-1]["cache_control"] = dict(_CACHE)
            body["system"] = system
        if request.tools:
            body["tools"] = to_anthropic_tools(request.tools)
        # A copy of the client with the user's key (same connection pool), so the
        # SDK sends the key in whatever header its API version wants.
        client = self._client.with_options(api_key=user_key) if user_key else self._client
        where = self._describe()
        reply = _ReplyAssembler(where)

        def other_error(exc: Exception, answering: bool) -> RemoteError:
            if answering or reply.started:
                return stream_cut(where, f"{type(exc).__name__}: {exc}")
            return RemoteError(
                f"{where} failed: {type(exc).__name__}: {exc}; send again, and "
                "check the endpoint if it keeps failing",
                code=MODEL_ERROR,
            )

        with sdk_errors(anthropic, where, lambda e: _status_error(e, where), other_error) as call:
            stream = await client.messages.create(**body)
            call.answering = True
            async with stream:
                async for event in stream:
                    for out in reply.add(event):
                        yield out
            reply.check_finished()


@dataclass(slots=True)
class _Block:
    type: str
    id: str = ""
    name: str = ""
    json: str = ""


class _ReplyAssembler:
    """Turns the Messages API's stream events into ``ModelEvent`` values."""

    def __init__(self, where: str) -> None:
        self.where = where
        self.started = False
        self.stopped = False
        self.blocks: dict[int, _Block] = {}
        self.input_tokens = 0
        self.output_tokens = 0

    def add(self, event: Any) -> Iterator[ModelEvent]:
        kind = getattr(event, "type", None)
        if kind == "message_start":
            self.started = True
            usage = event.message.usage
            self.input_tokens = (
                (usage.input_tokens or 0)
                + (getattr(usage, "cache_creation_input_tokens", None) or 0)
                + (getattr(usage, "cache_read_input_tokens", None) or 0)
            )
            self.output_tokens = usage.output_tokens or 0
        elif kind == "content_block_start":
            block = event.content_block
            self.blocks[event.index] = _Block(
                block.type, getattr(block, "id", "") or "", getattr(block, "name", "") or ""
            )
        elif kind == "content_block_delta":
            delta = event.delta
            if delta.type == "text_delta" and delta.text:
                yield TextDelta(delta.text)
            elif delta.type == "input_json_delta":
                self.blocks.setdefault(event.index, _Block("tool_use")).json += (
                    delta.partial_json or ""
                )
        elif kind == "content_block_stop":
            block = self.blocks.pop(event.index, None)
            if block is not None and block.type == "tool_use":
                yield self._call(block)
        elif kind == "message_delta":
            usage = getattr(event, "usage", None)
            if usage is not None and usage.output_tokens is not None:
                self.output_tokens = usage.output_tokens  # cumulative, not a delta
        elif kind == "message_stop":
            self.stopped = True
            yield UsageReport(Usage(self.input_tokens, self.output_tokens))

    def check_finished(self) -> None:
        if not self.stopped:
            raise stream_cut(self.where, "the stream ended before message_stop")

    def _call(self, block: _Block) -> ToolCallRequest:
        if not block.name or not block.id:
            raise RemoteError(
                f"{self.where} sent a tool_use block without a name or id; retry the turn",
                code=MODEL_ERROR,
            )
        arguments = tool_arguments(
            block.json, block.name, where=self.where, noun="input", fix="retry the turn"
        )
        return ToolCallRequest(id=block.id, name=block.name, arguments=arguments)


def _status_error(exc: Any, where: str) -> RemoteError:
    status = int(exc.status_code)
    kind, detail = _error_detail(exc)
    if kind == "overloaded_error":
        code = status_code(529)
    elif kind == "rate_limit_error":
        code = status_code(429)
    else:
        code = status_code(status)
    if status in (401, 403) or kind in ("authentication_error", "permission_error"):
        hint = "check the Anthropic key of the user who sent the turn, or ANTHROPIC_API_KEY"
    elif status == 404 or kind == "not_found_error":
        hint = "check the model name"
    elif code == "model_rate_limited":
        hint = "the key is rate limited even after retries; wait and send again"
    elif code == "model_overloaded":
        hint = "the provider is overloaded even after retries; send again later"
    elif status >= 500:
        hint = "the provider failed; send again"
    else:
        hint = "the API rejected the request; check the model name and its tool support"
    return RemoteError(
        f"{where} answered {kind or 'HTTP ' + str(status)}: {detail}; {hint}",
        code=code,
        status=status,
    )


def _error_detail(exc: Any) -> tuple[str, str]:
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        error = body.get("error", body)
        if isinstance(error, dict):
            return str(error.get("type") or ""), str(error.get("message") or exc)
    return "", str(getattr(exc, "message", exc))


def to_anthropic_tools(tools: Iterable[ToolSpec]) -> list[dict[str, Any]]:
    """Tool specs in the Messages API ``tools`` format (cached with the system prompt)."""
    return [
        {"name": s.name, "description": s.description, "input_schema": dict(s.parameters)}
        for s in tools
    ]


def to_anthropic_messages(messages: Iterable[Message]) -> list[dict[str, Any]]:
    """Our transcript in the Messages API format.

    Only ``user`` and ``assistant`` turns exist there: tool results go back in a
    user turn as ``tool_result`` blocks, a system message of the transcript as
    user text, and consecutive turns of one role are merged (the API wants
    them alternating). The last block carries ``cache_control``, so the next
    request, which extends this one, reads the prefix from the cache.
    """
    out: list[dict[str, Any]] = []
    for message in messages:
        role, blocks = _to_blocks(message)
        if not blocks:
            continue
        if out and out[-1]["role"] == role:
            out[-1]["content"].extend(blocks)
        else:
            out.append({"role": role, "content": blocks})
    if out:
        last = out[-1]["content"][-1]
        out[-1]["content"][-1] = {**last, "cache_control": dict(_CACHE)}
    return out


def _to_blocks(message: Message) -> tuple[str, list[dict[str, Any]]]:
    role = "assistant" if message.role == "assistant" else "user"
    blocks: list[dict[str, Any]] = []
    for part in message.parts:
        if isinstance(part, TextPart):
            if part.text:
                text = f"[system] {part.text}" if message.role == "system" else part.text
                blocks.append({"type": "text", "text": text})
        elif isinstance(part, ToolCallPart):
            blocks.append(
                {
                    "type": "tool_use",
                    "id": part.id,
                    "name": part.name,
                    "input": dict(part.arguments),
                }
            )
        elif isinstance(part, ToolResultPart):
            output = part.output
            text = output if isinstance(output, str) else json.dumps(output, ensure_ascii=False)
            result: dict[str, Any] = {
                "type": "tool_result",
                "tool_use_id": part.tool_call_id,
                "content": text,
            }
            if part.is_error:
                result["is_error"] = True
            blocks.append(result)
        elif isinstance(part, FilePart):
            blocks.append(_file_block(part) if role == "user" else _file_text(part))
    # The API wants tool results first in a user turn.
    blocks.sort(key=lambda b: b["type"] != "tool_result")
    return role, blocks


def _file_text(part: FilePart, why: str = "") -> dict[str, Any]:
    label = part.name or part.url or part.media_type
    return {"type": "text", "text": f"[file: {label}{f' ({why})' if why else ''}]"}


def _file_block(part: FilePart) -> dict[str, Any]:
    if part.data is None and part.url is None:
        return _file_text(part, "no content")
    kind = "image" if part.media_type.startswith("image/") else None
    if part.media_type == "application/pdf":
        kind = "document"
    if kind is not None:
        source: dict[str, Any]
        if part.data is not None:
            source = {"type": "base64", "media_type": part.media_type, "data": part.data}
        else:
            source = {"type": "url", "url": part.url}
        return {"type": kind, "source": source}
    if part.data is not None and part.media_type.startswith("text/"):
        try:
            decoded = base64.b64decode(part.data, validate=True).decode("utf-8", errors="replace")
        except ValueError:
            return _file_text(part, "not valid base64")
        return {
            "type": "document",
            "source": {"type": "text", "media_type": "text/plain", "data": decoded},
            **({"title": part.name} if part.name else {}),
        }
    return _file_text(part, part.media_type)
