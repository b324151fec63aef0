"""Server commands listen first, then print their banner, then serve.

uvicorn binds its socket only once it runs, after a command has printed its
links and "Press Ctrl+C to stop."; a port in use then shows up as a log line
under the banner and uvicorn's own exit status (3, which our table says is
"not found"). So the server commands (``demo support``, ``serve --http``)
bind here first: a failure is a :class:`~agent_mem_vault.core.errors.StartupError`
(exit 9) that names the address and what to change, and nothing else is
printed. The bound socket is then handed to uvicorn.
"""

from __future__ import annotations

import errno
import socket
from typing import Any

from ..core.errors import StartupError

__all__ = ["listen", "serve_socket"]


def listen(host: str, port: int) -> socket.socket:
    """A TCP socket bound to ``host``:``port``; ``StartupError`` says why it cannot be."""
    where = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    if not 0 <= port <= 65535:  # getaddrinfo would wrap 70000 around to 4464
        raise StartupError(
            f"cannot listen on {where}: a port is 0-65535", code="bad_address", port=port
        )
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except (socket.gaierror, UnicodeError) as exc:
        raise StartupError(
            f"cannot listen on {where}: {host!r} is not an address or a host name this "
            f"machine can resolve ({_reason(exc)}); pass --host 127.0.0.1 or another "
            "address of this machine",
            code="bad_address",
            host=host,
            port=port,
        ) from None
    family, kind, proto, _, address = infos[0]
    sock = socket.socket(family, kind, proto)
    try:
        # As uvicorn does: a restart may take the port while old connections linger.
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if family == socket.AF_INET6:
            sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
        sock.bind(address)
        sock.listen(2048)
    except OSError as exc:
        sock.close()
        raise StartupError(
            f"cannot listen on {where}: {_bind_hint(exc, host, port)}",
            code=_bind_code(exc),
            host=host,
            port=port,
            errno=exc.errno,
        ) from None
    return sock


def serve_socket(app: Any, sock: socket.socket, *, log_level: str = "warning") -> None:
    """Serve ``app`` with uvicorn on ``sock`` (already bound by :func:`listen`) until Ctrl+C.

    uvicorn stops on SIGINT whatever this process inherited, then raises the
    signal again under the handler it found. A process started with SIGINT
    ignored (a script's background job, ``agent-mem-vault demo support &``) would
    so stop and end with status 0, and Ctrl-C in a terminal with 130. Python's own
    handler goes in first: a stop by SIGINT always ends as KeyboardInterrupt,
    status 130, as it does for the stdio server.
    """
    import signal
    import threading

    import uvicorn

    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.default_int_handler)
    server = uvicorn.Server(uvicorn.Config(app, log_level=log_level))
    server.run(sockets=[sock])


def _reason(exc: BaseException) -> str:
    return exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)


def _bind_code(exc: OSError) -> str:
    return {
        errno.EADDRINUSE: "port_in_use",
        errno.EACCES: "port_not_allowed",
        errno.EADDRNOTAVAIL: "bad_address",
    }.get(exc.errno or 0, "cannot_listen")


def _bind_hint(exc: OSError, host: str, port: int) -> str:
    if exc.errno == errno.EADDRINUSE:
        return (
            f"port {port} is in use (another server is listening there); stop it or pass "
            "--port with a free port"
        )
    if exc.errno == errno.EACCES:
        return (
            f"permission denied for port {port} (ports below 1024 need privileges); "
            "pass --port 1024 or higher"
        )
    if exc.errno == errno.EADDRNOTAVAIL:
        return (
            f"{host} is not an address of this machine; pass --host 127.0.0.1, or 0.0.0.0 "
            "for every address"
        )
    return f"{_reason(exc)}"
