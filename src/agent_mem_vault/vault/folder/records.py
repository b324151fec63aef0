"""Reading one note file into what the index stores about it.

A file is one of: a handoff, a memory, a namespace brief, some other Markdown
note (ignored), broken (reported by ``doctor``, skipped by listings, never
written over), or skipped on purpose: an empty file, or one larger than
``MAX_NOTE_BYTES``, which is not even read (``doctor`` names it with its size).
A note's ``type`` says which; a note right inside a namespace's ``handoffs/`` or
``memories/`` folder is a handoff or a memory whatever it says,
with what its properties lack taken from its file (``hand_notes.py``). Only a
note that cannot be understood or read is broken (broken YAML, a binary file,
one this user may not read): reported by name, and every other note still
works. A handoff whose lifecycle properties disagree (ticked ``read`` in
Obsidian while ``status`` is still ``pending``) is read as the person meant it
and carries the repaired text, which the scanner writes under the vault lock;
a note written by hand is never rewritten so, it stays as the person wrote it.
"""

from __future__ import annotations

import errno
import os
import stat
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal, overload

from ...core.clock import format_datetime
from ..format.hand_notes import FileFacts, folder_kind
from ..format.merge import CONFLICT_NOTE
from ..format.models import Handoff, Memory
from ..format.notes import (
    NoteError,
    _checked_namespace,
    _namespace,
    apply_handoff,
    handoff_from_note,
    memory_from_note,
    needs_repair,
    parse_note,
    parse_text,
    render_note,
)
from .copies import copy_of

__all__ = ["MAX_NOTE_BYTES", "TWICE", "FileRecord", "read_file", "read_record", "twice_delivered"]

Kind = Literal["handoff", "memory", "brief", "other", "broken", "skipped"]

MAX_NOTE_BYTES = 1 << 20
"""The largest note file the index reads (1 MiB). Every note the vault writes fits
(a handoff's context or a memory's content is at most 200,000 characters); a larger
file is one a person or a tool put there (a pasted log, say). Left out, it costs a
scan one ``stat`` and a search nothing, where indexed whole it would make every call
that touches it pay for its size."""


@dataclass(frozen=True, slots=True)
class FileRecord:
    """What one ``.md`` file is, as of the given size and mtime."""

    path: str
    """Relative to the vault, ``/``-separated."""
    mtime_ns: int
    size: int
    kind: Kind
    handoff: Handoff | None = None
    memory: Memory | None = None
    namespace: str | None = None
    """For a brief: the namespace it describes."""
    problem: str | None = None
    """For a broken note: what is wrong with it; for a skipped one: why it was skipped.
    For a handoff: that it was delivered more than once (``twice_delivered``), else None."""
    repair: str | None = None
    """For a handoff whose lifecycle properties disagree (a ``read`` box ticked in
    Obsidian): the note's text with them made to agree, for the scanner to write."""
    filled: tuple[str, ...] = ()
    """For a note written by hand: the properties taken from its file (``FileFacts``)."""
    copy_of: str | None = None
    """For a file-sync tool's conflict copy of a note beside it: that note's path, for
    the scanner to merge the copy into (``copies.py``)."""

    @property
    def dir(self) -> str:
        head, _, _ = self.path.rpartition("/")
        return head

    @property
    def note_id(self) -> str | None:
        if self.handoff is not None:
            return self.handoff.id
        if self.memory is not None:
            return self.memory.id
        return None


@overload
def read_file(root: Path, path: str) -> tuple[os.stat_result, bytes] | None: ...


@overload
def read_file(
    root: Path, path: str, limit: int | None
) -> tuple[os.stat_result, bytes | None] | None: ...


def read_file(
    root: Path, path: str, limit: int | None = None
) -> tuple[os.stat_result, bytes | None] | None:
    """The bytes of ``root/path`` and the stat of the very file read; ``None`` if it has
    gone or is not a regular file. A file larger than ``limit`` bytes is not read: its
    stat comes with ``None`` for the bytes.

    One open: the stamp (size, mtime) always belongs to the bytes, even when a
    writer renames a new version over the path meanwhile. A file watcher names
    paths without saying what they are: a folder or a symbolic link named
    ``*.md`` is not a note (the scan skips them too), and a FIFO must not block
    the reader, so the path is opened without following links or blocking, and
    checked before it is read.
    """
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(f"{root}/{path}", flags)
    except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
        return None
    except OSError as exc:
        if exc.errno == errno.ELOOP:  # a symbolic link
            return None
        raise
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return None
        if limit is not None and st.st_size > limit:
            return st, None
        # os.read straight from the descriptor: a file object would stat and seek
        # it again (three system calls more for each note read).
        chunks: list[bytes] = []
        while chunk := os.read(fd, max(st.st_size + 1, 65536)):
            chunks.append(chunk)
        return st, b"".join(chunks)
    finally:
        os.close(fd)


def read_record(root: Path, path: str) -> FileRecord | None:
    """Read and classify ``root/path``; ``None`` if the file has gone."""
    try:
        found = read_file(root, path, MAX_NOTE_BYTES)
    except OSError as exc:
        return _unreadable(root, path, exc)
    if found is None:
        return None
    st, raw = found
    mtime, size = st.st_mtime_ns, st.st_size
    if raw is None:
        problem = f"{_size(size)}, over the {_size(MAX_NOTE_BYTES)} a note may have; not read"
        return FileRecord(path, mtime, size, "skipped", problem=problem)
    if b"\0" in raw:
        return FileRecord(path, mtime, size, "broken", problem="a binary file, not a note")
    folder, _, name = path.rpartition("/")
    original = copy_of(name)
    if original is not None:
        target = f"{folder}/{original}" if folder else original
        if os.path.isfile(f"{root}/{target}"):
            return FileRecord(path, mtime, size, "other", copy_of=target)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return FileRecord(path, mtime, size, "broken", problem=f"not UTF-8 text ({exc.reason})")
    if not text.strip() and path.rpartition("/")[2] != BRIEF_NAME:
        # An empty brief is a brief with nothing in it yet; any other empty file says nothing.
        return FileRecord(path, mtime, size, "skipped", problem="empty file")
    try:
        return classify(path, mtime, size, text)
    except NoteError as exc:
        return FileRecord(path, mtime, size, "broken", problem=str(exc))


def classify(path: str, mtime: int, size: int, text: str) -> FileRecord:
    """What the note at ``path`` with this text is; ``NoteError`` if it is broken."""
    if CONFLICT_NOTE.fullmatch(path.rpartition("/")[2]):
        # The side that lost a merge (``merge.conflict_note``), kept for a person: never
        # a handoff or a memory, wherever it is.
        return FileRecord(path, mtime, size, "other")
    place = folder_kind(path)
    note = parse_text(text) if place is not None else parse_note(text)
    if note is None or ("type" not in note.meta and place is None):
        return _plain(path, mtime, size)
    kind = note.meta.get("type")
    if kind not in ("handoff", "memory", "brief"):
        if place is None:
            return FileRecord(path, mtime, size, "other")
        kind = place
    facts = FileFacts(path, mtime)
    if kind != note.meta.get("type"):
        facts.take("type")
    if kind == "handoff":
        hint = format_datetime(datetime.fromtimestamp(mtime / 1e9, UTC))
        handoff = handoff_from_note(note, path, read_hint=hint, facts=facts)
        repair = None
        # A note written by hand stays as the person wrote it: only the vault's own
        # notes are made to agree with themselves.
        if not facts.filled and needs_repair(note.meta, handoff):
            repair = render_note(apply_handoff(note.meta, handoff), note.body)
        filled = tuple(facts.filled)
        return FileRecord(
            path,
            mtime,
            size,
            "handoff",
            handoff=handoff,
            repair=repair,
            filled=filled,
            problem=twice_delivered(note.meta),
        )
    if kind == "memory":
        memory = memory_from_note(note, path, facts=facts)
        return FileRecord(path, mtime, size, "memory", memory=memory, filled=tuple(facts.filled))
    namespace = _namespace(note.meta)
    return FileRecord(path, mtime, size, "brief", namespace=namespace)


def _unreadable(root: Path, path: str, exc: OSError) -> FileRecord | None:
    """A note the system will not let this user read: broken, by its name, with the
    reason; the others go on working. ``None`` if it has gone meanwhile."""
    try:
        st = os.stat(f"{root}/{path}", follow_symlinks=False)
    except OSError:
        return None
    reason = exc.strerror or type(exc).__name__
    return FileRecord(
        path,
        st.st_mtime_ns,
        st.st_size,
        "broken",
        problem=f"cannot be read ({reason}); fix its permissions, then save it again "
        "(or run 'agent-mem-vault reindex')",
    )


TWICE = "delivered more than once"
"""How a handoff's ``problem`` starts when its note records a second delivery."""


def twice_delivered(meta: dict[str, object]) -> str | None:
    """The ``problem`` of a handoff whose ``also_read`` property records readings after
    the first one (a merge found it delivered on two machines, see ``merge.py``)."""
    also = meta.get("also_read")
    readings = [str(x) for x in also] if isinstance(also, list) else [str(also or "")]
    readings = [r for r in readings if r]
    if not readings:
        return None
    first = meta.get("read_at")
    where = f" on {meta['read_on']}" if meta.get("read_on") else ""
    return f"{TWICE}: read at {first}{where}, and again at {'; '.join(readings)}"


BRIEF_NAME = "_brief.md"


def _size(size: int) -> str:
    """A file size as people read it: ``50.0 MB``, ``1 MiB`` for the exact limit.

    >>> _size(52_428_800), _size(1 << 20), _size(900)
    ('52.4 MB', '1 MiB', '900 bytes')
    """
    if size == MAX_NOTE_BYTES:
        return "1 MiB"
    if size >= 1_000_000:
        return f"{size / 1_000_000:.1f} MB"
    if size >= 1_000:
        return f"{size / 1_000:.1f} kB"
    return f"{size} bytes"


def _plain(path: str, mtime: int, size: int) -> FileRecord:
    """A note without a ``type``: ignored, unless it is a namespace's ``_brief.md``.

    A person who writes the brief by hand rarely adds frontmatter; the file's
    place says what it is (``<namespace>/_brief.md``), so it is the brief.
    """
    folder, _, name = path.rpartition("/")
    if name == BRIEF_NAME and folder and _checked_namespace(folder) is None:
        return FileRecord(path, mtime, size, "brief", namespace=folder)
    return FileRecord(path, mtime, size, "other")
