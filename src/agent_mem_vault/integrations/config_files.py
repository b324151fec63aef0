"""Editing other tools' configuration files without losing anything in them.

An installer computes ``FileChange`` values (text before and after) with pure
functions, so ``--dry-run`` can show a diff of exactly what ``apply`` would
write. Only what changes is rewritten (``jsonc.py``; tomlkit for TOML), so a
re-run writes nothing and everything else in the file keeps its bytes. A
file that does not parse in its client's dialect is never overwritten.
"""

from __future__ import annotations

import difflib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..core.errors import ConflictError, DataError
from ..vault.folder.files import atomic_write
from .jsonc import STRICT, Dialect, JsoncError

__all__ = ["FileChange", "apply_changes", "dump_json", "json_change", "load_json", "read_text"]


@dataclass(frozen=True)
class FileChange:
    """One file's content before and after; ``None`` means the file does not exist."""

    path: Path
    before: str | None
    after: str | None

    @property
    def changed(self) -> bool:
        return self.before != self.after

    def diff(self) -> str:
        """A unified diff, as ``--dry-run`` prints it ('' when nothing changes)."""
        if not self.changed:
            return ""
        old = (self.before or "").splitlines(keepends=True)
        new = (self.after or "").splitlines(keepends=True)
        name = str(self.path)
        lines = difflib.unified_diff(
            old,
            new,
            fromfile="/dev/null" if self.before is None else f"a{name}",
            tofile="/dev/null" if self.after is None else f"b{name}",
        )
        return "".join(line if line.endswith("\n") else line + "\n" for line in lines)


def read_text(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None


def load_json(path: Path, text: str | None, dialect: Dialect = STRICT) -> dict[str, Any]:
    """The JSON object in ``text`` (``{}`` when the file is missing or empty), read in
    its client's ``dialect`` (comments, trailing commas where the client takes them)."""
    if text is None or not text.strip():
        return {}
    try:
        data = dialect.load(text)
    except JsoncError as exc:
        raise DataError(
            f"{path} is not valid JSON ({exc.msg} at line {exc.line}); fix it and run "
            "again. Nothing was changed",
            path=str(path),
        ) from exc
    if not isinstance(data, dict):
        raise DataError(
            f"{path} holds a JSON {type(data).__name__}, not an object; fix it and run again. "
            "Nothing was changed",
            path=str(path),
        )
    return data


def dump_json(data: dict[str, Any], like: str | None = None) -> str:
    """JSON with a final newline, indented as ``like`` was (else two spaces, as Claude
    Code writes its own files)."""
    return json.dumps(data, indent=_indent_of(like), ensure_ascii=False) + "\n"


def _indent_of(text: str | None) -> int | str:
    for line in (text or "").splitlines()[1:]:
        stripped = line.lstrip(" \t")
        if stripped and stripped != line:
            return line[: len(line) - len(stripped)]
    return 2


def json_change(
    path: Path, before: str | None, data: dict[str, Any], dialect: Dialect = STRICT
) -> FileChange:
    """The change that makes ``path`` hold ``data``.

    Only what differs is rewritten: every other byte of the file (comments,
    order, indentation, line breaks) stays, so unchanged meaning keeps the file
    as it was and an uninstall gives back what the install found.
    """
    if before is None or not before.strip():
        return FileChange(path, before, dump_json(data) if data else before)
    if load_json(path, before, dialect) == data:
        return FileChange(path, before, before)
    after = dialect.edit(before, data)
    if not data and after.strip() in ("{}", ""):
        # Everything in it was ours: the file goes, as it came.
        return FileChange(path, before, None)
    return FileChange(path, before, after)


def apply_changes(changes: list[FileChange]) -> None:
    """Write each changed file atomically (temp file, fsync, replace) or delete it.

    A file that no longer holds what the change was computed from (the tool
    itself wrote it meanwhile: Claude Code rewrites ``~/.claude.json`` often) is
    left as it is, with a ``ConflictError``: writing would throw its edit away.
    """
    for change in changes:
        if not change.changed:
            continue
        if read_text(change.path) != change.before:
            raise ConflictError(
                f"{change.path} changed while this command was running; nothing more was "
                "written to it. Run the command again",
                code="file_changed",
                path=str(change.path),
            )
        if change.after is None:
            change.path.unlink(missing_ok=True)
            continue
        change.path.parent.mkdir(parents=True, exist_ok=True)
        # Keep the permission bits of a file we rewrite (~/.claude.json may be 0600).
        try:
            mode: int | None = change.path.stat().st_mode & 0o7777
        except FileNotFoundError:
            mode = None
        atomic_write(change.path, change.after, mode=mode)
