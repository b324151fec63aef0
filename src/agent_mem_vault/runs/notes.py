"""Handoff records as notes in the vault, so that Obsidian lists them under the agent.

Each record becomes ``<vault>/agents/<agent>/runs/<toRun>.md``. The notes are
derived from the store (the store is the truth for runs): writing one is
idempotent, and :meth:`HandoffNotes.sync` rewrites any that are missing, so a
crash between storing a record and writing its note loses nothing. The
property ``type: run-handoff`` keeps the vault's own index from mistaking
them for vault handoffs. Files are replaced atomically with the vault's own
writer, under the vault's own lock (so ``doctor`` never takes one of their temp
files for the leftover of a killed write, and ``reindex`` never removes one).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path

from ..vault.folder.files import atomic_write, vault_lock
from ..vault.format.notes import render_note
from .models import HandoffEntry

__all__ = ["HandoffNotes", "render_handoff_note"]


def render_handoff_note(entry: HandoffEntry) -> str:
    """The Markdown note for one handoff record (properties, a sentence, the record)."""
    record = entry.record
    generator = record.get("generator") or {}
    meta = {
        "type": "run-handoff",
        "agent": entry.agent,
        "fromRun": record["fromRun"],
        "toRun": record["toRun"],
        "createdAt": record["createdAt"],
        "generator": " ".join(str(generator[k]) for k in ("name", "version") if k in generator),
        "cid": entry.cid,
        "writtenBy": entry.written_by,
        "tags": ["run-handoff"],
    }
    who = "the registry, for the stopped run," if entry.written_by == "registry" else "it"
    body = (
        f"# Run handoff {record['fromRun']} → {record['toRun']}\n\n"
        f"Run `{record['fromRun']}` of agent `{entry.agent}` stopped because run "
        f"`{record['toRun']}` took the agent over; {who} wrote this record at "
        f"{record['createdAt']}.\n\n"
        f"```json\n{json.dumps(record, indent=2, ensure_ascii=False)}\n```\n"
    )
    return render_note(meta, body)


class HandoffNotes:
    """Writes handoff notes into a vault folder; pass ``notes.write`` as ``on_handoff``.

    >>> notes = HandoffNotes("~/agent-mem-vault")  # doctest: +SKIP
    >>> registry = RunRegistry(store, on_handoff=notes.write)  # doctest: +SKIP
    """

    def __init__(
        self, vault: str | Path, *, durable: bool = True, lock_timeout: float = 5.0
    ) -> None:
        self.vault = Path(vault).expanduser().absolute()
        self.durable = durable
        self.lock_timeout = lock_timeout

    def path(self, entry: HandoffEntry) -> Path:
        return self.vault / "agents" / entry.agent / "runs" / f"{entry.rkey}.md"

    def write(self, entry: HandoffEntry) -> Path:
        """Write the note for ``entry`` unless it is already there as it should be.

        Under the vault lock; ``UnavailableError`` (``lock_timeout``) if it does
        not come within ``lock_timeout`` seconds.
        """
        with vault_lock(self.vault, self.lock_timeout):
            return self._write(entry)

    def _write(self, entry: HandoffEntry) -> Path:
        path = self.path(entry)
        text = render_handoff_note(entry)
        try:
            if path.read_text(encoding="utf-8") == text:
                return path
        except FileNotFoundError:
            path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(path, text, durable=self.durable)
        return path

    def sync(self, entries: Iterable[HandoffEntry]) -> list[Path]:
        """Make sure every entry has its note; returns the notes written now."""
        missing = [entry for entry in entries if not self.path(entry).exists()]
        if not missing:
            return []
        with vault_lock(self.vault, self.lock_timeout):
            return [self._write(entry) for entry in missing]
