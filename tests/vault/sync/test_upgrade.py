"""One remote moved from one log to a log per machine (docs/sync.md): in one step, losing
nothing, with a release that knows only one log stopped at the fence."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from agent_mem_vault.vault import Vault
from agent_mem_vault.vault.sync.routes import load_config
from tests.git_remote import git, team_tree

from .conftest import NS, Machine

PREFIX = "refs/agent-mem-vault-sync/_vault"
ONE_LOG_RELEASE = "1fa11d5"
"""The last commit whose sync knows one log only: the release a team upgrades from."""


@pytest.fixture(autouse=True)
def _one_log(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENT_MEM_VAULT_SYNC_AUTO", "off")  # each push is the test's
    monkeypatch.setenv("AGENT_MEM_VAULT_SYNC_LAYOUT", "1")  # routes made as before


def _layout(vault: Vault) -> int:
    config = load_config(vault.path)
    assert config is not None and config.vault_route is not None
    return config.vault_route.layout


def _refs(repo: Path, prefix: str) -> dict[str, str]:
    out = git("for-each-ref", "--format=%(refname) %(objectname)", prefix, cwd=repo)
    return {n.removeprefix(prefix + "/"): c for n, c in (line.split() for line in out.splitlines())}


def test_a_remote_of_one_log_is_upgraded_in_one_step_losing_nothing(
    machine: Machine, remote: Path
) -> None:
    a, b, c = machine("a"), machine("b"), machine("c")
    for vault in (a, b, c):
        vault.join_remote(str(remote))
    pending = a.create_handoff(to="codex", summary="pending", context="C", namespace=NS)
    taken = a.create_handoff(to="codex", summary="taken", context="C", namespace=NS)
    a.sync()
    b.sync()
    assert b.read_handoff(agent="codex", namespace=NS) == b.get_handoff(taken.id)
    unsent = b.create_handoff(to="codex", summary="written on b", context="C", namespace=NS)
    old_tip = git("rev-parse", "refs/agent-mem-vault-log/vault", cwd=remote).strip()

    upgraded = a.upgrade_route()
    assert not upgraded.already and upgraded.route.layout == 2 == _layout(a)
    refs = _refs(remote, PREFIX)
    assert {"_layout", "_checkpoint"} <= set(refs)
    marker = json.loads(
        git("log", "-1", "--format=%B", refs["_layout"], cwd=remote).strip().splitlines()[-1]
    )
    assert marker["from_layout"] == 1 and marker["readers"] == 2
    fence = "refs/agent-mem-vault-log/vault"
    assert git("rev-parse", f"{fence}^", cwd=remote).strip() == old_tip  # on the old tip
    assert git("rev-parse", "refs/heads/main", cwd=remote).strip() == refs["_checkpoint"]

    b.sync()  # b meets the fence and follows; what it had not sent goes out
    assert _layout(b) == 2
    assert f"_log/{load_config(b.path).machine}" in _refs(remote, PREFIX)  # type: ignore[union-attr]
    for vault in (a, c):
        vault.sync()
        assert _layout(vault) == 2
        assert vault.get_handoff(taken.id).status == "read"
        assert vault.get_handoff(unsent.id).summary == "written on b"
    notes = team_tree(remote)
    assert {pending.path, taken.path, unsent.path} <= set(notes)
    got = [v.read_handoff(agent="codex", namespace=NS) for v in (c, a, c, a)]
    assert sorted(h.id for h in got if h) == sorted([pending.id, unsent.id])  # once each
    assert "also_read" not in (a.path / taken.path).read_text()


def test_a_route_upgraded_already_is_said_so(machine: Machine, remote: Path) -> None:
    a, b = machine("a"), machine("b")
    a.join_remote(str(remote))
    b.join_remote(str(remote))
    a.create_handoff(to="codex", summary="S", context="C", namespace=NS)
    a.upgrade_route()
    before = _refs(remote, PREFIX)
    again = b.upgrade_route()
    assert again.already and _layout(b) == 2
    assert _refs(remote, PREFIX) == before
    assert a.upgrade_route().already


def _one_log_release(tmp_path: Path) -> Path:
    """The sources of the release that knows one log only, from this checkout's history."""
    root = Path(__file__).resolve().parents[3]
    found = subprocess.run(
        ["git", "-C", str(root), "cat-file", "-e", f"{ONE_LOG_RELEASE}^{{commit}}"],
        capture_output=True,
        check=False,
    )
    if found.returncode != 0:
        pytest.skip(f"this checkout has no history back to {ONE_LOG_RELEASE} (a shallow clone)")
    out = tmp_path / "one-log-release"
    out.mkdir()
    archive = subprocess.run(
        ["git", "-C", str(root), "archive", ONE_LOG_RELEASE, "src/agent_mem_vault"],
        capture_output=True,
        check=True,
    )
    subprocess.run(["tar", "-x", "-C", str(out)], input=archive.stdout, check=True)
    return out / "src"


OLD = r"""
import json, sys
import agent_mem_vault
from agent_mem_vault.core.errors import AgentMemVaultError
from agent_mem_vault.vault import Vault

vault = Vault(sys.argv[1])
out = {"module": agent_mem_vault.__file__}
try:
    out["read"] = getattr(vault.read_handoff(agent="codex", namespace=sys.argv[2]), "id", None)
except AgentMemVaultError as exc:
    out["read"] = exc.code
vault.create_handoff(to="claude-code", summary="from the old release", context="C",
                     namespace=sys.argv[2])
report = vault.sync()
out["sync"] = [r.error.code if r.error else None for r in report.routes]
print(json.dumps(out))
"""


@pytest.mark.slow
def test_a_release_that_knows_one_log_stops_at_the_fence_delivering_nothing_and_keeping_its_writes(
    machine: Machine, remote: Path, tmp_path: Path
) -> None:
    old_src = _one_log_release(tmp_path)
    a, old = machine("a"), machine("old")
    a.join_remote(str(remote))
    old.join_remote(str(remote))  # a route of one log, as the old release reads it
    h = a.create_handoff(to="codex", summary="S", context="C", namespace=NS)
    a.sync()
    old.sync()
    a.upgrade_route()
    refs_before = git("for-each-ref", cwd=remote)
    old.close()
    env = {**os.environ, "PYTHONPATH": str(old_src)}
    ran = subprocess.run(
        [sys.executable, "-c", OLD, str(old.path), NS],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert ran.returncode == 0, ran.stderr
    out = json.loads(ran.stdout.splitlines()[-1])
    assert out["module"].startswith(str(old_src))  # the old release ran, not this one
    assert out["read"] == "claim_unconfirmed"  # nothing delivered
    assert out["sync"] == ["remote_moved"]
    assert git("for-each-ref", cwd=remote) == refs_before  # nothing sent
    a.sync()
    assert a.read_handoff(agent="codex", namespace=NS) is not None  # still pending, once
    assert a.get_handoff(h.id).status == "read"


def test_a_read_on_a_machine_that_has_not_followed_yet_follows_and_takes_once(
    machine: Machine, remote: Path
) -> None:
    a, b = machine("a"), machine("b")
    a.join_remote(str(remote))
    b.join_remote(str(remote))
    made = [
        a.create_handoff(to="codex", summary=f"task {i}", context="C", namespace=NS)
        for i in range(2)
    ]
    a.sync()
    b.sync()
    a.upgrade_route()
    got = b.read_handoff(agent="codex", namespace=NS)  # b's first word with the remote
    assert got is not None and _layout(b) == 2
    again = a.read_handoff(agent="codex", namespace=NS)
    assert again is not None and again.id != got.id
    assert {got.id, again.id} == {h.id for h in made}
    assert a.read_handoff(agent="codex", namespace=NS) is None
    assert b.read_handoff(agent="codex", namespace=NS) is None


def test_sync_status_of_a_route_of_one_log_names_the_upgrade(
    machine: Machine, remote: Path
) -> None:
    a = machine("a")
    a.join_remote(str(remote))
    shown = subprocess.run(
        [Path(sys.executable).parent / "agent-mem-vault", "sync", "--status", "--vault", a.path],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout
    assert "one log for every machine (layout 1)" in shown
    assert "agent-mem-vault sync upgrade" in shown
