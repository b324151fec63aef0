"""Who wrote a note's text, in the note itself: ``written_by`` and ``written_on``.

A handoff is the next agent's task and a memory a decision the team acts on, so
every view of one says whose words they are (``Origin``). The note carries them
as two properties, so Obsidian shows them too: the person as git names them for
the note's route, and the machine. They are stamped by whoever last changed
what the note says, its **text**: the body and every property but the
lifecycle (``status``, ``read``, ``read_at``, ``read_on``, ``also_read``,
``superseded_by``, ``forgotten_at``), ``tags`` and the pair itself. So a
teammate's read, ack or supersede leaves the text, and the writer, as they were.

Only a vault that syncs stamps (a note that stays on one machine has one
writer): the operations stamp what they create, and sync stamps a note edited
by hand before it sends it (``vault/sync/stamps.py``). What the pair says is
the writer's word, like a commit's author; nothing checks it yet.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from .merge import LIFECYCLE, WRITER
from .models import Origin
from .notes import NoteError, parse_note, render_note

__all__ = [
    "TEXTLESS",
    "WRITTEN_BY",
    "WRITTEN_ON",
    "origin_in",
    "origin_in_head",
    "text_of",
    "writer_properties",
]

WRITTEN_BY, WRITTEN_ON = WRITER
TEXTLESS = frozenset({*LIFECYCLE, "forgotten_at", "tags", *WRITER})
"""The properties that are not a note's text: a change of these alone changes no
writer."""


def writer_properties(origin: Origin | None) -> dict[str, str]:
    """The pair a note written by ``origin`` carries ({} when nobody is known)."""
    if origin is None:
        return {}
    out = {}
    if origin.author:
        out[WRITTEN_BY] = origin.author
    if origin.machine:
        out[WRITTEN_ON] = origin.machine
    return out


def origin_in(meta: Mapping[str, Any]) -> Origin | None:
    """Who a note's properties say wrote its text; None when they name nobody."""
    author, machine = meta.get(WRITTEN_BY), meta.get(WRITTEN_ON)
    author = author if isinstance(author, str) and author else None
    machine = machine if isinstance(machine, str) and machine else None
    if author is None and machine is None:
        return None
    return Origin(author, machine)


_PAIR = re.compile(rf"^(?:{WRITTEN_BY}|{WRITTEN_ON}):.*$", re.M)


def origin_in_head(head: str) -> Origin | None:
    """``origin_in`` from the start of a note's file (its front matter), reading only the
    pair's two lines: a view of one note asks this on every call, and a whole note's
    properties cost several times more to parse. None when the pair is not there."""
    if not head.startswith("---"):
        return None
    end = head.find("\n---", 3)
    lines = _PAIR.findall(head if end == -1 else head[:end])
    if not lines:
        return None
    try:
        parsed = parse_note("---\n" + "\n".join(lines) + "\n---\n")
    except NoteError:
        return None
    return None if parsed is None else origin_in(parsed.meta)


def text_of(meta: Mapping[str, Any], body: str) -> str:
    """What a note says, for telling whether a change changed it: the body and the
    properties that are not lifecycle, tags or the writer pair.

    >>> a = text_of({"title": "Plan", "status": "read"}, "Batch it")
    >>> a == text_of({"title": "Plan", "tags": ["x"], "written_by": "Bo"}, "Batch it")
    True
    """
    return render_note({k: v for k, v in meta.items() if k not in TEXTLESS}, body)
