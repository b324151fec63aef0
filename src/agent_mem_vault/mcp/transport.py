"""Running the server: stdio for local agents, streamable HTTP for remote ones.

Over stdio the event loop reads stdin and writes stdout itself
(:mod:`.stdio_loop`): no worker thread between a line and the server, nor
between an answer and the pipe. Where the loop cannot watch stdin (a regular
file) the SDK's own stdio transport serves instead.

Every line a client sends gets an answer. The SDK's transport reads each line
as a JSON-RPC message and, when one does not parse (a lone surrogate escape
such as ``"\\ud800"``, arrays nested past its parser's ~200 levels, a line that
is not JSON at all), hands the server an exception that the server drops: the
client then waits for its own timeout. Both transports here answer such a line
with a JSON-RPC error (:func:`unreadable_line_answer`), ``-32700`` (parse error)
or ``-32600`` (a JSON value that is no JSON-RPC message), carrying the request's
id when one can be found in the line (so the client's waiting call ends at
once) and ``null`` otherwise, as JSON-RPC 2.0 asks.

HTTP beyond loopback needs a bearer token: anyone who can reach the port could
otherwise read and consume every handoff. The token is checked by the SDK's own
bearer middleware through a one-token verifier.
"""

from __future__ import annotations

import contextlib
import hmac
import ipaddress
import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from mcp.server.auth.provider import AccessToken

from ..core.errors import InvalidInputError, bounded
from ..core.text import unstorable_char

if TYPE_CHECKING:
    from anyio.abc import ObjectReceiveStream, ObjectSendStream
    from mcp.server import MCPServer
    from mcp.shared.message import SessionMessage
    from mcp.types import JSONRPCError

__all__ = [
    "StaticTokenVerifier",
    "check_http_exposure",
    "is_loopback",
    "run_stdio",
    "unreadable_line_answer",
]

# The environment variable that carries the token (cli/agents.py names it in --token).
TOKEN_ENV = "AGENT_MEM_VAULT_TOKEN"


@dataclass(frozen=True)
class StaticTokenVerifier:
    """Accepts exactly one shared secret as a bearer token.

    Compared in constant time so the token cannot be guessed byte by byte.
    """

    token: str

    async def verify_token(self, token: str) -> AccessToken | None:
        if hmac.compare_digest(token.encode(), self.token.encode()):
            return AccessToken(token=token, client_id="agent-mem-vault", scopes=[])
        return None


def is_loopback(host: str) -> bool:
    """True for 127.0.0.0/8, ::1 and localhost: only this machine can connect."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_http_exposure(host: str, token: str | None) -> None:
    """Refuse to listen beyond loopback without a token; a short token is as bad as none."""
    if token is not None and len(token) < 16:
        raise InvalidInputError(
            "the bearer token is too short: use at least 16 characters, "
            "e.g. from `python -c 'import secrets; print(secrets.token_urlsafe())'`",
            field="token",
        )
    if not is_loopback(host) and not token:
        raise InvalidInputError(
            f"listening on {host} needs a bearer token: pass --token or set {TOKEN_ENV}, "
            "or listen on 127.0.0.1",
            field="token",
        )


def run_stdio(server: MCPServer[Any]) -> None:
    """Serve ``server`` over this process's stdin and stdout until stdin closes."""
    import anyio

    anyio.run(_serve_stdio, server)


async def _serve_stdio(server: MCPServer[Any]) -> None:
    """One connection over stdio: the event loop's own pipes, else the SDK's transport."""
    lowlevel = server._lowlevel_server
    options = lowlevel.create_initialization_options()
    from .stdio_loop import LoopStdio

    pipes = LoopStdio.claim()
    if pipes is None:
        await _serve_sdk_stdio(lowlevel, options)
        return
    try:
        await lowlevel.run(pipes.incoming, pipes.outgoing, options)
        await pipes.outgoing.drained()
    finally:
        pipes.release()


async def _serve_sdk_stdio(lowlevel: Any, options: Any) -> None:
    """The SDK's stdio transport (worker threads), for a stdin the loop cannot watch."""
    import anyio
    from mcp.server.stdio import stdio_server

    async with stdio_server() as (incoming, outgoing):
        checked_send, checked = anyio.create_memory_object_stream[Any](0)
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(_answer_unreadable, incoming, outgoing, checked_send)
            await lowlevel.run(checked, outgoing, options)
            tasks.cancel_scope.cancel()


async def _answer_unreadable(
    incoming: ObjectReceiveStream[SessionMessage | Exception],
    outgoing: ObjectSendStream[SessionMessage],
    forward: ObjectSendStream[SessionMessage | Exception],
) -> None:
    """Pass messages on to the server; answer what the transport could not read."""
    import anyio
    from mcp.shared.message import SessionMessage

    async with forward:
        async for item in incoming:
            if not isinstance(item, Exception):
                await forward.send(item)
                continue
            with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):
                await outgoing.send(SessionMessage(unreadable_line_answer(item)))


def unreadable_line_answer(exc: Exception) -> JSONRPCError:
    """The JSON-RPC error for a line the transport could not read as a message.

    ``exc`` is what the SDK's parser raised: a pydantic ``ValidationError``
    whose input is the line (not JSON) or the parsed value (JSON, but no
    JSON-RPC message).
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
            f"parse error: the line is not a JSON-RPC message this server can read ({reason}); "
            "send one JSON object per line, UTF-8, with no lone surrogate escapes "
            "and at most 200 levels of nesting"
        )
        request_id = _id_in_line(raw) if isinstance(raw, str) else None
    else:
        code = INVALID_REQUEST
        message = (
            "invalid request: the line is JSON but not a JSON-RPC 2.0 request, notification "
            'or response (it needs "jsonrpc": "2.0" and a "method", or a "result" or '
            '"error" with an "id")'
        )
        request_id = _request_id(raw)
    return JSONRPCError(
        jsonrpc="2.0", id=request_id, error=ErrorData(code=code, message=bounded(message, 500))
    )


def _id_in_line(line: str) -> int | str | None:
    """The ``id`` of a line JSON-RPC could not read, if Python's parser finds one.

    It is more lenient (lone surrogates) and nests deeper than the SDK's; a
    line nested past its own limit gives up with ``RecursionError``, no id.
    """
    try:
        value = json.loads(line)
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
