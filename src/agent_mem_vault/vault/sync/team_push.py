"""Pushing in layout 2 (``layout.py``): this machine's next entry, and a read's claim.

What ``local`` changed since ``fetched`` goes as one entry on this machine's own
log, with a lease on its tip: no other machine's push can refuse it. A read's
entry goes with a create-only ``_claim/<id>`` in the same atomic push; of two
machines taking one handoff exactly one lands, and the other learns it from its
own push (``CLAIMED``) without fetching anything. A reopen takes the claim ref of
the read it undoes away in the same push. On a branch route (``team_branch.py``)
the entry goes on the branch's tip instead, which must fast-forward.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from ..format.lifecycle import status_in
from .entries import LogEntry, team_entry_message
from .fold import Tip
from .layout import fence_message, marker_message, team_prefix
from .local import FETCH_FIRST
from .team import (
    GitTexts,
    claims_on_remote,
    mine_of,
    mirror_of,
    mirror_refs,
    store_of,
)
from .team_branch import BRANCH, root
from .trees import edited_tree, empty_tree_id

if TYPE_CHECKING:
    from .engine import RouteSync

__all__ = ["CLAIMED", "LOG_MOVED", "ONE_LOG", "push"]

CLAIMED = "taken by another machine"
"""Why a claim's push was refused: another machine's claim of that handoff stands."""
ONE_LOG = "the remote keeps one log"
"""Why a new route's first push was refused: a release that knows one log made the route
there first (its log stands where the fence would go); the route follows it."""
LOG_MOVED = "this machine's log moved"
"""Why a push was refused: the remote's copy of this machine's log is not the tip this
machine knows (an answer lost on the way; or a copy of this vault on another machine)."""


def push(
    sync: RouteSync,
    commit: str,
    limit: float,
    title: str,
    claims: Sequence[str] = (),
    vouch: Mapping[str, str] | None = None,
) -> str | None:
    """Send what ``commit`` changed since ``fetched`` as this machine's next entry (with a
    create-only claim ref per id of ``claims``; ``vouch``: the notes a person vouches for,
    path → blob, sent even when nothing changed): None if the remote took it, else why
    not (``CLAIMED``, ``LOG_MOVED``, or what the remote said)."""
    known = sync._refs()
    if known.fetched is not None and not sync.is_ancestor(known.fetched, commit):
        return FETCH_FIRST  # an entry must be made on what was fetched, merged
    if sync._made.get(commit) == (known.fetched,) and commit in sync._set_by:
        changes: dict[str, tuple[str | None, str | None]] = dict(sync._set_by[commit])
    else:  # what git says: a read's commit made here knows it already (``commit_notes``)
        changes = sync.changes(known.fetched, commit)
    if not changes and not vouch:
        sync._set_refs({sync.fetched: (commit, known.fetched)})
        sync._moved(fetched=commit, fetched_tree=None)
        return None
    prefix, machine = team_prefix(sync.route), sync.config.machine
    state = sync.state()
    store = store_of(sync)
    try:
        tips = store.tips()
        if tips and state.get("fold_tree") != known.fetched_tree:
            return FETCH_FIRST  # a fold stopped half-way: folded again before any entry
        if known.marker is not None and sync.route.branch is None:
            # The refs a push reads came with ``_refs``: no listing of the mirror.
            listing = {"_layout": known.marker}
            listing.update({f"_log/{machine}": known.own} if known.own else {})
        else:  # a new route, or a branch route: every ref of the mirror
            listing = mirror_refs(sync, mirror_of(sync))
        tip = listing.get(f"_log/{machine}")
        own_tip = tip or known.mine
        mine = tips.get(machine)
        seq = max(int(state.get("seq") or 0), mine.seq if mine else 0) + 1
        lamport = max(int(state.get("lamport") or 0), store.max_lamport()) + 1
        marker = (
            _marker_specs(sync, len(commit), listing, state)
            if sync.route.branch is None
            else ([], [])
        )
        base = {p: old for p, (old, _new) in changes.items() if old is not None}
        removed = [p for p, (_old, new) in changes.items() if new is None]
        blobs = {p: new for p, (_old, new) in changes.items() if new is not None}
        message = team_entry_message(
            title,
            machine=machine,
            seq=seq,
            lamport=lamport,
            base=base,
            removed=removed,
            claims=claims,
            vouch=vouch,
        )
        tree = edited_tree(sync.git, empty_tree_id(len(commit)), blobs)
        if sync.route.branch is not None:  # on the branch's tip: it must fast-forward
            folded_tip = tips.get(BRANCH)  # as folded here, not as last fetched
            tip = folded_tip.commit if folded_tip is not None else None
            marker = ([], [])
            entry = sync._sent(tree, ["-p", tip or root(sync, len(commit))], message)
            specs = [f"{entry}:{sync.route.branch}"]
            options = [f"--force-with-lease={sync.route.branch}:{tip or ''}"]
            claims = ()  # the branch's compare-and-swap is the claim
        else:
            entry = sync._sent(tree, ["-p", own_tip] if own_tip else [], message)
            specs = [f"{entry}:{prefix}/_log/{machine}", *marker[0]]
            options = [f"--force-with-lease={prefix}/_log/{machine}:{tip or ''}", *marker[1]]
        for id in claims:
            specs.append(f"{entry}:{prefix}/_claim/{id}")
            options.append(f"--force-with-lease={prefix}/_claim/{id}:")
        for id, oid in _reopened(sync, changes, claims).items():
            specs.append(f":{prefix}/_claim/{id}")
            options.append(f"--force-with-lease={prefix}/_claim/{id}:{oid}")
        state = sync.state()  # as ``_sent`` left it (a key that signs again, said)
        state["seq"] = seq
        state["sent"] = {**(state.get("sent") or {}), entry: commit}
        records = state.get("inflight")
        for id in claims:  # what the claim ref holds if it lands (``inflight.py``)
            record = records.get(id) if isinstance(records, dict) else None
            if isinstance(record, dict):
                record.update(entry=entry, read=blobs.get(str(record.get("path"))))
        sync.save_state(state)
        refused = _send(sync, limit, specs, options, entry)
        if refused == ONE_LOG:
            _forget_sent(sync, entry)
            sync._follow_layout(1)
            return FETCH_FIRST  # fetched in layout 1, then sent there
        if refused is not None:
            _forget_sent(sync, entry)
            return refused
        # Its Lamport is past every entry applied here, so the fold takes each of its
        # notes as it is: ``fetched`` is ``commit`` now (once the refs say so).
        sent = LogEntry(entry, machine, seq, lamport, blobs, removed, base, list(claims))
        sent.parent = own_tip if sync.route.branch is None else tip
        sent.vouch = dict(vouch or {})
        sync.sent_entry = (sent, known.fetched_tree)
        store.fold(
            sent.changes(),
            {BRANCH if sync.route.branch else machine: Tip(entry, seq, lamport)},
            lambda paths: {p: changes[p][0] if p in changes else None for p in paths},
            GitTexts(sync),
        )
    finally:
        store.close()
    moves: dict[str, tuple[str | None, str | None]] = {
        sync.fetched: (commit, known.fetched),
        f"{mirror_of(sync)}/_log/{machine}": (entry, None),
        mine_of(sync): (entry, None),
    }
    if sync.route.branch is not None:
        moves = {
            sync.fetched: (commit, known.fetched),
            f"{mirror_of(sync)}/{BRANCH}": (entry, None),
        }
    if marker[0]:
        moves[f"{mirror_of(sync)}/_layout"] = (marker[0][0].split(":", 1)[0], None)
    sync._set_refs(moves)
    tree = known.local_tree if known.local == commit and known.local_tree else sync._tree(commit)
    _forget_sent(sync, entry, lamport=lamport, fold_tree=tree)
    sync._moved(fetched=commit, fetched_tree=tree)
    return None


def _marker_specs(
    sync: RouteSync, digits: int, listing: dict[str, str], state: dict[str, object]
) -> tuple[list[str], list[str]]:
    """What a push adds when the remote has no marker: on a new route, the marker and the
    fence on layout 1's log name, create-only, with its first entry (of two machines
    making the route at once, one lands; the other fetches and goes on); on a route that
    lost its marker, the marker as it was."""
    prefix = team_prefix(sync.route)
    if "_layout" in listing:
        return [], []
    lease = f"--force-with-lease={prefix}/_layout:"
    seen = state.get("marker")
    if isinstance(seen, str):
        return [f"{seen}:{prefix}/_layout"], [lease]
    tree = edited_tree(sync.git, empty_tree_id(digits), {})
    marker = sync._sent(tree, [], marker_message(sync.route, None))
    if any(name.startswith("_log/") for name in listing) or "_checkpoint" in listing:
        return [f"{marker}:{prefix}/_layout"], [lease]
    fence = sync._sent(tree, [], fence_message(marker))
    return (
        [f"{marker}:{prefix}/_layout", f"{fence}:{sync.route.log_ref}"],
        [lease, f"--force-with-lease={sync.route.log_ref}:"],
    )


def _reopened(
    sync: RouteSync, changes: dict[str, tuple[str | None, str | None]], claims: Sequence[str]
) -> dict[str, str]:
    """Handoffs this entry makes pending again after a read (a reopen, a claim put back):
    their claim refs go with the same push, so the next reader can take them. (A
    claim's own note goes the other way: it is not looked at.)"""
    taken = {f"{c}.md" for c in claims}
    pairs = {
        p: (old, new)
        for p, (old, new) in changes.items()
        if old is not None
        and new is not None
        and "/handoffs/" in p
        and p.rsplit("/", 1)[-1] not in taken
    }
    if not pairs:
        return {}
    texts = sync.blobs(sorted({b for pair in pairs.values() for b in pair}))
    undone = {
        p.rsplit("/", 1)[-1].removesuffix(".md"): (p, old)
        for p, (old, new) in pairs.items()
        if status_in(texts.get(old, ""))[0] == "read"
        and status_in(texts.get(new, ""))[0] == "pending"
    }
    if not undone:
        return {}
    refs = claims_on_remote(sync, list(undone))
    if not refs:
        return {}
    # Only the claim whose read this undoes: a newer one (taken again elsewhere since)
    # names another version of the note, or one this machine has not even fetched.
    asked = [f"{oid}:{undone[id][0]}" for id, oid in refs.items()]
    found = (
        sync.git.run(
            "cat-file",
            "--batch-check=%(objectname)",
            input="".join(f"{a}\n" for a in asked).encode(),
        )
        .out.decode()
        .splitlines()
    )
    return {
        id: oid
        for (id, oid), blob in zip(refs.items(), found, strict=True)
        if blob == undone[id][1]
    }


def _send(
    sync: RouteSync, limit: float, specs: list[str], options: list[str], entry: str
) -> str | None:
    result, refused = sync.push_refs(limit, specs, options, atomic=len(specs) > 1)
    if result.status == 0 and not refused:
        # Taken: ``fetched`` no longer holds the store's fold until ``push`` has folded it.
        sync._remember(pushed=True, unsent=entry, said={"fold_tree": None})
        return None
    if not refused:
        raise sync._failed(result)
    prefix = team_prefix(sync.route)
    if sync.route.branch is not None and any(
        word in r for r in refused for word in ("stale info", "fetch first", "non-fast-forward")
    ):
        return FETCH_FIRST  # another machine's entry went first: fetched, then again
    claim_lines = [r for r in refused if f"{prefix}/_claim/" in r.split("\t")[1]]
    if any("stale info" in r for r in claim_lines) or (
        f"cannot lock ref '{prefix}/_claim/" in result.err and "already exists" in result.err
    ):
        return CLAIMED
    log = f"{prefix}/_log/{sync.config.machine}"
    if any(log in r and "stale info" in r for r in refused):
        return LOG_MOVED
    fence = f":{sync.route.log_ref}"
    if any(r.split("\t")[1].endswith(fence) and "stale info" in r for r in refused if "\t" in r):
        return ONE_LOG  # the fence's lease failed: a one-log release made the route first
    cause = [r for r in refused if "atomic" not in r] or refused
    return cause[0].rsplit("\t", 1)[-1]


def _forget_sent(
    sync: RouteSync, entry: str, lamport: int | None = None, fold_tree: str | None = None
) -> None:
    """``entry`` is answered (taken or refused): no longer written down as sent; taken,
    its Lamport applied here and ``fetched`` holding the store's fold (``fold_tree``)."""
    state = sync.state()
    sent = state.get("sent")
    if isinstance(sent, dict):
        sent.pop(entry, None)
    if lamport is not None:
        state["lamport"] = max(int(state.get("lamport") or 0), lamport)
    if fold_tree is not None:
        state["fold_tree"] = fold_tree
    sync.save_state(state)
