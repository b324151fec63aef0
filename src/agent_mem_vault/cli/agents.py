"""The commands a coding agent's client runs, and what they leave: ``hook
session-start``, ``hook session-end``, ``sessions`` and ``instructions``.

Thin as every command here: parse, call one function, render. A session hook
runs at every session start, so nothing heavy is imported before it runs.
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING

import click

from .options import agent_namespace_option, choice_option, open_vault, vault_option

if TYPE_CHECKING:
    from ..integrations.session_hook import HookInput

__all__ = ["hook", "instructions", "sessions"]


@click.group()
def hook() -> None:
    """Hooks that Claude Code, Codex, Gemini CLI and opencode run (registered by `install`)."""


CLIENTS = ("claude-code", "codex", "gemini-cli", "opencode")
_CLIENT_OF_AGENT = {"gemini": "gemini-cli", **{c: c for c in CLIENTS}}

client_option = click.option(
    "--client",
    type=click.Choice(CLIENTS),
    default=None,
    help="The client running the hook (install writes it); default: the agent's name when it "
    "is a client's. It says where the session's transcript and process are.",
)


def _hook_input() -> HookInput:
    """The hook JSON the client writes on stdin (none from a terminal)."""
    from ..integrations.session_hook import parse_hook_input

    return parse_hook_input("" if sys.stdin is None or sys.stdin.isatty() else sys.stdin.read())


@hook.command("session-start")
@click.option("--agent", required=True, help="The agent whose session starts, e.g. codex.")
@client_option
@agent_namespace_option
@vault_option
@choice_option(
    "--format",
    "fmt",
    choices=["text", "json"],
    help="text: plain context; json: the hookSpecificOutput object the tools accept.",
)
@click.option(
    "--max-chars",
    default=8000,
    show_default=True,
    type=click.IntRange(500, 100_000),
    help="Print at most this many characters (the brief is cut first).",
)
def session_start(
    agent: str,
    client: str | None,
    namespace: str | None,
    vault_path: str,
    fmt: str,
    max_chars: int,
) -> None:
    """Print the project brief and pending handoffs for AGENT (hook JSON on stdin).

    Claude Code, Codex, Gemini CLI and opencode run this at session start (`install`
    registers it).
    It never takes a handoff and always exits 0, so it cannot block a session.
    Given the client's session id, it registers the session as a run and, for
    an earlier session of the namespace that stopped without a handoff, writes
    an automatic one from its transcript (AGENT_MEM_VAULT_AUTO_HANDOFF=0: never).

    \b
      echo '{"cwd": "."}' | agent-mem-vault hook session-start --agent codex
    """
    from ..integrations.session_hook import hook_json, render_session_start

    text = render_session_start(
        open_vault(vault_path),
        _hook_input(),
        agent=agent,
        namespace=namespace,
        limit=max_chars,
        client=client or _CLIENT_OF_AGENT.get(agent),
    )
    if fmt == "json":
        click.echo(hook_json(text))
    elif text:
        click.echo(text)


@hook.command("session-end")
@click.option("--agent", required=True, help="The agent whose session ends, e.g. claude-code.")
@client_option
@agent_namespace_option
@vault_option
def session_end(agent: str, client: str | None, namespace: str | None, vault_path: str) -> None:
    """Mark the session in the hook JSON on stdin as ended cleanly (install registers it).

    A session that ends cleanly is known ended at once; a killed one is known
    by its process being gone. Always exits 0: a hook must not hold a client up.
    """
    from ..integrations.session_hook import end_session

    line = end_session(
        open_vault(vault_path),
        _hook_input(),
        client=client or _CLIENT_OF_AGENT.get(agent),
        namespace=namespace,
    )
    if line:
        click.echo(line, err=True)


@click.command()
@agent_namespace_option
@vault_option
@click.option(
    "--store",
    "store_path",
    envvar="AGENT_MEM_VAULT_RUNS_STORE",
    metavar="PATH",
    help="SQLite file holding the runs (default: <vault>/.runs/runs.sqlite3).",
)
@click.option("--json", "as_json", is_flag=True, help="Print JSON for scripts.")
def sessions(namespace: str | None, vault_path: str, store_path: str | None, as_json: bool) -> None:
    """List the coding-agent sessions of a namespace: alive, ended or dead, handed off or not.

    \b
      agent-mem-vault sessions
      agent-mem-vault sessions --namespace project/harbor-api --json
    """
    import json

    from ..integrations.namespace import discover_namespace
    from ..integrations.sessions import SessionBook, slot_agent
    from ..vault.format.namespaces import validate_namespace

    ns = namespace or discover_namespace(os.getcwd())
    if ns is None:
        raise click.UsageError(
            "no namespace here (not in a git repository, no .agent-mem-vault.toml): "
            "give --namespace"
        )
    validate_namespace(ns, field="--namespace")
    found = SessionBook(open_vault(vault_path), store_path).sessions(ns)
    if as_json:
        data = {"namespace": ns, "runsAgent": slot_agent(ns)}
        click.echo(json.dumps({**data, "sessions": [s.to_json() for s in found]}, indent=2))
        return
    if not found:
        click.echo(f"no sessions recorded in {ns}")
        return
    click.echo(f"sessions of {ns} (runs agent {slot_agent(ns)}), oldest first:")
    for s in found:
        handed = {
            "handed_off": f"handed off as {s.handoff}",
            "nothing": "nothing to hand off",
            "resumed": "resumed",
            "failed": f"handing off failed: {s.error}",
        }.get(s.outcome or "", "not handed off")
        click.echo(f"{s.run}  {s.agent:<12} {s.client:<11} {s.started_at}  {s.state:<5}  {handed}")


@click.command()
@agent_namespace_option
def instructions(namespace: str | None) -> None:
    """Print the line to add to AGENTS.md / CLAUDE.md.

    \b
      agent-mem-vault instructions >> AGENTS.md
    """
    from ..integrations.instructions import instructions_text
    from ..integrations.namespace import discover_namespace

    click.echo(instructions_text(namespace or discover_namespace(os.getcwd())))
