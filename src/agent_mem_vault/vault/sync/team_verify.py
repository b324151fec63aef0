"""Judging a log-per-machine route's entries as they arrive (``verdicts.py``).

After each fetch of a route that checks signatures (``signers.py``), the entries
of every log past the last ones judged are read (git's log and one ``diff-tree``,
as the fold reads them) and judged. After this process's own push, its entry is
judged from what the push knew of it, where nothing else changed since the last
check. The first time, after the fold starts again from another checkpoint, or
when a log went back, every entry past the checkpoint is judged again and what
was recorded of each note is kept only where its blob is unchanged.
"""

from __future__ import annotations

import json
import logging
from typing import TYPE_CHECKING

from .checkpoint_verdicts import adopt_verdicts, notes_of
from .entries import LogEntry, read_entries
from .signers import trust_for
from .signers_branch import adopt
from .team import covered_of, mirror_of, mirror_refs, present
from .team_branch import BRANCH
from .trees import empty_tree_id
from .verdicts import VerdictStore, judge, store_path

if TYPE_CHECKING:
    from .engine import RouteSync
    from .verify import AllowedSigners

__all__ = ["check_arrivals"]

_log = logging.getLogger(__name__)


def check_arrivals(sync: RouteSync) -> None:
    """Judge what reached ``fetched`` since the last call (the route's turn is held). It
    never stops a sync: a failure is logged, and what it did not judge shows as not
    verified in every view (``origins.origins_of``) until the next call judges it."""
    try:
        if sync.route.signers_branch is not None:
            adopt(sync)  # the team's list as its branch now says, change by change
        trust = trust_for(sync.root, sync.route)
        if not trust.checks or trust.signers is None:
            return
        _check(sync, trust.signers)
    except Exception as error:  # hostile entries must not stop what sync does
        _log.warning("%s: what arrived was not checked: %r", sync.route.label, error)


def _check(sync: RouteSync, signers: AllowedSigners) -> None:
    sent, sync.sent_entry = sync.sent_entry, None
    known = sync._refs()
    tree = known.fetched_tree or (sync._tree(known.fetched) if known.fetched else None)
    if tree is None:
        return
    if sent is not None and _after_own_push(sync, signers, *sent, tree):
        return
    refs = mirror_refs(sync, mirror_of(sync))
    if sync.route.branch is not None:
        logs = {BRANCH: refs[BRANCH]} if BRANCH in refs else {}
    else:
        logs = {n.removeprefix("_log/"): c for n, c in refs.items() if n.startswith("_log/")}
    state = sync.state()
    covered = covered_of(state)
    checkpoint = str(state.get("checkpoint") or "")
    where = store_path(sync.root, sync.route)
    with VerdictStore(where) as store:
        judged = json.loads(store.meta("tips") or "{}")
        last_tree = store.meta("tree")
        whole = store.meta("checkpoint") != checkpoint or last_tree is None
        relisted = store.meta("signers") != signers.digest  # ``judge`` judges all again
        previous = store.meta("checkpoint")
        if checkpoint and previous != checkpoint:  # what its writer knew
            adopt_verdicts(sync, signers, checkpoint, store, previous or None)
    moved = logs if whole else {m: c for m, c in logs.items() if judged.get(m) != c}
    # A log that went back (or away) takes entries with it: every note is recorded again.
    whole = (
        whole
        or any(m in judged and not sync.is_ancestor(judged[m], c) for m, c in moved.items())
        or any(m not in logs for m in judged)
    )
    if whole:
        moved = logs
    if not moved and not whole and not relisted:
        return
    since = [] if whole else [judged[m] for m in moved if m in judged]
    heads = present(sync, [*since, *(c for c, _ in covered.values())])
    entries = [
        e
        for e in read_entries(sync.git, list(moved.values()), heads, empty_tree_id(len(tree)))
        if e.seq > covered.get(e.machine, ("", 0))[1]  # the checkpoint holds the rest
    ]
    touched = sorted({c.path for e in entries for c in e.changes()})
    start = (sync._tree(checkpoint) if checkpoint else None) if whole else last_tree
    had = sync.entries(start, touched)
    found = sync.entries(tree, touched)
    before = {p: had.get(p) for p in touched}
    finals = {p: found.get(p) for p in touched}
    held: dict[str, str] | None = None
    if whole:  # every note of the fold, to keep what is recorded of those unchanged
        held = notes_of(sync, tree)
    judge(sync, signers, entries, before, finals, held)
    with VerdictStore(where) as store:
        store.set_meta("tips", json.dumps(logs, sort_keys=True))
        store.set_meta("checkpoint", checkpoint)
        store.set_meta("tree", tree)


def _after_own_push(
    sync: RouteSync, signers: AllowedSigners, sent: LogEntry, made_on: str | None, tree: str
) -> bool:
    """Judge the entry this process just pushed, from what it knows of it, where it is the
    only change since the last check (it was made on the tree last judged): a read's claim
    or a write costs no log read and no tree listed. False where that is not so: the
    caller reads the logs."""
    name = BRANCH if sync.route.branch is not None else sync.config.machine
    where = store_path(sync.root, sync.route)
    with VerdictStore(where) as store:
        judged = json.loads(store.meta("tips") or "{}")
        fits = (
            made_on is not None
            and store.meta("tree") == made_on
            and store.meta("signers") == signers.digest
            and store.meta("checkpoint") == str(sync.state().get("checkpoint") or "")
            and sent.parent is not None
            and judged.get(name) == sent.parent
        )
    if not fits:
        return False
    paths = [*sent.changed, *(p for p in sent.removed if p not in sent.changed)]
    before = {p: sent.base.get(p) for p in paths}
    finals = {p: sent.changed.get(p) for p in paths}
    judge(sync, signers, [sent], before, finals)
    with VerdictStore(where) as store:
        store.set_meta("tips", json.dumps({**judged, name: sent.commit}, sort_keys=True))
        store.set_meta("tree", tree)
    return True
