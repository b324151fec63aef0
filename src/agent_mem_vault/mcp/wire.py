"""Messages a transport must answer itself, because the server never sees them right.

Every line a client writes over stdio, and every body it POSTs over HTTP, gets
an answer. The SDK's transports read each as a JSON-RPC message with the SDK's
own adapter, and some messages slip past it in ways a client cannot use:

- A line or body that does not parse (a lone surrogate escape such as
  ``"\\ud800"``, arrays nested past the parser's ~200 levels, not JSON at all)
  is dropped by the SDK's stdio transport, and answered over HTTP with the
  parser's multi-line dump. Here: ``-32700`` (parse error), carrying the
  request's id when one can be found in the text, else ``null``.
- JSON that is no JSON-RPC message: ``-32600`` (invalid request), with its id.
- A JSON-RPC batch (an array): MCP since 2025-06-18 sends one message at a
  time, and this server speaks those versions; the batch is refused with one
  ``-32600`` that says so, never a dump and never one answer per member.
- A request whose ``id`` is ``null``, ``true`` or ``1.5``: MCP ids are strings
  or integers. The SDK's adapter reads such a request as a *notification*
  (it has a method and no valid id), so it would be run and never answered.
  Here: ``-32600`` with id ``null``, and nothing runs.

:func:`read_message` is the one reading both transports share: it returns the
message, or the error to answer instead. :class:`JsonRpcBodyCheck` applies it
to the HTTP endpoint.
"""

from __future__ import annotations

import contextlib
import json
from typing import TYPE_CHECKING, Any

from ..core.errors import bounded
from ..core.text import unstorable_char

if TYPE_CHECKING:
    from mcp.types import JSONRPCError, JSONRPCMessage
    from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = ["JsonRpcBodyCheck", "read_message", "unreadable_answer"]


def read_message(data: bytes | str, *, unit: str = "line") -> JSONRPCMessage | JSONRPCError:
    """``data`` as a JSON-RPC message, or the error the transport answers instead.

    ``unit`` names what the client sent (``line`` over stdio, ``body`` over
    HTTP) in the error's message.
    """
    from mcp.types import JSONRPCNotification, jsonrpc_message_adapter

    try:
        message = jsonrpc_message_adapter.validate_json(data, by_name=False)
    except Exception as exc:  # every unreadable message is answered
        return unreadable_answer(exc, unit=unit)
    # A request with an id of the wrong type reads as a notification: look at
    # the id it carried (rare enough that parsing again costs nothing).
    if isinstance(message, JSONRPCNotification) and (
        b'"id"' in data if isinstance(data, bytes) else '"id"' in data
    ):
        with contextlib.suppress(ValueError, RecursionError):
            raw = json.loads(data)
            if isinstance(raw, dict) and "id" in raw:
                return _bad_id_answer(raw["id"])
    return message


def unreadable_answer(exc: Exception, *, unit: str = "line") -> JSONRPCError:
    """The JSON-RPC error for a message the SDK's adapter could not read.

    ``exc`` is what the adapter raised: a pydantic ``ValidationError`` whose
    input is the text (not JSON) or the parsed value (JSON, but no JSON-RPC
    message).
    """
    from mcp.types import INVALID_REQUEST, PARSE_ERROR, ErrorData, JSONRPCError

    errors: list[Any] = []
    with contextlib.suppress(Exception):
        errors = list(exc.errors(include_url=False))  # type: ignore[attr-defined]
    first = errors[0] if errors else {}
    raw = first.get("input")
    if first.get("type") == "json_invalid" or not errors:
        reason = str(first.get("msg", exc)).removeprefix("Invalid JSON: ")
        code = PARSE_ERROR
        message = (
            f"parse error: the {unit} is not a JSON-RPC message this server can read "
            f"({reason}); send one JSON object per {unit}, UTF-8, with no lone surrogate "
            "escapes and at most 200 levels of nesting"
        )
        request_id = _id_in_text(raw) if isinstance(raw, str | bytes) else None
    elif isinstance(raw, list):
        code = INVALID_REQUEST
        message = (
            f"invalid request: the {unit} is a JSON-RPC batch (an array); this server "
            f"speaks MCP versions without batches, so send each message as its own {unit}"
        )
        request_id = None
    else:
        code = INVALID_REQUEST
        message = (
            f"invalid request: the {unit} is JSON but not a JSON-RPC 2.0 request, "
            'notification or response (it needs "jsonrpc": "2.0" and a "method", or a '
            '"result" or "error" with an "id")'
        )
        request_id = _request_id(raw)
    return JSONRPCError(
        jsonrpc="2.0", id=request_id, error=ErrorData(code=code, message=bounded(message, 500))
    )


def _bad_id_answer(found: object) -> JSONRPCError:
    from mcp.types import INVALID_REQUEST, ErrorData, JSONRPCError

    shown = bounded(json.dumps(found, ensure_ascii=False), 40)
    message = (
        f"invalid request: the id {shown} is neither a string nor an integer; MCP ids are "
        "strings or integers (never null), and a notification has no id at all"
    )
    return JSONRPCError(
        jsonrpc="2.0", id=None, error=ErrorData(code=INVALID_REQUEST, message=message)
    )


def _id_in_text(text: str | bytes) -> int | str | None:
    """The ``id`` of text JSON-RPC could not read, if Python's parser finds one.

    It is more lenient (lone surrogates) and nests deeper than the SDK's; text
    nested past its own limit gives up with ``RecursionError``, no id.
    """
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return None
    return _request_id(value)


def _request_id(value: object) -> int | str | None:
    if not isinstance(value, dict):
        return None
    found = value.get("id")
    if isinstance(found, bool) or not isinstance(found, int | str):
        return None
    if isinstance(found, int) and not -(2**63) <= found < 2**63:
        return None
    if isinstance(found, str) and (len(found) > 1_000 or unstorable_char(found) is not None):
        return None  # an id that cannot be sent back as it came
    return found


class JsonRpcBodyCheck:
    """ASGI middleware for the MCP endpoint: a body :func:`read_message` refuses is
    answered here (HTTP 400, the JSON-RPC error as the body); any other request
    reaches the SDK's transport with its body as it came.

    It sits behind the bearer-token check (:func:`.transport.http_app`), so a
    client without the token learns nothing from it.
    """

    def __init__(self, app: ASGIApp, *, max_body: int) -> None:
        self.app = app
        self.max_body = max_body
        """Past this many bytes the body goes on unread: the SDK refuses it (413)."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        chunks: list[bytes] = []
        size = 0
        more = True
        while more and size <= self.max_body:
            message = await receive()
            if message["type"] != "http.request":  # the client went away
                return
            chunk = message.get("body", b"")
            chunks.append(chunk)
            size += len(chunk)
            more = message.get("more_body", False)
        body = b"".join(chunks)
        if not more:
            from mcp.types import JSONRPCError

            verdict = read_message(body, unit="body")
            if isinstance(verdict, JSONRPCError):
                await _answer(send, verdict)
                return
        # What was read goes on as it came, then the rest of the body (if any).
        given = False

        async def replay() -> Message:
            nonlocal given
            if given:
                return await receive()
            given = True
            return {"type": "http.request", "body": body, "more_body": more}

        await self.app(scope, replay, send)


async def _answer(send: Send, error: JSONRPCError) -> None:
    payload = error.model_dump_json(by_alias=True, exclude_unset=True).encode()
    await send(
        {
            "type": "http.response.start",
            "status": 400,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(payload)).encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": payload})
