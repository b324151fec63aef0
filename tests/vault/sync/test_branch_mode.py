"""A namespace on one branch, for a host that takes pushes to branches only (docs/sync.md)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from agent_mem_vault.core.errors import RemoteError
from agent_mem_vault.vault import Vault
from tests.git_remote import git, team_tree

from .conftest import NS, Machine, clone_of

BRANCH = "agent-mem-vault/harbor-api"
ONLY_BRANCHES = """#!/bin/sh
while read old new ref; do
  case "$ref" in refs/heads/*) ;;
    *) echo "refusing $ref: only branches" >&2; exit 1 ;;
  esac
done
"""


@pytest.fixture(autouse=True)
def _no_syncer(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENT_MEM_VAULT_SYNC_AUTO", "off")  # each push is the test's


@pytest.fixture
def only_branches(project: Path) -> Path:
    """The project's repository on a host that refuses every ref outside refs/heads/."""
    hook = project / "hooks" / "pre-receive"
    hook.write_text(ONLY_BRANCHES)
    hook.chmod(0o755)
    return project


def _team(machine: Machine, project: Path, tmp_path: Path, *names: str) -> list[Vault]:
    out = []
    for name in names:
        vault = machine(name)
        report = vault.join_project(NS, clone_of(project, tmp_path / f"{name}-src"), branch=BRANCH)
        assert report.ok, report
        out.append(vault)
    return out


def _refs(repo: Path) -> list[str]:
    return git("for-each-ref", "--format=%(refname)", cwd=repo).split()


def test_a_namespace_rides_one_branch_on_a_host_that_refuses_other_refs(
    machine: Machine, only_branches: Path, tmp_path: Path
) -> None:
    a, b = _team(machine, only_branches, tmp_path, "a", "b")
    made = [
        a.create_handoff(to="codex", summary=f"task {i}", context="C", namespace=NS)
        for i in range(3)
    ]
    assert a.sync().ok
    assert b.sync().ok
    assert {h.id for h in b.list_handoffs(namespace=NS)} == {h.id for h in made}
    assert set(_refs(only_branches)) == {"refs/heads/main", f"refs/heads/{BRANCH}"}
    # Its first commit is the marker; every later one an entry on the one before.
    first = git("rev-list", "--max-parents=0", f"refs/heads/{BRANCH}", cwd=only_branches)
    assert "agent-mem-vault layout 2" in git(
        "log", "-1", "--format=%B", first.strip(), cwd=only_branches
    )
    chain = git("rev-list", "--first-parent", f"refs/heads/{BRANCH}", cwd=only_branches).split()
    assert git("rev-list", f"refs/heads/{BRANCH}", cwd=only_branches).split() == chain
    [status] = b.sync_status()
    assert status.route.branch == f"refs/heads/{BRANCH}" and status.to_dict()["layout"] == 2


def test_two_machines_on_a_branch_deliver_each_handoff_once(
    machine: Machine, only_branches: Path, tmp_path: Path
) -> None:
    a, b, c = _team(machine, only_branches, tmp_path, "a", "b", "c")
    made = [
        a.create_handoff(to="codex", summary=f"task {i}", context="C", namespace=NS)
        for i in range(2)
    ]
    a.sync()
    b.sync()
    c.sync()
    got_b = b.read_handoff(agent="codex", namespace=NS)
    got_c = c.read_handoff(agent="codex", namespace=NS)  # its push is refused: fetch, next
    assert got_b is not None and got_c is not None and got_b.id != got_c.id
    assert {got_b.id, got_c.id} == {h.id for h in made}
    assert a.read_handoff(agent="codex", namespace=NS) is None
    for vault in (a, b, c):
        vault.sync()
        for h in made:
            assert vault.get_handoff(h.id).status == "read"
            assert "also_read" not in (vault.path / h.path).read_text()


def test_a_host_that_takes_only_branches_gets_one_line_naming_the_branch_option(
    machine: Machine, only_branches: Path, tmp_path: Path
) -> None:
    a = machine("a")
    a.create_handoff(to="codex", summary="S", context="C", namespace=NS)
    report = a.join_project(NS, clone_of(only_branches, tmp_path / "a-src"))
    error = report.routes[0].error
    assert error is not None and error.code == "push_refused"
    assert "\n" not in error.message
    assert error.message.endswith(
        "keep the notes on one branch: agent-mem-vault sync init --project "
        "--branch agent-mem-vault/harbor-api"
    ), error.message
    # The line's fix works, from the command line.
    clone = tmp_path / "a-src"
    ran = subprocess.run(
        [Path(sys.executable).parent / "agent-mem-vault", "sync", "init", "--project",
         "--branch", BRANCH, "--vault", a.path],
        cwd=clone, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    assert f"refs/heads/{BRANCH}" in _refs(only_branches)


def test_a_branch_that_holds_other_commits_is_refused_and_left_alone(
    machine: Machine, project: Path, tmp_path: Path
) -> None:
    a = machine("a")
    a.create_handoff(to="codex", summary="S", context="C", namespace=NS)
    before = git("rev-parse", "refs/heads/main", cwd=project)
    with pytest.raises(RemoteError) as raised:
        a.join_project(NS, clone_of(project, tmp_path / "a-src"), branch="main")
    assert raised.value.code == "branch_in_use"
    assert git("rev-parse", "refs/heads/main", cwd=project) == before


def test_a_branch_rewound_by_a_mirror_push_is_written_again_and_a_read_stays_read(
    machine: Machine, only_branches: Path, tmp_path: Path
) -> None:
    a, b = _team(machine, only_branches, tmp_path, "a", "b")
    first = a.create_handoff(to="codex", summary="first", context="C", namespace=NS)
    a.sync()
    rewound_to = git("rev-parse", f"refs/heads/{BRANCH}", cwd=only_branches).strip()
    second = a.create_handoff(to="codex", summary="second", context="C", namespace=NS)
    a.sync()
    b.sync()
    taken = b.read_handoff(agent="codex", namespace=NS)
    assert taken is not None and taken.id == second.id
    # A push --mirror from a stale clone: the branch back to before the second handoff.
    git("update-ref", f"refs/heads/{BRANCH}", rewound_to, cwd=only_branches)
    for vault in (a, b, a):
        assert vault.sync().ok
    notes = team_tree_on_branch(only_branches)
    assert {first.path, second.path} <= set(notes)
    assert "status: read" in notes[second.path]  # read wins, as in every merge
    assert a.get_handoff(second.id).status == "read"
    assert a.read_handoff(agent="codex", namespace=NS) == a.get_handoff(first.id)


def team_tree_on_branch(repo: Path) -> dict[str, str]:
    """The branch's notes, read with plain git as ``team_tree`` reads a log per machine:
    the branch's entries are those logs' entries, on one chain."""
    bare = repo.parent / "read-branch.git"
    if not bare.exists():
        git("init", "--quiet", "--bare", bare)
    git("fetch", "--quiet", "--force", str(repo),
        f"refs/heads/{BRANCH}:refs/agent-mem-vault-sync/{NS}/_log/all", cwd=bare)  # fmt: skip
    return team_tree(bare, NS)
