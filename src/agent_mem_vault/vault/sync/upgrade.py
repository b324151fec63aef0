"""Moving a route from layout 1 to layout 2 (``layout.py``) in one atomic push.

The machine that upgrades first sends everything it has and takes everything
the remote has (a whole sync), then pushes, in one atomic push:

- ``_layout``, the marker, create-only;
- ``_checkpoint``, every note as layout 1 held it, create-only: each machine's
  fold starts there;
- the **fence** on layout 1's log, with a lease on the log's tip as fetched;
- on the vault's own remote, ``main`` set to the checkpoint, for a plain clone.

Of two machines upgrading at once exactly one lands; a machine that wrote to
layout 1's log meanwhile moved its tip, so the upgrade is refused and tried
again with what it wrote. After it, a machine of this release finds the fence
at its next fetch and follows (``engine.RouteSync.fetch``): what it had not
sent goes out as its first entry, with the notes it was made on as its base. A
release that knows only layout 1 reads the fence as a checkpoint it cannot
find, and stops (``remote_moved``): it delivers nothing and sends nothing, and
its writes wait on that machine until it is upgraded.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ...core.errors import UnavailableError
from .engine import PATIENT, RouteSync, net_timeout, sync_route
from .layout import checkpoint_message, fence_message, marker_message, team_prefix
from .local import RouteReport
from .routes import route_named
from .trees import edited_tree, empty_tree_id

if TYPE_CHECKING:
    from ..ops.base import VaultBase
    from .routes import Route

__all__ = ["Upgraded", "upgrade"]

TRIES = 5
"""Upgrades tried while other machines keep writing to layout 1's log."""


@dataclass(frozen=True, slots=True)
class Upgraded:
    """A route in layout 2 now; ``already``: it was (here, or on the remote)."""

    route: Route
    already: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {
            "remote": self.route.url or self.route.remote,
            "namespace": self.route.namespace,
            "layout": self.route.layout,
            "already": self.already,
        }


def upgrade(vault: VaultBase, namespace: str | None = None) -> Upgraded:
    """Move the route of ``namespace`` (None: the vault's) to layout 2, for every machine
    that uses it."""
    config, route = route_named(
        vault.path, namespace, "'agent-mem-vault sync --status' lists the routes there are"
    )
    if route.layout == 2:
        return Upgraded(route, already=True)
    for _ in range(TRIES):
        # Everything here on the remote, everything there here: the checkpoint is whole.
        sync_route(vault, config, route)
        sync = RouteSync(vault, config, route)
        with sync.network_turn():
            theirs = sync.fetch(max(net_timeout(), PATIENT))
            with vault._held(), vault._locked():
                sync.integrate(theirs, RouteReport(sync.route))
            if sync.route.layout == 2:  # another machine upgraded it: this one followed
                return Upgraded(sync.route, already=True)
            local, fetched = sync.heads()
            if local is not None and (fetched is None or not sync.is_ancestor(local, fetched)):
                continue  # written here meanwhile: sent first
            if _moved(sync) is None:
                sync._follow_layout(2)
                theirs = sync.fetch(max(net_timeout(), PATIENT))
                with vault._held(), vault._locked():
                    sync.integrate(theirs, RouteReport(sync.route))
                return Upgraded(sync.route)
    raise UnavailableError(
        f"{route.label} kept moving: other machines wrote to it through {TRIES} tries; "
        "run 'agent-mem-vault sync upgrade' again in a moment",
        code="sync_busy",
    )


def _moved(sync: RouteSync) -> str | None:
    """The one atomic push (the caller has the route's turn): None if it landed, else
    why not."""
    known = sync._refs()
    route, prefix = sync.route, team_prefix(sync.route)
    digits = len(known.fetched or known.log or "0" * 40)
    empty = edited_tree(sync.git, empty_tree_id(digits), {})
    notes = known.fetched_tree or (sync._tree(known.fetched) if known.fetched else empty)
    checkpoint = sync._sent(notes, [], checkpoint_message())
    marker = sync._sent(empty, [], marker_message(route, 1))
    fence = sync._sent(empty, ["-p", known.log] if known.log else [], fence_message(marker))
    # The vault's remote keeps its notes on ``main`` too, for a plain clone.
    plain = [f"+{checkpoint}:{route.ref}"] if route.repo is None else []
    return sync._send(
        max(net_timeout(), PATIENT),
        f"{marker}:{prefix}/_layout",
        f"{checkpoint}:{prefix}/_checkpoint",
        f"{fence}:{route.log_ref}",
        *plain,
        atomic=True,
        options=(
            f"--force-with-lease={prefix}/_layout:",
            f"--force-with-lease={prefix}/_checkpoint:",
            f"--force-with-lease={route.log_ref}:{known.log or ''}",
        ),
    )
