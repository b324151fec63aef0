"""The MCP tools on a vault that travels: a read is a claim the remote confirms."""

from __future__ import annotations

import asyncio
import socket
from pathlib import Path

import pytest

from agent_mem_vault.mcp.errors import ERROR_META_KEY
from agent_mem_vault.vault import Vault
from agent_mem_vault.vault.sync.syncer import stop_syncer
from tests.cli_process import CLI, cli_env, run_process
from tests.git_remote import bare_repo, own_git_home, remote_tree

from .conftest import NS, in_process


@pytest.fixture
def synced(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Vault:
    own_git_home(tmp_path, monkeypatch)
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
    assert result.meta[ERROR_META_KEY]["code"] == "claim_unconfirmed"
    assert "peek_handoff" in result.content[0].text  # type: ignore[union-attr]
    assert not peeked.is_error and peeked.structured_content["handoff"]["status"] == "pending"
    stop_syncer(synced.path)


async def test_a_read_waiting_for_the_remote_holds_up_no_writer_of_this_machine(
    synced: Vault, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The server's worker waits for a remote that takes the connection and never
    answers; meanwhile another process writes to the vault, which needs its lock."""
    synced.create_handoff(to="codex", summary="S", context="C", namespace=NS)
    monkeypatch.setenv("AGENT_MEM_VAULT_SYNC_TIMEOUT", "120")
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(8)
    config = synced.path / ".agent-mem-vault-sync" / "vault.git" / "config"
    config.write_text(
        config.read_text().replace(
            str(tmp_path / "remote.git"), f"git://127.0.0.1:{silent.getsockname()[1]}/r.git"
        )
    )
    async with in_process(synced, agent="codex") as client:
        read = asyncio.ensure_future(client.call_tool("read_handoff", {}))
        env = cli_env(vault=synced.path)
        create = [*CLI, "create", "--to", "x", "-n", NS, "-s", "written meanwhile", "-c", "C"]
        proc = await asyncio.to_thread(run_process, create, env=env, timeout=60)
        assert proc.returncode == 0, proc.stderr
        assert not read.done()  # the read still waits for the remote
        silent.close()  # the remote goes: the read is refused, nothing taken
        result = await read
    assert result.is_error and result.meta[ERROR_META_KEY]["code"] == "claim_unconfirmed"
    assert synced.peek_handoff(agent="codex", namespace=NS) is not None
    stop_syncer(synced.path)


async def test_list_and_peek_over_mcp_show_what_read_would_take_and_say_when_the_remote_is_away(
    synced: Vault, tmp_path: Path
) -> None:
    laptop = Vault(tmp_path / "laptop")
    laptop.init()
    laptop.join_remote(str(tmp_path / "remote.git"))
    h = laptop.create_handoff(to="codex", summary="From the laptop", context="C", namespace=NS)
    laptop.sync()
    async with in_process(synced, agent="codex") as client:
        listed = await client.call_tool("list_handoffs", {"agent": "codex"})
        peeked = await client.call_tool("peek_handoff", {})
        (tmp_path / "remote.git").rename(tmp_path / "gone.git")
        away = await client.call_tool("list_handoffs", {"agent": "codex"})
    assert [x["id"] for x in listed.structured_content["handoffs"]] == [h.id]
    assert "remote" not in listed.structured_content
    assert peeked.structured_content["handoff"]["id"] == h.id
    line = away.structured_content["remote"]
    assert line.startswith("agent-mem-vault: ") and "this shows the notes on this machine" in line
    assert away.content[0].text.startswith(line)  # type: ignore[union-attr]
    assert [x["id"] for x in away.structured_content["handoffs"]] == [h.id]
    for vault in (synced, laptop):
        stop_syncer(vault.path)
