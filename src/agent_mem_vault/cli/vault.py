"""Vault commands: handoffs, the brief, and the vault itself (init, reindex, doctor, keeper).

Each command parses its options, makes one ``Vault`` call and prints the
result, as text for people or as JSON with ``--json`` for scripts. Errors
propagate to ``cli/main.py``, which turns them into exit statuses.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

import click

from ..core.words import counted
from .listing import list_command
from .options import (
    echo_view_line,
    emit,
    emit_json,
    found_namespace,
    id_command,
    namespace_option,
    note_text,
    open_vault,
    private_option,
    read_text,
    short_time,
    tell_held_back,
    vault_options,
    with_writer,
)

if TYPE_CHECKING:
    from ..vault import Handoff, HandoffPage, Memory, Repair, Vault

# -- commands ---------------------------------------------------------------------------


rewrite_dashboard_option = click.option(
    "--rewrite-dashboard",
    is_flag=True,
    help="Put the vault's _dashboards/memory.base back over one changed by hand "
    "(yours is kept beside it as memory.base.bak).",
)


def _echo_dashboard(outcome: str, backup: str | None) -> None:
    """What became of the dashboard, when it was not simply written or already current."""
    if outcome == "kept":
        click.echo(
            "Kept _dashboards/memory.base: it was changed by hand. --rewrite-dashboard puts "
            "the vault's back (yours is kept beside it)."
        )
    elif outcome == "rewritten":
        click.echo(f"Rewrote _dashboards/memory.base; yours is kept as {backup}.")


@click.command()
@click.option(
    "--remote",
    metavar="REMOTE",
    help="Join this git remote (a URL or path): its notes arrive, and every write goes "
    "there (see 'agent-mem-vault sync').",
)
@rewrite_dashboard_option
@vault_options
def init(vault_path: str, as_json: bool, rewrite_dashboard: bool, remote: str | None) -> None:
    """Create a vault (a folder Obsidian can open); safe to run again.

    A _dashboards/memory.base changed by hand (Obsidian saves view changes into
    it) is left as it is, and the output says so. With --remote, the vault joins
    a git remote, as on a second machine.

    \b
    Examples:
      agent-mem-vault init --vault ~/agent-mem-vault
      agent-mem-vault init --vault ~/agent-mem-vault --remote git@git.example:me/vault.git
    """
    vault = open_vault(vault_path)
    made = vault.init(rewrite_dashboard=rewrite_dashboard)
    joined = vault.join_remote(remote) if remote is not None else None
    # What arrived from the remote counts too.
    report = vault.rescan() if joined is not None else made
    if as_json:
        extra = {"sync": joined.to_dict()} if joined is not None else {}
        emit_json({"path": str(vault.path), **report.to_dict(), **extra})
    else:
        click.echo(
            f"Vault ready at {vault.path} ({counted(report.handoffs, 'handoff')}, "
            f"{counted(report.memories, 'memory')})."
        )
        _echo_dashboard(made.dashboard, made.dashboard_backup)
        if joined is not None:
            from .sync import report_lines

            for route in joined.routes:
                for line in report_lines(route):
                    click.echo(line)
    if joined is not None:
        for route in joined.routes:
            if route.error is not None:
                raise route.error


@click.command()
@click.option("--to", "to", required=True, help="The agent it is for (matched exactly).")
@click.option("--summary", "-s", required=True, help="One line: what should happen next.")
@click.option(
    "--context", "-c", required=True, help="The full context; '-' reads it from standard input."
)
@namespace_option()
@click.option("--from", "from_", default="unknown", show_default=True, help="Your agent name.")
@click.option(
    "--supersedes",
    multiple=True,
    metavar="ID",
    help="Id of an older handoff this one replaces (repeatable).",
)
@private_option
@vault_options
def create(
    to: str,
    summary: str,
    context: str,
    namespace: str | None,
    from_: str,
    supersedes: tuple[str, ...],
    private: bool,
    vault_path: str,
    as_json: bool,
) -> None:
    """Leave a handoff for another agent.

    \b
    Example:
      agent-mem-vault create --from claude-code --to codex -n project/harbor-api \\
        -s "Batch the orders backfill" \\
        -c "The backfill in migrations/0007 needs batching. Start with 1000 rows."
    """
    vault = open_vault(vault_path)
    from ..vault.format.notes import private_properties

    handoff = vault.create_handoff(
        to=to,
        summary=summary,
        context=read_text(context),
        namespace=found_namespace(namespace) or "",
        supersedes=supersedes,
        from_=from_,
        properties=private_properties(private),
    )
    emit(handoff, as_json, lambda h: str(h.id))
    tell_held_back(vault, handoff.path)


def _take(take: bool, agent: str, given: str | None, vault_path: str, as_json: bool) -> None:
    namespace = found_namespace(given) or ""
    vault = open_vault(vault_path)
    if take:
        handoff = vault.read_handoff(agent=agent, namespace=namespace)
    else:
        echo_view_line(vault, namespace)
        handoff = vault.peek_handoff(agent=agent, namespace=namespace)
    if as_json:
        emit_json(None if handoff is None else handoff.to_dict())
    elif handoff is None:
        click.echo(f"No pending handoff for {agent} in {namespace}.", err=True)
    else:
        click.echo(f"{handoff.heading}\n\n{handoff.text}")


@click.command()
@click.option("--agent", "-a", required=True, help="Your agent name, e.g. codex.")
@namespace_option()
@vault_options
def read(agent: str, namespace: str | None, vault_path: str, as_json: bool) -> None:
    """Take the newest pending handoff for AGENT and mark it read.

    Prints who left it, for whom, when and its id, then "## Summary … ## Full
    Context …"; prints nothing (and a note on standard error) when nothing is
    pending.

    \b
    Example:
      agent-mem-vault read --agent codex -n project/harbor-api
    """
    _take(True, agent, namespace, vault_path, as_json)


@click.command()
@click.option("--agent", "-a", required=True, help="The agent whose queue to look at.")
@namespace_option()
@vault_options
def peek(agent: str, namespace: str | None, vault_path: str, as_json: bool) -> None:
    """Show the handoff 'read' would take, without marking it read.

    \b
    Example:
      agent-mem-vault peek --agent codex -n project/harbor-api
    """
    _take(False, agent, namespace, vault_path, as_json)


@list_command(
    "handoffs",
    statuses=["pending", "read", "all"],
    status_help="Which handoffs to list.",
    filters=[
        click.option("--agent", "--to", "agent", help="Only handoffs to this agent."),
        click.option("--from", "sender", help="Only handoffs from this agent."),
    ],
    what=("handoff", "handoffs"),
    headers=["ID", "CREATED", "FROM", "TO", "STATUS", "SUMMARY"],
    row=lambda h: [
        h.id,
        short_time(h.created_at),
        h.sender,
        h.recipient or "*",
        h.status,
        with_writer(h.origin, h.summary, always=False),
    ],
    namespace_at=4,
)
def handoffs(
    vault: Vault, namespace: str | None, **query: Any
) -> tuple[HandoffPage, tuple[Handoff, ...]]:
    """List handoffs as a table, newest first.

    \b
    Examples:
      agent-mem-vault handoffs --namespace project/harbor-api --status pending
      agent-mem-vault handoffs --status all --from claude-code --json
      agent-mem-vault handoffs --status all --offset 50
    """
    echo_view_line(vault, namespace)
    page = vault.page_handoffs(namespace=namespace, **query)
    return page, page.handoffs


@id_command(note_text)
def show(vault: Vault, id: str) -> Handoff | Memory:
    """Show one handoff or memory by ID, without changing it.

    \b
    Example:
      agent-mem-vault show 3l6qyvzp7ns2c
    """
    return vault.get_note(id)


@id_command(lambda h: f"{h.id} is read (read_at {h.read_at}).")
def ack(vault: Vault, id: str) -> Handoff:
    """Mark handoff ID read without taking it (it was handled elsewhere).

    Acknowledging a handoff that is already read changes nothing.

    \b
    Example:
      agent-mem-vault ack 3l6qyvzp7ns2c
    """
    return vault.ack_handoff(id)


@id_command(lambda h: f"{h.id} is pending again.")
def reopen(vault: Vault, id: str) -> Handoff:
    """Make handoff ID pending again. A superseded handoff cannot be reopened.

    \b
    Example:
      agent-mem-vault reopen 3l6qyvzp7ns2c
    """
    return vault.reopen_handoff(id)


def _search_status_text(status: dict[str, Any]) -> str:
    """doctor's line about search: full-text (words) or hybrid (words and meaning)."""
    mode = status.get("mode", "fts")
    if mode == "hybrid":
        where = status.get("url") or status.get("model_dir")
        waiting = status.get("waiting_for_vector", 0)
        return (
            f"search: hybrid, words and meaning ({status.get('backend')}, model "
            f"{status.get('model')} at {where}; "
            f"{counted(int(status.get('vectors', 0)), 'vector')}, {waiting} waiting)"
        )
    label = "full-text" if mode == "fts" else str(mode)
    return f"search: {label} ({status.get('detail')})"


@click.command()
@namespace_option()
@vault_options
def brief(namespace: str | None, vault_path: str, as_json: bool) -> None:
    """Print the project brief: the brief note, recent decisions, pending handoffs.

    \b
    Example:
      agent-mem-vault brief -n project/harbor-api
    """
    ns = found_namespace(namespace) or ""
    result = open_vault(vault_path).get_project_brief(namespace=ns)
    if as_json:
        emit_json(result.to_dict())
    else:
        click.echo(result.text)


@click.command()
@rewrite_dashboard_option
@vault_options
def reindex(vault_path: str, as_json: bool, rewrite_dashboard: bool) -> None:
    """Rebuild the index from the notes (run after big changes made by hand).

    The index is derived and safe to delete; this also removes temp files a
    killed writer left behind. No note is changed (but a handoff whose read
    box was ticked by hand gets status and read_at to match). On a terminal a
    progress bar shows on stderr; none with --json or when piped.

    \b
    Example:
      agent-mem-vault reindex --vault ~/agent-mem-vault
    """
    bar: Any = None

    def progress(done: int, total: int) -> None:
        nonlocal bar
        if bar is None:
            bar = click.progressbar(length=total, label="Indexing notes", file=sys.stderr)
            bar.__enter__()
        bar.update(done - bar.pos)

    # A bar only for a person at a terminal: never with --json, nor when piped.
    show = not as_json and sys.stderr.isatty()
    try:
        report = open_vault(vault_path).reindex(
            progress if show else None, rewrite_dashboard=rewrite_dashboard
        )
    finally:
        if bar is not None:
            bar.__exit__(None, None, None)
    if as_json:
        emit_json(report.to_dict())
    else:
        vectors = f" {counted(report.vectors, 'memory vector')} computed." if report.vectors else ""
        click.echo(
            f"Indexed {counted(report.handoffs, 'handoff')} and "
            f"{counted(report.memories, 'memory')}; "
            f"{counted(len(report.broken), 'broken note')}.{vectors}"
        )
        _echo_dashboard(report.dashboard, report.dashboard_backup)


@click.command()
@vault_options
def doctor(vault_path: str, as_json: bool) -> None:
    """Check the vault and what `install` wrote for the agents. Changes no note.

    The vault: broken notes, dangling links, leftovers; and, as information,
    the files the index skips (empty, or over 1 MiB) and what the vault
    repaired by itself in the last 7 days (an index rebuilt from the notes, the
    temp files of killed writers removed). The agents (this
    repository's files and your user-wide ones): every registered server and
    hook command must resolve on PATH, Codex must trust the session hook, and
    Claude Code must have the .mcp.json server approved. The warm process must
    not have failed. Exits 0 when all is well and 7 on a problem; each is
    printed with the file and what to do.

    \b
    Example:
      agent-mem-vault doctor --vault ~/agent-mem-vault
    """
    from pathlib import Path

    from ..core.errors import DataError
    from ..integrations.namespace import find_repo_root
    from ..integrations.plugin_trust import client_problems, plugin_information
    from ..vault.index.keeper_link import keeper_status
    from ..vault.index.watch import watch_problem
    from .warm import warm_status

    report = open_vault(vault_path).doctor()
    warm = warm_status()
    installs = client_problems(Path.home(), find_repo_root(Path.cwd()))
    plugins = plugin_information(Path.home(), find_repo_root(Path.cwd()))
    keeper = keeper_status(Path(report.path))
    # Not a problem of the vault (calls check by stat without a watch): told, not failed.
    unwatched = watch_problem(Path(report.path))
    # A warm process that failed is a problem (every session starts the slow way until
    # its fix is done): doctor says so, and never also that all is well.
    warm_failed = warm.get("state") == "failed"
    healthy = report.ok and not installs and not warm_failed
    if as_json:
        emit_json(
            {
                **report.to_dict(),
                "installs": installs,
                "plugins": plugins,
                "keeper": keeper,
                "watch": {"ok": unwatched is None, "problem": unwatched},
                "fast_start": warm,
                "ok": healthy,
            }
        )
    else:
        click.echo(
            f"{report.path}: {counted(report.handoffs, 'handoff')} ({report.pending} pending), "
            f"{counted(report.memories, 'memory')}."
        )
        click.echo(_search_status_text(report.search))
        if report.sync:
            from .sync import status_lines

            for line in status_lines(list(report.sync), held=False):
                click.echo(line)
        click.echo(_keeper_text(keeper))
        click.echo("watch: " + (unwatched or "serve can watch the vault."))
        click.echo(_fast_start_text(warm))
        for filled in report.filled:
            click.echo(
                f"information: {filled.path} is written by hand; taken from its file: "
                f"{', '.join(filled.filled)}"
            )
        for line in [*report.information, *plugins]:
            click.echo(f"information: {line}")
        for skipped in report.skipped:
            click.echo(f"skipped: {skipped.path}: {skipped.reason}")
        for repair in report.repairs:
            click.echo(_repair_text(repair))
        for note in report.broken:
            click.echo(f"broken: {note.path}: {note.problem}")
        for problem in report.problems:
            click.echo(f"problem: {problem}")
        for problem in installs:
            click.echo(f"install: {problem}")
        if healthy:
            click.echo("No problems found.")
    if not report.ok:
        count = len(report.broken) + len(report.problems)
        raise DataError(
            f"the vault has {counted(count, 'problem')}; see above, fix the notes by hand, "
            "then run 'agent-mem-vault doctor' again",
            code="vault_unhealthy",
        )
    if installs:
        raise DataError(
            f"{counted(len(installs), 'problem')} in what install registered with the agents; "
            "see above, then run 'agent-mem-vault doctor' again",
            code="install_problem",
        )
    if warm_failed:
        raise DataError(
            "the warm process failed (the fast start line above); do what its fix says, "
            "remove the .failed file it names, then run 'agent-mem-vault doctor' again",
            code="fast_start_failed",
        )


@click.command()
@click.option("--start", "action", flag_value="start", help="Start one (detached) if none runs.")
@click.option("--stop", "action", flag_value="stop", help="Ask the running one to leave.")
@click.option(
    "--foreground",
    "action",
    flag_value="foreground",
    help="Be the keeper, in this process, until stopped (for a service manager).",
)
@vault_options
def keeper(vault_path: str, as_json: bool, action: str | None) -> None:
    """Show, start or stop the vault's keeper, the process that watches the notes.

    Without a keeper each new process (a session hook, an MCP server, this
    CLI) checks every note of the namespace it reads for edits made by hand:
    one stat per note, 30-50 ms at 10,000 notes. The keeper watches the vault
    instead and vouches for the index, so those checks cost a millisecond. A
    call that checked 2,000 notes or more starts one by itself; it leaves
    after 30 idle minutes (AGENT_MEM_VAULT_KEEPER_IDLE, seconds). Set
    AGENT_MEM_VAULT_KEEPER=off to never use one.

    \b
    Example:
      agent-mem-vault keeper --vault ~/agent-mem-vault
      agent-mem-vault keeper --stop --vault ~/agent-mem-vault
    """
    import time

    from ..core.errors import UnavailableError
    from ..vault.folder.layout import is_vault, vault_not_found
    from ..vault.index.keeper_link import KeeperLink, keeper_status, stop_keeper
    from ..vault.plug import run_keeper

    root = open_vault(vault_path).path
    if not is_vault(root):
        raise vault_not_found(root)
    if action == "foreground":
        sys.exit(run_keeper(root))
    if action == "stop" and not stop_keeper(root):
        raise UnavailableError(
            f"the keeper of {root} did not leave within 5 s; stop its process "
            "(the pid is in .agent-mem-vault/keeper.lock)",
            code="keeper_running",
        )
    if action == "start":
        KeeperLink(root).start()
        deadline = time.monotonic() + 120
        while keeper_status(root).get("ready") is not True:
            if time.monotonic() > deadline:
                raise UnavailableError(
                    f"the keeper of {root} was not ready within 120 s",
                    code="keeper_not_ready",
                )
            time.sleep(0.1)
    status = keeper_status(root)
    if as_json:
        emit_json({"vault": str(root), **status})
    else:
        click.echo(f"keeper of {root}: {_keeper_text(status).removeprefix('keeper: ')}")


def _repair_text(repair: Repair) -> str:
    """doctor's line on something the vault repaired by itself (information, exit 0)."""
    if repair.what == "rebuilt":
        return f"rebuilt {repair.at}: the index ({repair.path}) from the notes; {repair.why}"
    return f"cleaned {repair.at}: removed {repair.path}, {repair.why}"


def _fast_start_text(status: dict[str, Any]) -> str:
    """One line on the warm process that ``serve`` and the session hook hand over to."""
    state = status["state"]
    if state == "running":
        return f"fast start: a warm process is running (log: {status['log']})."
    if state == "failed":
        return (
            f"fast start: the warm process failed ({status['reason']}); fix: {status['fix']}. "
            f"Sessions start without it meanwhile (slower); tried again "
            f"{status['retry_at']}, or at once once {status['failure_file']} is removed."
        )
    if state == "idle":
        return "fast start: no warm process yet; the next session start starts one."
    return f"fast start: {state} ({status['detail']})."


def _keeper_text(status: dict[str, Any]) -> str:
    """One line on the vault's keeper, for ``doctor`` and ``keeper``."""
    if status["running"]:
        state = "ready" if status.get("ready") else "checking the vault"
        return (
            f"keeper: running (pid {status.get('pid')}), {state}; "
            f"{counted(int(status.get('answered', 0)), 'question')} answered."
        )
    if not status["enabled"]:
        return "keeper: not running (turned off by AGENT_MEM_VAULT_KEEPER)."
    return "keeper: not running (a call that checks 2,000 notes or more starts one)."
