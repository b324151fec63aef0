"""The sync operations of ``Vault``: join a remote, sync now, look, and what arrived twice.

Each method is one call into ``vault/sync`` (imported when called: a vault that
does not sync never imports it). The manual is docs/sync.md.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from .base import SYNC_CONFIG, VaultBase
from .index import Index
from .namespaces import validate_agent, validate_namespace

if TYPE_CHECKING:
    from .models import Handoff
    from .sync.operations import RouteStatus, SyncReport
    from .sync.routes import Route

__all__ = ["SyncOps"]


class SyncOps(VaultBase):
    """A vault's notes travelling with git (``vault/sync``)."""

    def join_remote(self, remote: str) -> SyncReport:
        """Send the whole vault through ``remote`` (any URL or path git accepts), merging
        what it holds already; then every write goes out by itself.

        >>> vault.join_remote("git@git.example:me/vault.git")  # doctest: +SKIP
        """
        from .sync.operations import join_remote

        return join_remote(self, remote)

    def join_project(
        self, namespace: str, repo: str | os.PathLike[str], remote: str = "origin"
    ) -> SyncReport:
        """Send ``namespace`` through the project's own repository (a clone at ``repo``
        and its remote ``remote``), on a ref that is not a branch."""
        from .sync.operations import join_project

        return join_project(self, namespace, repo, remote)

    def leave_remote(self, namespace: str | None = None) -> Route:
        """Stop syncing the vault (or ``namespace``'s project route); notes stay."""
        from .sync.operations import leave

        if namespace is not None:
            namespace = validate_namespace(namespace)
        return leave(self, namespace)

    def sync(self) -> SyncReport:
        """Commit, fetch, merge and push every route now; each route's failure is in its
        report (``SyncReport.ok``)."""
        from .sync.operations import sync_all

        self._require_vault()
        return sync_all(self)

    def sync_status(self) -> tuple[RouteStatus, ...]:
        """Each route's remote, ahead/behind as of the last fetch and the last error,
        without asking the remote; () for a vault that does not sync."""
        self._require_vault()
        if not os.path.exists(f"{self.path}/{SYNC_CONFIG}"):
            return ()
        from .sync.operations import status

        return status(self)

    def catch_up(self, namespace: str | None, budget: float | None = None) -> str:
        """Fetch and merge what the remote has for ``namespace`` within ``budget`` seconds
        (default ``AGENT_MEM_VAULT_SYNC_BUDGET``, 2): '' when done or nothing syncs,
        else one line saying why what is here is used (for the session hook)."""
        if not os.path.exists(f"{self.path}/{SYNC_CONFIG}"):
            return ""
        from .sync.operations import catch_up

        return catch_up(self, namespace, budget)

    def delivered_twice(
        self, namespace: str | None = None, agent: str | None = None
    ) -> list[tuple[Handoff, str]]:
        """Handoffs whose note records that they were delivered on two machines (a merge
        found it: docs/sync.md), with what happened; for ``agent`` (the recipient) in
        ``namespace``, or all."""
        if namespace is not None:
            namespace = validate_namespace(namespace)
        if agent is not None:
            agent = validate_agent(agent)
        scope = [] if namespace is None else [(namespace, "handoffs")]

        def run(idx: Index) -> list[tuple[Handoff, str]]:
            out = []
            for path, what in idx.delivered_twice(namespace):
                handoff = idx.handoff(path.rpartition("/")[2].removesuffix(".md"))
                if handoff is not None and (agent is None or handoff.recipient == agent):
                    out.append((handoff, what))
            return out

        return self._query(run, scope)
