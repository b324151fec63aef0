"""Under ``require``, a read no listed key signed does not take a handoff from the team.

An entry no listed key signed that marks a pending handoff read (an outsider's
``ack``, or a read by a machine whose key the team does not list) would otherwise
hide that handoff from every agent of the team: the fold counts it like any read.
So after each fetch of a route whose policy is ``require`` this machine reopens each
handoff whose last change was such a read (``VerdictStore.read_outside``), where the
text is the team's (a handoff an outsider wrote is quarantined anyway). The reopen
is this machine's own change, signed as it signs, and takes the outsider's claim ref
away as it goes out (``team_push``): every machine folds the handoff pending again,
and a team agent takes it once.

A handoff changed on the remote since the outsider's read, or whose status changed
here, is left for a person (``trust quarantine``, ``doctor``), as is one an outsider
superseded.
"""

from __future__ import annotations

import logging
from dataclasses import replace
from typing import TYPE_CHECKING

from ...core.errors import AgentMemVaultError
from ..format.lifecycle import status_in
from .origins import origins_of
from .verdicts import VerdictStore, store_path

if TYPE_CHECKING:
    from ..ops.base import VaultBase
    from .engine import RouteSync

__all__ = ["reopen_read_outside"]

_log = logging.getLogger(__name__)


def reopen_read_outside(vault: VaultBase, sync: RouteSync) -> list[str]:
    """Reopen, here, the handoffs of ``sync``'s route an unlisted key marked read; the ids
    reopened (the caller commits and sends them). The route's turn is held, the vault
    lock is not."""
    from ..ops.handoffs import HandoffOps

    route = sync.route
    where = store_path(sync.root, route)
    if route.trust != "require" or not isinstance(vault, HandoffOps) or not where.exists():
        return []
    with VerdictStore(where, read_only=True) as store:
        rows = store.read_outside()
    if not rows:
        return []
    fetched = sync.heads()[1]
    tree = None if fetched is None else sync.fetched_tree(fetched)
    have = sync.entries(tree, [path for path, _before, _after in rows])
    out: list[str] = []
    for path, _before, after in rows:
        try:
            text = (sync.root / path).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        if have.get(path) != after or status_in(text) != ("read", None):
            continue  # changed since on the remote, or its status here: a person looks
        origin = origins_of(sync.root, sync.config, route, {path: text}).get(path)
        if origin is None or not replace(origin, touched=None).trusted:
            continue  # its text is not the team's: it stays out of every agent's way anyway
        id = path.rsplit("/", 1)[-1].removesuffix(".md")
        try:
            if vault.get_handoff(id).path != path:
                continue  # another note by that name: a person looks
            vault.reopen_handoff(id)
        except AgentMemVaultError as error:
            _log.warning(
                "%s: handoff %s, read outside the team, not reopened: %s", route.label, id, error
            )
            continue
        out.append(id)
    return out
