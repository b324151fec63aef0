"""Which refs a route keeps on its remote: the layout, named by the remote itself.

Layout 1 (``log.py``) keeps one log per route, and every machine's push must
fast-forward it: a team's machines queue behind each other, and the one that
won the last claim wins the next. Layout 2 gives each machine a log of its own,
so no push of one machine refuses another's, and makes a read a create-only
ref of its own, so two machines race only when they want the same handoff
(``design/team-remote.md``). Its refs, under ``team_prefix(route)``:

- ``_layout``: the marker, made once, create-only: the remote says which layout it
  holds and which release it needs, so a release meeting a newer layout stops
  with the upgrade line instead of guessing (``check_marker``);
- ``_log/<machine>``: that machine's entries (``entries.py``), pushed only by it,
  with a lease on its own tip;
- ``_claim/<handoff id>``: the entry that read the handoff, created by one push
  with that entry: of two machines creating it at once, exactly one lands.

The layout-1 log name of the route keeps a **fence**, a commit whose message
points at a checkpoint no checkpoint ref holds: a release that knows only
layout 1 reads it, finds the remote "changed while it was read" and sends or
delivers nothing, instead of starting a layout-1 log beside this one.

A segment starting with ``_`` is never a namespace's (``format/namespaces.py``),
so ``<prefix>/_log`` cannot clash with a nested namespace's prefix.
"""

from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING, Any

from ...core.errors import InvalidInputError, RemoteError

if TYPE_CHECKING:
    from .routes import Route

__all__ = [
    "FENCE_TITLE",
    "LAYOUT",
    "LAYOUT_ENV",
    "TEAM_REFS",
    "check_marker",
    "checkpoint_facts",
    "checkpoint_message",
    "fence_message",
    "marker_message",
    "message_facts",
    "new_route_layout",
    "team_prefix",
]

LAYOUT = 2
"""The newest layout this release reads and writes."""
LAYOUT_ENV = "AGENT_MEM_VAULT_SYNC_LAYOUT"
"""The layout a route is made in when its remote holds none yet (2 unless set)."""
TEAM_REFS = "refs/agent-mem-vault-sync/"
FENCE_TITLE = "moved to layout 2"
"""How a fence's message starts (``fence_message``)."""


def team_prefix(route: Route) -> str:
    """Where a layout-2 route's refs live on its remote (no trailing ``/``)."""
    return TEAM_REFS + ("_vault" if route.namespace is None else route.namespace)


def new_route_layout() -> int:
    """The layout a route is made in on a remote that holds none (``LAYOUT_ENV``): 2, a
    log per machine, unless set to 1 (a team whose machines still run a release that
    knows one log)."""
    raw = os.environ.get(LAYOUT_ENV, "").strip()
    if raw in ("", "2"):
        return 2
    if raw == "1":
        return 1
    raise InvalidInputError(
        f"{LAYOUT_ENV}={raw!r} names no layout this release makes; use 2 (a log per "
        "machine) or 1 (one log, for a team with machines on an older release)",
        code="invalid_setting",
        field=LAYOUT_ENV,
    )


def marker_message(route: Route, from_layout: int | None) -> str:
    """The ``_layout`` commit's message: the layout, the oldest layout a release must know
    to read it and to write it (what a newer layout raises), and the one it was moved
    from (None: made in this one)."""
    facts: dict[str, Any] = {
        "fence": {"ref": route.log_ref},
        "from_layout": from_layout,
        "layout": LAYOUT,
        "readers": LAYOUT,
        "route": team_prefix(route).removeprefix(TEAM_REFS),
        "writers": LAYOUT,
    }
    return f"agent-mem-vault layout {LAYOUT}\n\n{json.dumps(facts, sort_keys=True)}\n"


def checkpoint_message(frontier: dict[str, tuple[str, int]] | None = None, lamport: int = 0) -> str:
    """A checkpoint's message: the entry of each machine whose notes it holds (the
    ``frontier``: machine → (commit, seq); none for an upgrade's, made before any entry)
    and the greatest Lamport among them. Never a ``log`` key, which layout 1's reader
    would follow."""
    facts = {
        "frontier": {m: {"commit": c, "seq": n} for m, (c, n) in sorted((frontier or {}).items())},
        "lamport": lamport,
        "layout": LAYOUT,
    }
    return f"notes\n\n{json.dumps(facts, sort_keys=True)}\n"


def checkpoint_facts(message: str) -> tuple[dict[str, tuple[str, int]], int]:
    """A checkpoint's frontier and Lamport (``checkpoint_message``), from its message."""
    facts = message_facts(message)
    found = facts.get("frontier")
    frontier = {
        str(m): (str(v["commit"]), int(v["seq"]))
        for m, v in (found.items() if isinstance(found, dict) else ())
        if isinstance(v, dict)
        and isinstance(v.get("commit"), str)
        and isinstance(v.get("seq"), int)
    }
    lamport = facts.get("lamport")
    return frontier, lamport if isinstance(lamport, int) else 0


def fence_message(marker: str) -> str:
    """The fence's message: layout 1's reader takes ``checkpoint`` as the checkpoint the
    log points at, never finds it on the checkpoint ref, and stops (``remote_moved``)."""
    facts = {"checkpoint": marker}
    return (
        f"{FENCE_TITLE}: upgrade agent-mem-vault to use this remote\n\n"
        f"{json.dumps(facts, sort_keys=True)}\n"
    )


def check_marker(route: Route, message: str) -> dict[str, Any]:
    """The marker's facts; ``layout_newer`` when this release cannot read the route."""
    facts = message_facts(message)
    readers = facts.get("readers")
    if not isinstance(readers, int) or readers > LAYOUT:
        layout = facts.get("layout")
        raise RemoteError(
            f"{route.label} keeps its notes in layout {layout}, which a newer "
            "agent-mem-vault reads: pip install -U agent-mem-vault",
            code="layout_newer",
        )
    return facts


def message_facts(message: str) -> dict[str, Any]:
    """The JSON line a sync commit's message ends with ({} if none, or not an object)."""
    for line in reversed(message.strip().splitlines()):
        if line.startswith("{"):
            try:
                data = json.loads(line)
            except ValueError:
                return {}
            return data if isinstance(data, dict) else {}
    return {}
