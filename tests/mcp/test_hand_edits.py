"""A running MCP server (a real subprocess over stdio) sees notes changed by hand.

Between two tool calls a person edits a note in place (as Obsidian saves),
adds one and deletes one; the next call that reads the namespace sees each.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from agent_mem_vault.vault import Handoff, Vault
from agent_mem_vault.vault.notes import handoff_meta, render_body, render_note
from mcp import Client

from .conftest import NS, serve_params


def _save_in_place(note: Path, text: str) -> None:
    st = note.stat()
    with open(note, "r+", encoding="utf-8") as fh:
        fh.write(text)
        fh.truncate()
    os.utime(note, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))


def _summary(result: Any) -> str | None:
    found = result.structured_content["handoff"]
    return None if found is None else str(found["summary"])


@pytest.mark.slow
async def test_a_running_server_sees_notes_edited_added_and_deleted_by_hand(
    vault_path: Path,
) -> None:
    vault = Vault(vault_path)
    vault.init()
    h = vault.create_handoff(to="codex", summary="first", context="c", namespace=NS, from_="a")
    note = vault_path / h.path
    peek = {"agent": "codex", "namespace": NS}
    async with Client(serve_params(vault_path, "codex")) as client:
        assert _summary(await client.call_tool("peek_handoff", peek)) == "first"

        _save_in_place(note, note.read_text().replace("## Summary\nfirst", "## Summary\nedited"))
        assert _summary(await client.call_tool("peek_handoff", peek)) == "edited"

        _save_in_place(note, note.read_text().replace("read: false", "read: true"))
        assert _summary(await client.call_tool("peek_handoff", peek)) is None

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
        by_hand = vault_path / NS / "handoffs" / f"{added.id}.md"
        by_hand.write_text(render_note(handoff_meta(added), render_body(added.summary, "c")))
        assert _summary(await client.call_tool("peek_handoff", peek)) == "added by hand"
        listed = await client.call_tool("list_handoffs", {"namespace": NS, "status": "all"})
        assert listed.structured_content["total"] == 2

        by_hand.unlink()
        assert _summary(await client.call_tool("peek_handoff", peek)) is None
        listed = await client.call_tool("list_handoffs", {"namespace": NS, "status": "all"})
        assert [x["id"] for x in listed.structured_content["handoffs"]] == [h.id]
