"""How old this machine's view of a route's remote is, and when to ask the remote again.

A session start must never wait on the network: an agent whose hook takes two
seconds on every start is an agent whose user removes the hook. So the hook and
the views (``handoffs``, ``peek``, the MCP listing) ask the remote only when
they must, and this module says when that is:

- **fresh**: the background syncer watches the remote while the machine is in
  use (it fetches every ``WATCH_EVERY`` seconds) and fetched less than
  ``FRESH`` seconds ago; what is on disk is what the remote had, and nobody
  else asks.
- **backing off**: the last talk with the remote failed (refused, silent,
  gone); it is not asked again before ``ask_after``, which doubles with each
  failure up to a minute, and then only for ``QUICK`` seconds.
- otherwise the caller fetches within its budget, as it always did.

A push the remote took counts as a fetch: it fast-forwarded the remote's log, so
this machine had everything the remote had. The figures live in the route's
state file (``local.py``'s ``_remember``), which the syncer and every process of
the machine share.
"""

from __future__ import annotations

import time
from datetime import datetime
from typing import Any

__all__ = [
    "FRESH",
    "QUICK",
    "STALE",
    "WATCH_EVERY",
    "ask_after",
    "backoff",
    "describe_age",
    "failures",
    "seen_at",
    "view_age",
]

WATCH_EVERY = 2.0
"""Seconds between two fetches of a syncer that watches the remote (the machine in use)."""
FRESH = 4.0
"""A view the watching syncer fetched less than this many seconds ago is used as it is:
it holds every handoff another machine sent more than that long ago."""
QUICK = 0.3
"""Seconds a caller waits for a remote that did not answer the last time it was asked."""
STALE = 60.0
"""A view older than this many seconds is said to be so, in one line, by every view."""
BACKOFF_MAX = 60.0


def backoff(failures: int) -> float:
    """Seconds before a remote that failed ``failures`` times in a row is asked again."""
    return min(BACKOFF_MAX, 2.0 ** max(0, failures - 1))


def failures(state: dict[str, Any]) -> int:
    """How many talks with the remote in a row failed (0 once one succeeds)."""
    value = state.get("failures")
    return value if isinstance(value, int) and value > 0 else 0


def ask_after(state: dict[str, Any]) -> float | None:
    """The time (``time.time()``) before which a failing remote is not asked again."""
    value = state.get("ask_after")
    return float(value) if isinstance(value, (int, float)) and failures(state) else None


def seen_at(state: dict[str, Any]) -> float | None:
    """When this machine last knew all the remote had: its last fetch or accepted push."""
    found = [_epoch(state.get(key)) for key in ("last_fetch", "last_push")]
    known = [f for f in found if f is not None]
    return max(known) if known else None


def view_age(state: dict[str, Any], now: float | None = None) -> float | None:
    """Seconds since this machine last knew all the remote had; None if it never did."""
    seen = seen_at(state)
    if seen is None:
        return None
    return max(0.0, (time.time() if now is None else now) - seen)


def describe_age(seconds: float) -> str:
    """``42 s``, ``12 min``, ``3 h``, ``2 days``: an age as a person reads it."""
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 90 * 60:
        return f"{seconds / 60:.0f} min"
    if seconds < 36 * 3600:
        return f"{seconds / 3600:.0f} h"
    return f"{seconds / 86400:.0f} days"


def _epoch(value: object) -> float | None:
    if not isinstance(value, str):
        return None
    try:
        return datetime.fromisoformat(value).timestamp()
    except ValueError:
        return None
