"""``agent-mem-vault serve``: the MCP server, over stdio or streamable HTTP.

The MCP SDK is imported only when the command runs, so that the other commands
(a session hook runs at every session start) stay fast.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import click

from ..core.ports import MCP_HTTP_PORT
from .options import agent_namespace_option, open_vault, vault_option

__all__ = ["serve"]


@click.command()
@click.option(
    "--agent",
    envvar="AGENT_MEM_VAULT_AGENT",
    required=True,
    help="This server's agent name, e.g. claude-code or codex: the 'from' of its handoffs "
    "and the default reader.",
)
@agent_namespace_option
@vault_option
@click.option("--http", "use_http", is_flag=True, help="Speak streamable HTTP instead of stdio.")
@click.option("--host", default="127.0.0.1", show_default=True, help="HTTP: address to bind.")
@click.option(
    "--port", default=MCP_HTTP_PORT, show_default=True, type=int, help="HTTP: port to bind."
)
@click.option(
    "--token",
    envvar="AGENT_MEM_VAULT_TOKEN",
    default=None,
    help="HTTP: bearer token clients must send (env AGENT_MEM_VAULT_TOKEN); required "
    "when --host is not loopback.",
)
def serve(
    agent: str,
    namespace: str | None,
    vault_path: str,
    use_http: bool,
    host: str,
    port: int,
    token: str | None,
) -> None:
    """Run the MCP server (stdio; or streamable HTTP with --http).

    \b
    Claude Code, Codex, Gemini CLI and opencode start it themselves once `install`
    has registered it:
      agent-mem-vault serve --agent codex
    For agents on other machines:
      AGENT_MEM_VAULT_TOKEN=... agent-mem-vault serve --agent codex --http --host 0.0.0.0
    """
    from ..integrations.namespace import discover_namespace
    from ..vault.format.namespaces import validate_agent, validate_namespace

    validate_agent(agent, field="--agent")
    if namespace is not None:
        validate_namespace(namespace, field="--namespace")
    if use_http:
        from ..mcp.transport import check_http_exposure

        check_http_exposure(host, token)
    from ..mcp import ServerSettings, build_server

    settings = ServerSettings(agent=agent, namespace=namespace or discover_namespace(Path.cwd()))
    vault = open_vault(vault_path)
    # Before serving: a typo in .mcp.json must not send handoffs to a folder nobody
    # reads; the client shows this one-line error. The default vault is made instead.
    vault.require(make_default=True)
    # A long-lived process: notes changed by hand are reported by a file watcher
    # instead of being looked for, one stat per note, on every call. Why it cannot
    # watch (inotify's limits: the setting to raise) goes to stderr, the client's log.
    vault.watch(report=lambda why: click.echo(f"agent-mem-vault: {why}", err=True))
    if not use_http:
        from ..mcp.transport import run_stdio

        _stop_at_once_on_interrupt()
        if sys.stdin.isatty():
            click.echo(
                f"agent-mem-vault: MCP server for {agent} on stdin/stdout, waiting for an MCP "
                "client (your agent starts this itself once `install` has run); Ctrl-C stops it",
                err=True,
            )
        run_stdio(build_server(vault, settings))
        return
    from .listen import listen, serve_socket

    sock = listen(host, port)  # before anything is printed: a port in use is all one sees
    url = f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"
    server = build_server(vault, settings, token=token, url=url)
    click.echo(f"agent-mem-vault: serving MCP at {url}/mcp as {agent}", err=True)
    from ..mcp.transport import http_app

    serve_socket(http_app(server, host), sock)


def _stop_at_once_on_interrupt() -> None:
    """Ctrl-C ends a stdio server now, with status 130 and no traceback.

    A vault write runs on a worker thread, and the SDK's transport (serving a
    stdin the event loop cannot watch) reads stdin on one: no cancellation
    reaches them, so KeyboardInterrupt could leave the server waiting. Ending the
    process is safe at any point: every write is a new file renamed into place
    (a crash loses nothing acknowledged), and locks are released with it.
    """
    import signal

    def interrupt(signum: int, frame: object) -> None:
        os._exit(130)

    signal.signal(signal.SIGINT, interrupt)
