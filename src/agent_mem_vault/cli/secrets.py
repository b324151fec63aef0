"""What frees a note held back from its remote: ``redact``, and ``secrets allow``.

A note that gained a secret on this machine stays off its remote (docs/sync.md,
"Secrets stay home"); whoever wrote it is told which line holds what. ``redact``
rewrites the note with each secret replaced by ``[redacted <kind>]``; ``secrets
allow`` lets a finding that is no secret go as it is, and asks a person at a
terminal for it: an agent's tools never allow.
"""

from __future__ import annotations

import sys

import click

from ..core.errors import AccessDeniedError
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


@click.group()
def secrets() -> None:
    """What looks like a secret in a note that travels (see also 'redact')."""


@secrets.command("allow")
@click.argument("note")
@click.option("--line", type=int, required=True, help="The line of the note, as the hold says.")
@click.option("--kind", default=None, help="Only what looks like this kind (e.g. 'JWT').")
@vault_options
def allow(note: str, line: int, kind: str | None, vault_path: str, as_json: bool) -> None:
    """Let what looks like a secret on a line of NOTE (an id or its path) go to the
    vault's remote as it is: an example key in a how-to, a test fixture.

    It asks you to type 'allow' at a terminal, and is refused without one, so an
    agent that runs commands does not allow by accident (an agent that fakes a
    terminal is your user to the system: this is no lock against it). What is
    allowed is kept on this machine only; a new secret in the note is held again.

    \b
    Example:
      agent-mem-vault secrets allow 3l6qyvzp7ns2c --line 14
    """
    if not (sys.stdin.isatty() and sys.stderr.isatty()):
        raise AccessDeniedError(
            "secrets allow asks a person at a terminal, and stdin or stderr is not one; "
            "run it yourself in a terminal, or take the secret out: agent-mem-vault redact "
            f"{note}",
            code="allow_needs_a_person",
        )
    vault = open_vault(vault_path)
    shown = vault.redact_note(note, dry_run=True)  # what is there, without changing it
    on_line = [k for n, k in shown.found if n == line and (kind is None or k == kind)]
    if on_line:
        click.echo(
            f"{shown.path} line {line} holds what looks like: {', '.join(on_line)}.", err=True
        )
    answer = click.prompt("Type 'allow' to let it go to the remote as it is", err=True)
    if answer.strip() != "allow":
        click.echo("Nothing allowed.", err=True)
        sys.exit(1)
    allowed = vault.allow_secret(note, line=line, kind=kind)
    if as_json:
        emit_json({"path": shown.path, "allowed": [h.to_dict() for h in allowed]})
        return
    for held in allowed:
        click.echo(f"allowed: {shown.path} line {held.line}: {held.kind} ({held.masked})")
