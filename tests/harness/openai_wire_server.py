"""A local chat-completions server for adapter tests: the real wire protocol, scripted replies.

It answers ``POST /v1/chat/completions`` the way OpenAI, Ollama or vLLM do:
with ``stream: true`` a ``text/event-stream`` of ``chat.completion.chunk``
objects ending in ``data: [DONE]`` (tool calls split into fragments keyed by
``index``, usage in a last chunk with no choices when ``stream_options.
include_usage`` is set); without it one ``chat.completion``; failures as an
HTTP status with an ``{"error": {...}}`` body. Each request takes the next
scripted reply and is recorded (headers and JSON body) so that tests can check
what the adapter sent. It runs under uvicorn in a thread on 127.0.0.1.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from starlette.responses import JSONResponse, Response, StreamingResponse

from .wire import LocalWireServer, split_text


@dataclass(frozen=True)
class ScriptedCall:
    """A tool call the server streams, its JSON arguments cut into ``pieces`` fragments."""

    id: str
    name: str
    arguments: dict[str, Any]
    pieces: int = 3
    raw_arguments: str | None = None
    """Sent instead of ``arguments`` as JSON: lets a test send arguments that do not parse."""

    @property
    def wire_arguments(self) -> str:
        return self.raw_arguments if self.raw_arguments is not None else json.dumps(self.arguments)


@dataclass(frozen=True)
class Reply:
    """One scripted answer: streamed text pieces and/or tool calls, or an HTTP error."""

    text: Sequence[str] = ()
    calls: Sequence[ScriptedCall] = ()
    usage: tuple[int, int] = (11, 7)
    status: int = 200
    error: str = ""
    stream_error: str = ""
    """Sent as an ``{"error": ...}`` event after the text, as vLLM does when it fails mid-reply."""
    retry_after: str | None = None
    """The ``retry-after`` header of an error answer (429, 503)."""
    cut: str = ""
    """End the stream after the first text: ``clean`` (no finish, no [DONE]) or ``abort``;
    ``headers`` drops it after the status and headers, before any chunk."""
    stall: float = 0.0
    """Seconds to wait before answering at all (a timeout test)."""


def text_reply(*pieces: str, usage: tuple[int, int] = (11, 7)) -> Reply:
    return Reply(text=pieces, usage=usage)


def tool_call_reply(*calls: ScriptedCall, usage: tuple[int, int] = (11, 7)) -> Reply:
    return Reply(calls=calls, usage=usage)


def error_reply(status: int, message: str, retry_after: str | None = None) -> Reply:
    return Reply(status=status, error=message, retry_after=retry_after)


def _chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {
        "id": "chatcmpl-wire",
        "object": "chat.completion.chunk",
        "created": 1_700_000_000,
        "model": "wire-model",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }


def stream_chunks(reply: Reply, include_usage: bool) -> Iterator[dict[str, Any]]:
    """The chunks a real server sends for ``reply``, fragments interleaved across calls."""
    yield _chunk({"role": "assistant", "content": ""})
    for piece in reply.text:
        yield _chunk({"content": piece})
    # First fragment of every call: id, type and name, with no arguments yet.
    for index, call in enumerate(reply.calls):
        yield _chunk(
            {
                "tool_calls": [
                    {
                        "index": index,
                        "id": call.id,
                        "type": "function",
                        "function": {"name": call.name, "arguments": ""},
                    }
                ]
            }
        )
    # Then the arguments, piece by piece, alternating between the calls; the
    # last round sends the remaining pieces of all calls in ONE chunk, as
    # servers that batch fragments do.
    split = [split_text(call.wire_arguments, call.pieces) for call in reply.calls]
    rounds = max((len(s) for s in split), default=0)
    for r in range(rounds):
        fragments = [
            {"index": i, "function": {"arguments": s[r]}} for i, s in enumerate(split) if r < len(s)
        ]
        if r == rounds - 1:
            yield _chunk({"tool_calls": fragments})
        else:
            for fragment in fragments:
                yield _chunk({"tool_calls": [fragment]})
    yield _chunk({}, finish="tool_calls" if reply.calls else "stop")
    if include_usage:
        prompt, completion = reply.usage
        yield {
            "id": "chatcmpl-wire",
            "object": "chat.completion.chunk",
            "created": 1_700_000_000,
            "model": "wire-model",
            "choices": [],
            "usage": {
                "prompt_tokens": prompt,
                "completion_tokens": completion,
                "total_tokens": prompt + completion,
            },
        }


def whole_completion(reply: Reply) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": "".join(reply.text) or None}
    if reply.calls:
        message["tool_calls"] = [
            {
                "id": c.id,
                "type": "function",
                "function": {"name": c.name, "arguments": c.wire_arguments},
            }
            for c in reply.calls
        ]
    prompt, completion = reply.usage
    return {
        "id": "chatcmpl-wire",
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": "wire-model",
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": "tool_calls" if reply.calls else "stop",
            }
        ],
        "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
        },
    }


@dataclass
class WireServer(LocalWireServer[Reply]):
    """Scripted chat-completions endpoint; ``base_url`` is what an SDK client is given."""

    path = "/v1/chat/completions"
    url_suffix = "/v1"

    def answer(self, body: dict[str, Any], reply: Reply) -> Response:
        if not body.get("stream"):
            return JSONResponse(whole_completion(reply))
        include_usage = bool((body.get("stream_options") or {}).get("include_usage"))

        async def events() -> AsyncIterator[bytes]:
            if reply.stream_error:
                yield f"data: {json.dumps(_chunk({'content': ''.join(reply.text)}))}\n\n".encode()
                failure = {"error": {"message": reply.stream_error, "type": "server_error"}}
                yield f"data: {json.dumps(failure)}\n\n".encode()
                return
            if reply.cut == "headers":
                raise ConnectionAbortedError("connection dropped by the wire server")
            if reply.cut:
                yield f"data: {json.dumps(_chunk({'content': reply.text[0]}))}\n\n".encode()
                if reply.cut == "abort":
                    raise ConnectionAbortedError("connection dropped by the wire server")
                return
            for chunk in stream_chunks(reply, include_usage):
                yield f"data: {json.dumps(chunk)}\n\n".encode()
            yield b"data: [DONE]\n\n"

        return StreamingResponse(events(), media_type="text/event-stream")

    def error(self, status: int, message: str, retry_after: str | None = None) -> Response:
        return _error(status, message, retry_after)


def _error(status: int, message: str, retry_after: str | None = None) -> JSONResponse:
    kind = {401: "invalid_request_error", 429: "rate_limit_exceeded"}.get(status, "server_error")
    return JSONResponse(
        {"error": {"message": message, "type": kind, "param": None, "code": None}},
        status_code=status,
        headers={"retry-after": retry_after} if retry_after is not None else None,
    )
