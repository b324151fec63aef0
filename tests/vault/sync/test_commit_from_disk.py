"""A write is committed from disk without the route's index, and the index catches up:
what it holds and what ``local`` holds agree whenever git reads it again."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent_mem_vault.vault import Vault
from agent_mem_vault.vault.sync import gitcmd
from agent_mem_vault.vault.sync.engine import RouteSync, sync_route
from agent_mem_vault.vault.sync.journal import take_changes
from agent_mem_vault.vault.sync.local import LATER_MAX
from agent_mem_vault.vault.sync.routes import load_config

from .conftest import Machine


@pytest.fixture(autouse=True)
def _each_push_is_the_tests(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENT_MEM_VAULT_SYNC_AUTO", "off")


def _route(vault: Vault) -> RouteSync:
    config = load_config(vault.path)
    assert config is not None and config.vault_route is not None
    return RouteSync(vault, config, config.vault_route)


def _send(vault: Vault) -> None:
    """What the syncer does with a write: commit and push, no fetch first."""
    config = load_config(vault.path)
    assert config is not None and config.vault_route is not None
    sync_route(vault, config, config.vault_route, fetch=False)


def _joined(machine: Machine, remote: Path) -> tuple[Vault, RouteSync]:
    """A machine on ``remote`` with one note sent: its first commit read the index."""
    a = machine("a")
    a.join_remote(str(remote))
    a.create_handoff(to="codex", summary="first", context="C", namespace="team")
    a.sync()
    return a, _route(a)


def _git_ran(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    ran: list[str] = []
    run = gitcmd.Git.run

    def counted(self: gitcmd.Git, *args: str, **kwargs: object) -> gitcmd.GitResult:
        ran.append(args[0])
        return run(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(gitcmd.Git, "run", counted)
    return ran


def _notes(sync: RouteSync, what: str) -> dict[str, str]:
    """path → blob of the route's index (``index``) or of ``local`` (``local``)."""
    if what == "index":
        raw = sync.git.run("ls-files", "-s", "-z").out.decode()
        return {item.split("\t", 1)[1]: item.split(" ")[1] for item in raw.split("\0") if item}
    local = sync.heads()[0]
    assert local is not None
    raw = sync.git.run("ls-tree", "-r", "-z", local).out.decode()
    return {
        item.split("\t", 1)[1]: item.split("\t", 1)[0].split(" ")[2]
        for item in raw.split("\0")
        if item
    }


def test_a_write_is_committed_from_disk_and_the_index_catches_up(
    machine: Machine, remote: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    a, b = machine("a"), machine("b")
    a.join_remote(str(remote))
    first = a.create_handoff(to="codex", summary="first", context="C", namespace="team")
    a.sync()  # the first commit reads the index: there is no ``local`` yet
    b.join_remote(str(remote))
    ran = _git_ran(monkeypatch)
    second = a.create_handoff(to="codex", summary="second", context="C", namespace="team")
    memory = a.save_memory(title="kept", content="a fact", namespace="team")
    _send(a)
    assert "update-index" not in ran and "write-tree" not in ran
    sync = _route(a)
    local = _notes(sync, "local")
    assert {second.path, memory.path, first.path} <= set(local)
    assert _notes(sync, "index").keys() == local.keys() - {second.path, memory.path}
    # A removal is one too: the note goes from the tree.
    a.forget_memory(memory.id, purge=True)
    _send(a)
    assert "update-index" not in ran and "write-tree" not in ran
    assert memory.path not in _notes(sync, "local")
    # What another machine sent, merged with a change made here, is a write-tree: the
    # index holds it all then.
    b.sync()
    b.create_handoff(to="codex", summary="from b", context="C", namespace="team")
    b.sync()
    a.create_handoff(to="codex", summary="meanwhile", context="C", namespace="team")
    a.sync()
    assert "write-tree" in ran
    assert _notes(sync, "index") == _notes(sync, "local")
    assert sync.state().get("unstaged") is None


def test_an_index_changed_since_its_tree_is_read_by_git(
    machine: Machine, remote: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    a, sync = _joined(machine, remote)
    staged = a.create_handoff(to="codex", summary="staged by hand", context="C", namespace="team")
    sync.stage([staged.path])  # the index holds something ``local`` lacks
    ran = _git_ran(monkeypatch)
    a.create_handoff(to="codex", summary="journaled", context="C", namespace="team")
    _send(a)
    assert "write-tree" in ran
    assert staged.path in _notes(sync, "local")  # committed with the rest, not left out
    assert _notes(sync, "index") == _notes(sync, "local")


def test_notes_the_index_holds_besides_are_never_left_out(
    machine: Machine, remote: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A write-tree whose commit never came (its process stopped between): the index
    holds a note ``local`` lacks, and the next commit reads the index for it."""
    a, sync = _joined(machine, remote)
    by_hand = "team/memories/by-hand.md"
    (a.path / by_hand).parent.mkdir(parents=True, exist_ok=True)
    (a.path / by_hand).write_text("---\ntitle: by hand\n---\nwritten by a person\n")
    a.create_handoff(to="codex", summary="notices it", context="C", namespace="team")
    # A sync took the journal, staged it and wrote the index's tree, then stopped.
    assert by_hand in (take_changes(a.path) or [])
    sync.stage([by_hand])
    sync._write_tree()
    assert by_hand not in _notes(sync, "local")
    ran = _git_ran(monkeypatch)
    a.create_handoff(to="codex", summary="later", context="C", namespace="team")
    _send(a)
    assert "write-tree" in ran
    assert by_hand in _notes(sync, "local")
    assert _notes(sync, "index") == _notes(sync, "local")


def test_past_so_many_notes_the_index_takes_them_at_once(
    machine: Machine, remote: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    a, sync = _joined(machine, remote)
    ran = _git_ran(monkeypatch)
    for n in range(LATER_MAX + 1):
        a.create_handoff(to="codex", summary=f"many {n}", context="C", namespace="team")
    _send(a)
    assert ran.count("update-index") == 1 and "write-tree" in ran
    assert _notes(sync, "index") == _notes(sync, "local")
