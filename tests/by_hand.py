"""Notes changed the way a person or another tool changes them: straight on disk.

Shared by the vault, CLI and MCP tests of edits made by hand (in Obsidian, an
editor, a sync tool), so that each writes notes exactly alike.
"""

from __future__ import annotations

import os
from pathlib import Path

from agent_mem_vault.vault import Handoff
from agent_mem_vault.vault.format.notes import handoff_meta, render_body, render_note


def save_in_place(note: Path, text: str) -> None:
    """Rewrite ``note`` without a rename (as Obsidian saves), so its folder's mtime stays;
    the note's own mtime moves on by 1 ms, as a save's would."""
    st = note.stat()
    with open(note, "r+", encoding="utf-8") as fh:
        fh.write(text)
        fh.truncate()
    os.utime(note, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))


def write_handoff(
    folder: Path, id: str, summary: str, *, namespace: str, context: str = "c"
) -> Path:
    """A pending handoff for codex written as a new file in ``folder``."""
    h = Handoff(
        id=id,
        namespace=namespace,
        sender="person",
        recipient="codex",
        summary=summary,
        context=context,
        status="pending",
        created_at="2030-01-01T00:00:00.000Z",
    )
    path = folder / f"{id}.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render_note(handoff_meta(h), render_body(h.summary, h.context)))
    return path
