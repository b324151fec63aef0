"""Notes a person writes by hand: what their files say where their properties are silent.

A Markdown file a person adds under ``<namespace>/memories/`` or
``<namespace>/handoffs/`` (in Obsidian, an editor, a script) counts, with any
or none of the properties the vault writes. What a property does not say is
taken from the file: the kind from its folder, the namespace from its path,
the id from its file name (a TID) or else from its path, the title (or a
handoff's summary) from its first heading or its file name, the time from its
modification time. ``FileFacts`` records what was taken, so that ``doctor``
can say it as information; the file itself is never changed for it. A note an
agent later changes on purpose (a handoff read, a memory updated or forgotten)
is written with these properties, so its id and time stay what they were.

Pure functions over values; the caller reads the file.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime

from ...core.clock import format_datetime
from ...core.ids import decode_tid, encode_tid

__all__ = ["FOLDER_KINDS", "FileFacts", "folder_kind", "path_id", "title_from_body"]

FOLDER_KINDS = {"handoffs": "handoff", "memories": "memory"}
"""The folders of a namespace, and the kind of note each holds."""

_HEADING = re.compile(r"^#{1,6}[ \t]+(\S.*?)[ \t#]*$", re.MULTILINE)


def folder_kind(path: str) -> str | None:
    """``handoff`` or ``memory`` for a note right inside a namespace's ``handoffs/`` or
    ``memories/`` folder (``<namespace>/<folder>/<name>.md``), else None.

    >>> folder_kind("project/x/memories/my-note.md")
    'memory'
    >>> folder_kind("memories/my-note.md") is None
    True
    """
    parts = path.split("/")
    if len(parts) < 3:
        return None
    return FOLDER_KINDS.get(parts[-2])


def path_id(path: str) -> str:
    """The id of a note whose properties give none: its file name if that is a TID,
    else a TID made from its path, the same on every machine and every reindex
    (renaming the file gives it another one).

    >>> path_id("project/x/memories/3l6qyvzp7ns2c.md")
    '3l6qyvzp7ns2c'
    >>> path_id("project/x/memories/my-note.md") == path_id("project/x/memories/my-note.md")
    True
    """
    stem = path.rpartition("/")[2].removesuffix(".md")
    try:
        decode_tid(stem)
    except ValueError:
        pass
    else:
        return stem
    value = int.from_bytes(hashlib.sha256(path.encode("utf-8")).digest()[:8], "big") >> 1
    return encode_tid(value >> 10, value & 1023)


def title_from_body(body: str, path: str) -> tuple[str, str]:
    """(title, the body without the heading it came from): the first heading of the body,
    else the file name without ``.md`` (and the whole body).

    >>> title_from_body("# Batches of 1000\\n\\nLock time < 50 ms\\n", "p/memories/x.md")
    ('Batches of 1000', 'Lock time < 50 ms')
    >>> title_from_body("Lock time < 50 ms\\n", "p/memories/batch-size.md")
    ('batch-size', 'Lock time < 50 ms')
    """
    match = _HEADING.search(body)
    if match is None:
        return path.rpartition("/")[2].removesuffix(".md"), body.strip("\n")
    title = match.group(1).strip()[:200]
    rest = body[: match.start()] + body[match.end() :]
    return title, rest.strip("\n")


@dataclass(slots=True)
class FileFacts:
    """What one note's file says of it, for the properties the note does not give.

    ``filled`` gathers the names of the properties taken from here, in the order
    they were taken: what ``doctor`` reports as information.
    """

    path: str
    """Relative to the vault, ``/``-separated."""
    mtime_ns: int
    """The file's modification time: the note's time when it gives none."""
    filled: list[str] = field(default_factory=list)

    def take(self, name: str) -> None:
        if name not in self.filled:
            self.filled.append(name)

    @property
    def modified(self) -> str:
        return format_datetime(datetime.fromtimestamp(self.mtime_ns / 1e9, UTC))

    @property
    def namespace(self) -> str | None:
        """The namespace the note's folder belongs to (``<namespace>/<folder>/<name>.md``)."""
        if folder_kind(self.path) is None:
            return None
        return self.path.rsplit("/", 2)[0]
