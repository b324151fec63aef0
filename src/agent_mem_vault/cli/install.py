"""``agent-mem-vault install`` and ``uninstall``: register the MCP server and the
session hooks with Claude Code, Codex, Gemini CLI or opencode, and take them away.

The files are planned by :mod:`agent_mem_vault.integrations.targets` (pure: text
before, text after); here they are checked, shown as a diff or written, and
reported one line each.
"""

from __future__ import annotations

import functools
import os
import shlex
import shutil
import sys
from collections.abc import Callable
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from .options import DEFAULT_VAULT, checked_vault, choice_option, open_vault

if TYPE_CHECKING:
    from ..integrations.config_files import FileChange

__all__ = ["AGENTS", "install", "uninstall"]

AGENTS = ("claude-code", "codex", "gemini", "opencode")


def _default_command(portable: bool) -> tuple[str, ...]:
    """What the tools run to start us.

    Files a team commits (project scope) name the bare ``agent-mem-vault``, found
    on PATH on every machine that has it installed. User-wide files name this
    machine's executable by its absolute path: a tool started from a desktop
    launcher may not have ~/.local/bin or a virtualenv on its PATH.
    """
    if portable:
        return ("agent-mem-vault",)
    found = shutil.which("agent-mem-vault")
    if found:
        return (str(Path(found).resolve()),)
    return (sys.executable, "-m", "agent_mem_vault.cli.main")


@dataclass(frozen=True, slots=True)
class _Where:
    """What install and uninstall register, and where: their shared options."""

    tool: str
    scope: str
    repo: str | None
    vault_path: str | None
    agent: str | None
    command: str | None


def _install_options(fn: Callable[..., None]) -> Callable[..., None]:
    """The options install and uninstall share, handed to the command as ``where``."""
    names = [f.name for f in fields(_Where)]

    @functools.wraps(fn)
    def command(**given: Any) -> None:
        where = _Where(**{name: given.pop(name) for name in names})
        fn(where, **given)

    for option in reversed(
        [
            click.argument("tool", type=click.Choice(AGENTS), metavar="TOOL"),
            choice_option(
                "--scope",
                choices=["project", "user"],
                help="project: files in the repository, meant to be committed (.mcp.json and "
                ".claude/settings.json; .gemini/settings.json; opencode.json and "
                ".opencode/plugin/); user: the same in your home folder. Codex is always "
                "user-wide.",
            ),
            click.option(
                "--repo",
                type=click.Path(file_okay=False),
                default=None,
                help="Repository folder; default: the git repository around the working directory.",
            ),
            click.option(
                "--vault",
                "vault_path",
                default=None,
                callback=checked_vault,
                help="Pin this vault in the registered commands. Default: nothing is pinned, "
                "and the server and hook open the vault as every command does "
                "($AGENT_MEM_VAULT, else ~/agent-mem-vault) when the client starts them.",
            ),
            click.option(
                "--agent",
                default=None,
                help="Agent name to register; default: the tool's name (claude-code, codex, "
                "gemini, opencode).",
            ),
            click.option(
                "--command",
                "command",
                default=None,
                help="Command the tools should run, e.g. 'uvx agent-mem-vault'; default: "
                "agent-mem-vault (project files) or this machine's agent-mem-vault by its "
                "absolute path (user-wide files).",
            ),
            click.option(
                "--dry-run", is_flag=True, help="Show the changes as a diff; write nothing."
            ),
        ]
    ):
        command = option(command)
    return command


def _plan(where: _Where, *, remove: bool) -> list[FileChange]:
    from ..integrations.targets import (
        Launch,
        codex_home,
        opencode_config_dir,
        plan_claude_code,
        plan_codex,
        plan_gemini,
        plan_opencode,
    )
    from ..vault.format.namespaces import validate_agent

    tool, command = where.tool, where.command
    name = validate_agent(where.agent or tool, field="--agent")
    user_wide = tool == "codex" or where.scope == "user"
    if command is not None:
        words = tuple(shlex.split(command))
        if not words:
            raise click.BadParameter(
                "give the command to run, e.g. agent-mem-vault", param_hint="--command"
            )
    else:
        words = _default_command(portable=not user_wide)
    if not remove:
        _require_runnable(words, tool, given=command is not None, user_wide=user_wide)
    launch = Launch(
        command=words,
        agent=name,
        vault=str(Path(where.vault_path).expanduser().resolve()) if where.vault_path else None,
    )
    home = Path.home()
    if tool == "codex":
        return plan_codex(launch, codex_home=codex_home(home), remove=remove)
    root = _repo_root(where.repo)
    scope: Any = where.scope
    if tool == "gemini":
        return plan_gemini(launch, scope=scope, repo=root, home=home, remove=remove)
    if tool == "opencode":
        config_dir = opencode_config_dir(home)
        return plan_opencode(launch, scope=scope, repo=root, config_dir=config_dir, remove=remove)
    return plan_claude_code(launch, scope=scope, repo=root, home=home, remove=remove)


def _repo_root(repo: str | None) -> Path:
    """``--repo``, else the git repository around the working directory, else the directory."""
    from ..integrations.namespace import find_repo_root

    return Path(repo).resolve() if repo else (find_repo_root(Path.cwd()) or Path.cwd())


def _require_runnable(words: tuple[str, ...], tool: str, *, given: bool, user_wide: bool) -> None:
    """Refuse to register a command the client could not start (nothing is written)."""
    from ..core.errors import InvalidInputError
    from ..integrations.runnable import ON_PATH, unrunnable

    why = unrunnable(words[0])
    if why is None:
        return
    if given:
        fix = "give --command a command on PATH or an absolute path to agent-mem-vault"
    elif user_wide:
        fix = "reinstall agent-mem-vault, then run this again"
    else:
        fix = f"{ON_PATH}, or pass --scope user to register the executable by its absolute path"
    raise InvalidInputError(
        f"{why}, so {tool} could not start the server or run the hook; {fix}. Nothing was written",
        code="command_not_runnable",
        command=words[0],
    )


def _confirm_pin(vault_path: str | None, allow_temporary: bool, dry_run: bool) -> None:
    """Ask before pinning a vault under a temporary folder: every client that starts
    the server from that pin loses the vault when the folder is cleaned."""
    from ..core.errors import InvalidInputError
    from ..integrations.runnable import temporary_folder_of

    if vault_path is None or allow_temporary:
        return
    root = temporary_folder_of(Path(vault_path))
    if root is None:
        return
    warning = (
        f"the vault {Path(vault_path).expanduser().resolve()} is under the temporary folder "
        f"{root}, which the system empties; a client whose server is pinned there loses the "
        "vault then"
    )
    if not dry_run and sys.stdin.isatty() and sys.stderr.isatty():
        click.echo(f"warning: {warning}.", err=True)
        if click.confirm("Pin it anyway?", default=False, err=True):
            return
    raise InvalidInputError(
        f"{warning}; name a lasting folder with --vault, leave --vault out, or pass "
        "--temporary-vault to pin it anyway. Nothing was written",
        code="temporary_vault",
        vault=str(vault_path),
    )


def _codex_trust(remove: bool, dry_run: bool) -> None:
    """Record (or drop) Codex's trust in our hook by asking the installed codex."""
    from ..integrations.codex_trust import list_codex_hooks, trust_change, untrust_change
    from ..integrations.config_files import apply_changes
    from ..integrations.targets import codex_home

    home = codex_home(Path.home())
    codex = os.environ.get("AGENT_MEM_VAULT_CODEX") or shutil.which("codex")
    fix = (
        "Codex runs only hooks you trust: start codex, type /hooks and trust the "
        "agent-mem-vault hook (or put codex on PATH and run this install again)"
    )
    if dry_run:
        if not remove:
            click.echo(
                "dry run: the hook's trust would be recorded with codex's hooks/list", err=True
            )
        return
    if codex is None:
        if not remove:
            click.echo(f"note: codex is not on PATH. {fix}", err=True)
        return
    try:
        hooks = list_codex_hooks(codex, home, Path.cwd())
    except (OSError, RuntimeError) as exc:
        if not remove:
            click.echo(f"note: could not ask codex about its hooks ({exc}). {fix}", err=True)
        return
    config = home / "config.toml"
    change = untrust_change(config, hooks) if remove else trust_change(config, hooks)
    apply_changes([change])
    if change.changed:
        click.echo(f"{'untrusted' if remove else 'trusted':<9} the session hook in {config}")


def _report(changes: list[FileChange], dry_run: bool, *, uninstalling: bool = False) -> None:
    from ..integrations.config_files import apply_changes

    if dry_run:
        for change in changes:
            click.echo(change.diff(), nl=False)
        click.echo("dry run: nothing was written", err=True)
        return
    from ..integrations.created_folders import forget_empty, missing_folders, remember

    made = {f for c in changes if c.after is not None for f in missing_folders(c.path)}
    apply_changes(changes)
    # Folders install made are written down; uninstall removes them once empty.
    remember(Path.home(), sorted(made))
    for folder in forget_empty(Path.home()) if uninstalling else ():
        click.echo(f"{'removed':<9} {folder}/")
    for change in changes:
        if not change.changed:
            verb = "unchanged"
        elif change.before is None:
            verb = "created"
        elif change.after is None:
            verb = "removed"
        else:
            verb = "updated"
        click.echo(f"{verb:<9} {change.path}")


@click.command()
@_install_options
@click.option(
    "--temporary-vault",
    "allow_temporary",
    is_flag=True,
    help="Pin a --vault under a temporary folder (/tmp, $TMPDIR) without asking.",
)
def install(where: _Where, dry_run: bool, allow_temporary: bool) -> None:
    """Register the MCP server and the session-start hook with Claude Code, Codex,
    Gemini CLI or opencode.

    \b
    Re-running changes nothing; existing settings are merged, never lost.
    For Codex it also records that you trust the hook, as Codex's /hooks does.
    No vault is pinned unless --vault names one (one under a temporary folder is
    asked about first), and a command the client could not run is refused.
      agent-mem-vault install claude-code            # this repository
      agent-mem-vault install claude-code --scope user
      agent-mem-vault install codex --dry-run
      agent-mem-vault install gemini
      agent-mem-vault install opencode --scope user
    """
    from .main import GLOBAL_VAULT

    # `agent-mem-vault --vault PATH install …` pins PATH, as `install --vault PATH` does.
    vault_path = where.vault_path or click.get_current_context().meta.get(GLOBAL_VAULT)
    where = replace(where, vault_path=vault_path)
    _confirm_pin(vault_path, allow_temporary, dry_run)
    if _plugin_instead(where.tool, where.repo):
        return
    _report(_plan(where, remove=False), dry_run)
    _make_served_vault(vault_path, dry_run)
    if where.tool == "codex":
        _codex_trust(remove=False, dry_run=dry_run)
    if where.tool == "gemini":
        _gemini_trust_note(where.repo)


def _plugin_instead(tool: str, repo: str | None) -> bool:
    """Say so, and write nothing, where the client has the plugin already."""
    from ..integrations.namespace import find_repo_root
    from ..integrations.plugin_hook import plugin_instead

    root = Path(repo).resolve() if repo else find_repo_root(Path.cwd())
    line = plugin_instead(tool, Path.home(), root)
    if line:
        click.echo(f"note: {line}", err=True)
    return line is not None


def _make_served_vault(vault_path: str | None, dry_run: bool) -> None:
    """Make the vault the registered server will open, so that its first start finds
    one: the pinned vault, else the one this environment names (AGENT_MEM_VAULT, else
    the default). ``serve`` refuses a folder that is not a vault; this is where one
    is made on purpose, with a line saying so."""
    path = Path(vault_path or os.environ.get("AGENT_MEM_VAULT") or DEFAULT_VAULT).expanduser()
    vault = open_vault(str(path))
    if vault.is_vault():
        return
    if dry_run:
        click.echo(f"dry run: the vault {vault.path} would be made", err=True)
        return
    vault.init()
    click.echo(f"{'created':<9} the vault {vault.path}")


def _gemini_trust_note(repo: str | None) -> None:
    """Say so when Gemini CLI would not use what install wrote: it starts no MCP
    server and runs no project hook in a folder the person has not trusted."""
    from ..integrations.gemini_trust import gemini_folder_trust

    root = _repo_root(repo)
    state = gemini_folder_trust(root, Path.home())
    if state in ("trusted", "not-required"):
        return
    why = "you chose not to trust" if state == "untrusted" else "Gemini CLI has not trusted yet"
    click.echo(
        f"note: {root} is a folder {why}; there Gemini CLI starts no MCP server, runs no "
        "hook, and `gemini -p` refuses to run. Start `gemini` in it and trust the folder "
        "(/permissions changes an earlier choice); for headless runs set "
        "GEMINI_CLI_TRUST_WORKSPACE=true",
        err=True,
    )


@click.command()
@_install_options
def uninstall(where: _Where, dry_run: bool) -> None:
    """Remove what `install` added (and nothing else)."""
    if where.tool == "codex":
        # Before the hook goes: codex names our hook's trust entry only while it is there.
        _codex_trust(remove=True, dry_run=dry_run)
    _report(_plan(where, remove=True), dry_run, uninstalling=True)
