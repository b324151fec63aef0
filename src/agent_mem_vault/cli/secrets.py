"""``redact``: take the secrets out of a note, so that a note held back can travel.

A note that gained a secret on this machine stays off its remote (docs/sync.md,
"Secrets stay home"); whoever wrote it is told which line holds what. This
command rewrites the note with each secret replaced by ``[redacted <kind>]``,
and the next sync sends it.
"""

from __future__ import annotations

import click

from ..core.words import counted
from .options import emit_json, open_vault, vault_options


@click.command()
@click.argument("note")
@click.option("--dry-run", is_flag=True, help="Only list what would be replaced.")
@vault_options
def redact(note: str, dry_run: bool, vault_path: str, as_json: bool) -> None:
    """Replace each secret in NOTE (an id, or the note's path in the vault) with
    [redacted <kind>], in its text and its properties.

    It finds what keeps a note from the vault's remote (the shapes listed in
    docs/agents.md), so a note it leaves goes out at the next sync.

    \b
    Examples:
      agent-mem-vault redact 3l6qyvzp7ns2c --dry-run
      agent-mem-vault redact project/harbor-api/memories/3l6qyvzp7ns2c.md
    """
    done = open_vault(vault_path).redact_note(note, dry_run=dry_run)
    if as_json:
        emit_json(done.to_dict())
        return
    if not done.found:
        click.echo(f"{done.path}: nothing that looks like a secret")
        return
    verb = "would replace" if dry_run else "replaced"
    click.echo(f"{done.path}: {verb} {counted(len(done.found), 'secret', 'secrets')}")
    for line, kind in done.found:
        click.echo(f"  line {line}: {kind}")
