"""A scripted model on 127.0.0.1 that speaks each coding agent's real wire protocol.

The agents under test (Claude Code, Codex, Gemini CLI, opencode) talk to a paid
model API that cannot run here; this server stands in for it on an ephemeral
port. It records every request (path, headers, JSON body), so a failing test
can print exactly what the client sent, and answers with what a ``script``
function returns: a tool call or a final text, in the client's own protocol
(Anthropic Messages SSE, OpenAI Responses SSE, the Gemini API's SSE, OpenAI
chat completions SSE).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["Reply", "ScriptedModel", "Seen"]


@dataclass(frozen=True)
class Reply:
    """What the model answers: a tool call (``tool`` + ``args``) or plain ``text``."""

    text: str = ""
    tool: str | None = None
    args: dict[str, Any] = field(default_factory=dict)
    namespace: str | None = None
    """Codex groups an MCP server's tools in a namespace; a call names it too."""
    custom: bool = False
    """A Responses ``custom`` (freeform) tool such as Codex's ``apply_patch``: ``args["input"]``
    is the text sent as the call's input."""


@dataclass(frozen=True)
class Seen:
    """One request the server received."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any
    at: float = 0.0
    """``time.monotonic()`` when the request arrived: how long a client took to ask."""

    @property
    def text(self) -> str:
        """The body as JSON text, for "is this string anywhere in what was sent"."""
        return json.dumps(self.body, ensure_ascii=False)


Script = Callable[[Seen], Reply | None]
"""Returns the reply for a model request, or None for requests that are not one."""


class ScriptedModel:
    """The server; use as a context manager. ``url`` is its base address."""

    def __init__(self, protocol: str, script: Script) -> None:
        self.protocol = protocol
        self.script = script
        self.requests: list[Seen] = []
        self.errors: list[str] = []
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def __enter__(self) -> ScriptedModel:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def transcript(self) -> str:
        """Every request received, for an assertion message."""
        lines = [f"{len(self.requests)} requests to the scripted {self.protocol} model:"]
        for i, seen in enumerate(self.requests):
            lines.append(f"--- #{i} {seen.method} {seen.path}\n{seen.text[:6000]}")
        lines.extend(f"!!! {e}" for e in self.errors)
        return "\n".join(lines)

    def model_requests(self) -> list[Seen]:
        with self._lock:
            return [s for s in self.requests if _is_model_call(self.protocol, s)]

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        model = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                return

            def do_GET(self) -> None:
                model._record(self, None)
                if self.path.rstrip("/").endswith("/models"):
                    self._json(
                        200,
                        {
                            "object": "list",
                            "data": [{"id": "scripted", "object": "model"}],
                            "models": [],
                        },
                    )
                    return
                self._json(404, {"error": {"message": f"no {self.path} here"}})

            def do_HEAD(self) -> None:
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                try:
                    body = json.loads(raw) if raw else None
                except json.JSONDecodeError:
                    body = raw.decode("utf-8", "replace")
                seen = model._record(self, body)
                if not _is_model_call(model.protocol, seen):
                    self._json(200, _side_answer(model.protocol, seen))
                    return
                try:
                    reply = model.script(seen) or Reply(text="ok")
                except Exception as exc:  # the test reads errors; the client gets a 500
                    model.errors.append(f"script failed on {seen.path}: {exc!r}")
                    self._json(500, {"error": {"message": f"scripted model: {exc}"}})
                    return
                events = _ENCODERS[model.protocol](seen, reply)
                if events is None:
                    self._json(200, _non_streaming(model.protocol, reply))
                    return
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Cache-Control", "no-cache")
                self.send_header("Connection", "close")
                self.end_headers()
                for event in events:
                    self.wfile.write(event.encode())
                    self.wfile.flush()
                self.close_connection = True

            def _json(self, status: int, data: Any) -> None:
                raw = json.dumps(data).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

        return Handler

    def _record(self, handler: BaseHTTPRequestHandler, body: Any) -> Seen:
        seen = Seen(
            handler.command, handler.path, dict(handler.headers.items()), body, time.monotonic()
        )
        with self._lock:
            self.requests.append(seen)
        return seen


def _is_model_call(protocol: str, seen: Seen) -> bool:
    if seen.method != "POST":
        return False
    path = seen.path.split("?")[0]
    if protocol == "anthropic":
        return path.endswith("/v1/messages")
    if protocol == "responses":
        return path.endswith("/responses")
    if protocol == "gemini":
        return ":streamGenerateContent" in path or ":generateContent" in path
    return path.endswith("/chat/completions")


def _side_answer(protocol: str, seen: Seen) -> Any:
    if protocol == "anthropic" and seen.path.split("?")[0].endswith("/count_tokens"):
        return {"input_tokens": 10}
    if protocol == "gemini" and ":countTokens" in seen.path:
        return {"totalTokens": 10}
    return {}


def _sse(event: str | None, data: Any) -> str:
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {json.dumps(data)}\n\n"


def _anthropic(seen: Seen, reply: Reply) -> list[str] | None:
    if not (isinstance(seen.body, dict) and seen.body.get("stream")):
        return None
    model = seen.body.get("model", "scripted")
    usage = {"input_tokens": 10, "output_tokens": 1}
    start = {
        "id": "msg_scripted",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": usage,
    }
    events = [_sse("message_start", {"type": "message_start", "message": start})]
    if reply.tool:
        block = {
            "type": "tool_use",
            "id": _anthropic_call_id(seen),
            "name": reply.tool,
            "input": {},
        }
        delta = {"type": "input_json_delta", "partial_json": json.dumps(reply.args)}
        stop = "tool_use"
    else:
        block = {"type": "text", "text": ""}
        delta = {"type": "text_delta", "text": reply.text}
        stop = "end_turn"
    events += [
        _sse(
            "content_block_start",
            {"type": "content_block_start", "index": 0, "content_block": block},
        ),
        _sse("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": delta}),
        _sse("content_block_stop", {"type": "content_block_stop", "index": 0}),
        _sse(
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": stop, "stop_sequence": None},
                "usage": {"output_tokens": 1},
            },
        ),
        _sse("message_stop", {"type": "message_stop"}),
    ]
    return events


def _anthropic_call_id(seen: Seen) -> str:
    """A fresh tool_use id per call in a conversation (one more than the results so far):
    Claude Code takes a repeated id for a call it has already answered."""
    messages = seen.body.get("messages") if isinstance(seen.body, dict) else None
    done = sum(
        1
        for m in (messages if isinstance(messages, list) else [])
        if isinstance(m, dict) and isinstance(m.get("content"), list)
        for block in m["content"]
        if isinstance(block, dict) and block.get("type") == "tool_result"
    )
    return f"toolu_scripted{done + 1}"


def _responses(seen: Seen, reply: Reply) -> list[str]:
    if reply.tool and reply.custom:
        item: dict[str, Any] = {
            "type": "custom_tool_call",
            "id": "ctc_scripted1",
            "call_id": _responses_call_id(seen),
            "name": reply.tool,
            "input": str(reply.args.get("input", "")),
            "status": "completed",
        }
    elif reply.tool:
        item = {
            "type": "function_call",
            "id": "fc_scripted1",
            "call_id": _responses_call_id(seen),
            "name": reply.tool,
            "arguments": json.dumps(reply.args),
            "status": "completed",
        }
        if reply.namespace is not None:
            item["namespace"] = reply.namespace
    else:
        item = {
            "type": "message",
            "id": "msg_scripted1",
            "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": reply.text, "annotations": []}],
        }
    usage = {
        "input_tokens": 10,
        "input_tokens_details": None,
        "output_tokens": 1,
        "output_tokens_details": None,
        "total_tokens": 11,
    }
    return [
        _sse("response.created", {"type": "response.created", "response": {"id": "resp_scripted"}}),
        _sse(
            "response.output_item.done",
            {"type": "response.output_item.done", "output_index": 0, "item": item},
        ),
        _sse(
            "response.completed",
            {"type": "response.completed", "response": {"id": "resp_scripted", "usage": usage}},
        ),
    ]


def _responses_call_id(seen: Seen) -> str:
    """A fresh call id per tool call in a conversation (one more than the outputs so far)."""
    items = seen.body.get("input") if isinstance(seen.body, dict) else None
    done = sum(
        1
        for i in (items if isinstance(items, list) else [])
        if isinstance(i, dict) and str(i.get("type", "")).endswith("call_output")
    )
    return f"call_scripted{done + 1}"


def _gemini_response(reply: Reply) -> dict[str, Any]:
    part: dict[str, Any] = (
        {"functionCall": {"name": reply.tool, "args": reply.args}}
        if reply.tool
        else {"text": reply.text}
    )
    return {
        "candidates": [
            {"content": {"role": "model", "parts": [part]}, "finishReason": "STOP", "index": 0}
        ],
        "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 1, "totalTokenCount": 11},
        "modelVersion": "scripted",
    }


def _gemini(seen: Seen, reply: Reply) -> list[str] | None:
    if ":streamGenerateContent" not in seen.path:
        return None
    return [_sse(None, _gemini_response(reply))]


def _chat(seen: Seen, reply: Reply) -> list[str] | None:
    if not (isinstance(seen.body, dict) and seen.body.get("stream")):
        return None
    base = {
        "id": "chatcmpl-scripted",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": "scripted",
    }
    if reply.tool:
        call = {
            "index": 0,
            "id": _chat_call_id(seen),
            "type": "function",
            "function": {"name": reply.tool, "arguments": json.dumps(reply.args)},
        }
        delta: dict[str, Any] = {"role": "assistant", "content": None, "tool_calls": [call]}
        finish = "tool_calls"
    else:
        delta = {"role": "assistant", "content": reply.text}
        finish = "stop"
    usage = {"prompt_tokens": 10, "completion_tokens": 1, "total_tokens": 11}
    return [
        _sse(None, {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]}),
        _sse(
            None,
            {
                **base,
                "choices": [{"index": 0, "delta": {}, "finish_reason": finish}],
                "usage": usage,
            },
        ),
        "data: [DONE]\n\n",
    ]


def _chat_call_id(seen: Seen) -> str:
    """A fresh id per tool call in a conversation (one more than the results so
    far): clients match each result to its call by id."""
    messages = seen.body.get("messages") if isinstance(seen.body, dict) else None
    done = sum(
        1
        for m in (messages if isinstance(messages, list) else [])
        if isinstance(m, dict) and m.get("role") == "tool"
    )
    return f"call_scripted{done + 1}"


def _non_streaming(protocol: str, reply: Reply) -> Any:
    if protocol == "gemini":
        return _gemini_response(reply)
    if protocol == "anthropic":
        content: list[dict[str, Any]] = (
            [{"type": "tool_use", "id": "toolu_scripted1", "name": reply.tool, "input": reply.args}]
            if reply.tool
            else [{"type": "text", "text": reply.text}]
        )
        return {
            "id": "msg_scripted",
            "type": "message",
            "role": "assistant",
            "model": "scripted",
            "content": content,
            "stop_reason": "tool_use" if reply.tool else "end_turn",
            "stop_sequence": None,
            "usage": {"input_tokens": 10, "output_tokens": 1},
        }
    message: dict[str, Any] = {"role": "assistant", "content": reply.text}
    if reply.tool:
        message = {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_scripted1",
                    "type": "function",
                    "function": {"name": reply.tool, "arguments": json.dumps(reply.args)},
                }
            ],
        }
    return {
        "id": "chatcmpl-scripted",
        "object": "chat.completion",
        "created": 0,
        "model": "scripted",
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": "tool_calls" if reply.tool else "stop",
            }
        ],
        "usage": {"prompt_tokens": 10, "completion_tokens": 1, "total_tokens": 11},
    }


_ENCODERS: dict[str, Callable[[Seen, Reply], list[str] | None]] = {
    "anthropic": _anthropic,
    "responses": _responses,
    "gemini": _gemini,
    "chat": _chat,
}
