"""Remotes as forges really are: refs deleted behind the machines' backs, and hosts that
refuse refs outside ``refs/heads/``."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.git_remote import git, remote_tree

from .conftest import NS, Machine


def test_refs_deleted_on_the_remote_are_written_again_and_a_read_handoff_stays_read(
    machine: Machine, remote: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A ``git push --mirror`` from a clone that never fetched the vault's refs deletes
    them on the remote; the machines that sync write everything back."""
    monkeypatch.setenv("AGENT_MEM_VAULT_SYNC_AUTO", "off")  # each push is the test's
    a, b = machine("a"), machine("b")
    a.join_remote(str(remote))
    b.join_remote(str(remote))
    first = a.create_handoff(to="codex", summary="First", context="C", namespace=NS)
    second = a.create_handoff(to="codex", summary="Second", context="C", namespace=NS)
    memory = a.save_memory(namespace=NS, title="Batches of 1000", content="Lock time < 50 ms")
    a.sync()
    b.sync()
    took = b.read_handoff(agent="codex", namespace=NS)
    assert took is not None
    (left,) = [h for h in (first, second) if h.id != took.id]
    # b took one; then the remote loses every ref the vault keeps there.
    for ref in git("for-each-ref", "--format=%(refname)", cwd=remote).split():
        git("update-ref", "-d", ref, cwd=remote)
    assert remote_tree(remote) == {}

    a.sync()  # a never heard of b's read: it writes back what it has
    b.sync()
    a.sync()
    tree = remote_tree(remote)
    assert {first.path, second.path, memory.path} <= set(tree)
    assert "status: read" in tree[took.path]  # read wins, as in every merge
    assert "status: pending" in tree[left.path]
    assert a.get_handoff(took.id).status == "read"
    assert [h.id for h in a.list_handoffs(namespace=NS, agent="codex")] == [left.id]
    assert [h.id for h in b.list_handoffs(namespace=NS, agent="codex")] == [left.id]


def test_a_host_that_refuses_refs_outside_branches_gets_one_line_naming_the_fix(
    machine: Machine, remote: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGENT_MEM_VAULT_SYNC_AUTO", "off")
    hook = remote / "hooks" / "pre-receive"
    hook.write_text(
        "#!/bin/sh\n"
        "while read old new ref; do\n"
        '  case "$ref" in refs/heads/*) ;;\n'
        '    *) echo "refusing $ref: only branches" >&2; exit 1 ;;\n'
        "  esac\n"
        "done\n"
    )
    hook.chmod(0o755)
    a = machine("a")
    a.create_handoff(to="codex", summary="S", context="C", namespace=NS)
    report = a.join_remote(str(remote))
    assert not report.ok
    error = report.routes[0].error
    assert error is not None and error.code == "push_refused"
    message = error.message
    assert "\n" not in message and "pre-receive hook declined" in message, message
    assert message.endswith(
        "allow the refs under refs/agent-mem-vault-sync/_vault/ there, or keep the notes on "
        "one branch: agent-mem-vault sync init REMOTE --branch agent-mem-vault/notes"
    ), message
