"""``agent-mem-vault sync``: the vault's notes through git, now; where each route stands.

Each command parses its options, makes one ``Vault`` call and prints the result
(``--json`` for scripts). The manual is docs/sync.md.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from ..core.words import counted
from .options import emit_json, open_vault, vault_options

if TYPE_CHECKING:
    from ..vault.sync.local import RouteReport
    from ..vault.sync.operations import SyncReport


@click.group(invoke_without_command=True)
@click.option(
    "--status",
    "show_status",
    is_flag=True,
    help="Show each remote, ahead/behind as of the last fetch and the last error; asks no remote.",
)
@vault_options
@click.pass_context
def sync(ctx: click.Context, show_status: bool, vault_path: str, as_json: bool) -> None:
    """Sync the vault's notes with its git remotes now, and say what happened.

    Every write is committed and pushed in the background anyway, and each
    session start fetches; this does it all at once: commit, fetch, merge by
    fields, push. Exits 0 when every remote took part, else with the status of
    the first failure (6: unreachable, 8: the remote refused).

    \b
    Examples:
      agent-mem-vault sync init git@git.example:me/vault.git   # the whole vault
      agent-mem-vault sync init --project                      # this project's namespace
      agent-mem-vault sync
      agent-mem-vault sync --status
    """
    if ctx.invoked_subcommand is not None:
        return
    vault = open_vault(vault_path)
    if show_status:
        routes = vault.sync_status()
        if as_json:
            emit_json({"vault": str(vault.path), "routes": [r.to_dict() for r in routes]})
        else:
            for line in status_lines([r.to_dict() for r in routes]):
                click.echo(line)
        return
    report = vault.sync()
    _finish(report, as_json)


@sync.command("init")
@click.argument("remote", required=False)
@click.option(
    "--project",
    is_flag=True,
    help="Only this project's namespace, through the project's own repository, on refs "
    "under refs/agent-mem-vault-sync/<namespace>/ (no branch).",
)
@click.option(
    "--branch",
    metavar="NAME",
    help="Keep every machine's entries on this one branch, for a host that takes pushes "
    "to branches only (e.g. agent-mem-vault/notes); one push at a time for the team.",
)
@click.option(
    "--namespace",
    "-n",
    metavar="NS",
    help="With --project: the namespace (default: found from git).",
)
@click.option(
    "--repo",
    type=click.Path(file_okay=False),
    help="With --project: the project's clone (default: the repository around this folder).",
)
@click.option(
    "--remote-name",
    default="origin",
    show_default=True,
    help="With --project: the remote of that clone to use.",
)
@click.option(
    "--sign",
    is_flag=True,
    help="Sign every commit this route sends with an SSH key you have (see --key); "
    "without REMOTE or --project: the vault's route you joined already.",
)
@click.option(
    "--key",
    metavar="PATH|key::…",
    help="With --sign: the SSH key (default: git's user.signingkey, the ssh-agent's first "
    "key, ~/.ssh/id_ed25519).",
)
@vault_options
def sync_init(
    remote: str | None,
    project: bool,
    namespace: str | None,
    repo: str | None,
    remote_name: str,
    branch: str | None,
    sign: bool,
    key: str | None,
    vault_path: str,
    as_json: bool,
) -> None:
    """Make the vault travel: through REMOTE (any URL or path git accepts), or with
    --project through this project's repository.

    The first sync runs at once: what the remote holds is merged with what is
    here. A URL with a password is refused: let git's credential helper keep it.
    With --sign, every commit the route sends is signed with your SSH key (your
    git signs them anyway when it signs your commits: commit.gpgsign); it prints
    the line a team's allowed signers file lists you by.

    \b
    Examples:
      agent-mem-vault sync init git@git.example:me/vault.git
      agent-mem-vault sync init /mnt/backup/vault.git
      agent-mem-vault sync init --project -n project/harbor-api
      agent-mem-vault sync init --project --branch agent-mem-vault/harbor-api
      agent-mem-vault sync init --sign --key ~/.ssh/id_ed25519
    """
    from ..core.errors import InvalidInputError

    vault = open_vault(vault_path)
    if key is not None and not sign:
        raise InvalidInputError("--key names the key of --sign: add --sign", code="usage_error")
    if (project and remote is not None) or not (project or remote is not None or sign):
        raise InvalidInputError(
            "give a REMOTE for the whole vault, or --project for this project's namespace "
            "(not both)",
            code="usage_error",
        )
    if branch is not None and not project and remote is None:
        raise InvalidInputError(
            "--branch names where a route goes: give a REMOTE or --project", code="usage_error"
        )
    if not project and remote is None:  # --sign alone: the vault's route, as it is
        signing = vault.sign_route(None, vault.signing_key(key))
        _tell_signing(signing.to_dict(), as_json)
        return
    if project:
        from ..integrations.namespace import discover_namespace, find_repo_root

        root = Path(repo) if repo else find_repo_root(Path.cwd())
        ns = namespace or (discover_namespace(root) if root is not None else None)
        if root is None or ns is None:
            raise InvalidInputError(
                "no project here: run this inside a clone of the project, or pass --repo "
                "PATH and -n NAMESPACE",
                code="repo_not_found",
            )
        chosen = vault.signing_key(key, root) if sign else None
        report = vault.join_project(ns, root, remote_name, sign=chosen, branch=branch)
    else:
        assert remote is not None
        chosen = vault.signing_key(key) if sign else None
        report = vault.join_remote(remote, sign=chosen, branch=branch)
        ns = None
    if chosen is None:
        _finish(report, as_json)
        return
    told = vault.sign_route(ns, chosen).to_dict()
    if as_json:
        emit_json({**report.to_dict(), "signing": told})
    else:
        _tell_signing(told, False)
    _finish(report, None if as_json else False)


def _tell_signing(signing: dict[str, Any], as_json: bool) -> None:
    """What ``sync init --sign`` set: the key, and the team's signers line for it."""
    if as_json:
        emit_json(signing)
        return
    where = "the vault" if signing["namespace"] is None else signing["namespace"]
    who = signing["principal"]
    click.echo(
        f"signing: {where} ⇄ {signing['remote']} signs with {signing['signs_with']}"
        + (f" as {who}" if who else "")
        + "."
    )
    if who is None:
        click.echo(
            "  git names nobody for this route: set your email (git config --global "
            "user.email you@example.com) so your team can list your key by it."
        )
    click.echo(
        "  For your team's allowed signers file (a signed commit on the project's main "
        f"branch):\n  {signing['signers_line']}"
    )


@sync.command("remove")
@click.option(
    "--project",
    "-n",
    "namespace",
    metavar="NS",
    help="Stop the project route of this namespace (default: the vault's own remote).",
)
@vault_options
def sync_remove(namespace: str | None, vault_path: str, as_json: bool) -> None:
    """Stop syncing with a remote. The notes stay here, and on the remote.

    \b
    Example:
      agent-mem-vault sync remove
    """
    route = open_vault(vault_path).leave_remote(namespace)
    if as_json:
        emit_json({"removed": route.url or route.remote, "ref": route.ref})
    else:
        click.echo(f"No longer syncing with {route.label}.")


@sync.command("upgrade")
@click.option(
    "--project",
    "-n",
    "namespace",
    metavar="NS",
    help="Upgrade the project route of this namespace (default: the vault's own remote).",
)
@vault_options
def sync_upgrade(namespace: str | None, vault_path: str, as_json: bool) -> None:
    """Move a route to a log per machine (layout 2), for every machine on it.

    One atomic push; every machine of this release follows at its next sync.
    A release that keeps one log stops there and asks to be upgraded.

    \b
    Example:
      agent-mem-vault sync upgrade
    """
    upgraded = open_vault(vault_path).upgrade_route(namespace)
    if as_json:
        emit_json(upgraded.to_dict())
    elif upgraded.already:
        click.echo(f"{upgraded.route.label} keeps a log per machine already.")
    else:
        click.echo(
            f"{upgraded.route.label} keeps a log per machine now; every machine of this "
            "release follows at its next sync."
        )


@sync.command("reopen-stranded")
@click.argument("ids", nargs=-1, metavar="[ID]...")
@vault_options
def sync_reopen_stranded(ids: tuple[str, ...], vault_path: str, as_json: bool) -> None:
    """Make handoffs a stopped read took pending again, for the whole team.

    A read killed after the remote took its claim leaves the handoff read with
    no agent known to have it; 'sync --status' lists each. Reopen the ones
    whose agent did not get it (none named: all of them).

    \b
    Example:
      agent-mem-vault sync reopen-stranded 3l6qyvzp7ns2c
    """
    vault = open_vault(vault_path)
    reopened = vault.reopen_stranded(ids)
    if reopened:
        vault.sync()
    if as_json:
        emit_json({"reopened": reopened})
    elif reopened:
        click.echo(f"Pending again for the team: {', '.join(reopened)}.")
    else:
        click.echo("No handoff was stranded on this machine.")


def _finish(report: SyncReport, as_json: bool | None) -> None:
    """Print a sync's report (``as_json`` None: in JSON already, or not at all); raise the
    first route's error (after printing them all)."""
    if as_json:
        emit_json(report.to_dict())
    elif as_json is False:
        for route in report.routes:
            for line in report_lines(route):
                click.echo(line)
    for route in report.routes:
        if route.error is not None:
            raise route.error


def report_lines(report: RouteReport) -> list[str]:
    """What one sync of a route did, in lines for people."""
    route = report.route
    if report.error is not None:
        return [f"{_name(route.namespace)}: not synced: {report.error.message}"]
    parts = ["pushed" if report.pushed else "nothing to push"]
    if report.arrived:
        parts.append(f"{counted(len(report.arrived), 'note')} arrived")
    if report.merged:
        parts.append(f"{counted(len(report.merged), 'note')} merged by fields")
    lines = [f"{_name(route.namespace)} ⇄ {route.url or route.remote}: {', '.join(parts)}."]
    lines += [f"kept: {p} (a version that lost a merge; see doctor)" for p in report.kept]
    lines += [f"delivered twice: {p} (see doctor)" for p in report.twice]
    lines += [
        f"put back: {p}, as the team left it (a key the team does not list had changed it)"
        for p in report.undone
    ]
    return lines


def status_lines(routes: list[dict[str, Any]], *, held: bool = True) -> list[str]:
    """Where each route stands (``RouteStatus.to_dict``), for ``sync --status`` and
    ``doctor`` (which lists the notes held back among its problems: ``held=False``)."""
    if not routes:
        return [
            "sync: none; the vault stays on this machine ('agent-mem-vault sync init REMOTE' "
            "shares it)"
        ]
    out = []
    for status in routes:
        where = str(status["remote"])
        if status.get("repository"):
            where = (
                f"{status['remote_name']} ({where}) of {status['repository']}, on {status['ref']}"
            )
        fetched = f" as of the last fetch ({status['last_fetch']})" if status["last_fetch"] else ""
        line = (
            f"sync: {_name(status['namespace'])} ⇄ {where}: {status['ahead']} ahead, "
            f"{status['behind']} behind{fetched}"
        )
        if status["waiting"]:
            line += f"; {counted(status['waiting'], 'change')} to commit"
        line += f"; last push {status['last_push'] or 'never'}"
        syncer = status.get("syncer")
        line += f"; syncer running (pid {syncer})." if syncer else "."
        out.append(line)
        error = status.get("error")
        if error:
            out.append(
                f"  last error ({error.get('at')}): {error.get('message')} [{error.get('code')}]"
            )
        if status.get("ask_after"):
            out.append(
                f"  did not answer {counted(status['failures'], 'time')} in a row: session "
                f"starts and views do not ask it again before {status['ask_after']} "
                "('agent-mem-vault sync' asks now)"
            )
        if held:
            out += [f"  {item['said']}" for item in status.get("held_back") or ()]
        signed = f", signed with {status['signs_with']}" if status.get("signs_with") else ""
        if status.get("sender"):
            out.append(f"  sends as {status['sender']} from {status['machine']}{signed}")
        elif "sender" in status:
            out.append(
                f"  sends unnamed from {status['machine']}: git has no user for this route "
                "(git config --global user.name 'Your Name'; git config --global user.email "
                f"you@example.com){signed}"
            )
        out += [f"  {item['said']}" for item in status.get("stranded") or ()]
        if status.get("trust"):
            out.append(f"  {status['trust']['said']}")
        if status.get("layout") == 2:
            out.append("  a log per machine (layout 2): no push waits for another machine's")
        elif status.get("layout") == 1:
            out.append(
                "  one log for every machine (layout 1): once every machine runs this release, "
                "'agent-mem-vault sync upgrade' gives each a log of its own"
            )
        if held and status.get("signing_held"):
            out.append(f"  {status['signing_held']['said']}")
        if status.get("private"):
            out.append(
                f"  {counted(len(status['private']), 'private note')} stay on this machine "
                "(they say private: true)"
            )
    return out


def _name(namespace: str | None) -> str:
    return "the vault" if namespace is None else namespace
