"""A project's namespace through the project's own repository, on a ref that is no branch."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent_mem_vault.core.errors import NotFoundError
from agent_mem_vault.vault.sync.routes import project_ref
from tests.git_remote import git, remote_tree

from .conftest import NS, Machine, clone_of

REF = project_ref(NS)


def test_a_namespace_travels_through_the_project_repository_on_a_ref_no_branch_shows(
    machine: Machine, project: Path, tmp_path: Path
) -> None:
    a, b = machine("a"), machine("b")
    clone_a = clone_of(project, tmp_path / "a-src" / "harbor-api")
    head_before = git("rev-parse", "HEAD", cwd=clone_a)
    h = a.create_handoff(to="codex", summary="Batch it", context="C", namespace=NS)
    a.save_memory(namespace="project/other", title="Elsewhere", content="not for this repo")
    assert a.join_project(NS, clone_a).ok
    tree = remote_tree(project, REF)
    assert h.path in tree
    assert all(p.startswith(f"{NS}/") for p in tree), tree
    # No branch list, pull request or plain clone shows it.
    assert "agent-mem-vault" not in git("ls-remote", "--heads", "--tags", project)
    fresh = clone_of(project, tmp_path / "fresh")
    assert "agent-mem-vault" not in git("for-each-ref", cwd=fresh)
    assert "agent-mem-vault" not in git("branch", "-a", cwd=fresh)
    # The clone the route goes through: its branch and work tree are as they were.
    assert git("rev-parse", "HEAD", cwd=clone_a) == head_before
    assert git("status", "--porcelain", cwd=clone_a) == ""
    assert git("rev-parse", "refs/heads/main", cwd=project).strip() == head_before.strip()
    # Another machine with a clone of the project reaches the handoffs with one fetch.
    clone_b = clone_of(project, tmp_path / "b-src" / "harbor-api")
    assert b.join_project(NS, clone_b).ok
    assert [x.id for x in b.list_handoffs(namespace=NS)] == [h.id]
    assert b.list_handoffs(namespace="project/other", status="all") == []
    assert b.read_handoff(agent="codex", namespace=NS).id == h.id  # type: ignore[union-attr]
    a.sync()
    assert a.get_handoff(h.id).status == "read"


def test_a_namespace_with_a_project_route_leaves_the_vault_remote(
    machine: Machine, project: Path, remote: Path, tmp_path: Path
) -> None:
    a = machine("a")
    a.join_remote(str(remote))
    a.join_project(NS, clone_of(project, tmp_path / "src" / "harbor-api"))
    h = a.create_handoff(to="codex", summary="S", context="C", namespace=NS)
    m = a.save_memory(namespace="personal/notes", title="T", content="mine")
    a.sync()
    mine, theirs = remote_tree(remote), remote_tree(project, REF)
    assert m.path in mine and h.path not in mine
    assert h.path in theirs and m.path not in theirs


def test_a_project_route_needs_a_clone_with_the_remote(machine: Machine, tmp_path: Path) -> None:
    a = machine("a")
    lone = tmp_path / "lone"
    git("init", "--quiet", lone)
    with pytest.raises(NotFoundError) as caught:
        a.join_project(NS, lone)
    assert caught.value.code == "remote_not_found" and "git remote add" in caught.value.message
    with pytest.raises(NotFoundError) as caught:
        a.join_project(NS, tmp_path)
    assert caught.value.code == "repo_not_found"
