"""The notes changed since a synced vault's last commit.

Every locked section that changed the index (a write, or an edit by hand that a
check found) appends the paths it touched here, under the vault lock, through
the operations' port (``port.GitSync.changed``), which then makes sure the
background syncer runs (``syncer.py``). The
next commit, also under the lock, takes the list and stages exactly those
paths: a commit costs what changed, not what the vault holds. An empty path
means every note (the index was rebuilt, so what changed is not known).

Paths are separated by NUL: a note's name may hold any other character.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from .routes import SYNC_DIR, travels

__all__ = ["EVERYTHING", "journal_file", "note_changes", "take_changes", "waiting"]

JOURNAL = "journal"
EVERYTHING = ""
"""The journal entry that means "every note", after the index was rebuilt."""


def journal_file(root: Path) -> str:
    return f"{root}/{SYNC_DIR}/{JOURNAL}"


def note_changes(root: Path, paths: Iterable[str]) -> bool:
    """Add ``paths`` (those that are notes) to the journal; whether there were any. A
    journal that cannot be written loses nothing: the syncer stages every note when
    it starts (``syncer.py``)."""
    entries = [p for p in paths if p == EVERYTHING or travels(p)]
    if not entries:
        return False
    try:
        fd = os.open(journal_file(root), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, "".join(f"{p}\0" for p in entries).encode("utf-8", "surrogateescape"))
        finally:
            os.close(fd)
    except OSError:
        pass  # the next start of the syncer stages every note
    return True


def take_changes(root: Path) -> list[str] | None:
    """The journal's paths, emptying it (the caller holds the vault lock and commits
    them before it lets go); None means every note."""
    path = journal_file(root)
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except FileNotFoundError:
        return []
    if not raw:
        return []
    os.truncate(path, 0)
    # Each entry ends with NUL; a torn last entry (no NUL) is dropped with the rest of
    # the split, and staged by the next full stage.
    entries = raw.decode("utf-8", "surrogateescape").split("\0")[:-1]
    if EVERYTHING in entries:
        return None
    return sorted(set(entries))


def waiting(root: Path) -> int:
    """How many changes wait in the journal (the same path may count more than once)."""
    try:
        with open(journal_file(root), "rb") as f:
            return f.read().count(b"\0")
    except FileNotFoundError:
        return 0
