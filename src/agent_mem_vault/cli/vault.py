"""Vault commands: handoffs and memories in a Markdown vault.

Each command parses its options, makes one ``Vault`` call and prints the
result, as text for people or as JSON with ``--json`` for scripts. Errors
propagate to ``cli/main.py``, which turns them into exit statuses.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

import click

from ..core.words import counted

if TYPE_CHECKING:
    from ..vault import Handoff, Memory, Repair, Vault

DEFAULT_VAULT = "~/agent-mem-vault"
"""``vault.base.DEFAULT_VAULT``, spelled out here so that ``--help`` imports no vault code."""
_F = TypeVar("_F", bound=Callable[..., Any])


VAULT_ENV = "AGENT_MEM_VAULT"


def checked_vault(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """Refuse an empty ``--vault`` or ``$AGENT_MEM_VAULT``: an empty path is the
    current folder, which would quietly become (or be read as) the vault."""
    if value is not None and not value.strip():
        raise click.BadParameter(
            "is empty; give the vault's folder, e.g. --vault ~/agent-mem-vault", param=param
        )
    source = ctx.get_parameter_source(param.name) if param.name else None
    if source is click.core.ParameterSource.DEFAULT and os.environ.get(VAULT_ENV) == "":
        raise click.UsageError(
            f"{VAULT_ENV} is set but empty; unset it for the default vault "
            f"({DEFAULT_VAULT}) or set it to the vault's folder",
            ctx=ctx,
        )
    return value


vault_option = click.option(
    "--vault",
    "vault_path",
    envvar=VAULT_ENV,
    default=DEFAULT_VAULT,
    show_default=True,
    metavar="PATH",
    type=click.Path(file_okay=False),
    callback=checked_vault,
    help="The vault folder (or set AGENT_MEM_VAULT).",
)
"""``--vault PATH``: the one definition, shared by every command that opens a vault."""


def vault_options(func: _F) -> _F:
    """``--vault`` and ``--json``, on every vault command."""
    func = click.option(
        "--json", "as_json", is_flag=True, help="Print JSON for scripts instead of text."
    )(func)
    return vault_option(func)


def namespace_option(required: bool = True) -> Callable[[_F], _F]:
    """``--namespace/-n``: when it is not given, ``found_namespace`` finds it from the
    working directory, as the session hook and the MCP server do."""
    found = "found from git (or .agent-mem-vault.toml) when omitted"
    return click.option(
        "--namespace",
        "-n",
        metavar="NS",
        help=f"Path-like namespace, e.g. project/harbor-api; {found}"
        + ("." if required else ", else every namespace."),
    )


all_namespaces_option = click.option(
    "--all-namespaces",
    "-A",
    "everywhere",
    is_flag=True,
    help="Every namespace, even inside a repository (whose own is the default).",
)


def found_namespace(
    given: str | None, *, required: bool = True, everywhere: bool = False
) -> str | None:
    """``given``, else the namespace of the working directory, found the way the session
    hook and the MCP server find it (``.agent-mem-vault.toml``, else the git
    repository's name); the one found is said on standard error, so a person knows
    which was used. Outside a repository: a usage error when ``required``, else None
    (every namespace), as with ``everywhere``."""
    if given or everywhere:
        return given or None
    from pathlib import Path

    from ..integrations.namespace import CONFIG_FILE, discover_namespace, find_repo_root

    here = Path.cwd()
    namespace = discover_namespace(here)
    if namespace is None:
        if required:
            raise click.UsageError(
                "Missing option '--namespace' / '-n': not inside a git repository (nor "
                f"under a {CONFIG_FILE}) here, so there is no default; pass one such as "
                "-n project/harbor-api"
            )
        return None
    root = find_repo_root(here) or here
    source = root / CONFIG_FILE if (root / CONFIG_FILE).is_file() else f"the git repository {root}"
    more = "" if required else "; --all-namespaces for every namespace"
    click.echo(f"namespace: {namespace} (from {source}{more})", err=True)
    return namespace


offset_option = click.option(
    "--offset",
    default=0,
    show_default=True,
    type=click.IntRange(min=0),
    help="Skip this many (the next page starts where the last one ended).",
)


def _echo_page_note(
    shown: int, total: int, offset: int, next_offset: int | None, what: str
) -> None:
    """After a table: how many there are in all, and the --offset of the next page."""
    if next_offset is None and offset == 0:
        return
    line = f"Showing {offset + 1}-{offset + shown} of {counted(total, what)}"
    if next_offset is None:
        click.echo(line + ".")
    else:
        click.echo(line + f"; the next page: --offset {next_offset}")


def open_vault(path: str) -> Vault:
    """The vault at ``--vault PATH`` (imported lazily: ``--help`` stays fast)."""
    from ..vault import Vault
    from ..vault.files import lock_timeout_setting

    return Vault(path, lock_timeout=lock_timeout_setting())


def _emit(data: Any) -> None:
    click.echo(json.dumps(data, indent=2, ensure_ascii=False))


def _read_text(value: str) -> str:
    """``-`` means: read the text from standard input."""
    return sys.stdin.read() if value == "-" else value


def _memory_text(m: Memory) -> str:
    """One memory as ``memory get`` and ``show`` print it: its properties, then its text."""
    lines = [
        f"id:            {m.id}",
        f"namespace:     {m.namespace}",
        f"kind:          {m.kind}",
        f"status:        {m.status}",
        f"created_at:    {m.created_at}",
    ]
    if m.agent:
        lines.append(f"agent:         {m.agent}")
    if m.tags:
        lines.append(f"tags:          {', '.join(m.tags)}")
    if m.supersedes:
        lines.append(f"supersedes:    {', '.join(m.supersedes)}")
    if m.superseded_by:
        lines.append(f"superseded_by: {m.superseded_by}")
    if m.forgotten_at:
        lines.append(f"forgotten_at:  {m.forgotten_at}")
    lines.append(f"path:          {m.path}")
    return "\n".join(lines) + f"\n\n# {m.title}\n\n{m.content}"


def _handoff_text(h: Handoff) -> str:
    lines = [
        f"id:            {h.id}",
        f"namespace:     {h.namespace}",
        f"from:          {h.sender}",
        f"to:            {h.recipient}",
        f"status:        {h.status}",
        f"created_at:    {h.created_at}",
    ]
    if h.read_at:
        lines.append(f"read_at:       {h.read_at}")
    if h.supersedes:
        lines.append(f"supersedes:    {', '.join(h.supersedes)}")
    if h.superseded_by:
        lines.append(f"superseded_by: {h.superseded_by}")
    lines.append(f"path:          {h.path}")
    return "\n".join(lines) + "\n\n" + h.text


def render_table(headers: Sequence[str], rows: Sequence[Sequence[str]], *, width: int = 100) -> str:
    """A plain text table; the last column is cut to keep lines within ``width``."""
    widths = [len(h) for h in headers]
    for row in rows:
        for i, cell in enumerate(row[:-1]):
            widths[i] = max(widths[i], len(cell))
    room = max(20, width - sum(widths[:-1]) - 2 * (len(headers) - 1))
    out = []
    for row in [list(headers), *[list(r) for r in rows]]:
        last = " ".join(row[-1].split())
        if len(last) > room:
            last = last[: room - 1] + "…"
        cells = [cell.ljust(widths[i]) for i, cell in enumerate(row[:-1])] + [last]
        out.append("  ".join(cells).rstrip())
    return "\n".join(out)


def _short_time(stamp: str) -> str:
    return stamp[:16].replace("T", " ") if stamp else ""


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
        _emit({"path": str(vault.path), **report.to_dict(), **extra})
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
@vault_options
def create(
    to: str,
    summary: str,
    context: str,
    namespace: str | None,
    from_: str,
    supersedes: tuple[str, ...],
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
    handoff = open_vault(vault_path).create_handoff(
        to=to,
        summary=summary,
        context=_read_text(context),
        namespace=found_namespace(namespace) or "",
        supersedes=supersedes,
        from_=from_,
    )
    if as_json:
        _emit(handoff.to_dict())
    else:
        click.echo(handoff.id)


def _take(take: bool, agent: str, given: str | None, vault_path: str, as_json: bool) -> None:
    namespace = found_namespace(given) or ""
    vault = open_vault(vault_path)
    if take:
        handoff = vault.read_handoff(agent=agent, namespace=namespace)
    else:
        handoff = vault.peek_handoff(agent=agent, namespace=namespace)
    if as_json:
        _emit(None if handoff is None else handoff.to_dict())
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


@click.command()
@namespace_option(required=False)
@all_namespaces_option
@click.option(
    "--status",
    type=click.Choice(["pending", "read", "all"]),
    default="pending",
    show_default=True,
    help="Which handoffs to list.",
)
@click.option("--agent", "--to", "agent", help="Only handoffs to this agent.")
@click.option("--from", "sender", help="Only handoffs from this agent.")
@click.option("--limit", default=50, show_default=True, help="At most this many, newest first.")
@offset_option
@vault_options
def handoffs(
    namespace: str | None,
    everywhere: bool,
    status: str,
    agent: str | None,
    sender: str | None,
    limit: int,
    offset: int,
    vault_path: str,
    as_json: bool,
) -> None:
    """List handoffs as a table, newest first.

    When more match than --limit, the last line says how many there are and
    the --offset that gives the next page (--json: total, more, next_offset).

    \b
    Examples:
      agent-mem-vault handoffs --namespace project/harbor-api --status pending
      agent-mem-vault handoffs --status all --from claude-code --json
      agent-mem-vault handoffs --status all --offset 50
    """
    namespace = found_namespace(namespace, required=False, everywhere=everywhere)
    page = open_vault(vault_path).page_handoffs(
        namespace=namespace,
        status=status,  # type: ignore[arg-type]  # click.Choice checked it
        agent=agent,
        sender=sender,
        limit=limit,
        offset=offset,
    )
    found = page.handoffs
    if as_json:
        _emit(page.to_dict())
        return
    if not found:
        where = f" in {namespace}" if namespace else ""
        label = "" if status == "all" else f"{status} "
        more = f" from offset {offset} (there are {page.total})" if offset else ""
        click.echo(f"No {label}handoffs{where}{more}.")
        return
    rows = [
        [h.id, _short_time(h.created_at), h.sender, h.recipient or "*", h.status, h.summary]
        for h in found
    ]
    if namespace is None:
        rows = [[*r[:4], h.namespace, *r[4:]] for r, h in zip(rows, found, strict=True)]
        headers = ["ID", "CREATED", "FROM", "TO", "NAMESPACE", "STATUS", "SUMMARY"]
    else:
        headers = ["ID", "CREATED", "FROM", "TO", "STATUS", "SUMMARY"]
    click.echo(render_table(headers, rows))
    _echo_page_note(len(found), page.total, offset, page.next_offset, "handoff")


@click.command()
@click.argument("id")
@vault_options
def show(id: str, vault_path: str, as_json: bool) -> None:
    """Show one handoff or memory by ID, without changing it.

    \b
    Example:
      agent-mem-vault show 3l6qyvzp7ns2c
    """
    from ..vault import Handoff

    note = open_vault(vault_path).get_note(id)
    if as_json:
        _emit(note.to_dict())
    elif isinstance(note, Handoff):
        click.echo(_handoff_text(note))
    else:
        click.echo(_memory_text(note))


@click.command()
@click.argument("id")
@vault_options
def ack(id: str, vault_path: str, as_json: bool) -> None:
    """Mark handoff ID read without taking it (it was handled elsewhere).

    Acknowledging a handoff that is already read changes nothing.

    \b
    Example:
      agent-mem-vault ack 3l6qyvzp7ns2c
    """
    handoff = open_vault(vault_path).ack_handoff(id)
    if as_json:
        _emit(handoff.to_dict())
    else:
        click.echo(f"{handoff.id} is read (read_at {handoff.read_at}).")


@click.command()
@click.argument("id")
@vault_options
def reopen(id: str, vault_path: str, as_json: bool) -> None:
    """Make handoff ID pending again. A superseded handoff cannot be reopened.

    \b
    Example:
      agent-mem-vault reopen 3l6qyvzp7ns2c
    """
    handoff = open_vault(vault_path).reopen_handoff(id)
    if as_json:
        _emit(handoff.to_dict())
    else:
        click.echo(f"{handoff.id} is pending again.")


@click.group()
def memory() -> None:
    """Save, search, list, show, update and forget memories: decisions, notes, tasks, risks."""


@memory.command("save")
@namespace_option()
@click.option("--title", "-t", required=True, help="One line.")
@click.option("--content", "-c", required=True, help="The text; '-' reads standard input.")
@click.option(
    "--kind", "-k", default="note", show_default=True, help="decision, note, task, risk, …"
)
@click.option("--tag", "tags", multiple=True, help="A tag (repeatable).")
@click.option("--agent", "-a", help="Who is saving it.")
@vault_options
def memory_save(
    namespace: str | None,
    title: str,
    content: str,
    kind: str,
    tags: tuple[str, ...],
    agent: str | None,
    vault_path: str,
    as_json: bool,
) -> None:
    """Save a memory note.

    \b
    Example:
      agent-mem-vault memory save -n project/harbor-api -k decision \\
        -t "Backfill in batches of 1000" -c "Lock time stayed under 50 ms."
    """
    saved = open_vault(vault_path).save_memory(
        namespace=found_namespace(namespace) or "",
        title=title,
        content=_read_text(content),
        kind=kind,
        tags=tags,
        agent=agent,
    )
    if as_json:
        _emit(saved.to_dict())
    else:
        click.echo(saved.id)


@memory.command("search")
@click.argument("query")
@namespace_option(required=False)
@all_namespaces_option
@click.option("--kind", "-k", default=None, help="Only memories of this kind, e.g. decision.")
@click.option("--tag", "tags", multiple=True, help="Only memories with this tag (repeat).")
@click.option(
    "--mode",
    type=click.Choice(["auto", "fts", "hybrid"]),
    default="auto",
    show_default=True,
    help="fts: words only; hybrid: words and meaning; auto: hybrid when an embedder is set up.",
)
@click.option("--limit", default=10, show_default=True, help="At most this many results.")
@offset_option
@vault_options
def memory_search(
    query: str,
    namespace: str | None,
    everywhere: bool,
    kind: str | None,
    tags: tuple[str, ...],
    mode: str,
    limit: int,
    offset: int,
    vault_path: str,
    as_json: bool,
) -> None:
    """Search memories by words and (with an embedder) by meaning, best match first.

    Every match is ranked. A "search mode:" line (the JSON's "mode") says which
    mode answered; when more match than --limit, the last line says how many
    match and the --offset that gives the next page (--json: total, more,
    next_offset).

    \b
    Example:
      agent-mem-vault memory search "why are the backfill batches small" -n project/harbor-api
    """
    namespace = found_namespace(namespace, required=False, everywhere=everywhere)
    page = open_vault(vault_path).search_page(
        query=query,
        namespace=namespace,
        kind=kind,
        tags=tags,
        mode=mode,
        limit=limit,
        offset=offset,
    )
    hits = page.hits
    if as_json:
        _emit(page.to_dict())
        return
    if not hits:
        more = f" from offset {offset} (there are {page.total})" if offset else ""
        click.echo(f"No memories match{more}.")
    else:
        rows = [
            [h.memory.id, h.memory.kind, h.memory.namespace, f"{h.memory.title} — {h.snippet}"]
            for h in hits
        ]
        click.echo(render_table(["ID", "KIND", "NAMESPACE", "TITLE — MATCH"], rows))
    click.echo(f"search mode: {page.mode}" + (f" ({page.reason})" if page.reason else ""))
    if hits:
        # Last, as for every cut listing: how many match and the next page's --offset.
        _echo_page_note(len(hits), page.total, offset, page.next_offset, "memory")


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
        _emit(result.to_dict())
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
        _emit(report.to_dict())
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
    from ..integrations.installed import install_problems
    from ..integrations.namespace import find_repo_root
    from ..vault.keeper import keeper_status
    from ..vault.watch import watch_problem
    from .warm import warm_status

    report = open_vault(vault_path).doctor()
    warm = warm_status()
    installs = install_problems(Path.home(), find_repo_root(Path.cwd()))
    keeper = keeper_status(Path(report.path))
    # Not a problem of the vault (calls check by stat without a watch): told, not failed.
    unwatched = watch_problem(Path(report.path))
    # A warm process that failed is a problem (every session starts the slow way until
    # its fix is done): doctor says so, and never also that all is well.
    warm_failed = warm.get("state") == "failed"
    healthy = report.ok and not installs and not warm_failed
    if as_json:
        _emit(
            {
                **report.to_dict(),
                "installs": installs,
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

            for line in status_lines(list(report.sync)):
                click.echo(line)
        click.echo(_keeper_text(keeper))
        click.echo("watch: " + (unwatched or "serve can watch the vault."))
        click.echo(_fast_start_text(warm))
        for filled in report.filled:
            click.echo(
                f"information: {filled.path} is written by hand; taken from its file: "
                f"{', '.join(filled.filled)}"
            )
        for line in report.information:
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
    from ..vault.base import is_vault, vault_not_found
    from ..vault.keeper import KeeperLink, keeper_status, run_keeper, stop_keeper

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
        _emit({"vault": str(root), **status})
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


from .memories import add_memory_commands  # noqa: E402  (the group is defined above)

add_memory_commands(memory)
