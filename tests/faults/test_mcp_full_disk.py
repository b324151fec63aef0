"""A full disk seen through ``agent-mem-vault serve`` over stdio, with the real MCP client.

The agent gets a tool error that says the disk is full and where (the code
``no_space``, the same line the CLI prints), the server keeps serving, and a
handoff that supersedes another is made whole or not at all: with room for
its own note but not for the rewrite of the older one, neither shows.
"""

from __future__ import annotations

import asyncio
from typing import Any

from agent_mem_vault.mcp import ERROR_META_KEY
from agent_mem_vault.vault import Vault
from mcp import Client
from tests.mcp.conftest import NS, serve_params

from .disks import Disk

PAGE = 4096


def _handoff(summary: str, **extra: Any) -> dict[str, Any]:
    return {"to": "claude-code", "summary": summary, "context": "ctx", "namespace": NS, **extra}


async def test_a_tool_on_a_full_disk_says_so_and_a_supersede_is_made_whole_or_not_at_all(
    small_disk: Disk,
) -> None:
    vault_path = small_disk.path / "vault"
    Vault(vault_path).init()
    async with Client(serve_params(vault_path, "codex")) as client:
        first = await client.call_tool("create_handoff", _handoff("first"))
        first_id = first.structured_content["handoff"]["id"]
        first_path = f"{NS}/handoffs/{first_id}.md"

        # Room for the new note (and the lock's journal of it), none for the older one's
        # rewrite: the error names the older note, so the new one had been written.
        small_disk.fill(leave=2 * PAGE)
        refused = await client.call_tool(
            "create_handoff", _handoff("second", supersedes=[first_id])
        )
        assert refused.is_error
        text = refused.content[0].text  # type: ignore[union-attr]
        assert text.startswith("error: ") and text.endswith("[no_space]"), text
        assert "full" in text and str(vault_path / first_path) in text, text
        assert refused.meta is not None and refused.meta[ERROR_META_KEY]["code"] == "no_space"

        # Nothing of it shows: no new note, no temp file, the older one untouched.
        assert sorted(p.name for p in (vault_path / NS / "handoffs").iterdir()) == [
            f"{first_id}.md"
        ]
        assert "status: pending" in (vault_path / first_path).read_text()

        small_disk.free()
        listed = await client.call_tool("list_handoffs", {"namespace": NS, "status": "all"})
        handoffs = listed.structured_content["handoffs"]
        assert [(h["id"], h["status"]) for h in handoffs] == [(first_id, "pending")]
        second = await client.call_tool("create_handoff", _handoff("second", supersedes=[first_id]))
        assert not second.is_error
        listed = await client.call_tool("list_handoffs", {"namespace": NS, "status": "all"})
        statuses = {h["id"]: h["status"] for h in listed.structured_content["handoffs"]}
        assert statuses == {first_id: "read", second.structured_content["handoff"]["id"]: "pending"}
    note = await asyncio.to_thread((vault_path / first_path).read_text)
    assert note.count("superseded_by") == 1
