"""Who an MCP server speaks for, and where: what every tool falls back on."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["ServerSettings"]


@dataclass(frozen=True)
class ServerSettings:
    """Who this server speaks for and where.

    ``agent`` is the ``from`` of every handoff it creates and the default reader;
    ``namespace`` is the default for tools called without one (found from the
    working directory at launch), or None when there is no default.
    """

    agent: str
    namespace: str | None = None
