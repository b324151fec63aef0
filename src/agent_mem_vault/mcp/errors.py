"""How a failed tool call looks on the wire: one shape, whichever check refused it.

A vault error (and an argument the server refuses before a tool runs) becomes
an MCP tool error: ``isError: true`` and one text block, ``error: <message>
[<code>]``, the same line the CLI prints. The result carries no
``structuredContent``: clients check structured content against the tool's
``outputSchema`` even on an error (the TypeScript SDK does, and throws
``-32602`` instead of showing the model the message), and an error is not the
shape of a tool's answer. The error's code, message and details go in the
result's ``_meta`` under :data:`ERROR_META_KEY`, for a client that acts on the
code rather than the text.
"""

from __future__ import annotations

from mcp.types import CallToolResult, TextContent

from ..core.errors import AgentMemVaultError

__all__ = ["ERROR_META_KEY", "tool_error"]

ERROR_META_KEY = "agent-mem-vault/error"
"""The ``_meta`` key of a tool error's ``{"code", "message", "details"}``."""


def tool_error(exc: AgentMemVaultError) -> CallToolResult:
    """The one place an error of the package becomes an MCP tool error."""
    return CallToolResult(
        content=[TextContent(type="text", text=f"error: {exc.message} [{exc.code}]")],
        is_error=True,
        _meta={ERROR_META_KEY: exc.to_dict()},
    )
