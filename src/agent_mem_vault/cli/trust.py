"""``agent-mem-vault trust``: who may write what this vault's agents take as their task.

``trust signers FILE`` names the team's allowed signers file (git's format) for
a route; from then on every entry that arrives is checked against it, once, and
every view of a note says who wrote its text and whether a listed key signed it.
docs/sync.md, "Who wrote it, verified", is the manual.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

import click

from ..core.errors import AccessDeniedError, AgentMemVaultError
from ..core.words import counted
from ..vault.format.origin import UNVERIFIED
from .options import emit_json, note_text, open_vault, vault_options

if TYPE_CHECKING:
    from ..vault.format.origin import Origin
    from ..vault.sync.trust_ops import TrustStatus

_PROJECT = click.option(
    "--project",
    "-n",
    "namespace",
    metavar="NS",
    help="The project route of this namespace (default: the vault's own remote).",
)


@click.group()
def trust() -> None:
    """Check who signed what arrives: the team's allowed signers, and what was found.

    \b
    Examples:
      agent-mem-vault trust signers ~/src/harbor-api/.agent-mem-vault/allowed_signers
      agent-mem-vault trust status
      agent-mem-vault trust policy off -n project/harbor-api
    """


@trust.command("signers")
@click.argument("path", required=False, type=click.Path(dir_okay=False))
@click.option("--clear", is_flag=True, help="Use git's gpg.ssh.allowedSignersFile instead.")
@click.option(
    "--branch",
    metavar="NAME",
    help="A project route: the team's .agent-mem-vault/allowed_signers on this branch of "
    "the project, taken as it is now, then each change only if a listed key signed it.",
)
@_PROJECT
@vault_options
def signers(
    path: str | None,
    clear: bool,
    branch: str | None,
    namespace: str | None,
    vault_path: str,
    as_json: bool,
) -> None:
    """Check every entry the route receives against PATH, an allowed signers file in
    git's format (keep it where the team reviews changes: the project's repository), or
    the one on the project's --branch. Without either: what the route checks against now."""
    vault = open_vault(vault_path)
    if path is None and not clear and branch is None:
        found = vault.trust_status(namespace)
    else:
        found = vault.trust_signers(namespace, path, clear=clear, branch=branch)
    _show(found, as_json)


@trust.command("policy")
@click.argument("policy", type=click.Choice(["off", "label", "require"]))
@_PROJECT
@vault_options
def policy(policy: str, namespace: str | None, vault_path: str, as_json: bool) -> None:
    """off: check nothing on this route; label (the default once there is a signers
    file): check every entry and mark what is not verified in every view; require: as
    label, and no agent takes or sees a handoff whose text no listed key signed, until a
    person releases it (trust quarantine, trust release)."""
    _show(open_vault(vault_path).trust_policy(namespace, policy), as_json)


@trust.command("quarantine")
@click.option("--namespace", "-n", metavar="NS", help="Only this namespace.")
@vault_options
def quarantine(namespace: str | None, vault_path: str, as_json: bool) -> None:
    """The handoffs and memories no agent is given: written outside the team, on a route
    whose policy is require. Read one with 'agent-mem-vault show ID'; let it through with
    'agent-mem-vault trust release ID' (or 'trust vouch ID', for the team), or delete it
    for the team with 'agent-mem-vault trust delete ID'."""
    vault = open_vault(vault_path)
    held = vault.quarantined_handoffs(namespace)
    kept = vault.quarantined_memories(namespace)
    if as_json:
        emit_json(
            {
                "quarantined": [h.to_dict() for h in held],
                "count": len(held),
                "memories": [m.to_dict() for m in kept],
            }
        )
        return
    if not held and not kept:
        click.echo("Nothing is quarantined.")
        return
    for h in held:
        fix = f"  (agent-mem-vault reopen {h.id})" if h.status == "read" else ""
        click.echo(
            f"{h.id}  {h.namespace}  {h.sender} -> {h.recipient or '*'}  by {_who(h.origin)}: "
            f"{h.summary}{fix}"
        )
    for m in kept:
        click.echo(f"{m.id}  {m.namespace}  [{m.kind}]  by {_who(m.origin)}: {m.title}")


def _who(origin: Origin | None) -> str:
    if origin is None:
        return "someone unknown"
    return f"{origin.who} ({UNVERIFIED.get(origin.why or '', origin.why)})"


@trust.command("release")
@click.argument("id")
@vault_options
def release(id: str, vault_path: str, as_json: bool) -> None:
    """Let quarantined handoff or memory ID through, as it says now: you read it and stand
    behind it. Asks a person at a terminal. Where this machine signs with a key the team
    lists, every machine of the team takes it too (a vouch); else this machine only. A
    later change that no listed key signed quarantines it again."""
    _need_a_person("release", id)
    from ..vault.folder.files import file_digest

    vault = open_vault(vault_path)
    shown = vault.get_note(id)
    seen = file_digest(vault.path / shown.path)
    click.echo(note_text(shown), err=True)
    answer = click.prompt(
        "Type 'release' to let agents have it (every machine of the team too, where this "
        "machine signs with a key the team lists)",
        err=True,
    )
    if answer.strip() != "release":
        click.echo("Nothing released.", err=True)
        sys.exit(1)
    released = vault.release_note(id, seen=seen)  # refused if it changed meanwhile
    try:
        vouched = vault.vouch_notes([id], seen={id: seen})
        team = f"every machine of the team takes it too (vouched for by {vouched.by})"
    except AgentMemVaultError as error:
        team = f"not for the team: {error}"
    if as_json:
        emit_json({**released.to_dict(), "team": team})
        return
    by = released.origin.released if released.origin is not None else None
    click.echo(f"{id} is released on this machine by {by}: agents may have it.")
    click.echo(f"  {team}")


@trust.command("delete")
@click.argument("id")
@vault_options
def delete(id: str, vault_path: str, as_json: bool) -> None:
    """Delete handoff or memory ID, written or last changed outside the team, for every
    machine: you read it and want it gone. Asks a person at a terminal. Only a note no
    listed key or person stands behind ('trust quarantine' lists them); its removal
    travels as any change, signed as this machine signs."""
    _need_a_person("delete", id)
    from ..vault.folder.files import file_digest

    vault = open_vault(vault_path)
    shown = vault.get_note(id)
    seen = file_digest(vault.path / shown.path)
    click.echo(note_text(shown), err=True)
    answer = click.prompt("Type 'delete' to delete it on every machine of the team", err=True)
    if answer.strip() != "delete":
        click.echo("Nothing deleted.", err=True)
        sys.exit(1)
    gone = vault.delete_note(id, seen=seen)  # refused if it changed meanwhile
    if as_json:
        emit_json({"deleted": gone.path})
        return
    click.echo(f"{id} is deleted ({gone.path}); its next sync takes it off the remote's notes.")


_SHOWN = 20
"""Notes ``trust vouch --all`` names before it asks (the rest are counted)."""


@trust.command("vouch")
@click.argument("notes", nargs=-1)
@click.option(
    "--all",
    "every",
    is_flag=True,
    help="Every note of the route that no listed key stands behind (notes from before the "
    "team signed, say).",
)
@_PROJECT
@vault_options
def vouch(
    notes: tuple[str, ...], every: bool, namespace: str | None, vault_path: str, as_json: bool
) -> None:
    """Stand behind NOTES (ids or paths) as the remote has them, for every machine of the
    team: one entry your listed key signs, which each machine that checks takes while
    that key stays listed. Asks a person at a terminal; what you read is what you vouch
    for. A later change that no listed key signed is judged as any other."""
    if bool(notes) == every:
        raise click.UsageError("name the notes to vouch for, or --all (not both)")
    _need_a_person("vouch", notes[0] if notes else "--all")
    vault = open_vault(vault_path)
    seen: dict[str, str] = {}
    if notes:
        from ..vault.folder.files import file_digest

        for note in notes:
            shown = vault.get_note(note)
            seen[note] = file_digest(vault.path / shown.path)
            click.echo(note_text(shown), err=True)
        what = counted(len(notes), "note")
    else:  # what the person is told of is all that is vouched for, if still so
        listed = vault.untrusted_notes(namespace)
        if not listed:
            click.echo("Nothing needs vouching for: every note is verified or vouched for.")
            return
        for path in sorted(listed)[:_SHOWN]:
            click.echo(f"  {path}", err=True)
        if len(listed) > _SHOWN:
            click.echo(f"  … and {len(listed) - _SHOWN} more", err=True)
        what = f"these {counted(len(listed), 'note')}, which no listed key stands behind"
    answer = click.prompt(f"Type 'vouch' to vouch for {what}, for the whole team", err=True)
    if answer.strip() != "vouch":
        click.echo("Nothing vouched for.", err=True)
        sys.exit(1)
    if notes:
        vouched = vault.vouch_notes(notes, namespace=namespace, seen=seen)
    else:
        vouched = vault.vouch_notes(namespace=namespace, listed=listed)
    if as_json:
        emit_json(vouched.to_dict())
    elif not vouched.notes:
        click.echo(f"{vouched.route.label}: nothing needs vouching for.")
    else:
        click.echo(
            f"{vouched.route.label}: vouched for {counted(len(vouched.notes), 'note')} as "
            f"{vouched.by}; every machine that checks takes them once it syncs."
        )


def _need_a_person(command: str, what: str) -> None:
    if not (sys.stdin.isatty() and sys.stderr.isatty()):
        raise AccessDeniedError(
            f"trust {command} asks a person at a terminal, and stdin or stderr is not one; "
            f"read it (agent-mem-vault show {what}) and run this yourself in a terminal",
            code=f"{command}_needs_a_person",
        )


@trust.command("status")
@_PROJECT
@vault_options
def status(namespace: str | None, vault_path: str, as_json: bool) -> None:
    """What the route checks against, how many entries were verified, and the notes whose
    text no listed key signed."""
    _show(open_vault(vault_path).trust_status(namespace), as_json)


def _show(found: TrustStatus, as_json: bool) -> None:
    if as_json:
        emit_json(found.to_dict())
        return
    click.echo(f"{found.route.label}: policy {found.policy}")
    if found.source is None:
        click.echo(
            "  no signers file: nothing is checked, and views say 'not checked'; name the "
            "team's with: agent-mem-vault trust signers PATH"
        )
    else:
        keys = ", ".join(found.principals) or "no keys"
        click.echo(f"  signers: {found.source}: {keys}")
    if found.refused:
        click.echo(f"  not taken: {found.refused}")
    if found.problem:
        click.echo(f"  problem: the signers file cannot be used ({found.problem}); nothing is")
        click.echo("    judged until it can")
    if not found.layout_checks and found.policy != "off":
        click.echo(
            "  this route keeps one log for every machine, whose entries cannot be told "
            "apart: move it to a log per machine first (agent-mem-vault sync upgrade)"
        )
    if found.counts:
        good = found.counts.get("verified", 0)
        rest = {k: n for k, n in found.counts.items() if k != "verified"}
        words = ", ".join(f"{n} {k}" for k, n in sorted(rest.items()))
        click.echo(
            f"  entries: {counted(good + sum(rest.values()), 'entry', 'entries')} checked, "
            f"{good} verified" + (f"; not verified: {words}" if words else "")
        )
    for path, person, machine, why in found.unverified:
        click.echo(f"  NOT VERIFIED: {path}, by {person} on {machine}: {UNVERIFIED.get(why, why)}")
    if found.untrusted:
        click.echo(
            f"  {counted(found.untrusted, 'note')} no listed key stands behind: a listed person "
            "who read them vouches for the team with: agent-mem-vault trust vouch ID… (or --all)"
        )
