"""Wikilinks between notes: what the vault writes where one note names another.

``supersedes`` and ``superseded_by`` (of handoffs and memories) and the
brief's entries name other notes. Written as Obsidian wikilinks, they make each
thread visible in Obsidian's graph view and backlinks; read back, they give the
id again, so the properties stay machine-readable. A note the vault wrote is
named by its id (``<id>.md``), so its link is ``[[<id>]]``; a note written by
hand keeps its own file name, so its link names the path and shows the id:
``[[project/x/memories/my-note|<id>]]``. A bare id (as older notes hold) reads
the same.
"""

from __future__ import annotations

from typing import Any

from ...core.ids import decode_tid

__all__ = ["link_id", "wikilink"]


def wikilink(path: str, id: str) -> str:
    """The link to the note at ``path`` (relative to the vault) whose id is ``id``.

    >>> wikilink("project/x/handoffs/3l6qyvzp7ns2c.md", "3l6qyvzp7ns2c")
    '[[3l6qyvzp7ns2c]]'
    >>> wikilink("project/x/memories/my-note.md", "3l6qyvzp7ns2c")
    '[[project/x/memories/my-note|3l6qyvzp7ns2c]]'
    """
    stem = path.rpartition("/")[2].removesuffix(".md")
    if not path or stem == id:
        return f"[[{id}]]"
    return f"[[{path.removesuffix('.md')}|{id}]]"


def _is_tid(value: str) -> bool:
    try:
        decode_tid(value)
    except ValueError:
        return False
    return True


def link_id(value: Any) -> Any:
    """The id a property value names: ``[[id]]``, ``[[path|id]]``, ``[[path/id]]`` or a
    bare id; anything else is returned as it is (the caller reports it).

    YAML reads an unquoted ``[[id]]`` as a list inside a list; that is a link too.

    >>> link_id("[[project/x/memories/my-note|3l6qyvzp7ns2c]]")
    '3l6qyvzp7ns2c'
    >>> link_id([["3l6qyvzp7ns2c"]])
    '3l6qyvzp7ns2c'
    """
    if isinstance(value, list) and len(value) == 1:
        inner = value[0]
        if isinstance(inner, list) and len(inner) == 1 and isinstance(inner[0], str):
            value = f"[[{inner[0]}]]"
    if not isinstance(value, str):
        return value
    text = value.strip()
    if not (text.startswith("[[") and text.endswith("]]")):
        return text
    target, _, alias = text[2:-2].partition("|")
    target = target.partition("#")[0].strip()
    if alias and _is_tid(alias.strip()):
        return alias.strip()
    stem = target.rpartition("/")[2].removesuffix(".md")
    return stem if _is_tid(stem) else (alias.strip() or target)
