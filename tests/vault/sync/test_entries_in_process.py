"""A log that grew is read in process, entry for entry as git reads it, and left to git
where it did not just grow."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent_mem_vault.vault import Vault
from agent_mem_vault.vault.sync import entries as entries_module
from agent_mem_vault.vault.sync.engine import RouteSync
from agent_mem_vault.vault.sync.entries import read_chains, read_entries
from agent_mem_vault.vault.sync.layout import message_facts
from agent_mem_vault.vault.sync.routes import load_config
from agent_mem_vault.vault.sync.trees import empty_tree_id

from .conftest import Machine


@pytest.fixture(autouse=True)
def _each_push_is_the_tests(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENT_MEM_VAULT_SYNC_AUTO", "off")


def _tip(vault: Vault) -> tuple[RouteSync, str, int]:
    """This machine's route, its log's tip and that entry's seq."""
    config = load_config(vault.path)
    assert config is not None and config.vault_route is not None
    sync = RouteSync(vault, config, config.vault_route)
    tip = sync.git.text("rev-parse", sync.mine)
    message = sync.git.run("cat-file", "commit", tip).out.decode().partition("\n\n")[2]
    return sync, tip, int(message_facts(message)["seq"])


def test_a_log_that_grew_is_read_here_as_git_reads_it(machine: Machine, remote: Path) -> None:
    b = machine("b")
    b.join_remote(str(remote))
    b.create_handoff(to="codex", summary="before", context="C", namespace="team")
    b.sync()
    _sync, since, seq = _tip(b)
    memory = b.save_memory(title="kept", content="a fact", namespace="team")
    b.sync()
    b.create_handoff(to="codex", summary="one", context="C", namespace="team")
    b.create_handoff(to="claude-code", summary="two", context="C", namespace="team")
    b.sync()
    b.forget_memory(memory.id, purge=True)  # an entry that removes
    b.sync()
    sync, tip, last = _tip(b)
    empty = empty_tree_id(len(tip))
    here = read_chains(sync.git, {sync.config.machine: (tip, since, seq)}, empty)
    by_git = read_entries(sync.git, [tip], [since], empty)
    assert here is not None and [e.seq for e in here] == list(range(seq + 1, last + 1))
    assert here == by_git
    assert any(e.removed for e in here) and any(len(e.changed) >= 2 for e in here)


def test_a_log_read_here_only_when_it_just_grew(
    machine: Machine, remote: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    b = machine("b")
    b.join_remote(str(remote))
    b.create_handoff(to="codex", summary="before", context="C", namespace="team")
    b.sync()
    _sync, since, seq = _tip(b)
    for n in range(3):
        b.create_handoff(to="codex", summary=f"n{n}", context="C", namespace="team")
        b.sync()
    sync, tip, _last = _tip(b)
    machine_name = sync.config.machine
    empty = empty_tree_id(len(tip))
    assert read_chains(sync.git, {machine_name: (tip, since, seq)}, empty) is not None
    # Folded here to another seq than the log says: not this log's next entries.
    assert read_chains(sync.git, {machine_name: (tip, since, seq + 1)}, empty) is None
    # Another machine's name: its log holds entries of someone else.
    assert read_chains(sync.git, {"elsewhere": (tip, since, seq)}, empty) is None
    # Longer than a read here goes.
    monkeypatch.setattr(entries_module, "MAX_CHAIN", 2)
    assert read_chains(sync.git, {machine_name: (tip, since, seq)}, empty) is None
    monkeypatch.setattr(entries_module, "MAX_CHAIN", 64)
    # Packed by git gc: git reads it.
    sync.git.run("gc", "--quiet", "--prune=now")
    assert read_chains(sync.git, {machine_name: (tip, since, seq)}, empty) is None
