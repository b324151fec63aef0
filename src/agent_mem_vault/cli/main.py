"""Entry point of ``agent-mem-vault``.

Commands are loaded lazily: ``agent-mem-vault --help`` and each command import
only their own module, so the CLI starts fast however large the package grows.
Library errors become exit statuses and messages here, and nowhere else.

Exit statuses: 0 ok · 1 unexpected failure · 2 bad input or usage · 3 not
found · 4 conflict (state forbids it) · 5 access denied · 6 unavailable (a
lock or lease did not come; retry) · 7 damaged data · 8 remote service failed.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import sys
from typing import Any

import click

from .. import __version__
from ..core.errors import AgentMemVaultError

# name -> "module:attribute", in the order --help lists them.
COMMANDS: dict[str, str] = {
    # Vault: handoffs and memories in a Markdown vault.
    "init": "agent_mem_vault.cli.vault:init",
    "create": "agent_mem_vault.cli.vault:create",
    "read": "agent_mem_vault.cli.vault:read",
    "peek": "agent_mem_vault.cli.vault:peek",
    "handoffs": "agent_mem_vault.cli.vault:handoffs",
    "show": "agent_mem_vault.cli.vault:show",
    "ack": "agent_mem_vault.cli.vault:ack",
    "reopen": "agent_mem_vault.cli.vault:reopen",
    "memory": "agent_mem_vault.cli.vault:memory",
    "brief": "agent_mem_vault.cli.vault:brief",
    "reindex": "agent_mem_vault.cli.vault:reindex",
    "doctor": "agent_mem_vault.cli.vault:doctor",
    "keeper": "agent_mem_vault.cli.vault:keeper",
    # MCP server and agent set-up.
    "serve": "agent_mem_vault.cli.agents:serve",
    "install": "agent_mem_vault.cli.agents:install",
    "uninstall": "agent_mem_vault.cli.agents:uninstall",
    "hook": "agent_mem_vault.cli.agents:hook",
    "instructions": "agent_mem_vault.cli.agents:instructions",
    "sessions": "agent_mem_vault.cli.agents:sessions",
    # Runs and AT Protocol handoff records.
    "runs": "agent_mem_vault.cli.runs:runs",
    # Harness.
    "demo": "agent_mem_vault.cli.demo:demo",
    "db": "agent_mem_vault.cli.db:db",
}


class LazyGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return [name for name in COMMANDS if self._available(name)]

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        target = COMMANDS.get(cmd_name)
        if target is None:
            return None
        module_name, attr = target.split(":")
        module = importlib.import_module(module_name)
        command = getattr(module, attr)
        assert isinstance(command, click.Command)
        return command

    @staticmethod
    def _available(name: str) -> bool:
        # A command whose module is not written yet is left out of --help
        # rather than breaking it.
        module_name = COMMANDS[name].split(":")[0]
        return importlib.util.find_spec(module_name) is not None


@click.group(
    cls=LazyGroup,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
)
@click.version_option(__version__, prog_name="agent-mem-vault")
def cli() -> None:
    """Hand work between AI agents, and between agents and people.

    \b
    Vault:   handoffs and memories in a Markdown vault (Obsidian opens it).
    Agents:  an MCP server and session hooks for Claude Code and Codex.
    Runs:    one run of an agent at a time; AT Protocol handoff records.
    Harness: a support-desk demo with agents, a person and a web console.

    The vault is --vault PATH, else $AGENT_MEM_VAULT, else ~/agent-mem-vault.
    """


def main(argv: list[str] | None = None) -> None:
    """Run the CLI; every error leaves here as a message and an exit status (see above)."""
    args = sys.argv[1:] if argv is None else argv
    if argv is None:
        from .warm import handed_over

        # The commands a client spawns per session run in a warm process (see warm.py).
        status = handed_over(args)
        if status is not None:
            sys.exit(status)
    as_json = "--json" in args
    try:
        cli.main(args=args, prog_name="agent-mem-vault", standalone_mode=False)
    except click.exceptions.Abort:
        click.echo("aborted", err=True)
        sys.exit(1)
    except click.ClickException as exc:
        if as_json:
            code = "usage_error" if isinstance(exc, click.UsageError) else "error"
            _echo_json_error({"code": code, "message": exc.format_message()})
        else:
            exc.show()
        sys.exit(exc.exit_code)
    except AgentMemVaultError as exc:
        report_error(exc, as_json=as_json)
        sys.exit(exc.exit_status)
    except KeyboardInterrupt:
        sys.exit(130)


def report_error(exc: AgentMemVaultError, *, as_json: bool) -> None:
    """The one place where a library error is shown to a person or a script."""
    if as_json:
        _echo_json_error(exc.to_dict())
    else:
        click.echo(f"error: {exc.message} [{exc.code}]", err=True)


def _echo_json_error(error: dict[str, Any]) -> None:
    # On stderr, so that a script reading stdout never mistakes it for a result.
    click.echo(json.dumps({"error": error}), err=True)


if __name__ == "__main__":
    main()
