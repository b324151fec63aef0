"""``agent-mem-vault private``: what stays on this machine, never going to a remote.

``private NOTE`` marks one note (its property ``private: true``); ``private
add|remove|list PATTERN`` keep every note a path pattern matches (a namespace,
a folder, a kind of note). docs/sync.md, "Private notes", is the manual.
"""

from __future__ import annotations

import click

from .options import emit_json, open_vault, vault_options


class _NoteOrPattern(click.Group):
    """``private NOTE …`` is ``private note NOTE …``; ``add``, ``remove`` and ``list``
    are the patterns' own commands."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        first = next((a for a in args if not a.startswith("-")), None)
        if first is not None and first not in self.commands:
            args = ["note", *args]
        return super().parse_args(ctx, args)


@click.group(cls=_NoteOrPattern)
def private() -> None:
    """Keep notes on this machine: no remote gets them, by any route.

    \b
    Examples:
      agent-mem-vault private 3l6qyvzp7ns2c                  # one note
      agent-mem-vault private 3l6qyvzp7ns2c --remove-from-remote
      agent-mem-vault private add 'project/personal/**'      # a namespace
      agent-mem-vault private add '*/memories/draft-*.md'
      agent-mem-vault private list
    """


@private.command("note", hidden=True)
@click.argument("note")
@click.option(
    "--remove-from-remote",
    is_flag=True,
    help="Also take it off the remote's notes at the next sync (its history stays there).",
)
@click.option("--undo", is_flag=True, help="Let it travel again: its next sync sends it.")
@vault_options
def note(note: str, remove_from_remote: bool, undo: bool, vault_path: str, as_json: bool) -> None:
    """Keep NOTE (an id, or its path in the vault) on this machine from now on."""
    marked = open_vault(vault_path).mark_private(
        note, private=not undo, remove_from_remote=remove_from_remote
    )
    if as_json:
        emit_json(marked.to_dict())
        return
    if undo:
        already = "" if marked.changed else " (it was not private)"
        where = f" to {marked.remote}" if marked.remote else ""
        click.echo(f"{marked.path} travels again{already}: its next sync sends it{where}.")
        return
    already = " (it was already)" if not marked.changed else ""
    click.echo(f"{marked.path} stays on this machine from now on{already}.")
    if marked.removing:
        click.echo(
            f"  Its next sync takes it off {marked.remote}'s notes (other machines delete "
            "their copy at their next sync, unless they changed it). Its earlier versions "
            "stay in that remote's history, and on every machine that synced them."
        )
    elif marked.travelled:
        click.echo(
            f"  Its earlier versions stay on {marked.remote} (its notes and its history) "
            "and on every machine that synced them. --remove-from-remote takes it off the "
            "remote's notes; to erase its history there, rewrite the remote (git "
            f"filter-repo --invert-paths --path {marked.path}), then every machine joins "
            "it again."
        )


@private.command("add")
@click.argument("pattern")
@vault_options
def add(pattern: str, vault_path: str, as_json: bool) -> None:
    """Keep every note PATTERN matches on this machine: a path in the vault, '*' within
    one folder, '**' across any ('project/personal/**' is a whole namespace, whose
    reads then stay here too)."""
    added, travelled = open_vault(vault_path).add_private_pattern(pattern)
    if as_json:
        emit_json({"pattern": pattern.strip(), "added": added, "travelled": travelled})
        return
    state = "kept" if added else "already kept"
    click.echo(f"Notes matching {pattern.strip()} are {state} on this machine.")
    if travelled:
        click.echo(
            f"  A remote has {len(travelled)} of them already (those versions, and their "
            "history, stay there):"
        )
        for path in travelled[:20]:
            click.echo(f"    {path}")
        if len(travelled) > 20:
            click.echo(f"    … and {len(travelled) - 20} more")


@private.command("remove")
@click.argument("pattern")
@vault_options
def remove(pattern: str, vault_path: str, as_json: bool) -> None:
    """Let the notes PATTERN kept here travel again: the next sync sends them."""
    open_vault(vault_path).remove_private_pattern(pattern)
    if as_json:
        emit_json({"pattern": pattern, "removed": True})
    else:
        click.echo(f"Notes matching {pattern} travel again: the next sync sends them.")


@private.command("list")
@vault_options
def listing(vault_path: str, as_json: bool) -> None:
    """The patterns whose notes stay on this machine."""
    found = open_vault(vault_path).private_patterns()
    if as_json:
        emit_json({"patterns": list(found)})
    elif not found:
        click.echo("No private patterns: notes stay here only when they say private: true.")
    else:
        for pattern in found:
            click.echo(pattern)
