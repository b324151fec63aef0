"""How a remote keeps the notes in layout 1: one log of small commits and a checkpoint
(docs/sync.md)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent_mem_vault.core.errors import UnavailableError
from agent_mem_vault.vault import Vault
from agent_mem_vault.vault.sync import engine
from agent_mem_vault.vault.sync.log import CHECKPOINT_FROM
from agent_mem_vault.vault.sync.routes import load_config
from tests.git_remote import bare_repo, git, remote_tree

from .conftest import NS, Machine

LOG = "refs/agent-mem-vault-log/vault"


@pytest.fixture(autouse=True)
def _no_syncer(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENT_MEM_VAULT_SYNC_AUTO", "off")  # each push is the test's
    monkeypatch.setenv("AGENT_MEM_VAULT_SYNC_LAYOUT", "1")  # one log, the subject here


def _files(repo: Path, commit: str) -> set[str]:
    return {p for p in git("ls-tree", "-r", "-z", "--name-only", commit, cwd=repo).split("\0") if p}


def _facts(repo: Path, commit: str) -> dict[str, object]:
    lines = git("log", "-1", "--format=%B", commit, cwd=repo).strip().splitlines()
    return json.loads(lines[-1]) if lines and lines[-1].startswith("{") else {}


def _machine(vault: Vault) -> str:
    """The name a vault's entries give their machine (its sync config's)."""
    config = load_config(vault.path)
    assert config is not None
    return config.machine


def test_each_push_sends_only_the_notes_it_changed(machine: Machine, remote: Path) -> None:
    a = machine("a")
    a.save_memory(namespace=NS, title="Old", content="kept")
    a.join_remote(str(remote))
    joined = git("rev-parse", "refs/heads/main", cwd=remote)
    h = a.create_handoff(to="codex", summary="S", context="C", namespace=NS)
    a.sync()
    assert _files(remote, LOG) == {h.path}
    assert git("rev-parse", "refs/heads/main", cwd=remote) == joined  # the checkpoint stays
    gone = a.save_memory(namespace=NS, title="A secret", content="hunter2")
    a.sync()
    a.forget_memory(gone.id, purge=True)
    a.sync()
    assert _files(remote, LOG) == set()
    assert _facts(remote, LOG) == {"machine": _machine(a), "removed": [gone.path]}
    assert gone.path not in remote_tree(remote) and h.path in remote_tree(remote)


def test_a_vault_that_joins_with_its_notes_sends_a_checkpoint_and_a_log_entry_naming_it(
    machine: Machine, remote: Path
) -> None:
    a = machine("a")
    h = a.create_handoff(to="codex", summary="S", context="C", namespace=NS)
    assert a.join_remote(str(remote)).ok
    main = git("rev-parse", "refs/heads/main", cwd=remote).strip()
    assert h.path in _files(remote, main)  # a plain clone shows the notes
    assert _facts(remote, LOG) == {"machine": _machine(a), "checkpoint": main}
    assert _facts(remote, main) == {"log": None}  # the log held nothing before it
    assert git("rev-list", "--count", LOG, cwd=remote).strip() == "1"


def test_a_push_of_many_notes_goes_as_a_checkpoint_the_other_machines_start_again_from(
    machine: Machine, remote: Path
) -> None:
    a, b = machine("a"), machine("b")
    a.join_remote(str(remote))
    b.join_remote(str(remote))
    small = a.create_handoff(to="codex", summary="before", context="C", namespace=NS)
    a.sync()
    b.sync()  # b has read the log up to here
    before = git("rev-parse", "refs/heads/main", cwd=remote).strip()
    made = [
        a.save_memory(namespace=NS, title=f"Note {i}", content=f"fact {i}")
        for i in range(CHECKPOINT_FROM + 1)
    ]
    a.sync()
    main = git("rev-parse", "refs/heads/main", cwd=remote).strip()
    assert main != before
    assert _facts(remote, LOG) == {"machine": _machine(a), "checkpoint": main}
    assert {m.path for m in made} | {small.path} <= _files(remote, main)
    after = a.create_handoff(to="codex", summary="after", context="C", namespace=NS)
    a.sync()
    assert _files(remote, LOG) == {after.path}
    assert b.sync().ok
    assert {m.path for m in made} <= {m.path for m in b.list_memories(namespace=NS, limit=1000)}
    assert [x.id for x in b.list_handoffs(namespace=NS)] == [after.id, small.id]
    assert remote_tree(remote) == {
        p: (b.path / p).read_text(encoding="utf-8") for p in remote_tree(remote)
    }


def test_a_remote_that_holds_the_notes_on_its_branch_alone_is_read_as_a_checkpoint(
    machine: Machine, tmp_path: Path
) -> None:
    """A remote written before the log (or by hand): ``main`` with the notes, no log."""
    a = machine("a")
    h = a.create_handoff(to="codex", summary="S", context="C", namespace=NS)
    work = tmp_path / "by-hand"
    git("init", "--quiet", "--initial-branch=main", work)
    (work / NS / "handoffs").mkdir(parents=True)
    (work / h.path).write_bytes((a.path / h.path).read_bytes())
    git("add", "-A", cwd=work)
    git("-c", "user.name=p", "-c", "user.email=p@x", "commit", "-qm", "notes", cwd=work)
    remote = bare_repo(tmp_path / "old.git")
    git("push", "-q", str(remote), "main", cwd=work)
    b = machine("b")
    assert b.join_remote(str(remote)).ok
    assert [x.id for x in b.list_handoffs(namespace=NS)] == [h.id]
    assert b.read_handoff(agent="codex", namespace=NS).id == h.id  # type: ignore[union-attr]
    assert "status: read" in remote_tree(remote)[h.path]
    assert _files(remote, LOG) == {h.path}


def test_a_sync_writes_a_checkpoint_once_the_log_has_grown_and_a_new_machine_starts_there(
    machine: Machine, remote: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(engine, "CHECKPOINT_EVERY", 3)
    a, b = machine("a"), machine("b")
    a.create_handoff(to="codex", summary="first", context="C", namespace=NS)
    a.join_remote(str(remote))
    b.join_remote(str(remote))  # knows the checkpoint of a's join, and no later one
    joined = git("rev-parse", "refs/heads/main", cwd=remote).strip()
    entries = []
    while git("rev-parse", "refs/heads/main", cwd=remote).strip() == joined:
        assert len(entries) < 3, "no checkpoint after 3 entries past the last"
        a.create_handoff(to="codex", summary=f"S{len(entries)}", context="C", namespace=NS)
        a.sync()
        entries = git("rev-list", LOG, cwd=remote).split()
    assert len(entries) == 3  # the join's entry and two more
    main = git("rev-parse", "refs/heads/main", cwd=remote).strip()
    assert _facts(remote, main) == {"log": entries[0]}
    assert _files(remote, main) == set(remote_tree(remote))
    # b's log has grown past the checkpoint it knows too; its own is never written over
    # the newer one a wrote.
    for i in range(3):
        b.create_handoff(to="aider", summary=f"B{i}", context="C", namespace=NS)
        assert b.sync().ok
    assert git("rev-parse", "refs/heads/main", cwd=remote).strip() == main
    c = machine("c")
    assert c.join_remote(str(remote)).ok
    assert len(c.list_handoffs(namespace=NS)) == 6
    assert remote_tree(remote) == {
        p: (c.path / p).read_text(encoding="utf-8") for p in remote_tree(remote)
    }


def test_a_claim_whose_answer_was_lost_is_undone_where_it_landed(
    machine: Machine, remote: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The remote took the read but its answer never came back: the read was refused
    here, so it must not count there either; the handoff is pending again, for anyone."""
    a, b = machine("a"), machine("b")
    a.join_remote(str(remote))
    h = a.create_handoff(to="codex", summary="S", context="C", namespace=NS)
    a.sync()
    b.join_remote(str(remote))
    hook = remote / "hooks" / "post-receive"  # runs once the log has moved
    hook.write_text("#!/bin/sh\nsleep 4\n")
    hook.chmod(0o755)
    monkeypatch.setenv("AGENT_MEM_VAULT_SYNC_TIMEOUT", "1")
    with pytest.raises(UnavailableError) as caught:
        a.read_handoff(agent="codex", namespace=NS)
    assert caught.value.code == "claim_unconfirmed"
    assert "status: read" in remote_tree(remote)[h.path]  # it landed all the same
    hook.unlink()
    monkeypatch.delenv("AGENT_MEM_VAULT_SYNC_TIMEOUT")
    assert a.sync().ok
    assert "status: pending" in remote_tree(remote)[h.path]
    taken = b.read_handoff(agent="codex", namespace=NS)
    assert taken is not None and taken.id == h.id
    assert a.read_handoff(agent="codex", namespace=NS) is None
