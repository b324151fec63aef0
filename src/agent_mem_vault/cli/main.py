"""Entry point of ``agent-mem-vault``.

Commands are loaded lazily: ``agent-mem-vault --help`` and each command import
only their own module, so the CLI starts fast however large the package grows.
Library errors become exit statuses and messages here, and nowhere else.

Exit statuses: 0 ok · 1 unexpected failure · 2 bad input or usage · 3 not
found · 4 conflict (state forbids it) · 5 access denied · 6 unavailable (a
lock or lease did not come; retry) · 7 damaged data · 8 remote service failed ·
9 a server could not start · 10 written on this machine, held back from its
remote (a secret in it; ``agent-mem-vault redact``).

A path the operating system refuses (a file where a folder belongs, no
permission, a read-only filesystem) is reported like a library error, with
its code (``bad_path``, ``permission_denied``, ``no_space``). Anything else
that escapes a command is a bug: it is reported in one line with the code
``internal_error`` and status 1, and ``AGENT_MEM_VAULT_DEBUG=1`` shows its
traceback.
"""

from __future__ import annotations

import difflib
import importlib
import importlib.util
import json
import os
import re
import sys
from typing import Any

import click

from ..core.errors import AgentMemVaultError, bounded, from_os_error
from ..core.version import __version__

DEBUG_ENV = "AGENT_MEM_VAULT_DEBUG"
"""Set to 1 to let an unexpected failure show its traceback instead of one line."""

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
    "redact": "agent_mem_vault.cli.secrets:redact",
    "secrets": "agent_mem_vault.cli.secrets:secrets",
    "private": "agent_mem_vault.cli.private:private",
    "memory": "agent_mem_vault.cli.memories:memory",
    "brief": "agent_mem_vault.cli.vault:brief",
    "reindex": "agent_mem_vault.cli.vault:reindex",
    "doctor": "agent_mem_vault.cli.vault:doctor",
    "keeper": "agent_mem_vault.cli.vault:keeper",
    "sync": "agent_mem_vault.cli.sync:sync",
    "trust": "agent_mem_vault.cli.trust:trust",
    # MCP server and agent set-up.
    "serve": "agent_mem_vault.cli.serve:serve",
    "install": "agent_mem_vault.cli.install:install",
    "uninstall": "agent_mem_vault.cli.install:uninstall",
    "hook": "agent_mem_vault.cli.agents:hook",
    "instructions": "agent_mem_vault.cli.agents:instructions",
    "sessions": "agent_mem_vault.cli.agents:sessions",
    "plugin": "agent_mem_vault.cli.plugin:plugin",
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
@click.option(
    "--help-env",
    is_flag=True,
    expose_value=False,
    is_eager=True,
    callback=lambda ctx, _param, value: _print_environment(ctx) if value else None,
    help="Show every AGENT_MEM_VAULT_* variable, its default and what it changes, and exit.",
)
@click.option(
    "--vault",
    metavar="PATH",
    default=None,
    expose_value=False,
    callback=lambda ctx, param, value: _global_vault(ctx, param, value),
    help="The vault for the command that follows (its own --vault wins).",
)
def cli() -> None:
    """Hand work between AI agents, and between agents and people.

    \b
    Vault:   handoffs and memories in a Markdown vault (Obsidian opens it).
    Agents:  an MCP server and session hooks for Claude Code, Codex, Gemini CLI
             and opencode.
    Runs:    one run of an agent at a time; AT Protocol handoff records.
    Harness: a support-desk demo with agents, a person and a web console.

    The vault is --vault PATH, else $AGENT_MEM_VAULT, else ~/agent-mem-vault.
    `init` makes a folder a vault (the default one is made by its first write);
    every other command refuses a folder that is not a vault and writes nothing.
    """


def _global_vault(ctx: click.Context, param: click.Parameter, value: str | None) -> None:
    """``agent-mem-vault --vault PATH COMMAND``: as if $AGENT_MEM_VAULT named PATH.

    Every vault command reads its --vault from that variable when it is not given
    its own; ``install`` pins it, as it pins its own --vault.
    """
    if value is None:
        return
    from .options import VAULT_ENV, checked_vault

    checked_vault(ctx, param, value)
    os.environ[VAULT_ENV] = value
    ctx.meta[GLOBAL_VAULT] = value


GLOBAL_VAULT = "agent_mem_vault.global_vault"
"""Where ``--vault`` given before the command is kept in the context (``install`` reads it)."""


def _print_environment(ctx: click.Context) -> None:
    # The same table as the manual's configuration page (a test compares them).
    from ..core.environment import markdown_table

    click.echo(markdown_table(), nl=False)
    ctx.exit()


def main(argv: list[str] | None = None) -> None:
    """Run the CLI; every error leaves here as a message and an exit status (see above)."""
    args = sys.argv[1:] if argv is None else argv
    if argv is None:
        from .warm import handed_over

        # The commands a client spawns per session run in a warm process (see warm.py).
        try:
            status = handed_over(args)
        except KeyboardInterrupt:
            sys.exit(130)
        if status is not None:
            sys.exit(status)
    as_json = "--json" in args
    try:
        cli.main(args=args, prog_name="agent-mem-vault", standalone_mode=False)
    except click.exceptions.Abort as exc:
        if isinstance(exc.__cause__, KeyboardInterrupt):
            sys.exit(130)  # Ctrl-C: the status a shell expects, and nothing more to say
        click.echo("aborted", err=True)
        sys.exit(1)
    except click.ClickException as exc:
        code = USAGE_CODE if isinstance(exc, click.UsageError) else "error"
        message = _usage_message(exc) if isinstance(exc, click.UsageError) else exc.format_message()
        message = " ".join(message.split())
        if as_json:
            _echo_json_error({"code": code, "message": message})
        else:
            click.echo(f"error: {message} [{code}]", err=True)
        sys.exit(exc.exit_code)
    except AgentMemVaultError as exc:
        report_error(exc, as_json=as_json)
        sys.exit(exc.exit_status)
    except KeyboardInterrupt:
        sys.exit(130)
    except BrokenPipeError:
        # The reader went away (`… | head`): nothing left to tell anyone. Point stdout
        # at /dev/null so the interpreter's final flush does not fail again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(1)
    except OSError as exc:
        error = from_os_error(exc)
        report_error(error, as_json=as_json)
        sys.exit(error.exit_status)
    except Exception as exc:
        if os.environ.get(DEBUG_ENV):
            raise
        _report_bug(exc, as_json=as_json)
        sys.exit(1)


USAGE_CODE = "usage"
"""The code of every usage error (an unknown command or option, a bad value): exit 2."""


def _usage_message(exc: click.UsageError) -> str:
    """Click's message, with "did you mean" for a mistyped command and the help to read.

    Click suggests close options and subcommands of groups that hold their commands,
    but not of ours, which loads them lazily: the suggestion is made here, for any
    group, from the commands it lists.
    """
    message = exc.format_message()
    ctx = exc.ctx
    unknown = re.match(r"No such command '(?P<name>[^']*)'\.", message)
    if unknown and "did you mean" not in message.lower() and ctx is not None:
        group = ctx.command
        names = group.list_commands(ctx) if isinstance(group, click.Group) else []
        message += _did_you_mean(unknown["name"], names)
    choice = re.search(r"'(?P<value>[^']*)' is not one of", message)
    if choice and isinstance(exc, click.BadParameter) and exc.param is not None:
        kind = exc.param.type
        if isinstance(kind, click.Choice):
            message += _did_you_mean(choice["value"], [str(c) for c in kind.choices])
    where = ctx.command_path if ctx is not None else "agent-mem-vault"
    end = "" if message.rstrip().endswith((".", "?", "!")) else "."
    return f"{message.rstrip()}{end} See '{where} --help'."


def _did_you_mean(word: str, names: list[str]) -> str:
    close = difflib.get_close_matches(word, names, n=3, cutoff=0.7)
    return (" Did you mean " + " or ".join(f"'{n}'" for n in close) + "?") if close else ""


def report_error(exc: AgentMemVaultError, *, as_json: bool) -> None:
    """The one place where a library error is shown to a person or a script."""
    if as_json:
        _echo_json_error(exc.to_dict())
    else:
        click.echo(f"error: {exc.message} [{exc.code}]", err=True)


def _report_bug(exc: Exception, *, as_json: bool) -> None:
    what = f"{type(exc).__name__}: {' '.join(str(exc).split())}".rstrip(": ")
    message = (
        f"unexpected failure ({bounded(what)}); this is a bug in agent-mem-vault: "
        f"please report it with the output of the same command run with {DEBUG_ENV}=1"
    )
    if as_json:
        _echo_json_error({"code": "internal_error", "message": message})
    else:
        click.echo(f"error: {message} [internal_error]", err=True)


def _echo_json_error(error: dict[str, Any]) -> None:
    # On stderr, so that a script reading stdout never mistakes it for a result.
    click.echo(json.dumps({"error": error}), err=True)


if __name__ == "__main__":
    main()
