"""The MCP face of the vault: ``agent-mem-vault serve`` for Claude Code, Codex and others.

>>> from agent_mem_vault.mcp import ServerSettings, build_server
>>> settings = ServerSettings(agent="codex", namespace="project/x")
>>> server = build_server(vault, settings)  # doctest: +SKIP
"""

from __future__ import annotations

from .errors import ERROR_META_KEY, tool_error
from .server import SERVER_INSTRUCTIONS, build_server
from .settings import ServerSettings

__all__ = ["ERROR_META_KEY", "SERVER_INSTRUCTIONS", "ServerSettings", "build_server", "tool_error"]
