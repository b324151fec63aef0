"""Under ``require``, a read, supersede, forget or removal no listed key signed does not
count.

An entry no listed key signed may leave a note's words as they were and change only
its lifecycle, tags or writer pair: an outsider's ``ack`` or read of a pending
handoff, a supersede that names a handoff of his own as the live one, a forget of a
team memory or an update that retires it. Or it may remove the note from the
remote's tree altogether. The fold counts each like a teammate's,
so the team would lose that handoff or memory to a key it does not list. So after
each fetch of a route whose policy is ``require``, this machine puts back the version
the team's own entry had left (``VerdictStore.changed_outside``), where the note's
text is the team's (what an outsider wrote is quarantined anyway). Putting back is
this machine's own change, signed as it signs (a removed note is written again, as
the team left it); a handoff made pending again loses
the outsider's claim ref as it goes out (``team_push``), and a team agent takes it
once. A handoff a listed key ever marked read is never made pending again.

A note changed on the remote or here since the outsider's change, or changed by him
more than once, is left as it is for a person (``trust quarantine``, ``doctor``), as is
one this machine put back ``PUT_BACK_AT_MOST`` times already: two machines whose lists
disagree would otherwise put each other's changes back without end.
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

__all__ = ["PUT_BACK_AT_MOST", "undo_outside_changes"]

PUT_BACK_AT_MOST = 3
"""Times a machine puts back one note; then it is left for a person."""

_log = logging.getLogger(__name__)


def undo_outside_changes(
    vault: VaultBase, sync: RouteSync, trees: tuple[str | None, str | None] = (None, None)
) -> list[str]:
    """Put back, here, what the team had left of each note of ``sync``'s route whose
    lifecycle alone an unlisted key changed; the paths put back (the caller commits and
    sends them). ``trees``: those of ``local`` and ``fetched`` before the fetch, so
    that a note this machine removed and has not sent is not written back. The route's
    turn is held, the vault lock is not."""
    from ..ops.outsiders import OutsiderOps

    route = sync.route
    where = store_path(sync.root, route)
    if route.trust != "require" or not isinstance(vault, OutsiderOps) or not where.exists():
        return []
    with VerdictStore(where, read_only=True) as store:
        rows = store.changed_outside()
    if not rows:
        return []
    fetched = sync.heads()[1]
    tree = None if fetched is None else sync.fetched_tree(fetched)
    have = sync.entries(tree, [path for path, *_ in rows])
    gone = [path for path, _b, after, _t in rows if after == ""]
    ours, theirs = (sync.entries(t, gone) for t in trees)
    mine = {path for path in gone if path in theirs and path not in ours}  # removed here
    texts = sync.blobs(sorted({b for _p, before, after, _t in rows for b in (before, after) if b}))
    out: list[str] = []
    state = sync.state()
    said = state.get("put_back")
    times: dict[str, int] = dict(said) if isinstance(said, dict) else {}
    for path, before, after, taken in rows:
        if int(times.get(path) or 0) >= PUT_BACK_AT_MOST:
            continue
        removed = after == ""
        if path in mine:
            continue  # this machine removed it too: its removal goes out as it is
        was, now = texts.get(before), (None if removed else texts.get(after))
        if was is None or (now is None and not removed) or have.get(path) != (after or None):
            continue  # changed since on the remote: a person looks
        if taken and "/handoffs/" in path and status_in(was)[0] == "pending":
            continue  # the team read it once: never pending again
        origin = origins_of(sync.root, sync.config, route, {path: now or was}).get(path)
        if origin is None or not replace(origin, touched=None).trusted:
            continue  # its text is not the team's: it stays out of every agent's way anyway
        try:
            # Refused where it changed here since (or, removed, was written here again).
            done = vault.write_back(path, was) if now is None else vault.put_back(path, now, was)
            if done:
                out.append(path)
                times[path] = int(times.get(path) or 0) + 1
        except AgentMemVaultError as error:
            _log.warning(
                "%s: %s, changed outside the team, not put back: %s", route.label, path, error
            )
    if out:
        sync.save_state({**sync.state(), "put_back": times})
    return out
