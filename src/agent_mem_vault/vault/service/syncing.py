"""The sync operations of ``Vault``: join a remote, sync now, look, and what arrived twice.

Each method is one call into ``vault/sync``, reached through what the composition
point (``vault/plug.py``, above both) plugs in here: ``plug_in`` is handed the port
of a vault's sync and the module of its commands, which this layer never imports.
Until then a vault does not sync (``NO_SYNC``). The manual is docs/sync.md.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

from ...core.errors import InvalidInputError, NotFoundError
from ..folder.layout import syncs
from ..format.namespaces import validate_agent, validate_namespace_filter
from ..index.db import Index
from ..index.scan import listing_scope
from ..ops.base import VaultBase
from ..ops.outsiders import unchanged_since_shown
from ..ops.port import NO_SYNC, SyncPort
from ..ops.redaction import note_path

if TYPE_CHECKING:
    from ..format.models import Handoff, Memory
    from ..sync.gate import Held
    from ..sync.operations import RouteStatus, Signing, SyncReport
    from ..sync.routes import Route
    from ..sync.signing import Chosen
    from ..sync.team_vouch import Vouched
    from ..sync.trust_ops import TrustStatus
    from ..sync.upgrade import Upgraded

__all__ = ["SyncOps", "plug_in"]


@dataclass
class _Plugged:
    """What the composition point handed this layer (``plug_in``)."""

    port_for: Callable[[Path], SyncPort] = lambda _root: NO_SYNC
    commands: Callable[[], ModuleType] | None = None


_plugged = _Plugged()


def plug_in(port_for: Callable[[Path], SyncPort], commands: Callable[[], ModuleType]) -> None:
    """Hand every vault its sync: ``port_for(root)``, the port its operations talk to, and
    ``commands()``, the module that joins, syncs and reports (``vault/plug.py``)."""
    _plugged.port_for = port_for
    _plugged.commands = commands


def sync_commands() -> ModuleType:
    """The module of sync's commands, from what was plugged in."""
    if _plugged.commands is None:
        raise RuntimeError("no sync is plugged in: agent_mem_vault.vault plugs it when imported")
    return _plugged.commands()


class SyncOps(VaultBase):
    """A vault's notes travelling with git (``vault/sync``)."""

    def _port(self) -> SyncPort:
        return _plugged.port_for(self.path)

    def join_remote(
        self, remote: str, sign: Chosen | None = None, branch: str | None = None
    ) -> SyncReport:
        """Send the whole vault through ``remote`` (any URL or path git accepts), merging
        what it holds already; then every write goes out by itself. ``sign``: the key
        every commit it sends is signed with (``signing_key``); ``branch``: the one branch
        every machine's entries ride, for a host that takes only branches.

        >>> vault.join_remote("git@git.example:me/vault.git")  # doctest: +SKIP
        """
        key = None if sign is None else sign.key
        report: SyncReport = sync_commands().join_remote(self, remote, key, branch)
        return report

    def join_project(
        self,
        namespace: str,
        repo: str | os.PathLike[str],
        remote: str = "origin",
        sign: Chosen | None = None,
        branch: str | None = None,
    ) -> SyncReport:
        """Send ``namespace`` through the project's own repository (a clone at ``repo``
        and its remote ``remote``), on refs that are not branches; or on the one branch
        ``branch``, for a host that takes only branches."""
        key = None if sign is None else sign.key
        report: SyncReport = sync_commands().join_project(
            self, namespace, repo, remote, key, branch
        )
        return report

    def signing_key(self, key: str | None = None, repo: Path | None = None) -> Chosen:
        """The SSH key a route would sign with (``key``, a file or ``key::…``; else the
        one git names, the ssh-agent's, ``~/.ssh/id_ed25519``…), tried once: refused,
        naming the fix, when it cannot sign without a person."""
        self._require_vault()
        chosen: Chosen = sync_commands().signing_key(self, key, repo)
        return chosen

    def sign_route(self, namespace: str | None, key: Chosen) -> Signing:
        """Sign every commit the route of ``namespace`` (None: the vault's) sends with
        ``key`` from now on; says the line a team's allowed signers file lists it by."""
        namespace = validate_namespace_filter(namespace)
        signing: Signing = sync_commands().sign_route(self, namespace, key)
        return signing

    def trust_signers(
        self,
        namespace: str | None,
        path: str | None,
        *,
        clear: bool = False,
        branch: str | None = None,
    ) -> TrustStatus:
        """Check what the route of ``namespace`` (None: the vault's) receives against the
        allowed signers file at ``path`` (``clear``: git's ``gpg.ssh.allowedSignersFile``;
        ``branch``: the project's list on that branch, each change taken only if a key the
        list names signed it)."""
        namespace = validate_namespace_filter(namespace)
        found: TrustStatus = sync_commands().trust_signers(
            self, namespace, path, clear=clear, branch=branch
        )
        return found

    def trust_policy(self, namespace: str | None, policy: str) -> TrustStatus:
        """``off`` or ``label`` for the route of ``namespace`` (None: the vault's)."""
        namespace = validate_namespace_filter(namespace)
        found: TrustStatus = sync_commands().trust_policy(self, namespace, policy)
        return found

    def trust_status(self, namespace: str | None = None) -> TrustStatus:
        """What the route of ``namespace`` checks entries against, and what it found."""
        namespace = validate_namespace_filter(namespace)
        found: TrustStatus = sync_commands().trust_status(self, namespace)
        return found

    def release_note(self, note: str, seen: str | None = None) -> Handoff | Memory:
        """Let ``note`` (a handoff's or memory's id, or a path), as it says now, steer agents on
        this machine though no listed key signed it: a person read it and stands behind it
        here. ``seen``: the SHA-256 of the note's file as the person read it; refused
        (``changed_since_read``) when it changed since. A later change that no listed key
        signed quarantines it again. Refused where nothing quarantines it."""

        self._require_vault()
        path = self._query(partial(note_path, self.path, note=note))
        with self._held(), self._locked():  # the syncer cannot change it in between
            unchanged_since_shown(self.path, path, note, seen, "release")
            released = self._port().release(path)
        if released is None:
            raise InvalidInputError(
                f"{note} is not in a namespace whose route quarantines what is written "
                "outside the team (agent-mem-vault trust policy require)",
                code="not_quarantined",
            )
        stem = path.rsplit("/", 1)[-1].removesuffix(".md")
        found = self._query(lambda idx: idx.handoff(stem) or idx.memory(stem))
        if found is None:
            raise NotFoundError(f"{note} is gone from the index", code="note_not_found")
        return self._with_origin(found)

    def vouch_notes(
        self,
        notes: Sequence[str] = (),
        *,
        namespace: str | None = None,
        seen: dict[str, str] | None = None,
        listed: dict[str, str] | None = None,
    ) -> Vouched:
        """Stand behind ``notes`` (ids or paths, of one route) as the remote has them, for
        every machine of the team: one entry this machine's listed key signs. None named:
        the notes of the route of ``namespace`` (None: the vault's) that no listed key
        stands behind: ``listed`` (path → blob, as ``untrusted_notes`` told them), those
        still so on the remote; else every one. ``seen``: note → the SHA-256 of its file as
        the person read it; refused (``changed_since_read``) when it changed since. A
        person's act, never an agent's tool (``agent-mem-vault trust vouch``)."""

        self._require_vault()
        namespace = validate_namespace_filter(namespace)
        shown: dict[str, str] | None = None
        if notes:
            shown = {}
            for note in notes:
                path = self._query(partial(note_path, self.path, note=note))
                said = None if seen is None else seen.get(note)
                unchanged_since_shown(self.path, path, note, said, "vouch for")
                shown[path] = (self.path / path).read_text(encoding="utf-8")
        vouched: Vouched = sync_commands().vouch(self, namespace, shown, listed)
        return vouched

    def untrusted_notes(self, namespace: str | None = None) -> dict[str, str]:
        """The notes of the route of ``namespace`` (None: the vault's) that no listed key or
        person stands behind as they are, as this machine last judged them: path → blob
        (what ``vouch_notes(listed=…)`` takes)."""
        self._require_vault()
        namespace = validate_namespace_filter(namespace)
        found: dict[str, str] = sync_commands().untrusted_notes(self, namespace)
        return found

    def leave_remote(self, namespace: str | None = None) -> Route:
        """Stop syncing the vault (or ``namespace``'s project route); notes stay."""
        namespace = validate_namespace_filter(namespace)
        route: Route = sync_commands().leave(self, namespace)
        return route

    def upgrade_route(self, namespace: str | None = None) -> Upgraded:
        """Move the vault's route (or ``namespace``'s project route) to a log per machine
        (layout 2), for every machine that uses it (docs/sync.md)."""
        namespace = validate_namespace_filter(namespace)
        upgraded: Upgraded = sync_commands().upgrade(self, namespace)
        return upgraded

    def reopen_stranded(self, ids: Sequence[str] = ()) -> list[str]:
        """Make handoffs a stopped read of this machine took on the remote pending again
        for the team (none named: all of them); the ids reopened."""
        reopened: list[str] = sync_commands().reopen_stranded(self, list(ids))
        return reopened

    def sync(self) -> SyncReport:
        """Commit, fetch, merge and push every route now; each route's failure is in its
        report (``SyncReport.ok``)."""
        self._require_vault()
        report: SyncReport = sync_commands().sync_all(self)
        return report

    @property
    def has_route(self) -> bool:
        """Whether this vault syncs (one ``stat``): only then may a view wait on the
        network, catching up with the remote first."""
        return syncs(self.path)

    def sync_status(self) -> tuple[RouteStatus, ...]:
        """Each route's remote, ahead/behind as of the last fetch and the last error,
        without asking the remote; () for a vault that does not sync."""
        self._require_vault()
        if not self.has_route:
            return ()
        found: tuple[RouteStatus, ...] = sync_commands().status(self)
        return found

    def allow_secret(self, note: str, *, line: int, kind: str | None = None) -> list[Held]:
        """Let what looks like a secret on ``line`` of a note (an id or its path; only
        findings of ``kind`` if given) go to the remote after all, and sync it: what a
        person decides at a terminal (``agent-mem-vault secrets allow``), never an
        agent's tool. Returns what was allowed."""
        self._require_vault()
        path = self._query(lambda idx: note_path(self.path, idx, note))
        allowed: list[Held] = sync_commands().allow(self, path, line, kind)
        return allowed

    def private_patterns(self) -> tuple[str, ...]:
        """The path patterns whose notes stay on this machine (``private add``)."""
        self._require_vault()
        found: tuple[str, ...] = sync_commands().private_patterns(self.path)
        return found

    def add_private_pattern(self, pattern: str) -> tuple[bool, list[str]]:
        """Keep every note ``pattern`` matches on this machine (``*`` within a folder,
        ``**`` across any): whether it is new, and the matching notes a remote already
        has a version of (those versions, and their history, stay there)."""
        self._require_vault()
        commands = sync_commands()
        added: bool = commands.add_pattern(self.path, pattern)
        travelled: list[str] = commands.travelled_matching(self, pattern.strip())
        return added, travelled

    def remove_private_pattern(self, pattern: str) -> None:
        """Let the notes ``pattern`` kept here travel again: each goes out with its next
        change (``sync --full`` sends them all now)."""
        self._require_vault()
        sync_commands().release_pattern(self, pattern)

    def catch_up(
        self,
        namespace: str | None,
        budget: float | None = None,
        doing: str = "this session starts with",
    ) -> str:
        """Before a session start or a view of ``namespace``: what the remote has, unless
        the syncer fetched it moments ago or the remote did not answer lately; else
        fetched and merged within ``budget`` seconds (default
        ``AGENT_MEM_VAULT_SYNC_BUDGET``, 2). '' when what is here is current or nothing
        syncs, else one line saying why what is here is used (``doing`` it) and how old
        it is."""
        if not self.has_route:
            return ""
        line: str = sync_commands().catch_up(self, namespace, budget, doing)
        return line

    def delivered_twice(
        self, namespace: str | None = None, agent: str | None = None
    ) -> list[tuple[Handoff, str]]:
        """Handoffs whose note records that they were delivered on two machines (a merge
        found it: docs/sync.md), with what happened; for ``agent`` (the recipient) in
        ``namespace``, or all."""
        namespace = validate_namespace_filter(namespace)
        if agent is not None:
            agent = validate_agent(agent)
        scope = listing_scope(namespace, "handoffs")

        def run(idx: Index) -> list[tuple[Handoff, str]]:
            out = []
            for path, what in idx.delivered_twice(namespace):
                handoff = idx.handoff(path.rpartition("/")[2].removesuffix(".md"))
                if handoff is not None and (agent is None or handoff.recipient == agent):
                    out.append((handoff, what))
            return out

        return self._query(run, scope)
