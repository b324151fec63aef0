"""The MCP tools on a vault that travels: a read is a claim the remote confirms."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent_mem_vault.vault import Vault
from agent_mem_vault.vault.sync.syncer import stop_syncer
from tests.git_remote import bare_repo, remote_tree

from .conftest import NS, in_process


@pytest.fixture
def synced(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Vault:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("AGENT_MEM_VAULT_SYNC_AUTO", "off")
    vault = Vault(tmp_path / "synced")
    vault.init()
    vault.join_remote(str(bare_repo(tmp_path / "remote.git")))
    return vault


async def test_read_handoff_over_mcp_counts_once_the_remote_took_it(
    synced: Vault, tmp_path: Path
) -> None:
    h = synced.create_handoff(to="codex", summary="S", context="C", namespace=NS)
    async with in_process(synced, agent="codex") as client:
        result = await client.call_tool("read_handoff", {})
    assert not result.is_error
    assert result.structured_content["handoff"]["id"] == h.id
    assert "status: read" in remote_tree(tmp_path / "remote.git")[h.path]
    stop_syncer(synced.path)


async def test_read_handoff_over_mcp_with_the_remote_away_is_a_tool_error_offering_peek(
    synced: Vault, tmp_path: Path
) -> None:
    synced.create_handoff(to="codex", summary="S", context="C", namespace=NS)
    (tmp_path / "remote.git").rename(tmp_path / "gone.git")
    async with in_process(synced, agent="codex") as client:
        result = await client.call_tool("read_handoff", {})
        peeked = await client.call_tool("peek_handoff", {})
    assert result.is_error
    assert result.structured_content["error"]["code"] == "claim_unconfirmed"
    assert "peek_handoff" in result.content[0].text  # type: ignore[union-attr]
    assert not peeked.is_error and peeked.structured_content["handoff"]["status"] == "pending"
    stop_syncer(synced.path)
