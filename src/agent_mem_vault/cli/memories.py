"""The ``memory`` commands: save, search, list, get, update, forget, restore.

Each is one ``Vault`` call with the name of the MCP tool and the Python method
it stands for (``memory list`` is ``list_memories``, ``memory forget`` is
``forget_memory``, ...), printed as text for people or JSON with ``--json``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from .listing import echo_quarantined, list_command
from .options import (
    all_namespaces_option,
    choice_option,
    echo_page_note,
    emit,
    emit_json,
    found_namespace,
    id_command,
    memory_text,
    namespace_option,
    offset_option,
    open_vault,
    private_option,
    read_text,
    render_table,
    short_time,
    tell_held_back,
    vault_options,
    with_writer,
)

if TYPE_CHECKING:
    from ..vault import Memory, MemoryPage, Vault

__all__ = ["memory"]


_kind_filter = click.option(
    "--kind", "-k", default=None, help="Only memories of this kind, e.g. decision."
)
_tags_filter = click.option(
    "--tag", "tags", multiple=True, help="Only memories with this tag (repeat)."
)


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
@private_option
@vault_options
def memory_save(
    namespace: str | None,
    title: str,
    content: str,
    kind: str,
    tags: tuple[str, ...],
    agent: str | None,
    private: bool,
    vault_path: str,
    as_json: bool,
) -> None:
    """Save a memory note.

    \b
    Example:
      agent-mem-vault memory save -n project/harbor-api -k decision \\
        -t "Backfill in batches of 1000" -c "Lock time stayed under 50 ms."
    """
    vault = open_vault(vault_path)
    from ..vault.format.notes import private_properties

    saved = vault.save_memory(
        namespace=found_namespace(namespace) or "",
        title=title,
        content=read_text(content),
        kind=kind,
        tags=tags,
        agent=agent,
        properties=private_properties(private),
    )
    emit(saved, as_json, lambda m: str(m.id))
    tell_held_back(vault, saved.path)


@memory.command("search")
@click.argument("query")
@namespace_option(required=False)
@all_namespaces_option
@_kind_filter
@_tags_filter
@choice_option(
    "--mode",
    choices=["auto", "fts", "hybrid"],
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
        emit_json(page.to_dict())
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
        echo_page_note(len(hits), page.total, offset, page.next_offset, "memory")
    echo_quarantined(page.quarantined, "memory", "memories")


@list_command(
    "list",
    statuses=["live", "superseded", "forgotten", "all"],
    status_help="live: searched and briefed; superseded: earlier versions; forgotten: set aside.",
    filters=[_kind_filter, _tags_filter],
    what=("memory", "memories"),
    unnamed=("all", "live"),
    headers=["ID", "CREATED", "KIND", "STATUS", "TITLE"],
    row=lambda m: [
        m.id,
        short_time(m.created_at),
        m.kind,
        m.status,
        with_writer(m.origin, m.title, always=False),
    ],
    namespace_at=3,
)
def memory_list(
    vault: Vault, namespace: str | None, **query: Any
) -> tuple[MemoryPage, tuple[Memory, ...]]:
    """List memories as a table, newest first (list_memories).

    \b
    Examples:
      agent-mem-vault memory list -n project/harbor-api --kind decision
      agent-mem-vault memory list --status forgotten --json
    """
    page = vault.page_memories(namespace=namespace, **query)
    return page, page.memories


@id_command(memory_text, name="get")
def memory_get(vault: Vault, id: str) -> Memory:
    """Show one memory by ID, whatever its status (get_memory).

    \b
    Example:
      agent-mem-vault memory get 3l6qyvzp7ns2c
    """
    return vault.get_memory(id)


@click.command("update")
@click.argument("id")
@click.option("--title", "-t", default=None, help="A new title (one line).")
@click.option("--content", "-c", default=None, help="New text; '-' reads standard input.")
@click.option("--kind", "-k", default=None, help="A new kind: decision, note, task, risk, …")
@click.option("--tag", "tags", multiple=True, help="The new tags (repeatable; replace the old).")
@click.option("--agent", "-a", help="Who is updating it.")
@vault_options
def memory_update(
    id: str,
    title: str | None,
    content: str | None,
    kind: str | None,
    tags: tuple[str, ...],
    agent: str | None,
    vault_path: str,
    as_json: bool,
) -> None:
    """Correct memory ID: a new version replaces it; the old one stays as history
    (update_memory). Prints the new version's id.

    \b
    Example:
      agent-mem-vault memory update 3l6qyvzp7ns2c -c "Batches of 500: lock time rose."
    """
    vault = open_vault(vault_path)
    updated = vault.update_memory(
        id,
        title=title,
        content=None if content is None else read_text(content),
        kind=kind,
        tags=tags or None,
        agent=agent,
    )
    emit(updated, as_json, lambda m: str(m.id))
    tell_held_back(vault, updated.path)


@click.command("forget")
@click.argument("id")
@click.option(
    "--purge",
    is_flag=True,
    help="Delete the note for good (a secret written by mistake) instead of setting it aside.",
)
@vault_options
def memory_forget(id: str, purge: bool, vault_path: str, as_json: bool) -> None:
    """Take memory ID out of search and the brief; the note is kept, and `memory
    restore` brings it back (forget_memory). --purge deletes the note instead.

    \b
    Examples:
      agent-mem-vault memory forget 3l6qyvzp7ns2c
      agent-mem-vault memory forget 3l6qyvzp7ns2c --purge
    """
    forgotten = open_vault(vault_path).forget_memory(id, purge=purge)
    if as_json:
        emit_json({"memory": forgotten.to_dict(), "purged": purge})
    elif purge:
        click.echo(f"{forgotten.id} is purged: {forgotten.path} was deleted.")
    else:
        click.echo(
            f"{forgotten.id} is forgotten (its note is kept; "
            f"'agent-mem-vault memory restore {forgotten.id}' brings it back)."
        )


@id_command(lambda m: f"{m.id} is {m.status}.", name="restore")
def memory_restore(vault: Vault, id: str) -> Memory:
    """Bring forgotten memory ID back into search and the brief (restore_memory).

    \b
    Example:
      agent-mem-vault memory restore 3l6qyvzp7ns2c
    """
    return vault.restore_memory(id)


for _command in (memory_list, memory_get, memory_update, memory_forget, memory_restore):
    memory.add_command(_command)
