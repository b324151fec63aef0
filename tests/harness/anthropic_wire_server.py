"""A local Messages API server for adapter tests: the real wire protocol, scripted replies.

It answers ``POST /v1/messages`` as Anthropic's API does with ``stream: true``:
a ``text/event-stream`` of named events (``message_start``, then per content
block ``content_block_start`` / ``content_block_delta`` (``text_delta``,
``input_json_delta``) / ``content_block_stop``, ``message_delta`` with the
stop reason and output usage, ``message_stop``), with ``ping`` events in
between; failures as an HTTP status with ``{"type": "error", "error": {...}}``
(429 with ``retry-after``, 529 ``overloaded_error``) or as an ``error`` event
mid-stream. A reply can also stall (for timeouts) or be cut short. Each
request is recorded (headers, JSON body, arrival time). Runs under uvicorn in
a thread on 127.0.0.1, on an ephemeral port.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from starlette.responses import JSONResponse, Response, StreamingResponse

from .wire import LocalWireServer, split_text

ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    429: "rate_limit_error",
    500: "api_error",
    529: "overloaded_error",
}


@dataclass(frozen=True)
class ToolUse:
    """A ``tool_use`` block, its JSON input cut into ``pieces`` ``input_json_delta`` events."""

    id: str
    name: str
    input: dict[str, Any]
    pieces: int = 3
    raw_input: str | None = None


@dataclass(frozen=True)
class Reply:
    text: Sequence[str] = ()
    tools: Sequence[ToolUse] = ()
    usage: tuple[int, int] = (11, 7)
    cache_read: int = 0
    status: int = 200
    error: str = ""
    retry_after: str | None = None
    stream_error: str = ""
    """An ``error`` event of this type (e.g. ``overloaded_error``) after the first text."""
    cut: Literal["", "clean", "abort", "headers"] = ""
    """End the stream after the first text: cleanly (no message_stop) or by dropping it;
    ``headers`` drops it after the status and headers, before any event."""
    stall: float = 0.0
    """Seconds to wait before answering at all (a timeout test)."""
    stall_mid: float = 0.0
    """Seconds to wait after the first text event."""


def text_reply(*pieces: str, usage: tuple[int, int] = (11, 7)) -> Reply:
    return Reply(text=pieces, usage=usage)


def tool_reply(*tools: ToolUse, text: Sequence[str] = ()) -> Reply:
    return Reply(text=text, tools=tools)


def error_reply(status: int, message: str, retry_after: str | None = None) -> Reply:
    return Reply(status=status, error=message, retry_after=retry_after)


def _event(name: str, data: dict[str, Any]) -> bytes:
    return f"event: {name}\ndata: {json.dumps({'type': name, **data})}\n\n".encode()


def stream_events(reply: Reply, model: str) -> Iterator[tuple[str, dict[str, Any]]]:
    """The events Anthropic's API sends for ``reply``, in order."""
    prompt, completion = reply.usage
    yield (
        "message_start",
        {
            "message": {
                "id": "msg_wire",
                "type": "message",
                "role": "assistant",
                "model": model,
                "content": [],
                "stop_reason": None,
                "stop_sequence": None,
                "usage": {
                    "input_tokens": prompt,
                    "output_tokens": 1,
                    "cache_creation_input_tokens": 0,
                    "cache_read_input_tokens": reply.cache_read,
                },
            }
        },
    )
    index = 0
    if reply.text:
        yield (
            "content_block_start",
            {"index": index, "content_block": {"type": "text", "text": ""}},
        )
        yield ("ping", {})
        for piece in reply.text:
            yield (
                "content_block_delta",
                {"index": index, "delta": {"type": "text_delta", "text": piece}},
            )
        yield ("content_block_stop", {"index": index})
        index += 1
    for tool in reply.tools:
        yield (
            "content_block_start",
            {
                "index": index,
                "content_block": {
                    "type": "tool_use",
                    "id": tool.id,
                    "name": tool.name,
                    "input": {},
                },
            },
        )
        raw = tool.raw_input if tool.raw_input is not None else json.dumps(tool.input)
        for piece in split_text(raw, tool.pieces):
            yield (
                "content_block_delta",
                {"index": index, "delta": {"type": "input_json_delta", "partial_json": piece}},
            )
        yield ("content_block_stop", {"index": index})
        index += 1
    yield (
        "message_delta",
        {
            "delta": {
                "stop_reason": "tool_use" if reply.tools else "end_turn",
                "stop_sequence": None,
            },
            "usage": {"output_tokens": completion},
        },
    )
    yield ("message_stop", {})


class _Abort(Exception):
    """Raised inside the response body: uvicorn drops the connection mid-stream."""


@dataclass
class AnthropicWireServer(LocalWireServer[Reply]):
    path = "/v1/messages"

    def answer(self, body: dict[str, Any], reply: Reply) -> Response:
        model = str(body.get("model"))

        async def events() -> AsyncIterator[bytes]:
            if reply.cut == "headers":
                raise _Abort("connection dropped by the wire server after the headers")
            first_text = True
            for name, data in stream_events(reply, model):
                yield _event(name, data)
                if name == "content_block_delta" and first_text:
                    first_text = False
                    if reply.stall_mid:
                        await asyncio.sleep(reply.stall_mid)
                    if reply.stream_error:
                        yield _event(
                            "error",
                            {"error": {"type": reply.stream_error, "message": "Overloaded"}},
                        )
                        return
                    if reply.cut == "clean":
                        return
                    if reply.cut == "abort":
                        raise _Abort("connection dropped by the wire server")

        return StreamingResponse(events(), media_type="text/event-stream")

    def error(self, status: int, message: str, retry_after: str | None = None) -> Response:
        return _error(status, message, retry_after)


def _error(status: int, message: str, retry_after: str | None = None) -> JSONResponse:
    headers = {"retry-after": retry_after} if retry_after is not None else None
    return JSONResponse(
        {
            "type": "error",
            "error": {"type": ERROR_TYPES.get(status, "api_error"), "message": message},
        },
        status_code=status,
        headers=headers,
    )
