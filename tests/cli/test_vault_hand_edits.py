"""Notes edited, added and deleted by hand between two ``agent-mem-vault`` processes.

Each edit is saved the way Obsidian saves (in place, so the folder's mtime does
not change), and each command is a fresh process, as a hook or a script is.
"""

from __future__ import annotations

import json
from pathlib import Path

from tests.by_hand import save_in_place, write_handoff

from .test_vault_cli import NS, run


def _peek(vault: Path) -> dict[str, str] | None:
    out = run(vault, "peek", "-a", "codex", "-n", NS, "--json").stdout
    found: dict[str, str] | None = json.loads(out)
    return found


def test_edits_added_and_deleted_notes_are_seen_by_the_next_cli_process(tmp_path: Path) -> None:
    vault = tmp_path / "vault"
    run(vault, "init")
    hid = run(vault, "create", "--to", "codex", "-n", NS, "-s", "first", "-c", "c").stdout.strip()
    note = vault / NS / "handoffs" / f"{hid}.md"

    save_in_place(note, note.read_text().replace("## Summary\nfirst", "## Summary\nedited"))
    peeked = _peek(vault)
    assert peeked is not None and peeked["summary"] == "edited"

    save_in_place(note, note.read_text().replace("read: false", "read: true"))
    assert _peek(vault) is None
    assert "status: read" in note.read_text()  # repaired under the lock by that call

    added_id = "3zzzzzzzzzzz2"
    by_hand = write_handoff(vault / NS / "handoffs", added_id, "added by hand", namespace=NS)
    peeked = _peek(vault)
    assert peeked is not None and peeked["id"] == added_id

    by_hand.unlink()
    assert _peek(vault) is None
    listed = json.loads(run(vault, "handoffs", "--status", "all", "--json").stdout)
    assert [h["id"] for h in listed["handoffs"]] == [hid]
