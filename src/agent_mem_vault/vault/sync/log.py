"""A route's log on its remote: one commit per push, holding only the notes it changed.

git checks, at each fetch and each push, that what arrived is connected: it
walks every entry of the tree the ref held before (``rev-list --objects --not
--all``). A ref whose commits hold the whole vault costs that walk per note, 50 ms
at 100,000 notes, on every read's claim. So the notes travel on two refs:

- the **log** (``Route.log_ref``): each push is a commit whose tree holds just the
  notes that push changed, whole, at their paths; notes it removed, and the
  machine it came from, are listed in its message, and its author is the person
  who sent it (``identity.py``). A push that is not a fast-forward of the log is
  refused: that is the compare-and-swap a claim builds on. Its walks cost what a
  push changed.
- the **checkpoint** (``Route.ref``: ``main`` of the vault's remote, or a project's
  ``refs/agent-mem-vault/<namespace>``): every note as it was at one point of the
  log, for a machine that joins; its message names that point (``{"log": …}``).
  A push that changes many notes at once (a vault that joins with its notes) sends
  a new checkpoint and, in the log, an entry that points at it, in one atomic push;
  a sync writes one, alone, once the log has grown ``CHECKPOINT_EVERY`` entries past
  the last (only if the checkpoint is still the one it knows: any checkpoint is
  the notes at the point it names, so whichever stands is right).

What a remote has is then its checkpoint with the log's later entries applied,
in order; each machine keeps that as a commit of its own (``fetched``), and
merges it as before (``arrivals.py``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .layout import message_facts

if TYPE_CHECKING:
    from .gitcmd import Git

__all__ = [
    "CHECKPOINT_EVERY",
    "CHECKPOINT_FROM",
    "Entry",
    "checkpoint_message",
    "entries",
    "entry_message",
    "log_position",
]

CHECKPOINT_EVERY = 1000
"""Log entries past the checkpoint from which a sync writes a new checkpoint (of
the notes as they stand, nothing else): a machine that joins then reads at most
about this many entries."""
CHECKPOINT_FROM = 500
"""Notes changed by one push from which it goes as a checkpoint, not as a log entry:
the log's entries stay small, so that no fetch or push of it walks a large tree."""

_REGULAR = ("100644", "100755")


@dataclass(slots=True)
class Entry:
    """One push, as the log holds it."""

    commit: str
    changed: dict[str, str] = field(default_factory=dict)
    """Notes set by this push: path → blob (what differs from the entry before; a note
    set again to the very blob the entry before set is already so)."""
    removed: list[str] = field(default_factory=list)
    checkpoint: str | None = None
    """A push of many notes: the remote's notes are those of this checkpoint commit."""


def entry_message(
    title: str, removed: list[str], checkpoint: str | None = None, *, machine: str | None = None
) -> str:
    """A log entry's message: its title, then the facts a reader needs (what it removed,
    the checkpoint it points at, the machine it was made on) as JSON."""
    facts: dict[str, Any] = {}
    if machine is not None:
        facts["machine"] = machine
    if removed:
        facts["removed"] = sorted(removed)
    if checkpoint is not None:
        facts["checkpoint"] = checkpoint
    return f"{title}\n\n{json.dumps(facts)}\n" if facts else f"{title}\n"


def checkpoint_message(log: str | None) -> str:
    """A checkpoint's message: the log entry whose notes it holds (None: before any)."""
    return f"notes\n\n{json.dumps({'log': log})}\n"


def log_position(git: Git, checkpoint: str) -> str | None:
    """The log entry whose notes ``checkpoint`` holds; None when it holds the notes from
    before the log's first entry (or was written before there was a log)."""
    message = git.run("cat-file", "commit", checkpoint).out.decode("utf-8", "replace")
    log = message_facts(message.partition("\n\n")[2]).get("log")
    return log if isinstance(log, str) and log else None


def entries(git: Git, since: str | None, tip: str) -> list[Entry]:
    """The log's entries after ``since`` (None: all of them) up to ``tip``, oldest first."""
    span = f"{since}..{tip}" if since else tip
    raw = git.run(
        "log",
        "--reverse",
        "--no-renames",
        "--raw",
        "-z",
        "--no-abbrev",
        "--root",
        "--format=%x01%H%x00%B",
        span,
    ).out.decode("utf-8", "surrogateescape")
    out: list[Entry] = []
    for chunk in raw.split("\x01")[1:]:
        commit, _, rest = chunk.partition("\0")
        message, _, records = rest.partition("\0")
        facts = message_facts(message)
        entry = Entry(commit)
        removed = facts.get("removed")
        if isinstance(removed, list):
            entry.removed = [str(p) for p in removed]
        if isinstance(facts.get("checkpoint"), str):
            entry.checkpoint = facts["checkpoint"]
        parts = records.lstrip("\n").split("\0")
        for i in range(0, len(parts) - 1, 2):
            meta, path = parts[i], parts[i + 1]
            fields = meta.lstrip(":").split(" ")
            if len(fields) >= 5 and fields[4][:1] in ("A", "M", "T") and fields[1] in _REGULAR:
                entry.changed[path] = fields[3]
        out.append(entry)
    return out
