"""The ports our servers listen on when none is given: one definition, read by the
servers and by the clients and examples that reach them with no arguments."""

from __future__ import annotations

__all__ = ["DEMO_PORT", "DEMO_URL", "MCP_HTTP_PORT"]

MCP_HTTP_PORT = 8765
"""``serve --http``."""
DEMO_PORT = 8766
"""``demo support``: another port than ``serve --http``, so both can run on one machine."""
DEMO_URL = f"http://127.0.0.1:{DEMO_PORT}"
"""Where ``demo support`` started with no options answers."""
