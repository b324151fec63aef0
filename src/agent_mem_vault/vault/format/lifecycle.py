"""Handoff lifecycle rules, as pure functions over values.

    [*] --> pending: create_handoff
    pending --> read: read_handoff or ack_handoff
    read --> pending: reopen_handoff
    pending --> read: superseded by a newer handoff

Each function returns the new value (or the same value when nothing changes)
and raises a ``UserError`` subclass when the transition is not allowed. The
service writes only what these return, so a refused transition writes nothing.

The cases the vault design leaves open are decided here:

- ``ack`` of a handoff that is already read: nothing changes, the handoff is
  returned as it is (``read_at`` keeps the first reading). Acknowledging is
  idempotent, so a retried call is harmless.
- ``reopen`` of a pending handoff: nothing changes (idempotent).
- ``reopen`` of a superseded handoff: refused, ``handoff_superseded``
  (ConflictError). The newer handoff is the live thread; reopen that one.
- ``supersedes`` naming an unknown id: refused, ``handoff_not_found``.
- ``supersedes`` naming a handoff in another namespace: refused,
  ``supersedes_other_namespace`` (InvalidInputError).
- ``supersedes`` naming a handoff that is already superseded: refused,
  ``handoff_superseded``; supersede its replacement instead.
- ``supersedes`` naming a handoff that was already read: allowed; it stays
  read (its ``read_at`` is kept) and gains ``superseded_by``.
"""

from __future__ import annotations

from dataclasses import replace

from ...core.errors import ConflictError, InvalidInputError
from .models import Handoff, Memory
from .notes import NoteError, parse_note

__all__ = [
    "check_supersedable",
    "check_updatable",
    "forget",
    "mark_read",
    "reopen",
    "restore",
    "retire",
    "supersede",
]


def mark_read(handoff: Handoff, now: str) -> Handoff:
    """read_handoff / ack_handoff: pending becomes read with ``read_at``; read stays as is."""
    if handoff.status == "read":
        return handoff
    return replace(handoff, status="read", read_at=now)


def reopen(handoff: Handoff) -> Handoff:
    """reopen_handoff: read becomes pending and ``read_at`` is removed."""
    if handoff.superseded_by is not None:
        raise _superseded(handoff, "reopen")
    if handoff.status == "pending":
        return handoff
    return replace(handoff, status="pending", read_at=None)


def check_supersedable(older: Handoff, namespace: str) -> None:
    """Refuse a ``supersedes`` entry that cannot be superseded by a handoff in ``namespace``."""
    if older.namespace != namespace:
        raise InvalidInputError(
            f"supersedes names {older.id}, which is in namespace {older.namespace!r}, "
            f"not {namespace!r}; a handoff can only replace one in its own namespace",
            code="supersedes_other_namespace",
            id=older.id,
            namespace=older.namespace,
        )
    if older.superseded_by is not None:
        raise _superseded(older, "supersede")


def supersede(older: Handoff, newer_id: str, now: str) -> Handoff:
    """The older handoff becomes read (if it was not) and gets ``superseded_by``."""
    return replace(mark_read(older, now), superseded_by=newer_id)


def _superseded(note: Handoff | Memory, action: str) -> ConflictError:
    """``action`` refused: the handoff (or memory) was replaced, and the newer one is the
    live thread (the live version)."""
    kind = "handoff" if isinstance(note, Handoff) else "memory"
    newer = note.superseded_by
    return ConflictError(
        f"{kind} {note.id} was superseded by {newer}; {action} {newer} instead",
        code=f"{kind}_superseded",
        id=note.id,
        superseded_by=newer,
    )


# -- memories ---------------------------------------------------------------------
#
#     [*] --> live: save_memory
#     live --> superseded: update_memory (the new version is live; this one is history)
#     live --> forgotten: forget_memory
#     forgotten --> live: restore_memory
#
# Decided here: forgetting a forgotten memory, or restoring a live one, changes
# nothing; forgetting a superseded version is allowed (it leaves the history
# listing's default view, nothing else); updating a superseded version is
# refused (``memory_superseded``: update the live one), and so is updating a
# forgotten one (``memory_forgotten``: restore it first, so that nothing
# forgotten comes back unseen).


def check_updatable(memory: Memory) -> None:
    """Refuse ``update_memory`` of a memory that is not the live version."""
    if memory.superseded_by is not None:
        raise _superseded(memory, "update")
    if memory.forgotten_at is not None:
        raise ConflictError(
            f"memory {memory.id} is forgotten; restore it first (restore_memory, or "
            f"'agent-mem-vault memory restore {memory.id}'), then update it",
            code="memory_forgotten",
            id=memory.id,
        )


def retire(older: Memory, newer_id: str) -> Memory:
    """The older version, once ``newer_id`` replaced it: kept, with ``superseded_by``."""
    return replace(older, superseded_by=newer_id)


def forget(memory: Memory, now: str) -> Memory:
    """forget_memory: out of search and the brief, kept; already forgotten: as it is."""
    if memory.forgotten_at is not None:
        return memory
    return replace(memory, forgotten_at=now)


def restore(memory: Memory) -> Memory:
    """restore_memory: a forgotten memory comes back as it was; otherwise nothing changes."""
    if memory.forgotten_at is None:
        return memory
    return replace(memory, forgotten_at=None)


def status_in(text: str) -> tuple[str | None, str | None]:
    """A handoff note's ``status`` and ``superseded_by`` as the notes' own parser reads
    them, from its text; (None, None) where it does not parse (sync reads versions that
    never were files here)."""
    try:
        note = parse_note(text)
    except NoteError:
        return None, None
    meta = note.meta if note is not None else {}
    status, newer = meta.get("status"), meta.get("superseded_by")
    return (
        status if isinstance(status, str) else None,
        newer if isinstance(newer, str) and newer else None,
    )
