"""Ports on 127.0.0.1 for the servers a test starts (uvicorn, ``serve --http``, ``git
daemon``, PostgreSQL, the demo)."""

from __future__ import annotations

import socket

__all__ = ["free_port"]


def free_port() -> int:
    """A port no one listens on now: the kernel's pick for a socket bound to port 0.

    Another process may take it before the server the test starts binds it; the
    window is short, and a server that cannot bind fails loudly rather than wrongly.
    """
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])
