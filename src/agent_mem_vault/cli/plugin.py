"""``agent-mem-vault plugin``: the folder each client installs the plugin from, the
plugin's session hook, and Codex's trust in it.

The plugin itself is installed with each client's own command (``plugin path``
prints them); ``install`` stays for those who prefer it, and the two never
register agent-mem-vault twice in one client.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from .options import open_vault, vault_option

CLIENT_NAMES = ("claude-code", "codex", "gemini", "opencode")


@click.group()
def plugin() -> None:
    """The Claude Code and Codex plugin, the Gemini CLI extension and the opencode plugin.

    \b
      agent-mem-vault plugin path claude-code
      agent-mem-vault plugin trust codex
    """


@plugin.command("path")
@click.argument("client", type=click.Choice(CLIENT_NAMES), required=False, metavar="[CLIENT]")
@click.option("--json", "as_json", is_flag=True, help="Print JSON for scripts.")
def path_command(client: str | None, as_json: bool) -> None:
    """Print the folder CLIENT installs the plugin from, and the client's commands.

    Without CLIENT, every client's. The folder is inside the installed package,
    so no clone is needed; a clone's root is a marketplace too.

    \b
      agent-mem-vault plugin path gemini
      claude plugin marketplace add "$(agent-mem-vault plugin path claude-code)"
    """
    from ..integrations.plugins import add_commands, plugin_folder

    clients = [client] if client else list(CLIENT_NAMES)
    if as_json:
        data = [
            {"client": c, "path": str(plugin_folder(c)), "commands": add_commands(c)}
            for c in clients
        ]
        click.echo(json.dumps(data[0] if client else data, indent=2))
        return
    if client:
        click.echo(str(plugin_folder(client)))
        return
    for c in clients:
        click.echo(f"{c}: {plugin_folder(c)}")
        for command in add_commands(c):
            click.echo(f"  {command}")


@plugin.command("hook")
@click.argument("client", type=click.Choice(CLIENT_NAMES), metavar="CLIENT")
@vault_option
def hook_command(client: str, vault_path: str) -> None:
    """The plugin's session-start hook in CLIENT (hook JSON on stdin).

    As `hook session-start`, unless `install` registered its own session hook
    in CLIENT too: that one prints the brief, and this one only the line that
    says agent-mem-vault is registered twice and how to keep one. Always exits 0.
    """
    from ..integrations.plugin_hook import plugin_session_start
    from ..integrations.session_hook import hook_json, parse_hook_input

    raw = "" if sys.stdin is None or sys.stdin.isatty() else sys.stdin.read()
    text = plugin_session_start(open_vault(vault_path), parse_hook_input(raw), client, Path.home())
    if client != "opencode":
        click.echo(hook_json(text))
    elif text:
        click.echo(text)


@plugin.command("trust")
@click.argument("client", type=click.Choice(["codex"]), metavar="codex")
def trust_command(client: str) -> None:
    """Trust the plugin's hooks in Codex, as Codex's /hooks does (again after an update).

    Codex runs a plugin's hooks only once a person trusted them, and again only
    once trusted at each new version of the plugin.

    \b
      agent-mem-vault plugin trust codex
    """
    from ..integrations.plugin_trust import trust_codex_plugin

    for line in trust_codex_plugin(Path.home(), Path.cwd()):
        click.echo(line)
