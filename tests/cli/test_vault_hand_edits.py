"""Notes edited, added and deleted by hand between two ``agent-mem-vault`` processes.

Each edit is saved the way Obsidian saves (in place, so the folder's mtime does
not change), and each command is a fresh process, as a hook or a script is.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from agent_mem_vault.vault import Handoff
from agent_mem_vault.vault.notes import handoff_meta, render_body, render_note

from .test_vault_cli import NS, run


def _save_in_place(note: Path, text: str) -> None:
    st = note.stat()
    with open(note, "r+", encoding="utf-8") as fh:
        fh.write(text)
        fh.truncate()
    os.utime(note, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))


def _peek(vault: Path) -> dict[str, str] | None:
    out = run(vault, "peek", "-a", "codex", "-n", NS, "--json").stdout
    found: dict[str, str] | None = json.loads(out)
    return found


def test_edits_added_and_deleted_notes_are_seen_by_the_next_cli_process(tmp_path: Path) -> None:
    vault = tmp_path / "vault"
    run(vault, "init")
    hid = run(vault, "create", "--to", "codex", "-n", NS, "-s", "first", "-c", "c").stdout.strip()
    note = vault / NS / "handoffs" / f"{hid}.md"

    _save_in_place(note, note.read_text().replace("## Summary\nfirst", "## Summary\nedited"))
    peeked = _peek(vault)
    assert peeked is not None and peeked["summary"] == "edited"

    _save_in_place(note, note.read_text().replace("read: false", "read: true"))
    assert _peek(vault) is None
    assert "status: read" in note.read_text()  # repaired under the lock by that call

    added = Handoff(
        id="3zzzzzzzzzzz2",
        namespace=NS,
        sender="person",
        recipient="codex",
        summary="added by hand",
        context="c",
        status="pending",
        created_at="2030-01-01T00:00:00.000Z",
    )
    by_hand = vault / NS / "handoffs" / f"{added.id}.md"
    by_hand.write_text(render_note(handoff_meta(added), render_body(added.summary, "c")))
    peeked = _peek(vault)
    assert peeked is not None and peeked["id"] == added.id

    by_hand.unlink()
    assert _peek(vault) is None
    listed = json.loads(run(vault, "handoffs", "--status", "all", "--json").stdout)
    assert [h["id"] for h in listed["handoffs"]] == [hid]
