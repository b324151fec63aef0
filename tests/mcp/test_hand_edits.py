"""A running MCP server (a real subprocess over stdio) sees notes changed by hand.

Between two tool calls a person edits a note in place (as Obsidian saves),
adds one and deletes one; the next call that reads the namespace sees each.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agent_mem_vault.vault import Vault
from mcp import Client
from tests.by_hand import save_in_place, write_handoff

from .conftest import NS, serve_params


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

        save_in_place(note, note.read_text().replace("## Summary\nfirst", "## Summary\nedited"))
        assert _summary(await client.call_tool("peek_handoff", peek)) == "edited"

        save_in_place(note, note.read_text().replace("read: false", "read: true"))
        assert _summary(await client.call_tool("peek_handoff", peek)) is None

        by_hand = write_handoff(
            vault_path / NS / "handoffs", "3zzzzzzzzzzz2", "added by hand", namespace=NS
        )
        assert _summary(await client.call_tool("peek_handoff", peek)) == "added by hand"
        listed = await client.call_tool("list_handoffs", {"namespace": NS, "status": "all"})
        assert listed.structured_content["total"] == 2

        by_hand.unlink()
        assert _summary(await client.call_tool("peek_handoff", peek)) is None
        listed = await client.call_tool("list_handoffs", {"namespace": NS, "status": "all"})
        assert [x["id"] for x in listed.structured_content["handoffs"]] == [h.id]
