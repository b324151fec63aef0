"""Keeping a layout-2 remote's refs bounded: claim refs go once no claim can need them.

Every read leaves ``_claim/<id>`` on the remote (``team.py``). It is a lock, not
the state: the state is the taker's entry, which landed in the same atomic push.
So a claim ref can go once every machine that could claim the handoff would see
that entry first. A machine claims only on a view of every log fetched less than
``FRESH`` seconds before (``team_claim.py``); a ref goes ``GRACE`` seconds after
this machine first listed it, and only when its entry is folded here. A claim
made after the ref went rests on a fetch that began after the entry landed, which
read it: that view holds the handoff read. Only each clock's rate matters, not
how far apart two machines' clocks are.

A syncer prunes at most once every ``EVERY`` seconds, right after a fetch of
every log; a refused delete means another machine pruned first.

Logs go too, so that a team whose CI jobs are each a machine of their own does
not gather one ref per job for ever: a log that the checkpoint holds whole and
that has not moved for ``IDLE`` seconds is deleted with a lease on its tip.
Readers keep its tip, so nothing is folded again; its machine, if it writes once
more, pushes the log back as it was, with its new entry on top.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from .layout import message_facts, team_prefix
from .team import claims_on_remote, covered_of, mirror_refs, store_of
from .team_claim import GRACE

if TYPE_CHECKING:
    from .engine import RouteSync

__all__ = ["EVERY", "IDLE", "prune_claims", "prune_logs"]

EVERY = 60.0
"""Seconds between two looks at a remote's claim refs by one machine."""
IDLE = 24 * 3600.0
"""Seconds a log the checkpoint holds whole stays unmoved before it is let go."""
_BATCH = 500
"""Claim refs one push deletes."""


def prune_claims(sync: RouteSync, limit: float, now: float | None = None) -> int:
    """Delete the claim refs whose entries every machine has had ``GRACE`` seconds to
    fetch (the caller has just fetched every log, holding the route's turn); how many
    went."""
    now = time.time() if now is None else now
    state = sync.state()
    last = state.get("pruned_at")
    if isinstance(last, int | float) and 0 <= now - last < EVERY:
        return 0
    claims = claims_on_remote(sync)
    # When each claim ref, as it is now, was first listed: a handoff reopened and taken
    # again has a new ref, whose grace starts again.
    before = state.get("claims_seen")
    seen: dict[str, list[Any]] = {}
    for id, oid in claims.items():
        was = before.get(id) if isinstance(before, dict) else None
        seen[id] = was if isinstance(was, list) and was[:1] == [oid] else [oid, now]
    due = [i for i in claims if now - float(seen[i][1]) >= GRACE]
    store = store_of(sync)
    try:
        applied = store.applied([claims[i] for i in due])
    finally:
        store.close()
    # An entry the checkpoint holds (its machine's seq at or below the frontier) is
    # folded here too, though the store started after it.
    applied |= _in_checkpoint(sync, [claims[i] for i in due if claims[i] not in applied])
    gone = [i for i in due if claims[i] in applied]
    prefix = team_prefix(sync.route)
    pruned = _delete(sync, limit, {f"{prefix}/_claim/{i}": claims[i] for i in gone})
    for id in gone:
        seen.pop(id, None)  # gone, by this push or another machine's
    state = sync.state()
    state["claims_seen"] = seen
    state["pruned_at"] = now
    sync.save_state(state)
    prune_logs(sync, limit, now)  # at the same pace
    return pruned


def prune_logs(sync: RouteSync, limit: float, now: float | None = None) -> int:
    """Delete other machines' logs that the adopted checkpoint holds whole and that have
    not moved for ``IDLE`` seconds (the caller has just fetched every log, holding the
    route's turn); how many went."""
    now = time.time() if now is None else now
    state = sync.state()
    covered = covered_of(state)
    if sync.route.branch is not None or not covered:
        return 0
    prefix, mine = team_prefix(sync.route), sync.config.machine
    logs = {
        n.removeprefix("_log/"): c
        for n, c in mirror_refs(sync, sync.fetched.rsplit("/", 1)[0] + "/remote").items()
        if n.startswith("_log/")
    }
    before = state.get("idle_logs")
    idle: dict[str, list[Any]] = {}
    for m, tip in logs.items():
        if m == mine or covered.get(m, ("", 0))[0] != tip:
            continue
        seen = before.get(m) if isinstance(before, dict) else None
        idle[m] = seen if isinstance(seen, list) and seen[:1] == [tip] else [tip, now]
    due = [m for m, (_tip, since) in idle.items() if now - float(since) >= IDLE]
    pruned = _delete(sync, limit, {f"{prefix}/_log/{m}": logs[m] for m in due})
    for m in due:
        idle.pop(m, None)
    state = sync.state()
    state["idle_logs"] = idle
    sync.save_state(state)
    return pruned


def _delete(sync: RouteSync, limit: float, refs: dict[str, str]) -> int:
    """Delete ``refs`` (ref → the commit it must still hold) on the remote, ``_BATCH`` a
    push, not atomically; how many went (a refusal: another machine was first)."""
    names = list(refs)
    gone = 0
    for at in range(0, len(names), _BATCH):
        batch = names[at : at + _BATCH]
        result, refused = sync.push_refs(
            limit,
            [f":{ref}" for ref in batch],
            [f"--force-with-lease={ref}:{refs[ref]}" for ref in batch],
            atomic=False,
        )
        if result.status not in (0, 1):
            raise sync._failed(result)
        gone += len(batch) - len(refused)
    return gone


def _in_checkpoint(sync: RouteSync, commits: list[str]) -> set[str]:
    """Which of ``commits`` (entries) the adopted checkpoint holds: its machine's seq at or
    below the frontier's."""
    covered = covered_of(sync.state())
    if not commits or not covered:
        return set()
    out = set()
    texts = sync.git.run(
        "cat-file", "--batch", input="".join(f"{c}\n" for c in commits).encode()
    ).out.decode("utf-8", "replace")
    for commit in commits:
        at = texts.find(f"{commit} commit ")
        if at < 0:
            continue
        header, _, rest = texts[at:].partition("\n")
        size = int(header.rsplit(" ", 1)[1])
        facts = message_facts(rest[:size].partition("\n\n")[2])
        machine, seq = facts.get("machine"), facts.get("seq")
        held = covered.get(machine, ("", 0))[1] if isinstance(machine, str) else 0
        if isinstance(seq, int) and seq <= held:
            out.add(commit)
    return out
