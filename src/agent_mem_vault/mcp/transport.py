"""Running the server: stdio for local agents, streamable HTTP for remote ones.

Over stdio the event loop reads stdin and writes stdout itself
(:mod:`.stdio_loop`): no worker thread between a line and the server, nor
between an answer and the pipe. Where the loop cannot watch stdin (a regular
file) the SDK's own stdio transport serves instead.

Every line a client sends, and every body it POSTs, gets an answer: what the
SDK's transports would drop, run as a notification, or answer with a parser's
dump is answered with a clean JSON-RPC error (:mod:`.wire`). Over the SDK's
own stdio transport (a stdin that is a regular file) a request whose id is
neither a string nor an integer still reads as a notification: that transport
hands the server parsed messages, not the lines.

HTTP beyond loopback needs a bearer token: anyone who can reach the port could
otherwise read and consume every handoff. The token is checked by the SDK's own
bearer middleware through a one-token verifier, before :mod:`.wire` looks at
the body.
"""

from __future__ import annotations

import contextlib
import hmac
import ipaddress
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from mcp.server.auth.provider import AccessToken

from ..core.errors import InvalidInputError
from .wire import unreadable_answer

if TYPE_CHECKING:
    from anyio.abc import ObjectReceiveStream, ObjectSendStream
    from mcp.server import MCPServer
    from mcp.shared.message import SessionMessage
    from starlette.applications import Starlette

__all__ = [
    "StaticTokenVerifier",
    "check_http_exposure",
    "http_app",
    "is_loopback",
    "run_stdio",
]

# The environment variable that carries the token (cli/serve.py names it in --token).
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


def http_app(server: MCPServer[Any], host: str) -> Starlette:
    """The server's streamable HTTP app, each POST to ``/mcp`` read by :mod:`.wire` first.

    The check goes on the MCP route itself, inside the bearer-token check when
    there is one, so an unauthenticated request is refused (401) before its body
    is looked at.
    """
    from mcp.server.auth.middleware.bearer_auth import RequireAuthMiddleware
    from mcp.server.transport_security import DEFAULT_MAX_REQUEST_BODY_SIZE

    from .wire import JsonRpcBodyCheck

    app = server.streamable_http_app(host=host)
    limit = DEFAULT_MAX_REQUEST_BODY_SIZE
    for route in app.routes:
        if getattr(route, "path", None) != "/mcp":
            continue
        endpoint = route.app  # type: ignore[attr-defined]
        if isinstance(endpoint, RequireAuthMiddleware):
            endpoint.app = JsonRpcBodyCheck(endpoint.app, max_body=limit)
        else:
            route.app = JsonRpcBodyCheck(endpoint, max_body=limit)  # type: ignore[attr-defined]
        return app
    raise RuntimeError(
        "the MCP SDK's HTTP app has no /mcp route; this SDK release is not supported"
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
                await outgoing.send(SessionMessage(unreadable_answer(item)))
