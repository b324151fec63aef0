"""Taking the secrets out of a note in place: what frees a note held back from its remote.

A note that gained a secret stays on this machine (``vault/sync/gate.py``). Writing
it again without the secret is what lets it go, and the person who is told
"held back" should not have to find the line and edit front matter by hand:
``redact`` replaces each secret with ``[redacted <kind>]``, in the body and in
every text property, as one locked write that the sync is told of like any
other. It finds what the gate finds (``core/secrets.py``), so a note it leaves
is one the gate lets pass.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...core.errors import NotFoundError
from ..format.namespaces import validate_id
from ..format.notes import parse_text, render_note
from .writes import NoteWrites

if TYPE_CHECKING:
    from ..index.db import Index

__all__ = ["Redacted", "RedactionOps", "note_path"]


@dataclass(frozen=True, slots=True)
class Redacted:
    """What ``redact`` took out of one note (or would, with ``dry_run``)."""

    path: str
    found: tuple[tuple[int, str], ...]
    """(line, kind) of each secret, in the note as it was."""
    written: bool

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "found": [{"line": line, "kind": kind} for line, kind in self.found],
            "written": self.written,
        }


class RedactionOps(NoteWrites):
    def redact_note(self, note: str, *, dry_run: bool = False) -> Redacted:
        """Replace each secret in a note (a handoff's or memory's id, or its path in the
        vault) with ``[redacted <kind>]``, in its body and its text properties; with
        ``dry_run``, only say what would be. Nothing found: nothing written."""
        if dry_run:  # a look: no lock, and a vault this user may only read will do
            path = self._query(lambda idx: note_path(self.path, idx, note))
            return Redacted(path, _secrets_in(self.path / path), written=False)
        with self._writing() as idx:
            path = note_path(self.path, idx, note)
            if self._note_from_disk(idx, path) is None:
                raise NotFoundError(f"no note at {path}", code="note_not_found")
            text = (self.path / path).read_text(encoding="utf-8")
            secrets = _secrets_in(self.path / path, text)
            if not secrets:
                return Redacted(path, secrets, written=False)
            parsed = parse_text(text)
            meta = {key: _redacted(value) for key, value in parsed.meta.items()}
            self._replace_text(idx, path, render_note(meta, _redacted(parsed.body)))
            return Redacted(path, secrets, written=True)


def note_path(root: Path, idx: Index, note: str) -> str:
    """The vault-relative path of the note ``note`` names: a handoff's or memory's id, or
    a path in the vault (ending in ``.md``)."""
    if note.endswith(".md"):
        path = note.replace("\\", "/").lstrip("./")
        if ".." in path.split("/") or not (root / path).is_file():
            raise NotFoundError(
                f"no note at {note!r} in the vault (give its path relative to the vault, "
                "or its id)",
                code="note_not_found",
            )
        return path
    validate_id(note, field="note")
    found = idx.handoff(note) or idx.memory(note)
    if found is None:
        raise NotFoundError(
            f"no handoff or memory with id {note}; 'agent-mem-vault handoffs --status all' "
            "and 'agent-mem-vault memory list --status all' show the ids there are",
            code="note_not_found",
            id=note,
        )
    return str(found.path)


def _secrets_in(file: Path, text: str | None = None) -> tuple[tuple[int, str], ...]:
    """(line, kind) of each secret in the note at ``file`` (whose ``text`` the caller may
    have read already)."""
    # The shapes compile on first use: a vault that never redacts never pays for them.
    from ...core.secrets import find_secrets

    if text is None:
        try:
            text = file.read_text(encoding="utf-8")
        except FileNotFoundError:
            raise NotFoundError(f"no note at {file}", code="note_not_found") from None
    return tuple((f.line, f.kind) for f in find_secrets(text))


def _redacted(value: Any) -> Any:
    """A property's value with its secrets replaced (text, and text in lists)."""
    from ...core.secrets import redact

    if isinstance(value, str):
        return redact(value)
    if isinstance(value, list):
        return [_redacted(item) for item in value]
    return value
