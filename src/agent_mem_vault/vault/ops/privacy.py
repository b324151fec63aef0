"""Marking a note private in place: it stays on this machine from then on.

A note whose front matter says ``private: true`` never goes to a remote
(``vault/sync/gate.py``). ``create --private`` and ``memory save --private``
write a new note so; this marks one that exists, a handoff or a memory that is
already there (and may have travelled), without a new version: the property is
added (or, undone, taken away) in one locked write that the sync is told of
like any other, so the route commits it and holds it back.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ...core.errors import InvalidInputError, NotFoundError
from ..format.notes import PRIVATE, render_note
from .redaction import note_path
from .writes import NoteWrites

__all__ = ["Marked", "PrivacyOps"]


@dataclass(frozen=True, slots=True)
class Marked:
    """A note marked private (or no longer), and what that means for its remote."""

    path: str
    private: bool
    changed: bool
    """False: it said so already."""
    remote: str | None = None
    """The remote the note travels by (its label), or None: it travels nowhere."""
    travelled: bool = False
    """The remote has a version of it: that one, and its history there, stay."""
    removing: bool = False
    """Its next sync takes it off the remote's notes (``--remove-from-remote``)."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "private": self.private,
            "changed": self.changed,
            "remote": self.remote,
            "travelled": self.travelled,
            "removing": self.removing,
        }


class PrivacyOps(NoteWrites):
    def mark_private(
        self, note: str, *, private: bool = True, remove_from_remote: bool = False
    ) -> Marked:
        """Keep a note on this machine from now on (a handoff's or memory's id, or its
        path in the vault): ``private: true`` joins its properties; nothing else of it
        changes. With ``private`` False the property goes, and its next sync sends it.
        The answer says whether its remote has an earlier version (which stays there);
        ``remove_from_remote`` takes that off the remote's notes at the next sync."""
        if remove_from_remote and not private:
            raise InvalidInputError(
                "--remove-from-remote takes a private note off its remote; it cannot go "
                "with --undo",
                code="usage_error",
            )
        marked = self._mark_private(note, private)
        return self._port().kept_private(self, marked, remove_from_remote)

    def _mark_private(self, note: str, private: bool) -> Marked:
        with self._writing() as idx:
            path = note_path(self.path, idx, note)
            found = self._note_from_disk(idx, path)
            if found is None:
                raise NotFoundError(f"no note at {path}", code="note_not_found")
            parsed = found[1]
            if (parsed.meta.get(PRIVATE) is True) == private:
                return Marked(path, private, changed=False)
            meta = {k: v for k, v in parsed.meta.items() if k != PRIVATE}
            if private:
                meta[PRIVATE] = True
            self._replace_text(idx, path, render_note(meta, parsed.body))
            return Marked(path, private, changed=True)
