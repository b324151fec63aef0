"""The folders ``install`` made, so that ``uninstall`` removes them once empty, and
no folder it did not make.

An empty ``.claude/`` or ``~/.codex/`` says nothing about who made it, so the
folders are written down when they are made: one JSON list in
``$XDG_STATE_HOME/agent-mem-vault/created-folders.json`` (``~/.local/state``
when unset). The list's own folders are on it too, and go with its last entry.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path

from ..vault.folder.files import atomic_write

__all__ = ["forget_empty", "missing_folders", "record_file", "remember"]


def record_file(home: Path) -> Path:
    """Where the list is kept."""
    state = os.environ.get("XDG_STATE_HOME")
    base = Path(state).expanduser() if state else home / ".local" / "state"
    return base / "agent-mem-vault" / "created-folders.json"


def missing_folders(path: Path) -> list[Path]:
    """The folders above ``path`` that do not exist yet, outermost first."""
    missing = []
    folder = path.parent
    while not folder.exists() and folder != folder.parent:
        missing.append(folder)
        folder = folder.parent
    return list(reversed(missing))


def _load(record: Path) -> list[str]:
    try:
        data = json.loads(record.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    return [str(p) for p in data] if isinstance(data, list) else []


def remember(home: Path, folders: Iterable[Path]) -> None:
    """Add ``folders`` (just made by install) to the list."""
    new = [str(f) for f in folders]
    if not new:
        return
    record = record_file(home)
    made_for_record = missing_folders(record)
    known = _load(record)
    for folder in [*new, *(str(f) for f in made_for_record)]:
        if folder not in known:
            known.append(folder)
    record.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(record, json.dumps(known, indent=2) + "\n")


def forget_empty(home: Path) -> list[Path]:
    """Remove every listed folder that is empty now, deepest first; the removed ones."""
    record = record_file(home)
    known = _load(record)
    if not known:
        return []
    removed: list[Path] = []
    record_folders = {str(record.parent), *(str(p) for p in record.parents)}
    for folder in sorted(known, key=lambda f: len(Path(f).parts), reverse=True):
        if folder in record_folders:
            continue  # the list's own folders go with the list
        path = Path(folder)
        try:
            path.rmdir()  # only an empty folder goes
        except FileNotFoundError:
            pass
        except OSError:
            continue
        removed.append(path)
    left = [f for f in known if Path(f) not in removed]
    if [f for f in left if f not in record_folders]:
        atomic_write(record, json.dumps(left, indent=2) + "\n")
        return removed
    record.unlink(missing_ok=True)
    for folder in sorted(left, key=lambda f: len(Path(f).parts), reverse=True):
        try:
            Path(folder).rmdir()
        except OSError:
            continue
    return removed
