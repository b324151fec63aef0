"""Commands that connect agents to the vault: ``serve``, ``install``, ``uninstall``,
``hook session-start`` and ``instructions``.

Thin as every command here: parse, call one function, render. The MCP SDK is
imported only by ``serve``, so the other commands (a session hook runs at every
session start) stay fast.
"""

from __future__ import annotations

import os
import shlex
import shutil
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from ..core.ports import MCP_HTTP_PORT
from .options import DEFAULT_VAULT, checked_vault, open_vault, vault_option

if TYPE_CHECKING:
    from ..integrations.config_files import FileChange

AGENTS = ("claude-code", "codex", "gemini", "opencode")

namespace_option = click.option(
    "--namespace",
    default=None,
    help="Namespace to use; default: found from the working directory "
    "(.agent-mem-vault.toml, else the git repository's name).",
)


@click.command()
@click.option(
    "--agent",
    envvar="AGENT_MEM_VAULT_AGENT",
    required=True,
    help="This server's agent name, e.g. claude-code or codex: the 'from' of its handoffs "
    "and the default reader.",
)
@namespace_option
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
    from ..vault.namespaces import validate_agent, validate_namespace

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


def _install_options(fn: Any) -> Any:
    for option in reversed(
        [
            click.argument("tool", type=click.Choice(AGENTS), metavar="TOOL"),
            click.option(
                "--scope",
                type=click.Choice(["project", "user"]),
                default="project",
                show_default=True,
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
        fn = option(fn)
    return fn


def _plan(
    tool: str,
    scope: str,
    repo: str | None,
    vault_path: str | None,
    agent: str | None,
    command: str | None,
    *,
    remove: bool,
) -> list[FileChange]:
    from ..integrations.namespace import find_repo_root
    from ..integrations.targets import (
        Launch,
        codex_home,
        opencode_config_dir,
        plan_claude_code,
        plan_codex,
        plan_gemini,
        plan_opencode,
    )
    from ..vault.namespaces import validate_agent

    name = validate_agent(agent or tool, field="--agent")
    user_wide = tool == "codex" or scope == "user"
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
        vault=str(Path(vault_path).expanduser().resolve()) if vault_path else None,
    )
    home = Path.home()
    if tool == "codex":
        return plan_codex(launch, codex_home=codex_home(home), remove=remove)
    root = Path(repo).resolve() if repo else (find_repo_root(Path.cwd()) or Path.cwd())
    where: Any = scope
    if tool == "gemini":
        return plan_gemini(launch, scope=where, repo=root, home=home, remove=remove)
    if tool == "opencode":
        config_dir = opencode_config_dir(home)
        return plan_opencode(launch, scope=where, repo=root, config_dir=config_dir, remove=remove)
    return plan_claude_code(launch, scope=where, repo=root, home=home, remove=remove)


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
def install(
    tool: str,
    scope: str,
    repo: str | None,
    vault_path: str | None,
    agent: str | None,
    command: str | None,
    dry_run: bool,
    allow_temporary: bool,
) -> None:
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
    vault_path = vault_path or click.get_current_context().meta.get(GLOBAL_VAULT)
    _confirm_pin(vault_path, allow_temporary, dry_run)
    if _plugin_instead(tool, repo):
        return
    _report(_plan(tool, scope, repo, vault_path, agent, command, remove=False), dry_run)
    _make_served_vault(vault_path, dry_run)
    if tool == "codex":
        _codex_trust(remove=False, dry_run=dry_run)
    if tool == "gemini":
        _gemini_trust_note(repo)


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
    from ..integrations.namespace import find_repo_root

    root = Path(repo).resolve() if repo else (find_repo_root(Path.cwd()) or Path.cwd())
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
def uninstall(
    tool: str,
    scope: str,
    repo: str | None,
    vault_path: str | None,
    agent: str | None,
    command: str | None,
    dry_run: bool,
) -> None:
    """Remove what `install` added (and nothing else)."""
    if tool == "codex":
        # Before the hook goes: codex names our hook's trust entry only while it is there.
        _codex_trust(remove=True, dry_run=dry_run)
    changes = _plan(tool, scope, repo, vault_path, agent, command, remove=True)
    _report(changes, dry_run, uninstalling=True)


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


@hook.command("session-start")
@click.option("--agent", required=True, help="The agent whose session starts, e.g. codex.")
@client_option
@namespace_option
@vault_option
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "json"]),
    default="text",
    show_default=True,
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
    from ..integrations.session_hook import hook_json, parse_hook_input, render_session_start

    raw = "" if sys.stdin is None or sys.stdin.isatty() else sys.stdin.read()
    hook_input = parse_hook_input(raw)
    text = render_session_start(
        open_vault(vault_path),
        hook_input,
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
@namespace_option
@vault_option
def session_end(agent: str, client: str | None, namespace: str | None, vault_path: str) -> None:
    """Mark the session in the hook JSON on stdin as ended cleanly (install registers it).

    A session that ends cleanly is known ended at once; a killed one is known
    by its process being gone. Always exits 0: a hook must not hold a client up.
    """
    from ..integrations.session_hook import end_session, parse_hook_input

    raw = "" if sys.stdin is None or sys.stdin.isatty() else sys.stdin.read()
    line = end_session(
        open_vault(vault_path),
        parse_hook_input(raw),
        client=client or _CLIENT_OF_AGENT.get(agent),
        namespace=namespace,
    )
    if line:
        click.echo(line, err=True)


@click.command()
@namespace_option
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
    from ..vault.namespaces import validate_namespace

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
@namespace_option
def instructions(namespace: str | None) -> None:
    """Print the line to add to AGENTS.md / CLAUDE.md.

    \b
      agent-mem-vault instructions >> AGENTS.md
    """
    from ..integrations.instructions import instructions_text
    from ..integrations.namespace import discover_namespace

    click.echo(instructions_text(namespace or discover_namespace(os.getcwd())))
