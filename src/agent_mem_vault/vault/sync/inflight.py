"""A read that stopped half-way (its process killed), found by the next one to take the
route's turn, in layout 2.

A read marks the handoff read here, commits it and pushes it with the handoff's
claim ref (``claim.py``, ``team.py``). Killed on the way, it leaves one of two
things, told apart by the claim ref on the remote:

- the claim never landed: nothing was delivered, so the note is put back here
  as it was, pending, and taken by the next read on any machine;
- it landed: the handoff is read on the remote, but whether its agent got it
  nobody knows. It is **stranded**: listed by ``sync --status`` and ``doctor``
  until a person who knows says so with ``agent-mem-vault sync --reopen-stranded``
  (the handoff pending again for the team), or leaves it read.

The record is written before the note is taken and removed once the read has
answered, in the route's state (``atomic_write``: it survives a killed process,
not a power loss, as ``sent`` does). Only the holder of the route's turn, one
process at a time, writes one, so a record found by the next holder was left by a
process that stopped.
"""

from __future__ import annotations

import os
import time
from typing import TYPE_CHECKING, Any

from ...core.clock import format_datetime, utc_now
from ...core.errors import AgentMemVaultError
from ...core.runtime import process_alive
from .team import claims_on_remote
from .team_branch import landed as on_branch

if TYPE_CHECKING:
    from ..ops.base import VaultBase
    from .engine import RouteSync

__all__ = [
    "begin",
    "done",
    "settle",
    "stranded",
    "unconfirmed",
    "unconfirmed_ids",
    "unconfirmed_under",
]


def begin(sync: RouteSync, id: str, path: str, before: str | None) -> None:
    """A read of handoff ``id`` (at ``path``) starts on top of the commit ``before``."""
    state = sync.state()
    records = _records(state)
    records[id] = {"path": path, "before": before, "pid": os.getpid(), "at": time.time()}
    state["inflight"] = records
    sync.save_state(state)


def done(sync: RouteSync, id: str) -> None:
    """The read of ``id`` answered: taken, refused, or put back."""
    state = sync.state()
    records = _records(state)
    if records.pop(id, None) is not None:
        state["inflight"] = records
        sync.save_state(state)


def unconfirmed(sync: RouteSync, id: str) -> None:
    """The read of ``id`` was refused to its agent (``claim_unconfirmed``) after its push
    went out unanswered; its note is pending here again. Whether the claim landed is
    asked at the next turn, which then undoes it on the remote too."""
    state = sync.state()
    records = _records(state)
    if id in records:
        records[id]["state"] = "unconfirmed"
        state["inflight"] = records
        sync.save_state(state)


def settle(vault: VaultBase, sync: RouteSync) -> list[str]:
    """Settle the reads a stopped process left, and the reads refused as unconfirmed (the
    caller has the route's turn, not the vault lock); the handoffs found stranded."""
    records = _records(sync.state())
    left = {
        id: r
        for id, r in records.items()
        if r.get("state") == "unconfirmed" or r.get("pid") == os.getpid() or not _alive(r)
    }
    if not left:
        return []
    sent = {id: str(r["entry"]) for id, r in left.items() if r.get("entry")}
    try:
        if not sent:
            landed: dict[str, str] = {}
        elif sync.route.branch is not None:  # one branch: landed if the branch holds it
            landed = on_branch(sync, sync.fetched.rsplit("/", 1)[0] + "/remote", sent)
        else:
            landed = claims_on_remote(sync, list(sent))
    except AgentMemVaultError:
        return []  # the remote cannot say now: asked again at the next turn
    found, undo = [], []
    with vault._held(), vault._locked():
        for id, record in left.items():
            entry = record.get("entry")
            if record.get("state") == "unconfirmed":
                if entry and landed.get(id) == entry:
                    undo.append(id)  # landed, but its agent was told no: undone at once
            elif entry and landed.get(id) == entry:
                found.append(id)
            else:
                _put_back(sync, id, record)
        state = sync.state()
        records = _records(state)
        marks = state.get("stranded") if isinstance(state.get("stranded"), dict) else {}
        assert isinstance(marks, dict)
        for id in left:
            if id not in undo:  # an undo's record stays until the remote has it
                records.pop(id, None)
        for id in found:
            marks[id] = {
                "path": left[id].get("path"),
                "at": format_datetime(utc_now()),
                "machine": sync.config.machine,
            }
        state["inflight"], state["stranded"] = records, marks
        sync.save_state(state)
    if undo and _undo(vault, sync):
        state = sync.state()
        records = _records(state)
        for id in undo:
            records.pop(id, None)
        state["inflight"] = records
        sync.save_state(state)
    return found


def unconfirmed_ids(sync: RouteSync) -> set[str]:
    """The reads refused to their agents whose claims may stand on the remote."""
    return {i for i, r in _records(sync.state()).items() if r.get("state") == "unconfirmed"}


def unconfirmed_under(sync: RouteSync, prefix: str) -> set[str]:
    """The ids of ``unconfirmed_ids`` whose notes lie under ``prefix``."""
    return {
        i
        for i, r in _records(sync.state()).items()
        if r.get("state") == "unconfirmed" and str(r.get("path", "")).startswith(prefix)
    }


def _undo(vault: VaultBase, sync: RouteSync) -> bool:
    """Claims that landed for reads their agents were refused: the remote's entries are
    folded in (their notes stay pending here, as put back), and the put back goes out as
    a reopen, which takes each claim ref away in the same push."""
    from .local import RouteReport
    from .team_push import push

    try:
        theirs = sync.fetch()
        with vault._held(), vault._locked():
            sync.integrate(theirs, RouteReport(sync.route))
        local = sync.heads()[0]
        return local is None or push(sync, local, 30.0, "put back") is None
    except AgentMemVaultError:
        return False  # tried again at the next turn


def stranded(state: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The handoffs read on the remote by a read of this machine that stopped before it
    answered: id → where and when."""
    marks = state.get("stranded")
    return (
        {str(k): v for k, v in marks.items() if isinstance(v, dict)}
        if isinstance(marks, dict)
        else {}
    )


def _put_back(sync: RouteSync, id: str, record: dict[str, Any]) -> None:
    """The read never landed: the note pending again as it was before it, if it is still
    what the read made of it (a later change here stands)."""
    path, before = record.get("path"), record.get("before")
    if not isinstance(path, str) or not isinstance(before, str):
        return
    local = sync.heads()[0]
    read = record.get("read") or (
        sync.entries(sync._tree(local), [path]).get(path) if local else None
    )
    was = sync.entries(sync._tree(before), [path]).get(path)
    target = sync.root / path
    if was is None or read is None or not target.exists():
        return
    on_disk = sync.git.run("hash-object", "--", str(target)).out.decode().strip()
    if on_disk != read:
        return
    text = sync.blobs([was]).get(was)
    if text is None:
        return
    from ..folder.files import atomic_write

    atomic_write(target, text, durable=sync.vault.durable)
    idx = sync.vault._upkeep.handle()
    sync.vault._upkeep.refresh(idx, path)
    sync.stage([path])
    sync.commit(f"put back {id}")


def _alive(record: dict[str, Any]) -> bool:
    pid = record.get("pid")
    return isinstance(pid, int) and process_alive(pid)


def _records(state: dict[str, Any]) -> dict[str, dict[str, Any]]:
    found = state.get("inflight")
    return (
        {str(k): dict(v) for k, v in found.items() if isinstance(v, dict)}
        if isinstance(found, dict)
        else {}
    )
