"""The memory commands after ``save`` and ``search``: list, get, update, forget, restore.

Each is one ``Vault`` call with the name of the MCP tool and the Python method
it stands for (``memory list`` is ``list_memories``, ``memory forget`` is
``forget_memory``, ...), printed as text for people or JSON with ``--json``.
"""

from __future__ import annotations

import click

from .vault import (
    _echo_page_note,
    _emit,
    _memory_text,
    _read_text,
    _short_time,
    all_namespaces_option,
    found_namespace,
    namespace_option,
    offset_option,
    open_vault,
    render_table,
    vault_options,
)

__all__ = ["add_memory_commands"]


@click.command("list")
@namespace_option(required=False)
@all_namespaces_option
@click.option(
    "--status",
    type=click.Choice(["live", "superseded", "forgotten", "all"]),
    default="live",
    show_default=True,
    help="live: searched and briefed; superseded: earlier versions; forgotten: set aside.",
)
@click.option("--kind", "-k", default=None, help="Only memories of this kind, e.g. decision.")
@click.option("--tag", "tags", multiple=True, help="Only memories with this tag (repeat).")
@click.option("--limit", default=50, show_default=True, help="At most this many, newest first.")
@offset_option
@vault_options
def memory_list(
    namespace: str | None,
    everywhere: bool,
    status: str,
    kind: str | None,
    tags: tuple[str, ...],
    limit: int,
    offset: int,
    vault_path: str,
    as_json: bool,
) -> None:
    """List memories as a table, newest first (list_memories).

    When more match than --limit, the last line says how many there are and
    the --offset that gives the next page (--json: total, more, next_offset).

    \b
    Examples:
      agent-mem-vault memory list -n project/harbor-api --kind decision
      agent-mem-vault memory list --status forgotten --json
    """
    namespace = found_namespace(namespace, required=False, everywhere=everywhere)
    page = open_vault(vault_path).page_memories(
        namespace=namespace,
        status=status,  # type: ignore[arg-type]  # click.Choice checked it
        kind=kind,
        tags=tags,
        limit=limit,
        offset=offset,
    )
    found = page.memories
    if as_json:
        _emit(page.to_dict())
        return
    if not found:
        where = f" in {namespace}" if namespace else ""
        label = "" if status in ("all", "live") else f"{status} "
        more = f" from offset {offset} (there are {page.total})" if offset else ""
        click.echo(f"No {label}memories{where}{more}.")
        return
    rows = [[m.id, _short_time(m.created_at), m.kind, m.status, m.title] for m in found]
    headers = ["ID", "CREATED", "KIND", "STATUS", "TITLE"]
    if namespace is None:
        rows = [[*r[:3], m.namespace, *r[3:]] for r, m in zip(rows, found, strict=True)]
        headers = ["ID", "CREATED", "KIND", "NAMESPACE", "STATUS", "TITLE"]
    click.echo(render_table(headers, rows))
    _echo_page_note(len(found), page.total, offset, page.next_offset, "memory")


@click.command("get")
@click.argument("id")
@vault_options
def memory_get(id: str, vault_path: str, as_json: bool) -> None:
    """Show one memory by ID, whatever its status (get_memory).

    \b
    Example:
      agent-mem-vault memory get 3l6qyvzp7ns2c
    """
    found = open_vault(vault_path).get_memory(id)
    if as_json:
        _emit(found.to_dict())
    else:
        click.echo(_memory_text(found))


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
    updated = open_vault(vault_path).update_memory(
        id,
        title=title,
        content=None if content is None else _read_text(content),
        kind=kind,
        tags=tags or None,
        agent=agent,
    )
    if as_json:
        _emit(updated.to_dict())
    else:
        click.echo(updated.id)


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
        _emit({"memory": forgotten.to_dict(), "purged": purge})
    elif purge:
        click.echo(f"{forgotten.id} is purged: {forgotten.path} was deleted.")
    else:
        click.echo(
            f"{forgotten.id} is forgotten (its note is kept; "
            f"'agent-mem-vault memory restore {forgotten.id}' brings it back)."
        )


@click.command("restore")
@click.argument("id")
@vault_options
def memory_restore(id: str, vault_path: str, as_json: bool) -> None:
    """Bring forgotten memory ID back into search and the brief (restore_memory).

    \b
    Example:
      agent-mem-vault memory restore 3l6qyvzp7ns2c
    """
    restored = open_vault(vault_path).restore_memory(id)
    if as_json:
        _emit(restored.to_dict())
    else:
        click.echo(f"{restored.id} is {restored.status}.")


def add_memory_commands(group: click.Group) -> None:
    """Put these commands in the ``memory`` group, after ``save`` and ``search``."""
    for command in (memory_list, memory_get, memory_update, memory_forget, memory_restore):
        group.add_command(command)
