"""What a person, or sync for the team, does about a note no listed key stands behind.

Under a signers list (``vault/sync/verdicts.py``) a note written or last changed
by a key the team does not list is marked, or quarantined. A person who read it
may delete it for every machine (``trust delete``); sync puts back what the team
had left where an outsider changed a note's lifecycle alone
(``vault/sync/outside_changes.py``). Both are writes like any other: in the lock,
told to the sync, signed as this machine signs when they go out.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ...core.errors import ConflictError, InvalidInputError, NotFoundError
from ..folder.files import file_digest
from ..format.models import Handoff, Memory
from ..format.notes import NoteError, parse_text, render_note
from ..format.writer import TEXTLESS
from .redaction import note_path
from .writes import NoteWrites

__all__ = ["OutsiderOps", "unchanged_since_shown"]


def unchanged_since_shown(root: Path, path: str, note: str, seen: str | None, act: str) -> None:
    """Refuse (``changed_since_read``) a person's act on ``note`` (at ``path``) where its
    file's SHA-256 is no longer ``seen``, the one it had when shown: what they decided
    on is not what they would act on. ``act``: what they would do, for the message."""
    if seen is not None and file_digest(root / path) != seen:
        raise ConflictError(
            f"{note} changed since it was shown; read it again (agent-mem-vault show "
            f"{note}) and {act} what it says now",
            code="changed_since_read",
        )


class OutsiderOps(NoteWrites):
    def delete_note(self, note: str, *, seen: str | None = None) -> Handoff | Memory:
        """Delete ``note`` (a handoff's or memory's id, or a path) for the team: no listed
        key or person stands behind what it says, and a person read it and wants it gone.
        The removal travels as any change. ``seen``: the SHA-256 of the note's file as
        the person read it; refused (``changed_since_read``) when it changed since.
        Refused (``not_quarantined``) for a note the team stands behind, or one this
        machine changed and has not sent: nothing here deletes the team's own words."""
        with self._writing() as idx:
            path = note_path(self.path, idx, note)
            unchanged_since_shown(self.path, path, note, seen, "decide on")
            stem = path.rsplit("/", 1)[-1].removesuffix(".md")
            found = idx.handoff(stem) or idx.memory(stem)
            if found is None or found.path != path:
                raise NotFoundError(
                    f"{note} is not a handoff or a memory", code="note_not_found", path=path
                )
            origin = self._port().origin(path)
            if origin is None or origin.verified is None or not origin.sent or origin.trusted:
                raise InvalidInputError(
                    f"{note} is not a note written outside the team: 'trust delete' removes only "
                    "what no listed key or person stands behind ('agent-mem-vault trust "
                    "quarantine' lists them)",
                    code="not_quarantined",
                    path=path,
                )
            self._delete(idx, path)
        return found

    def put_back(self, path: str, now: str, was: str) -> bool:
        """Give the note at ``path`` the lifecycle, tags and writer pair of version ``was``
        where its status, ``superseded_by`` and ``forgotten_at`` are version ``now``'s,
        what it says and each field changed here since ``now`` (a tag not yet sent) kept
        as they are; False (nothing written) where they are not, or it is
        gone or damaged. Sync undoes with it a change that no listed key signed, under the
        lock as any write, so an agent's read or reopen in between is never undone."""
        try:
            then, before = parse_text(now).meta, parse_text(was).meta
        except NoteError:
            return False
        with self._writing() as idx:
            try:
                found = self._note_from_disk(idx, path)
            except (NoteError, UnicodeDecodeError):
                return False
            if found is None or _state(found[1].meta) != _state(then):
                return False
            here = found[1]
            # The lifecycle and the writer pair as the team had them (what the fold added
            # to the outsider's, ``read_at`` say, goes too); the tags too, unless they were
            # changed here since (not yet sent). In the order the note has them.
            mine = here.meta.get("tags") != then.get("tags")
            meta = {}
            for key, value in here.meta.items():
                if key not in TEXTLESS or (key == "tags" and mine):
                    meta[key] = value
                elif key in before:
                    meta[key] = before[key]
            meta.update(
                (k, v)
                for k, v in before.items()
                if k in TEXTLESS and k not in meta and not (k == "tags" and mine)
            )
            self._replace_text(idx, path, render_note(meta, here.body))
            return True

    def write_back(self, path: str, was: str) -> bool:
        """Write the note at ``path`` again as ``was``, the version the team left, where an
        entry no listed key signed removed it; False (nothing written) where a note is
        there again, or ``was`` does not parse. Under the lock, as ``put_back``."""
        try:
            parse_text(was)
        except NoteError:
            return False
        with self._writing() as idx:
            if (self.path / path).exists():
                return False
            (self.path / path).parent.mkdir(parents=True, exist_ok=True)
            self._replace_text(idx, path, was)
            return True


def _state(meta: Mapping[str, Any]) -> tuple[Any, ...]:
    """Where a note stands in its lifecycle (what the fold may add, ``read_at`` say, aside)."""
    return tuple(meta.get(key) for key in ("status", "superseded_by", "forgotten_at"))
