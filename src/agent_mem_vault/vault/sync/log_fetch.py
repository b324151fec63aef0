"""Fetching a layout-1 route: one log for every machine, and its checkpoint (``log.py``).

The log's new entries are applied, in order, to ``fetched`` (a commit made on
this machine); from the checkpoint when the log was folded into one, or when the
log went back (a backup restored, refs written again by a machine that had not
fetched them), then unlinked from what was fetched before, so that it merges
with no common version. ``engine.RouteSync.fetch`` calls it for a route whose
layout is 1, holding the route's turn.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...core.errors import RemoteError
from .log import Entry, log_position
from .log import entries as log_entries
from .trees import edited_tree

if TYPE_CHECKING:
    from .engine import RouteSync
    from .heads import Heads

__all__ = ["fetch"]


def fetch(sync: RouteSync, limit: float) -> str | None:
    """What the remote has for the route: its log's new entries fetched and applied
    to ``fetched`` (``log.py``); None when the remote has nothing yet (the caller has
    the route's turn)."""
    before = sync._refs()
    whole = before.fetched is None
    _fetch_refs(sync, whole, limit)
    now = sync._refs()
    if not whole and now.log is None:
        _fetch_refs(sync, True, limit)  # the log went: is the checkpoint there?
        now, whole = sync._refs(), True
    if before.fetched is not None and now.log is None and now.checkpoint is None:
        # The remote lost the route's refs (a `push --mirror` from a clone that never
        # fetched them, a ref deleted by hand): it is treated as a new remote, and
        # the next push writes every note of this machine there again, as a join
        # does. What others wrote meanwhile merges by fields when it comes back.
        sync._set_refs({sync.fetched: (None, None), sync.applied: (None, None)})
        sync._known = None
        return None
    entries = []
    if now.log is not None and not whole and now.log != before.applied:
        entries = log_entries(sync.git, before.applied, now.log)
    linked = True
    if now.log is not None and not whole and now.log != before.applied and not entries:
        # The log went back to an entry before the one applied here: the remote lost
        # the entries after it (a backup restored; or its refs deleted and written
        # again, by a machine that had not fetched them, as the very commits it had
        # sent before). It is read whole, as no later state of what was fetched here.
        _fetch_refs(sync, True, limit)
        now, whole, linked = sync._refs(), True, False
    if not whole and any(e.checkpoint for e in entries):
        # Many notes changed at once: start again from the checkpoint they went to.
        _fetch_refs(sync, True, limit)
        now, whole = sync._refs(), True
        # Or a log that does not go on from what this machine applied: the remote
        # lost it and another machine wrote its notes there again (a checkpoint, as a
        # join does). What arrives is then no later state of what was fetched here,
        # so it merges with no common version: by fields, where read wins.
        if before.applied is not None and now.log is not None:
            linked = sync.is_ancestor(before.applied, now.log)
    if whole:
        return _apply_whole(sync, now, linked)
    if not entries:
        return now.fetched
    assert now.fetched is not None and now.fetched_tree is not None
    return _apply(sync, now, now.fetched_tree, entries, [now.fetched])


def _fetch_refs(sync: RouteSync, checkpoint: bool, limit: float) -> None:
    """Fetch the route's log (and its checkpoint); a ref the remote does not have
    (a remote with nothing yet, or written before the log) is left out."""
    specs = {sync.route.log_ref: f"+{sync.route.log_ref}:{sync.log}"}
    if checkpoint:
        specs[sync.route.ref] = f"+{sync.route.ref}:{sync.checkpoint}"
    while specs:
        result = sync.fetch_refs(limit, list(specs.values()))
        if result.status == 0:
            break
        missing = [r for r in specs if f"couldn't find remote ref {r}" in result.err]
        if not missing:
            raise sync._failed(result)
        for ref in missing:
            del specs[ref]
            sync._set_refs(
                {sync.log if ref == sync.route.log_ref else sync.checkpoint: (None, None)}
            )
    sync._remember(fetched=True)
    sync._known = None


def _apply_whole(sync: RouteSync, now: Heads, linked: bool = True) -> str | None:
    """``fetched`` made from the checkpoint and the log's entries after the point
    it names (all of them, for a checkpoint written before the log); a child of the
    ``fetched`` before it unless the remote was written again from elsewhere
    (``linked`` false)."""
    if now.checkpoint is None and now.log is None:
        return now.fetched  # a remote with nothing yet
    point = None
    if now.checkpoint is None:
        assert now.log is not None
        tree, parents = sync._empty_tree(len(now.log)), []
    else:
        tree, parents = sync._tree(now.checkpoint), [now.checkpoint]
        point = log_position(sync.git, now.checkpoint)
    if now.fetched is not None and linked:
        parents.insert(0, now.fetched)
    entries = log_entries(sync.git, point, now.log) if now.log is not None else []
    return _apply(sync, now, tree, entries, parents)


def _apply(sync: RouteSync, now: Heads, tree: str, entries: list[Entry], parents: list[str]) -> str:
    """``fetched`` made ``tree`` with ``entries`` applied in order (a new commit, its
    parents ``parents``), then ``applied`` moved to the log's tip: ``fetched`` first,
    as applying an entry twice changes nothing."""
    # An entry of this machine whose push went unanswered: the remote has that commit.
    sent = sync.state().get("sent")
    found = [e.commit for e in entries if isinstance(sent, dict) and e.commit in sent]
    ours = [sent[c] for c in found] if isinstance(sent, dict) else []
    marks = [i for i, e in enumerate(entries) if e.checkpoint is not None]
    if marks:  # many notes changed at once: what came before the last such push is in it
        checkpoint = entries[marks[-1]].checkpoint
        assert checkpoint is not None
        if checkpoint != now.checkpoint:
            raise RemoteError(
                f"{sync.route.label} changed while it was read (its log points at a "
                f"checkpoint {checkpoint[:12]} it does not hold); run "
                "'agent-mem-vault sync' again",
                code="remote_moved",
            )
        tree, entries = sync._tree(checkpoint), entries[marks[-1] + 1 :]
        parents = [*parents, checkpoint]
    parents = [*parents, *ours]
    changes: dict[str, str | None] = {}
    for entry in entries:
        for path in entry.removed:
            changes[path] = None
        changes.update(entry.changed)
    mine = {p: b for p, b in changes.items() if sync.config.covers(sync.route, p)}
    new_tree = edited_tree(sync.git, tree, mine) if mine else tree
    commit = sync.git.commit_tree(new_tree, parents, f"the remote at {now.log}")
    sync._made[commit] = tuple(dict.fromkeys(parents))
    sync._set_refs({sync.fetched: (commit, now.fetched), sync.applied: (now.log, now.applied)})
    if found:
        sync._unsent(*found)
    sync._moved(fetched=commit, fetched_tree=new_tree, applied=now.log)
    return commit
