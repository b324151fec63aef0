"""A layout-2 route's checkpoint: every note at a frontier of the machines' logs.

A machine that joins, or folds again from the start (a log that went back, a
lost store), reads the checkpoint and only the entries after the one of each
machine it holds, not every entry since the route began. A machine writes one
right after a fetch of every log, once ``EVERY`` entries lie past the checkpoint
it folds from: its ``fetched`` tree, with the frontier of the entries in it (and,
where this machine checks signatures, who wrote each note: ``checkpoint_verdicts``),
pushed with a lease on the checkpoint it adopted, so whichever stands is one
that some machine folded whole. On the vault's own remote ``main`` follows, for
a plain clone. Every machine adopts the new one at its next fetch and folds the
entries past it again (a thousand at most), so machines on one checkpoint fold
alike.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from ...core.errors import AgentMemVaultError
from .checkpoint_verdicts import with_verdicts
from .layout import checkpoint_message, team_prefix
from .team import store_of

if TYPE_CHECKING:
    from .engine import RouteSync

__all__ = ["EVERY", "checkpoint_if_due"]

EVERY = 1000
"""Entries past the checkpoint from which a machine writes a new one."""
JUST_FETCHED = 10.0
"""Seconds after a fetch of every log that a checkpoint may be made from it."""


def checkpoint_if_due(sync: RouteSync, limit: float) -> bool:
    """A new checkpoint of the route, if one is due and this machine folded every log a
    moment ago (the caller has the route's turn); whether one was written."""
    state = sync.state()
    known = sync._refs()
    seen = state.get("last_full_fetch")
    if (
        sync.route.branch is not None  # one branch: every machine reads it from its start
        or known.fetched is None
        or known.fetched_tree is None
        or state.get("fold_tree") != known.fetched_tree
        or not isinstance(seen, int | float)
        or not 0 <= time.time() - seen < JUST_FETCHED
    ):
        return False
    store = store_of(sync)
    try:
        if store.count() < EVERY:
            return False
        tips = store.tips()
        lamport = store.max_lamport()
    finally:
        store.close()
    adopted = state.get("checkpoint")
    if state.get("checkpoint_tried") == [adopted, len(tips), lamport]:
        return False  # tried on this very fold: another machine's stands
    state["checkpoint_tried"] = [adopted, len(tips), lamport]
    sync.save_state(state)
    frontier = {m: (t.commit, t.seq) for m, t in tips.items()}
    tree = with_verdicts(sync, known.fetched_tree, frontier)  # who wrote each note, said
    checkpoint = sync._sent(tree, [], checkpoint_message(frontier, lamport))
    prefix = team_prefix(sync.route)
    plain = [f"+{checkpoint}:{sync.route.ref}"] if sync.route.repo is None else []
    try:
        refused = sync._send(
            limit,
            f"{checkpoint}:{prefix}/_checkpoint",
            *plain,
            atomic=bool(plain),
            options=(f"--force-with-lease={prefix}/_checkpoint:{adopted or ''}",),
        )
    except AgentMemVaultError:
        return False  # only joining is slower: tried again after the next entries
    return refused is None
