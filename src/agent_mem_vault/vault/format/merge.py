"""Two versions of one note made into one, field by field, losing nothing.

Two copies of a vault that changed the same note (an ack on one machine and a
reopen on the other; a person's edit in Obsidian against a read) meet when
git brings them together (``vault/sync``) or when a file-sync tool leaves a
conflict copy beside the note (``copies.py``). Both go through
``merge_notes``: with git there are three versions (the last common one and
each side's), with a conflict copy only two. Pure functions over text.

The rules (docs/sync.md, "How notes merge"):

- A property or a body only one side changed takes that side's version.
- A handoff's lifecycle (``status``, ``read``, ``read_at``, ``superseded_by``,
  ``read_on``, ``also_read``) changed on both sides: read if either side
  read it (at most once wins over pending), at the earliest reading; two
  readings that were both deliveries are recorded in ``also_read`` (a double
  delivery, reported by the session hook and ``doctor``); superseded by two
  different handoffs: the newer one (the greater id) is the live thread and
  the other is superseded by it (``Merged.superseded``).
- Lists (``tags``, ``supersedes``): what either side added, less what either
  side removed.
- A body changed on both sides: merged by lines when the two changes do not
  touch; otherwise, and for any other property both sides set differently,
  one side's version stays in the note and the other side's whole note is
  kept as a note of its own (``Merged.kept``, ``conflict_note``), which
  ``doctor`` lists. No note ever holds conflict markers.

Every rule is symmetric: the result does not depend on which side is "ours",
so every machine that merges the same two versions writes the same bytes,
whichever syncs first. Where a rule must choose (two bodies that cannot be
merged), it keeps the side whose text has the greater SHA-256: arbitrary,
but the same everywhere.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from typing import Any

from .links import link_id
from .notes import NoteError, parse_note, render_note

__all__ = [
    "CONFLICT_NOTE",
    "LIFECYCLE",
    "WRITER",
    "Merged",
    "conflict_note",
    "merge_notes",
    "merge_text",
]

LIFECYCLE = ("status", "read", "read_at", "superseded_by", "read_on", "also_read")
"""A handoff's properties that say whether and when it was taken, merged as one."""
WRITER = ("written_by", "written_on")
"""Who wrote a note's text (``writer.py``): it follows the text, so two sides that set it
differently never clash; where both changed it, the side that wins the merge names it."""
_LISTS = frozenset({"tags", "supersedes"})
CONFLICT_NOTE = re.compile(r"(?P<stem>.+)\.conflict-[0-9a-f]{8}\.md")
"""The name of a conflict note (``conflict_note``), for ``doctor`` to find them."""
_MISSING: Any = object()


@dataclass(frozen=True, slots=True)
class Merged:
    """The merged note and what the merge had to set aside or report."""

    text: str
    kept: str | None = None
    """The whole text of the side that lost a conflict, for ``conflict_note``."""
    twice: tuple[str, ...] = ()
    """Readings this merge found to be a second delivery (now in ``also_read``)."""
    superseded: tuple[str, str] | None = None
    """(the newer handoff, the other one): both sides superseded this handoff with
    different handoffs; the other one must now be superseded by the newer."""


def merge_notes(base: str | None, ours: str, theirs: str) -> Merged:
    """One note from two versions (and their common ancestor, ``base``, if known).

    >>> merge_notes(None, "x\\n", "x\\n").text
    'x\\n'
    """
    if ours == theirs:
        return Merged(ours)
    if base is not None:
        if ours == base:
            return Merged(theirs)
        if theirs == base:
            return Merged(ours)
    winner, loser = (ours, theirs) if _rank(ours) > _rank(theirs) else (theirs, ours)
    try:
        parsed = [parse_note(t) for t in (winner, loser)]
        parsed_base = parse_note(base) if base is not None else None
    except NoteError:
        parsed = [None, None]
        parsed_base = None
    win, lose = parsed
    if win is None or lose is None:
        body = merge_text(base, winner, loser)
        return Merged(winner) if body is None else Merged(body)
    base_meta = parsed_base.meta if parsed_base is not None else None
    base_body = parsed_base.body if parsed_base is not None else None
    conflict = False
    meta: dict[str, Any] = {}
    keys = [*win.meta, *(k for k in lose.meta if k not in win.meta)]
    handoff = win.meta.get("type") == "handoff" and lose.meta.get("type") == "handoff"
    for key in keys:
        if handoff and key in LIFECYCLE:
            continue
        b = _MISSING if base_meta is None else base_meta.get(key, _MISSING)
        value, clash = _merge_value(
            key, b, win.meta.get(key, _MISSING), lose.meta.get(key, _MISSING), base_meta is None
        )
        conflict = conflict or (clash and key not in WRITER)
        if value is not _MISSING:
            meta[key] = value
    twice: tuple[str, ...] = ()
    superseded = None
    if handoff:
        life, twice, superseded = _merge_lifecycle(base_meta, win.meta, lose.meta)
        meta = _with_lifecycle(meta, life, keys)
    body = merge_text(base_body, win.body, lose.body)
    if body is None:
        body, conflict = win.body, True
    return Merged(render_note(meta, body), loser if conflict else None, twice, superseded)


def _rank(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _merge_value(key: str, base: Any, win: Any, lose: Any, two_way: bool) -> tuple[Any, bool]:
    """(the merged value, whether the two sides clashed) of one property."""
    if win == lose:
        return win, False
    if not two_way:
        if win == base:
            return lose, False
        if lose == base:
            return win, False
    if key in _LISTS and _is_list(win) and _is_list(lose):
        return _merge_list(base if _is_list(base) else [], win, lose), False
    if two_way and (win is _MISSING or lose is _MISSING):
        return (lose if win is _MISSING else win), False  # one copy lacks it: nothing lost
    return win, True


def _is_list(value: Any) -> bool:
    return isinstance(value, list)


def _merge_list(base: list[Any], a: list[Any], b: list[Any]) -> list[Any]:
    """Items of ``base`` neither side removed, then what either side added (sorted)."""
    kept = [x for x in base if x in a and x in b]
    added = sorted({str(x): x for x in [*a, *b] if x not in base and x not in kept}.items())
    out = list(kept)
    for _key, item in added:
        if item not in out:
            out.append(item)
    return out


# -- a handoff's lifecycle ----------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Life:
    read: bool
    read_at: str | None
    superseded_by: str | None
    """The id of the handoff that superseded it (``links.link_id`` of the property)."""
    read_on: str | None
    also_read: tuple[str, ...]
    superseded_link: Any = field(default=None, compare=False)
    """The property as the note holds it (a wikilink), written back as it was."""


def _life(meta: dict[str, Any]) -> _Life:
    """The lifecycle a note's properties mean (a ticked ``read`` box wins, as in notes.py)."""
    read = meta.get("read")
    if isinstance(read, bool):
        is_read = read
    else:
        status = meta.get("status")
        is_read = isinstance(status, str) and status.strip().lower() == "read"
    also = meta.get("also_read")
    also_read = tuple(str(x) for x in also) if isinstance(also, list) else ()
    if isinstance(also, str) and also:
        also_read = (also,)
    return _Life(
        read=is_read,
        read_at=_text(meta.get("read_at")) if is_read else None,
        superseded_by=_text(link_id(meta.get("superseded_by"))),
        read_on=_text(meta.get("read_on")) if is_read else None,
        also_read=also_read,
        superseded_link=meta.get("superseded_by"),
    )


def _text(value: Any) -> str | None:
    return None if value is None or value == "" else str(value)


def _merge_lifecycle(
    base: dict[str, Any] | None, a: dict[str, Any], b: dict[str, Any]
) -> tuple[_Life, tuple[str, ...], tuple[str, str] | None]:
    la, lb = _life(a), _life(b)
    if la == lb:
        return la, (), None
    if base is not None:
        lbase = _life(base)
        if la == lbase:
            return lb, (), None
        if lb == lbase:
            return la, (), None
    superseded = None
    by = {x for x in (la.superseded_by, lb.superseded_by) if x is not None}
    superseded_by = max(by) if by else None
    link = next((x.superseded_link for x in (la, lb) if x.superseded_by == superseded_by), None)
    if len(by) == 2:
        superseded = (max(by), min(by))
    also = set(la.also_read) | set(lb.also_read)
    twice: tuple[str, ...] = ()
    read = la.read or lb.read
    read_at = read_on = None
    if read:
        readings = sorted(
            ((x.read_at or "", x.read_on or "") for x in (la, lb) if x.read), reverse=False
        )
        read_at, read_on = readings[0][0] or None, readings[0][1] or None
        if len(readings) == 2 and readings[0] != readings[1] and _both_delivered(base, la, lb):
            later = _reading(*readings[1])
            if later not in also:
                twice = (later,)
                also.add(later)
    life = _Life(read, read_at, superseded_by, read_on, tuple(sorted(also)), link)
    return life, twice, superseded


def _both_delivered(base: dict[str, Any] | None, a: _Life, b: _Life) -> bool:
    """Whether each side's reading was a delivery (``read_handoff``), not an ack or a
    supersede: each names the machine that took it (``read_on``, written by a read
    in a synced vault); between copies with no common version (a file-sync tool's),
    which never say, a reading on each side that no supersede explains."""
    if a.read_on is not None and b.read_on is not None:
        return True
    if base is None and a.read_on is None and b.read_on is None:
        return a.superseded_by is None and b.superseded_by is None
    return False


def _reading(read_at: str, read_on: str) -> str:
    return f"{read_at} on {read_on}" if read_on else read_at


def _with_lifecycle(meta: dict[str, Any], life: _Life, keys: list[str]) -> dict[str, Any]:
    """``meta`` with the merged lifecycle, each property where the note had it."""
    values: dict[str, Any] = {
        "status": "read" if life.read else "pending",
        "read": life.read,
        "read_at": life.read_at if life.read else _MISSING,
        "superseded_by": (life.superseded_link or life.superseded_by)
        if life.superseded_by
        else _MISSING,
        "read_on": life.read_on if life.read and life.read_on else _MISSING,
        "also_read": list(life.also_read) if life.also_read else _MISSING,
    }
    order = [k for k in keys if k in meta or k in values]
    for key in LIFECYCLE:
        if key not in order:
            order.append(key)
    out: dict[str, Any] = {}
    for key in order:
        value = values[key] if key in values else meta[key]
        if value is not _MISSING:
            out[key] = value
    return out


# -- text ------------------------------------------------------------------------------


def merge_text(base: str | None, a: str, b: str) -> str | None:
    """Two versions of a text merged by lines, or None where their changes touch.

    Without a ``base`` only equal texts merge.

    >>> merge_text("1\\n2\\n3\\n", "one\\n2\\n3\\n", "1\\n2\\nthree\\n")
    'one\\n2\\nthree\\n'
    """
    if a == b:
        return a
    if base is None:
        return None
    if a == base:
        return b
    if b == base:
        return a
    lines = base.splitlines(keepends=True)
    changes = sorted(
        _changes(lines, a.splitlines(keepends=True)) + _changes(lines, b.splitlines(keepends=True))
    )
    out: list[str] = []
    pos = 0
    last: tuple[int, int, tuple[str, ...]] | None = None
    for change in changes:
        start, end, lines_in = change
        if last is not None:
            if change == last:
                continue  # the same change on both sides
            if start <= last[1]:
                return None  # the two sides changed the same lines, or lines that touch
        out.extend(lines[pos:start])
        out.extend(lines_in)
        pos = end
        last = change
    out.extend(lines[pos:])
    return "".join(out)


def _changes(base: list[str], other: list[str]) -> list[tuple[int, int, tuple[str, ...]]]:
    """What ``other`` changed in ``base``: (first line, line after, new lines) each."""
    from difflib import SequenceMatcher  # a merge is rare; most processes never make one

    matcher = SequenceMatcher(None, base, other, autojunk=False)
    return [
        (i1, i2, tuple(other[j1:j2]))
        for tag, i1, i2, j1, j2 in matcher.get_opcodes()
        if tag != "equal"
    ]


def conflict_note(text: str, name: str) -> tuple[str, str]:
    """(file name, text) of the note that keeps a side that lost a merge.

    It sits beside the note it came from, named after it and after its own text
    (so two machines keeping the same text make the same file), with ``type:
    conflict`` and ``conflict_of`` naming the note: no listing counts it as a
    handoff or a memory, and ``doctor`` lists it until a person merges it by hand
    and deletes it.

    >>> conflict_note("---\\ntype: handoff\\nid: x\\n---\\nhi\\n", "x.md")[0][:11]
    'x.conflict-'
    """
    stem = name[:-3] if name.endswith(".md") else name
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()[:8]
    try:
        note = parse_note(text)
    except NoteError:
        note = None
    if note is None:
        meta: dict[str, Any] = {}
        body = text
    else:
        meta, body = dict(note.meta), note.body
    head = {"type": "conflict", "conflict_of": name}
    if "type" in meta:
        head["was_type"] = str(meta.pop("type"))
    meta.pop("conflict_of", None)
    return f"{stem}.conflict-{digest}.md", render_note({**head, **meta}, body)
