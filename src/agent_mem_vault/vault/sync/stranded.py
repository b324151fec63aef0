"""Handoffs stranded by a read that stopped half-way (``inflight.py``): said, and
reopened for the team when a person says its agent did not get them."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ...core.errors import NotFoundError
from .engine import RouteSync
from .inflight import stranded
from .routes import load_config

if TYPE_CHECKING:
    from ..ops.handoffs import HandoffOps

__all__ = ["reopen_stranded", "stranded_line"]


def stranded_line(label: str, id: str, mark: dict[str, Any]) -> str:
    """What ``sync --status`` and ``doctor`` say of a stranded handoff, and the fix."""
    return (
        f"{label}: handoff {id} ({mark.get('path')}) was taken on {mark.get('machine')} at "
        f"{mark.get('at')} by a read that stopped before it answered; if its agent did not "
        f"get it: agent-mem-vault sync reopen-stranded {id}"
    )


def reopen_stranded(vault: HandoffOps, ids: Sequence[str] = ()) -> list[str]:
    """Make the stranded handoffs ``ids`` (none: all of this machine's) pending again for
    the team: a reopen, which takes their claim refs away as it goes out; the ids
    reopened. An id that is not stranded here is ``handoff_not_found``."""
    config = load_config(vault.path)
    done_ids: list[str] = []
    found: set[str] = set()
    for route in () if config is None else config.routes:
        assert config is not None
        sync = RouteSync(vault, config, route)
        with sync.network_turn():
            state = sync.state()
            marks = stranded(state)
            chosen = [i for i in (ids or list(marks)) if i in marks]
            found.update(chosen)
            for id in chosen:
                vault.reopen_handoff(id)
                marks.pop(id)
                done_ids.append(id)
            if chosen:
                state["stranded"] = marks
                sync.save_state(state)
    missing = [i for i in ids if i not in found]
    if missing:
        raise NotFoundError(
            f"no read of {', '.join(missing)} stopped half-way on this machine "
            "('agent-mem-vault sync --status' lists the ones that did)",
            code="handoff_not_found",
        )
    return done_ids
