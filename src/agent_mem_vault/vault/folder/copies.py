"""The conflict copies file-sync tools leave beside a note, merged back into it.

A vault synced by Syncthing, Dropbox, iCloud, Obsidian Sync or Nextcloud gets
a second file when two machines changed one note before the tool could pass
the change on: ``<id>.sync-conflict-20260101-120000-ABCDEFG.md``, ``<id>
(laptop's conflicted copy 2026-01-01).md``, ``<id> 2.md``. Read as it is, such
a copy would be a second handoff with the note's id, or would hide the note
(whichever the scan met first held the id). So the scan (``scan.py``) hands
each copy to ``merge_copy``, under the vault lock: it is merged into its note by
the rules of ``merge.py`` (two versions, no common one), a side that loses a
conflict is kept as a conflict note ``doctor`` lists, a handoff read on both
machines records the second reading (``also_read``: a double delivery, which
the session hook and ``doctor`` report), and the copy is removed. It is never
shown as a handoff of its own.

A copy is recognised by its name (``copy_of``) and only merged when the note
it names is beside it, and is the same note (the same ``id`` for a handoff or
a memory): "Meeting 2.md" beside "Meeting.md" is left alone.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from ..format.notes import NoteError, parse_note
from .files import atomic_write

__all__ = ["copy_of", "merge_copy"]

_TID = r"[234567abcdefghij][234567abcdefghijklmnopqrstuvwxyz]{12}"
_COPIES = (
    # Syncthing: name.sync-conflict-YYYYMMDD-HHMMSS-DEVICEID.ext
    re.compile(r"(?P<stem>.+)\.sync-conflict-\d{8}-\d{6}(?:-[A-Z0-9]{7})?\.md"),
    # Dropbox, Obsidian Sync, Nextcloud: name (… conflicted copy …).ext
    re.compile(r"(?P<stem>.+?) ?\([^()]*conflicted copy[^()]*\)\.md", re.IGNORECASE),
    # iCloud and others: "name 2.ext", "name (1).ext", for the vault's own names only
    re.compile(rf"(?P<stem>{_TID}|_brief) (?:[2-9]|[1-9][0-9]|\([1-9][0-9]?\))\.md"),
)


def copy_of(name: str) -> str | None:
    """The name of the note a sync tool's conflict copy named ``name`` was copied from,
    or None if ``name`` is not one.

    >>> copy_of("3l6qyvzp7ns2c.sync-conflict-20260101-120000-ABCDEFG.md")
    '3l6qyvzp7ns2c.md'
    >>> copy_of("Meeting 2.md") is None
    True
    """
    if not name.endswith(".md") or (" " not in name and ".sync-conflict-" not in name):
        return None  # every copy's name has one of the two: most notes are done here
    for pattern in _COPIES:
        found = pattern.fullmatch(name)
        if found is not None:
            return found.group("stem") + ".md"
    return None


def merge_copy(root: Path, path: str, *, durable: bool = True) -> list[str] | None:
    """Merge the conflict copy at ``path`` into its note and remove it (the caller holds
    the vault lock); the notes written (the note, a conflict note), or None when
    ``path`` is not a copy of a note beside it (then nothing is changed)."""
    folder, _, name = path.rpartition("/")
    original = copy_of(name)
    if original is None:
        return None
    target = f"{folder}/{original}" if folder else original
    try:
        copy_text = (root / path).read_text(encoding="utf-8")
        note_text = (root / target).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    if not _same_note(copy_text, note_text):
        return None
    from ..format.merge import conflict_note, merge_notes  # only where a copy is found

    merged = merge_notes(None, note_text, copy_text)
    written: list[str] = []
    if merged.text != note_text:
        mode = os.stat(root / target).st_mode & 0o7777
        atomic_write(root / target, merged.text, durable=durable, mode=mode)
        written.append(target)
    if merged.kept is not None:
        kept_name, kept_text = conflict_note(merged.kept, original)
        kept = f"{folder}/{kept_name}" if folder else kept_name
        atomic_write(root / kept, kept_text, durable=durable)
        written.append(kept)
    os.unlink(root / path)
    return written


def _same_note(a: str, b: str) -> bool:
    """Whether two texts are versions of one note: the same ``id`` when they have one."""
    try:
        note_a, note_b = parse_note(a), parse_note(b)
    except NoteError:
        return False
    id_a = note_a.meta.get("id") if note_a is not None else None
    id_b = note_b.meta.get("id") if note_b is not None else None
    return id_a == id_b
