"""``read_handoff`` in a namespace that travels: a read counts once the remote took it.

On one machine the vault lock makes a read exclusive. Across machines the
remote's log is the one ref every machine writes, and a push that does not
fast-forward it is refused; so a read is a compare-and-swap on that ref:

1. under the vault lock, mark the newest pending handoff read (with
   ``read_on``: this machine) and commit it (along the note's path only:
   ``RouteSync.commit_notes``);
2. push that change as the next entry of the route's log (``log.py``). Taken:
   the read counts, the handoff is returned.
3. Refused (another machine pushed first): put the note back exactly as it
   was, fetch, merge what arrived (a handoff the other machine read is now read
   here too), and go back to 1 with what is still pending: the loser of a race
   gets the next handoff, or none.

When the remote cannot be reached, or does not answer within
``AGENT_MEM_VAULT_SYNC_TIMEOUT`` seconds, the note is put back and the read is
refused (``claim_unconfirmed``) with the way to look without taking
(``peek_handoff``): no handoff is ever delivered without the remote's word, so
none is ever delivered twice. That is the documented choice for working
offline (docs/sync.md). A read whose answer was lost but which landed is undone
by the put back at the next sync (``RouteSync._send_entry``). A reader killed
between its push and its answer may lose that one handoff (it counts as read,
undelivered), never deliver it twice.

In layout 2 (a log per machine, ``team.py``) the push is this machine's own
log and a create-only claim ref of the handoff, in one atomic push: a refusal
means another machine took that very handoff, and the next one is taken at once
with no fetch (``team_claim.py`` says which ones to leave out, and when to
spread out over the newest few). A claim rests on a view of every log fetched
less than ``team_claim.FRESH`` seconds before.

Only this process of the machine talks to the route's remote meanwhile (the
route's turn); the vault lock is held only for the local steps, so writers of
other namespaces and of this one go on while the push is on the wire.
"""

from __future__ import annotations

import random
import time
from typing import TYPE_CHECKING

from ...core.errors import AgentMemVaultError, ConflictError, UnavailableError
from ..folder.files import LockBusy
from . import inflight
from .engine import MAX_ROUNDS, RouteSync, stage_journal
from .local import FETCH_FIRST, RouteReport
from .routes import Route, load_config
from .signing import SigningHeld
from .syncer import ensure_syncer
from .team_claim import Team
from .team_push import CLAIMED

if TYPE_CHECKING:
    from ..format.models import Handoff
    from ..ops.handoffs import HandoffOps, Taken

__all__ = ["claim"]


def claim(vault: HandoffOps, route: Route, *, agent: str, namespace: str) -> Handoff | None:
    """Take the newest pending handoff for ``agent`` once the remote accepted the claim;
    None when none is pending here or on the remote."""
    if vault._on_loop:
        raise LockBusy(vault.path)  # it waits for the network: not on an event loop
    config = load_config(vault.path)
    if config is None:
        return None
    sync = RouteSync(vault, config, route)
    scope = [(namespace, "handoffs")]
    looked = False
    team = Team(sync) if route.layout == 2 else None
    settling = 2
    with sync.network_turn():
        if team is not None:
            inflight.settle(vault, sync)  # a read here that stopped half-way
        if team is not None and team.stale():
            _catch_up(vault, sync)  # a claim rests on a view of every log, fetched lately
            looked = True
        for attempt in range(MAX_ROUNDS):
            if team is None and sync.route.layout == 2:
                team = Team(sync)  # the remote was upgraded, and this route followed
            elif team is not None and team.stale():  # many rounds: the view aged meanwhile
                _catch_up(vault, sync)
                team, looked = Team(sync), True
            held: ConflictError | None = None
            with vault._writing(scope=scope) as idx:
                skip = team.skip(idx, agent, namespace) if team is not None else ()
                before, before_tree = sync.heads()[0], sync.local_tree()

                def record(handoff: Handoff, before: str | None = before) -> None:
                    """Written down before the note says read (``inflight.py``)."""
                    inflight.begin(sync, handoff.id, handoff.path, before)

                taken = vault._take(
                    idx,
                    agent,
                    namespace,
                    {"read_on": config.machine},
                    skip,
                    told=record if team is not None else None,
                )
                head, staged = None, False
                if taken is not None:
                    # Not journaled: the syncer never sends a read that did not count.
                    idx.touched.discard(taken.handoff.path)
                    try:
                        head = sync.commit_notes([taken.handoff.path], f"read {taken.handoff.id}")
                    except ConflictError as exc:  # it gained a secret here (gate.py)
                        held = exc
                if held is None and head is None:  # nothing taken, or no commit yet
                    also = [taken.handoff.path] if taken is not None else []
                    stage_journal(vault, config, also, syncs=[sync])
                    staged = True
                    head = sync.commit(
                        f"read {taken.handoff.id}" if taken else "notes changed here"
                    )
            taken_unconfirmed = False
            try:
                if held is not None and taken is not None:
                    _put_back(vault, sync, taken, commit=False)
                    raise held
                if taken is None:
                    held_here = _unconfirmed_in(sync, namespace) if team is not None else []
                    if held_here and settling:
                        # A read refused to its agent may hold a claim on the remote still:
                        # undone there now the remote answers, then taken anew.
                        settling -= 1
                        inflight.settle(vault, sync)
                        continue
                    if held_here:  # not "nothing pending": one may be, once undone there
                        raise _still_unconfirmed(route, held_here)
                    if looked:
                        return None
                    _catch_up(vault, sync)  # nothing here: the remote may have new ones
                    looked = True
                    if team is not None:  # the fetch knows what a lost race left out
                        team = Team(sync)
                    continue
                assert head is not None
                try:
                    refused = sync.push(
                        head, title=f"read {taken.handoff.id}", claims=[taken.handoff.id]
                    )
                except SigningHeld as exc:  # nothing was sent: the claim is simply undone
                    _put_back(vault, sync, taken, commit=False, staged=staged)
                    sync.retract(head, before, before_tree)
                    raise _not_signed(taken, exc) from exc
                except AgentMemVaultError as exc:
                    # The remote may have taken it all the same (an answer lost on the way):
                    # the note goes back to pending in a commit of its own, which undoes the
                    # read wherever the claim landed; in layout 2 the next turn asks the
                    # remote, and undoes it there at once (``inflight.settle``).
                    _put_back(vault, sync, taken, commit=True)
                    if team is not None:
                        inflight.unconfirmed(sync, taken.handoff.id)
                        taken_unconfirmed = True
                    raise _unconfirmed(route, taken, exc) from exc
                if refused is None:
                    if team is not None:
                        team.landed()
                    if not staged:
                        ensure_syncer(vault.path)  # it stages the note in the route's index
                    return taken.handoff
                # Refused: the remote never had it, so the claim's commit is simply undone.
                _put_back(vault, sync, taken, commit=False, staged=staged)
                sync.retract(head, before, before_tree)
                if team is not None and refused == CLAIMED:
                    team.lost(taken.handoff.id)  # another machine has it: the next, at once
                    continue
                known = sync.heads()[1]
                try:
                    _catch_up(vault, sync)
                except AgentMemVaultError as exc:
                    raise _unconfirmed(route, taken, exc) from exc
                if sync.heads()[1] == known and refused != FETCH_FIRST:
                    raise sync.refused(refused)
                looked = True
                # Eight machines after one handoff: a moment's random wait spreads them out.
                time.sleep(random.uniform(0, 0.005 * min(attempt + 1, 10)))
            finally:
                if team is not None and taken is not None and not taken_unconfirmed:
                    inflight.done(sync, taken.handoff.id)  # answered, one way or another

    raise UnavailableError(
        f"{route.label} kept moving: {MAX_ROUNDS} claims in a row were overtaken by other "
        "machines; nothing was taken, retry in a moment",
        code="sync_busy",
    )


def _catch_up(vault: HandoffOps, sync: RouteSync) -> None:
    """Fetch and merge what the remote has (the caller has the route's turn)."""
    theirs = sync.fetch()
    with vault._held(), vault._locked():
        sync.integrate(theirs, RouteReport(sync.route))


def _put_back(
    vault: HandoffOps, sync: RouteSync, taken: Taken, *, commit: bool, staged: bool = False
) -> None:
    """The claim did not count: the note pending again, exactly as it was; staged if the
    claim had staged it, and committed (so staged) with ``commit``."""
    with vault._held(), vault._locked():
        if vault._put_back(taken):
            if staged or commit:
                sync.stage([taken.handoff.path])
            idx = vault._upkeep.current
            if idx is not None:
                idx.touched.discard(taken.handoff.path)
        if commit:
            sync.commit(f"put back {taken.handoff.id}")


def _not_signed(taken: Taken, cause: SigningHeld) -> SigningHeld:
    h = taken.handoff
    return SigningHeld(
        f"the read of handoff {h.id} was not taken: {cause.message.split('; the change')[0]}; "
        "peek_handoff (or 'agent-mem-vault peek') shows it without taking it",
        code="signing_held",
        id=h.id,
        **cause.details,
    )


def _unconfirmed_in(sync: RouteSync, namespace: str) -> list[str]:
    """The reads of ``namespace`` refused to their agents whose claims may stand still."""
    return sorted(inflight.unconfirmed_under(sync, f"{namespace}/handoffs/"))


def _still_unconfirmed(route: Route, ids: list[str]) -> UnavailableError:
    return UnavailableError(
        f"nothing else is pending here, but an earlier read of handoff {ids[0]} could not be "
        f"confirmed with {route.label}, which has not answered since: it may hold that "
        "handoff still, and it is put back for the team once the remote answers; read_handoff "
        "takes it then",
        code="claim_unconfirmed",
        id=ids[0],
    )


def _unconfirmed(route: Route, taken: Taken, cause: AgentMemVaultError) -> UnavailableError:
    h = taken.handoff
    return UnavailableError(
        f"the read of handoff {h.id} could not be confirmed with {route.label} "
        f"({cause.message.split('; ')[0]}), so it was not taken: a read counts only once "
        f"the remote has it, or another machine could take it too; peek_handoff (or "
        f"'agent-mem-vault peek') shows it without taking it, and read_handoff takes it "
        "once the remote answers",
        code="claim_unconfirmed",
        id=h.id,
    )
