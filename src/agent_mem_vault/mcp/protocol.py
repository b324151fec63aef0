"""Requests the protocol says are wrong get the protocol's error, not a shrug.

The SDK answers some bad requests in ways a strict client cannot use:

- ``prompts/get`` for a prompt that does not exist, or without an argument the
  prompt requires, raises a plain ``ValueError`` inside the SDK, which the
  wire turns into JSON-RPC error code ``0`` after logging a traceback. The
  spec says ``-32602`` (invalid params).
- ``tools/call`` for a tool the server does not have is answered as a tool
  error (``isError``, ``Unknown tool: x``). The spec makes an unknown tool a
  protocol error, ``-32602``, like a malformed request; a tool's own refusal
  of its input stays a tool error the model can act on (:mod:`.arguments`).
- ``tools/list`` (and the other lists) with a ``cursor`` the server never
  handed out returns the whole list as if no cursor was sent. This server
  returns every list in one page and issues no cursors, so any cursor is one
  it did not issue: ``-32602``, as the spec asks for an invalid cursor.

:class:`ProtocolCheck` is an SDK middleware that answers these before the SDK's
handler runs, with a message that says what was wrong and what to send
instead (the names the server does have). Requests that pass go on
unchanged. What the transports cannot hand the server at all (ids that are
neither a string nor an integer, JSON-RPC batches) is answered by the
transports themselves (:mod:`.wire`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.shared.exceptions import MCPError
from mcp.types import INVALID_PARAMS

from ..core.errors import bounded

if TYPE_CHECKING:
    from mcp.server import MCPServer

__all__ = ["ProtocolCheck"]

_LISTS = frozenset({"tools/list", "prompts/list", "resources/list", "resources/templates/list"})


class ProtocolCheck:
    """SDK middleware: ``-32602`` for a tool, prompt or cursor the server does not have."""

    def __init__(self, server: MCPServer[Any]) -> None:
        self._server = server
        self._prompts: dict[str, tuple[frozenset[str], frozenset[str]]] | None = None
        self._tools: frozenset[str] | None = None

    async def __call__(
        self, ctx: ServerRequestContext[Any, Any], call_next: CallNext
    ) -> HandlerResult:
        method, params = ctx.method, ctx.params
        if method == "tools/call" and isinstance(params, Mapping):
            tools = await self._known_tools()
            name = params.get("name")
            if not isinstance(name, str) or name not in tools:
                raise _invalid(
                    f"unknown tool {name!r}; this server's tools are: "
                    f"{', '.join(sorted(tools))} (tools/list describes each)"
                )
        elif method == "prompts/get" and isinstance(params, Mapping):
            await self._check_prompt(params)
        elif method in _LISTS and isinstance(params, Mapping) and params.get("cursor") is not None:
            kind = method.split("/")[0] if method != "resources/templates/list" else "templates"
            raise _invalid(
                f"invalid cursor {params['cursor']!r}: this server lists all its {kind} "
                "in one page and issues no cursors; send the request without one"
            )
        return await call_next(ctx)

    async def _check_prompt(self, params: Mapping[str, Any]) -> None:
        prompts = await self._known_prompts()
        name = params.get("name")
        if not isinstance(name, str) or name not in prompts:
            raise _invalid(
                f"unknown prompt {name!r}; this server has: {', '.join(sorted(prompts))} "
                "(prompts/list describes each)"
            )
        required, known = prompts[name]
        arguments = params.get("arguments") or {}
        if not isinstance(arguments, Mapping):
            raise _invalid(f"prompt {name!r}: arguments must be an object of strings")
        problems = [
            f"{key}: missing, this prompt needs it" for key in sorted(required - set(arguments))
        ]
        problems += [
            f"{key}: unknown argument (this prompt takes: {', '.join(sorted(known)) or 'none'})"
            for key in arguments
            if key not in known
        ]
        problems += [
            f"{key}: expected a string"
            for key, value in arguments.items()
            if key in known and not isinstance(value, str)
        ]
        if problems:
            raise _invalid(f"prompt {name!r}: " + "; ".join(problems))

    async def _known_tools(self) -> frozenset[str]:
        """The server's tool names, read once (tools are all registered at build time)."""
        if self._tools is None:
            self._tools = frozenset(tool.name for tool in await self._server.list_tools())
        return self._tools

    async def _known_prompts(self) -> dict[str, tuple[frozenset[str], frozenset[str]]]:
        """Each prompt's required and known argument names, read once from the server."""
        if self._prompts is None:
            self._prompts = {
                p.name: (
                    frozenset(a.name for a in p.arguments or () if a.required),
                    frozenset(a.name for a in p.arguments or ()),
                )
                for p in await self._server.list_prompts()
            }
        return self._prompts


def _invalid(message: str) -> MCPError:
    """``-32602`` with ``message``, quoting at most so much of what the client sent."""
    return MCPError(INVALID_PARAMS, bounded(message, 700))
