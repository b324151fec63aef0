"""The session-start hook of a vault that travels: it fetches first, within a budget."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent_mem_vault.integrations.session_hook import HookInput, render_session_start
from agent_mem_vault.vault import Vault
from agent_mem_vault.vault.sync.syncer import stop_syncer
from tests.git_remote import bare_repo, own_git_home

NS = "project/harbor-api"


@pytest.fixture(autouse=True)
def _own_git_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    own_git_home(tmp_path, monkeypatch)
    monkeypatch.setenv("AGENT_MEM_VAULT_SYNC_AUTO", "off")


@pytest.fixture
def pair(tmp_path: Path) -> Iterator[tuple[Vault, Vault]]:
    remote = bare_repo(tmp_path / "remote.git")
    a, b = Vault(tmp_path / "a", durable=False), Vault(tmp_path / "b", durable=False)
    for vault in (a, b):
        vault.init()
        vault.join_remote(str(remote))
    yield a, b
    for vault in (a, b):
        stop_syncer(vault.path)


def _start(vault: Vault, tmp_path: Path) -> str:
    return render_session_start(vault, HookInput(cwd=str(tmp_path)), agent="codex", namespace=NS)


def test_the_hook_fetches_a_handoff_left_on_another_machine(
    pair: tuple[Vault, Vault], tmp_path: Path
) -> None:
    a, b = pair
    h = a.create_handoff(to="codex", summary="Left on the laptop", context="C", namespace=NS)
    a.sync()
    text = _start(b, tmp_path)
    assert f"- {h.id} from unknown" in text and "Left on the laptop" in text
    assert text.startswith("agent-mem-vault: project memory")  # no line about the remote


def test_a_remote_that_does_not_answer_costs_the_budget_and_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    remote = bare_repo(tmp_path / "remote.git")
    vault = Vault(tmp_path / "v", durable=False)
    vault.init()
    vault.join_remote(str(remote))
    h = vault.create_handoff(to="codex", summary="Here already", context="C", namespace=NS)
    with socket.socket() as silent:  # takes connections, never answers
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        url = f"git://127.0.0.1:{silent.getsockname()[1]}/remote.git"
        config = vault.path / ".agent-mem-vault-sync" / "vault.git" / "config"
        config.write_text(config.read_text().replace(str(remote), url))
        monkeypatch.setenv("AGENT_MEM_VAULT_SYNC_BUDGET", "0.5")
        text = _start(vault, tmp_path)
    first, rest = text.split("\n", 1)
    assert first.startswith("agent-mem-vault: ") and "did not answer within 0.5 s" in first
    assert "this session starts with the notes on this machine" in first
    assert h.id in rest
    stop_syncer(vault.path)


def test_the_hook_tells_the_agent_of_a_handoff_delivered_twice(
    pair: tuple[Vault, Vault], tmp_path: Path
) -> None:
    a, _b = pair
    h = a.create_handoff(to="codex", summary="Batch it", context="C", namespace=NS)
    note = a.path / h.path
    note.write_text(
        note.read_text()
        .replace("status: pending", "status: read")
        .replace("read: false", "read: true\nread_at: 2026-01-02T00:00:00.000Z")
        .replace("tags:", "also_read:\n  - 2026-01-02T00:05:00.000Z on desktop-1\ntags:")
    )
    text = _start(a, tmp_path)
    assert "delivered more than once" in text and h.id in text
    assert "make sure its work is not done twice" in text
