"""What a read in layout 2 knows of the rest of the team: how fresh its view is, which
handoffs another machine took, and whether to spread out.

A claim's push creates ``_claim/<id>`` (``team.py``); of two machines after one
handoff, one lands and the other is refused with nothing sent. The loser lists
the remote's claim refs (one round trip), leaves all of those out, and takes
another handoff at once, with no fetch and no merge. When the team is busy
(a race lost here lately, or two other machines wrote in the last seconds),
every reader takes one at random among the newest few instead of all going for
the newest, and a reader that keeps losing chooses among more: each lost race
doubles its choice, each claim that stands narrows it a little, so that races
stay rare however many machines read at once (design/team-remote.md §6, §13).
"""

from __future__ import annotations

import random
import time
from typing import TYPE_CHECKING, Any

from .inflight import unconfirmed_ids
from .team import claims_on_remote

if TYPE_CHECKING:
    from ..index.db import Index
    from .engine import RouteSync

__all__ = ["FRESH", "GRACE", "Team"]

FRESH = 30.0
"""Seconds a view of every log stays good enough to claim on; older, it is fetched
first (a watching syncer fetches every 2 s, so this is rare in use)."""
GRACE = 300.0
"""Seconds a handoff another machine took is left out here, until the fetch that
brings that machine's entry makes it read here too."""
BUSY = 30.0
"""Seconds after a lost race (or two other machines' writes) that a reader spreads out."""
SPREAD = 4
"""Candidates per active machine a busy reader chooses among, at first."""
WIDEST = 16.0
"""How many times ``SPREAD`` a reader that keeps losing races widens its choice to."""
NARROW = 0.9
"""What a claim that landed does to a widened choice: a loss doubles it, and so the
losses settle at about one claim in eight (two machines choosing among n candidates
collide about 1/n of the time; the choice widens until that is rare)."""


class Team:
    """A route's claim state, read once per claim, written when a race is lost."""

    def __init__(self, sync: RouteSync) -> None:
        self.sync = sync
        self.state: dict[str, Any] = sync.state()

    def stale(self) -> bool:
        """Whether the view of every log is too old (or from a clock that went back)."""
        seen = self.state.get("last_full_fetch")
        age = time.time() - float(seen) if isinstance(seen, int | float) else None
        return age is None or age > FRESH or age < -1.0

    def taken_elsewhere(self) -> list[str]:
        """Handoffs another machine's claim ref names, still pending here."""
        now = time.time()
        found = self.state.get("taken_elsewhere")
        if not isinstance(found, dict):
            return []
        return [i for i, at in found.items() if isinstance(at, int | float) and now - at < GRACE]

    def skip(self, idx: Index, agent: str, namespace: str) -> list[str]:
        """The ids a read leaves out: those taken elsewhere, and, when the team is busy,
        the newer ones before a candidate chosen at random among the newest few."""
        # Not taken elsewhere, nor read here before and refused to its agent: its claim
        # may stand still, until the remote says (``inflight.settle``).
        skip = [*self.taken_elsewhere(), *unconfirmed_ids(self.sync)]
        if not self._busy():
            return skip
        active = max(2, len(self._moved()))
        window = round(SPREAD * active * self._widened())
        candidates = [
            i for i in idx.newest_pending_ids(namespace, agent, window + len(skip)) if i not in skip
        ][:window]
        if len(candidates) > 1:
            skip.extend(candidates[: random.randrange(len(candidates))])
        return skip

    def lost(self, id: str) -> None:
        """Another machine's claim of ``id`` stands: leave it and every handoff the remote
        names as claimed out of the next tries (one ``ls-remote``; if that fails, just
        ``id``)."""
        now = time.time()
        found = self.state.get("taken_elsewhere")
        taken = {
            i: at
            for i, at in (found.items() if isinstance(found, dict) else ())
            if isinstance(at, int | float) and now - at < GRACE
        }
        taken[id] = now
        try:
            for other in claims_on_remote(self.sync):
                taken.setdefault(other, now)
        except Exception:
            pass
        self.state = self.sync.state()
        widened = self._widened()  # as it stood: 1 once the team was quiet a while
        self.state["taken_elsewhere"] = taken
        self.state["lost_at"] = now
        self.state["widened"] = min(WIDEST, widened * 2)
        self.sync.save_state(self.state)

    def landed(self) -> None:
        """This machine's claim stood: a choice widened by lost races narrows a little."""
        widened = self._widened()
        if widened > 1.0:
            self.state = self.sync.state()
            self.state["widened"] = max(1.0, widened * NARROW)
            self.sync.save_state(self.state)

    def _widened(self) -> float:
        """How many times ``SPREAD`` per machine a busy reader chooses among: doubled by
        each lost race, narrowed by each claim that stood, back to one once the team
        has been quiet for ``BUSY`` seconds."""
        lost = self.state.get("lost_at")
        widened = self.state.get("widened")
        if not isinstance(lost, int | float) or not 0 <= time.time() - lost < BUSY:
            return 1.0
        return float(widened) if isinstance(widened, int | float) and widened >= 1 else 1.0

    def _busy(self) -> bool:
        lost = self.state.get("lost_at")
        if isinstance(lost, int | float) and 0 <= time.time() - lost < BUSY:
            return True
        return len(self._moved()) >= 2

    def _moved(self) -> list[str]:
        """Other machines whose log moved in the last ``BUSY`` seconds."""
        moved = self.state.get("moved")
        now, me = time.time(), self.sync.config.machine
        if not isinstance(moved, dict):
            return []
        return [
            m
            for m, at in moved.items()
            if m != me and isinstance(at, int | float) and now - at < BUSY
        ]
