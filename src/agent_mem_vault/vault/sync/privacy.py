"""What stays on this machine by a setting: notes whose path matches a private pattern.

A person keeps a namespace, a folder or a kind of note off every remote with a
pattern on the vault path (``project/personal/**``, ``*/memories/draft-*.md``:
``*`` within one folder, ``**`` across any, ``?`` one character), kept in
``private.json`` in the sync folder. It is this machine's choice: it never
travels, and a vault that does not sync yet may set it before it joins.

The gate holds a matching note back as it holds one that says ``private: true``
(``gate.py``), so no version of it is committed for a remote; a namespace that
a pattern covers whole is read here alone (``GitSync.travels``), never claimed
through a remote. Notes that arrive from other machines are still received.

A note made private after it travelled keeps, on the remote, the version sent
before, and that version stays in the remote's history. Asked to
(``--remove-from-remote``), the next commit takes it off the remote's notes
(other machines delete their copy at their next sync, unless they changed it);
its history stays until the remote is rewritten.
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

from ...core.errors import InvalidInputError, NotFoundError
from ..folder.files import atomic_write
from .routes import SYNC_DIR

if TYPE_CHECKING:
    pass

__all__ = [
    "PRIVATE_FILE",
    "UNSEND",
    "add_pattern",
    "check_pattern",
    "covers_namespace",
    "matching",
    "patterns",
    "regex",
    "remove_pattern",
]

PRIVATE_FILE = "private.json"
UNSEND = "unsend"
"""In a route's state: private notes its next commit takes off the remote."""


def patterns(root: Path) -> tuple[str, ...]:
    """The private patterns of the vault at ``root`` (none when the file is missing)."""
    try:
        data = json.loads((root / SYNC_DIR / PRIVATE_FILE).read_bytes())
    except FileNotFoundError:
        return ()
    except (OSError, ValueError):
        # Unreadable: every note is judged by its own property only, and status says so.
        return ()
    found = data.get("patterns") if isinstance(data, dict) else None
    return tuple(p for p in found or () if isinstance(p, str))


def matching(found: tuple[str, ...], path: str) -> str | None:
    """The first of the patterns ``found`` that ``path`` matches, or None."""
    for pattern in found:
        if regex(pattern).fullmatch(path):
            return pattern
    return None


def covers_namespace(found: tuple[str, ...], namespace: str) -> bool:
    """Whether the patterns keep every note of ``namespace`` here: its handoffs, its
    memories and its brief (then its reads stay here too)."""
    probes = (
        f"{namespace}/handoffs/aaaaaaaaaaaaa.md",
        f"{namespace}/memories/aaaaaaaaaaaaa.md",
        f"{namespace}/_brief.md",
    )
    return any(all(regex(p).fullmatch(probe) for probe in probes) for p in found)


def add_pattern(root: Path, pattern: str) -> bool:
    """Keep the notes ``pattern`` matches on this machine; False if it was there already."""
    pattern = check_pattern(pattern)
    current = patterns(root)
    if pattern in current:
        return False
    _save(root, (*current, pattern))
    return True


def remove_pattern(root: Path, pattern: str) -> None:
    """Let the notes ``pattern`` kept here travel again."""
    current = patterns(root)
    if pattern not in current:
        listed = ", ".join(current) or "none"
        raise NotFoundError(
            f"{pattern!r} is not a private pattern here (the patterns: {listed}); "
            "'agent-mem-vault private list' shows them",
            code="pattern_not_found",
        )
    _save(root, tuple(p for p in current if p != pattern))


def check_pattern(pattern: str) -> str:
    """``pattern`` if it can name notes of a vault: relative, with ``/`` between folders."""
    pattern = pattern.strip()
    bad = (
        not pattern
        or pattern.startswith("/")
        or "\\" in pattern
        or ".." in pattern.split("/")
        or any(not part for part in pattern.split("/"))
    )
    if bad:
        raise InvalidInputError(
            f"the pattern {pattern!r} names no notes of a vault: give a path relative to the "
            "vault, with / between folders, e.g. project/personal/** or */memories/draft-*.md",
            code="invalid_pattern",
            field="pattern",
        )
    return pattern


def _save(root: Path, found: tuple[str, ...]) -> None:
    folder = root / SYNC_DIR
    folder.mkdir(exist_ok=True)
    atomic_write(folder / PRIVATE_FILE, json.dumps({"patterns": list(found)}, indent=1) + "\n")


@lru_cache(maxsize=256)
def regex(pattern: str) -> re.Pattern[str]:
    """A pattern as a regular expression: ``**`` any depth, ``*`` and ``?`` one folder."""
    out = []
    i = 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")  # zero or more folders
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pattern[i] == "?":
            out.append("[^/]")
            i += 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return re.compile("".join(out))
